"""Which model bundle an engine opens with (issue 40: out of the facade's constructor).

An explicit bundle wins; else the one the home selected (an adapted model, a restored one:
:mod:`engine.model.store`); else ``$SPARCDESK_MODEL`` or the shipped bundle
(:func:`engine.model.encoder.default_bundle_dir`). A damaged bundle of the home's own falls
back to the shipped one, selected for the home (the next indexing run re-encodes the index
with it: a new generation, the current one answers meanwhile); a damaged bundle otherwise
stops the opening with a :class:`FileNotFoundError` saying what to do.
"""

from __future__ import annotations

from pathlib import Path

from engine.model import store as model_store
from engine.model.bundle import Bundle, BundleError
from engine.model.encoder import default_bundle_dir


def bundle_problem(bundle: Path) -> str | None:
    """Why a model bundle cannot be used (config, tokenizer or graph missing or unreadable), or None."""
    try:
        Bundle.open(bundle).tokenizer()
    except BundleError as exc:
        return exc.reason
    except FileNotFoundError as exc:
        return f"{Path(exc.filename or '?').name} is missing"
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return None


def choose_bundle(home: Path, explicit: Path | None = None) -> tuple[Path, list[str]]:
    """The bundle an engine of ``home`` uses, and what was repaired to get it (one line each:
    a damaged model of the home's own replaced by the shipped one). Raises
    :class:`FileNotFoundError` when the bundle to use is damaged."""
    notes: list[str] = []
    shipped = default_bundle_dir()
    bundle = Path(explicit) if explicit else model_store.selected_bundle(home) or shipped
    problem = bundle_problem(bundle)
    if problem and explicit is None and bundle != shipped:
        notes.append(
            f"the model {bundle} is damaged ({problem}): using the shipped model; the next"
            " indexing run re-encodes the index with it"
        )
        model_store.select(home, shipped)
        bundle = shipped
        problem = bundle_problem(bundle)
    if problem:
        raise FileNotFoundError(
            f"the model bundle at {bundle} is damaged ({problem}): reinstall sparcdesk, or point"
            " SPARCDESK_MODEL at a good bundle"
        )
    return bundle, notes
