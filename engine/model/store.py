"""Which model bundle a sparcdesk home uses, and the one it used before.

Adaptation writes a new bundle under ``HOME/models/`` and selects it; the switch of the
*answers* to it happens later, atomically, when the re-encoded generation goes live. The
choice lives in ``HOME/model.json`` (written atomically)::

    {"bundle": "/…/models/sparc-tiny-adapted-20261122-081500",
     "previous": {"bundle": "/…/assets/sparc-tiny", "generation": 3,
                  "retired_at": "2026-11-22T08:20:01+00:00"}}

``previous`` is the generation retired by the last switch (its folder is kept) and the
bundle it was encoded with: ``sparcdesk restore`` makes them live again. A restore writes the
index, the catalog and this file one after the other, so it first records its plan here
(``restoring``, :func:`begin_restore`); whichever step a crash interrupts, the next engine to
open the data folder redoes the steps and :func:`end_restore` removes the plan in the same
write that selects the restored bundle.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MODEL_FILE = "model.json"
MODELS_DIR = "models"
ADAPT_STATE_DIR = "adapt"


def _path(home: Path) -> Path:
    return Path(home) / MODEL_FILE


def load(home: Path) -> dict[str, Any]:
    path = _path(home)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # the default bundle is used
        log.warning("%s is unreadable (%s: %s): read as no model chosen", path, type(exc).__name__, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("%s is not a JSON object: read as no model chosen", path)
        return {}
    return data


def save(home: Path, data: dict[str, Any]) -> None:
    path = _path(home)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def selected_bundle(home: Path) -> Path | None:
    """The bundle chosen for this home, if one was chosen and still exists."""
    b = load(home).get("bundle")
    if b and (Path(b) / "config.json").is_file():
        return Path(b)
    return None


def select(home: Path, bundle: Path, previous: dict[str, Any] | None = None, keep_previous: bool = True) -> None:
    data = load(home)
    data["bundle"] = str(bundle)
    if previous is not None or not keep_previous:
        data["previous"] = previous
    save(home, data)


def begin_restore(home: Path, plan: dict[str, Any]) -> None:
    """Record a restore about to start (see the module docstring)."""
    data = load(home)
    data["restoring"] = plan
    save(home, data)


def pending_restore(home: Path) -> dict[str, Any] | None:
    """The plan of a restore that started and did not finish, or None."""
    plan = load(home).get("restoring")
    return plan if isinstance(plan, dict) and "generation" in plan and "bundle" in plan else None


def end_restore(home: Path, bundle: Path, previous: dict[str, Any] | None) -> None:
    """Select the restored ``bundle`` with ``previous`` and drop the plan, in one write."""
    data = load(home)
    data.pop("restoring", None)
    data["bundle"] = str(bundle)
    data["previous"] = previous
    save(home, data)


def models_dir(home: Path) -> Path:
    return Path(home) / MODELS_DIR


def prune_models(home: Path) -> list[Path]:
    """Remove adapted bundles that neither the current nor the previous choice uses (each
    adaptation writes a new one; only two can ever be restored)."""
    import shutil

    data = load(home)
    keep = {str(Path(b).resolve()) for b in (data.get("bundle"), (data.get("previous") or {}).get("bundle")) if b}
    removed: list[Path] = []
    folder = models_dir(home)
    if folder.is_dir():
        for d in folder.iterdir():
            if d.is_dir() and str(d.resolve()) not in keep:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
    return removed


def adapt_state_dir(home: Path) -> Path:
    return Path(home) / ADAPT_STATE_DIR


def original_bundle(bundle: Path) -> Path:
    """The bundle an adapted one was made from (adaptation always starts from it)."""
    from engine.model.bundle import Bundle, BundleError

    try:
        src = Bundle.open(bundle).adapted_from
    except BundleError:
        return Path(bundle)
    if src and (src / "config.json").is_file():
        return src
    return Path(bundle)
