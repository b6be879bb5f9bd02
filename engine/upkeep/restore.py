"""The crash-safe restore of the previous model (issue 40: out of the facade).

A model switch (an adaptation, a new shipped model) retires the generation that answered and
remembers it with its bundle as the home's ``previous`` model (:func:`record_switch`).
Restoring makes them live again in four steps over three stores -- the retired index (the
documents deleted since dropped), the catalog (the generation activated, the files indexed
before the switch moved to it) and the home's model choice (:mod:`engine.model.store`) --
so it is journalled: :func:`begin` writes the plan first (``model.json``'s ``restoring``),
:func:`apply` carries it out, every step redoable, and whichever step a crash interrupts, the
next engine to open the home finishes it (:func:`finish`). The crash points between the
steps (:mod:`engine.home.crashpoints`) are :data:`STEPS`.

Why here: the protocol writes the catalog and the index together, so it cannot sit in the
model stage below them; like self-repair it is upkeep of a data folder, above both. What
follows a restore -- bringing the restored generation up to date with an indexing run, the
engine's reader and encoder -- stays with the caller (:meth:`engine.api.facade.Engine.restore_model`):
the indexer is a stage beside this one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from engine.catalog.store import Catalog, Generation, now_iso
from engine.catalog.texts import TextStore
from engine.home import crashpoints
from engine.index.sentences import SentenceIndex
from engine.model import store as model_store

log = logging.getLogger(__name__)

#: Crash points: the plan is written; the stale documents are deleted from the restored index;
#: the catalog has activated it; the home selected its bundle.
JOURNALED = "restore:journaled"
STALE_DELETED = "restore:stale-deleted"
ACTIVATED = "restore:activated"
SELECTED = "restore:selected"
STEPS = (JOURNALED, STALE_DELETED, ACTIVATED, SELECTED)


def _on_disk(gen: Generation | None) -> bool:
    return gen is not None and (Path(gen.index_dir) / "meta.json").exists()


def previous(home: Path, catalog: Catalog) -> dict[str, Any] | None:
    """The previous model a restore would bring back (``bundle``, ``generation``,
    ``retired_at``), or None when there is none: nothing was switched, or its retired
    generation is gone."""
    prev = model_store.load(home).get("previous") or None
    if prev is None:
        return None
    gen = catalog.get_generation(int(prev.get("generation", -1)))
    if gen is None or gen.status != "retired" or not _on_disk(gen):
        return None
    return prev


def record_switch(home: Path, catalog: Catalog, before: Generation | None, bundle: Path) -> bool:
    """After an indexing run: if it switched generations (``before`` was live), remember the
    retired one and the bundle its index was encoded with as the previous model, select
    ``bundle`` and prune older adapted models. Returns whether there was a switch."""
    after = catalog.active_generation()
    if before is None or after is None or before.id == after.id:
        return False
    old_bundle = str(bundle)
    try:
        ix = SentenceIndex.open(before.index_dir)
        try:
            old_bundle = str((ix.model or {}).get("bundle") or old_bundle)
        finally:
            ix.close()
    except Exception:
        log.warning(
            "cannot read which bundle the retired index %s was encoded with; restore will use %s",
            before.index_dir,
            old_bundle,
            exc_info=True,
        )
    model_store.select(
        home, bundle, previous={"bundle": old_bundle, "generation": before.id, "retired_at": now_iso()}
    )
    model_store.prune_models(home)
    return True


def begin(home: Path, catalog: Catalog, current_bundle: Path) -> dict[str, Any]:
    """Check that there is a previous model to restore and journal the plan (what
    :func:`apply` does, and what the current model becomes: the next ``previous``); raises
    :class:`LookupError` naming what is missing. The caller holds the home's writer lock."""
    prev = model_store.load(home).get("previous") or {}
    gen = catalog.get_generation(int(prev["generation"])) if prev.get("generation") is not None else None
    if gen is None or gen.status != "retired" or not _on_disk(gen):
        raise LookupError("no previous model to restore (nothing was switched, or its index is gone)")
    bundle = Path(prev["bundle"])
    if not (bundle / "config.json").is_file():
        raise LookupError(f"the previous model's bundle is gone: {bundle}")
    current = catalog.active_generation()
    # The plan first: the steps write three stores, and whichever one a crash interrupts,
    # the next engine to open this home redoes them all (finish).
    plan = {
        "generation": gen.id,
        "bundle": str(bundle),
        "retired_at": prev.get("retired_at") or "",
        "from_generation": None if current is None else current.id,
        "from_bundle": str(current_bundle),
        "from_retired_at": now_iso(),
    }
    model_store.begin_restore(home, plan)
    crashpoints.reached(JOURNALED)
    return plan


def apply(home: Path, catalog: Catalog, plan: dict[str, Any]) -> int:
    """Carry out a restore's plan; every step can be redone after a crash. Returns how many
    documents deleted since the switch were dropped from the restored index. The caller holds
    the writer lock, then points its engine at the plan's bundle and reloads its reader."""
    gen = catalog.get_generation(int(plan["generation"]))
    assert gen is not None
    live_keys = TextStore(catalog).keys()
    ix = SentenceIndex.open(gen.index_dir, writable=True)
    try:
        stale = ix.doc_keys() - live_keys  # documents deleted since it was retired
        for key in stale:
            ix.delete_document(key)
        ix.commit()
    finally:
        ix.close()
    crashpoints.reached(STALE_DELETED)
    with catalog.transaction():
        catalog.activate_generation(gen.id)
        if plan.get("from_generation") is not None:
            # Files indexed before the switch are in the restored index as they are; the rest
            # are re-indexed by the next run.
            catalog.move_files_to_generation(gen.id, plan["from_generation"], plan.get("retired_at") or "")
    crashpoints.reached(ACTIVATED)
    model_store.end_restore(
        home,
        Path(plan["bundle"]),
        previous=None
        if plan.get("from_generation") is None
        else {
            "bundle": plan["from_bundle"],
            "generation": plan["from_generation"],
            "retired_at": plan["from_retired_at"],
        },
    )
    crashpoints.reached(SELECTED)
    return len(stale)


def finish(
    home: Path,
    catalog: Catalog,
    writing: Callable[[str], AbstractContextManager[object]],
    apply_plan: Callable[[dict[str, Any]], int],
) -> str | None:
    """Finish a restore a crash interrupted, under the writer lock ``writing(task)`` gives:
    ``apply_plan`` (the engine's :func:`apply`) when the plan's generation and bundle are
    still there, else the plan is dropped and the current model stays. Returns what was done,
    one line (logged), or None when there was nothing to do."""
    if model_store.pending_restore(home) is None:
        return None
    with writing("finishing an interrupted restore"):
        plan = model_store.pending_restore(home)  # read again: another process may have
        if plan is None:  # finished it meanwhile
            return None
        gen = catalog.get_generation(int(plan["generation"]))
        active = catalog.active_generation()
        usable = (
            _on_disk(gen)
            and gen is not None
            and (gen.status == "retired" or (active is not None and active.id == gen.id))
            and (Path(plan["bundle"]) / "config.json").is_file()
        )
        if not usable:
            data = model_store.load(home)
            data.pop("restoring", None)
            model_store.save(home, data)
            note = (
                f"an interrupted restore of {plan['bundle']} (generation {plan['generation']}) could"
                " not be finished: its index or bundle is gone; the current model stays"
            )
        else:
            apply_plan(plan)
            note = (
                f"an interrupted restore was finished: {plan['bundle']} (generation"
                f" {plan['generation']}) is live; the next indexing run brings it up to date"
            )
    log.warning("%s", note)
    return note
