"""The crash-safe removal of a source (issue 40: out of the facade).

The catalog goes first, with a journal row for every document the index still holds ("may
be in the index without the catalog knowing", :mod:`engine.indexer.commit`); then the index of
every live or building generation; then the journal is cleared. A crash after the first step
leaves journal rows of units under no source, which the next open or indexing run deletes
from the index (:func:`finish`): the catalog never claims documents the index lost, and no
sentence stays that the catalog cannot find. The crash points between the steps
(:mod:`engine.home.crashpoints`) are :data:`JOURNALED` and :data:`INDEXED`.

The caller holds the home's writer lock around :func:`remove` and :func:`finish`, then
reloads its index reader (:meth:`engine.api.facade.Engine.remove_source`).
"""

from __future__ import annotations

from pathlib import Path

from engine.catalog.store import Catalog, Source
from engine.catalog.texts import TextStore
from engine.home import crashpoints
from engine.index.sentences import SentenceIndex
from engine.ingest.walk import under

#: Crash points: after the catalog forgot the source and journalled its documents, and after
#: the index deleted them.
JOURNALED = "remove:journaled"
INDEXED = "remove:indexed"


def delete_from_indexes(catalog: Catalog, keys: set[str]) -> None:
    """Delete ``keys`` from the index of every generation that answers or is building, one
    commit each."""
    if not keys:
        return
    for gen in catalog.generations():
        if gen.status == "retired" or not (Path(gen.index_dir) / "meta.json").exists():
            continue
        ix = SentenceIndex.open(gen.index_dir, writable=True)
        try:
            for key in keys:
                ix.delete_document(key)
            ix.commit()
        finally:
            ix.close()


def remove(catalog: Catalog, source: Source) -> None:
    """Forget ``source`` and delete its documents from every live index, journalled."""
    store = TextStore(catalog)
    units = [f.path for f in catalog.files(source.id)]
    rows: list[tuple[str, str]] = []
    for unit in units:
        rows += [(unit, d.key) for d in catalog.documents(unit)]
        rows += [(unit, k) for k in store.journal(unit)]
    with catalog.transaction():
        catalog.remove_source(source.id)
        for unit in units:
            store.forget_unit(unit)
        store.journal_keys(rows)
    crashpoints.reached(JOURNALED)
    delete_from_indexes(catalog, {k for _, k in rows})
    crashpoints.reached(INDEXED)
    with catalog.transaction():
        for unit in units:
            store.clear_journal(unit)


def orphans(catalog: Catalog) -> dict[str, set[str]]:
    """The journal rows of units under no source (a removal a crash interrupted): unit ->
    the document keys the index may still hold."""
    store = TextStore(catalog)
    roots = [s.path for s in catalog.sources()]
    return {u: store.journal(u) for u in store.journal_units() if not any(under(u, r) for r in roots)}


def finish(catalog: Catalog) -> int:
    """Finish a removal a crash interrupted: the documents of :func:`orphans` are deleted
    from every live index and their rows cleared. Returns the number of documents."""
    store = TextStore(catalog)
    left = orphans(catalog)
    keys = {k for ks in left.values() for k in ks}
    delete_from_indexes(catalog, keys)
    with catalog.transaction():
        for unit in left:
            store.clear_journal(unit)
    return len(keys)
