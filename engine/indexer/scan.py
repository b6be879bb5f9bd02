"""What a run must do: the units under its targets that changed since the catalog last
saw them (size and mtime, then content hash), and the catalog paths that are gone."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.catalog.store import Catalog, DocumentRow, FileState, MessageRow, Source
from engine.catalog.texts import TextStore
from engine.ingest.documents import ExtractionError
from engine.ingest.walk import Rules, under, unit_hash, unit_stat, walk

log = logging.getLogger(__name__)

@dataclass
class Target:
    """What a run covers: a whole source (``subtree`` None) or a file or folder inside it."""

    source: Source
    subtree: Path | None = None


@dataclass
class Job:
    """One unit to (re-)index in this run."""

    path: str
    source_id: int
    size: int
    mtime_ns: int
    prev: FileState | None
    keep: bool = False  # documents with an unchanged digest may be kept
    hash: str | None = None
    old_keys: set[str] = field(default_factory=set)
    digests: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    docs: list[DocumentRow] = field(default_factory=list)
    messages: list[MessageRow] = field(default_factory=list)
    kept_docs: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    unit_error: str | None = None
    name_only: bool = False  # its content could not be read: indexed by its name only
    sentences: int = 0
    outstanding: int = 0
    extracted: bool = False


@dataclass
class ScanResult:
    """One target's scan: the jobs, the catalog paths gone from disk, and counts."""

    jobs: list[Job]
    deleted: list[str]
    unchanged: int
    touched: int


def scan(
    catalog: Catalog,
    store: TextStore,
    target: Target,
    generation: int | None,
    upgrading: bool,
    counted: Callable[[int], None] | None = None,
) -> ScanResult:
    """Jobs for the changed units of one target, and the catalog paths to delete.

    ``generation``: the generation the run writes (a unit indexed for another is redone);
    ``upgrading``: the index predates the current records, so every indexed unit is
    re-read; ``counted`` is told the number of units found so far, every 500."""
    src = target.source
    root = Path(src.path)
    units: list[tuple[str, int, int]] = []
    walk_errors: dict[str, str] = {}
    if target.subtree is None:
        items: Iterator[Path | ExtractionError] = walk(root, src.exclude)
        scope = str(root)
    else:
        scope = str(target.subtree)
        items = walk_subtree(root, src.exclude, target.subtree)
    for item in items:
        if isinstance(item, ExtractionError):
            walk_errors[item.path] = item.reason
            continue
        try:
            size, mtime = unit_stat(item)
        except OSError as exc:
            walk_errors[str(item)] = exc.strerror or str(exc)
            continue
        units.append((str(item), size, mtime))
        if counted is not None and len(units) % 500 == 0:
            counted(len(units))
    changes = catalog.scan_changes(src.id, units, hasher=unit_hash)
    known = {f.path: f for f in catalog.files(src.id)}
    redo = set(store.journal_units())
    todo = set(changes.to_index)
    for path in changes.unchanged:
        st = known.get(path)
        # A failed file is in the index by its name (it has a generation; one failed
        # before names were indexed is re-read by the upgrade); it follows a new model.
        indexed = st is not None and (
            st.status == "ok" or (st.status == "error" and (st.generation is not None or upgrading))
        )
        if indexed and (st.generation != generation or path in redo or upgrading):
            todo.add(path)
    stats = {p: (s, m) for p, s, m in units}
    jobs = []
    for path in sorted(todo):
        size, mtime = stats[path]
        jobs.append(Job(path, src.id, size, mtime, known.get(path)))
    deleted = [p for p in changes.deleted if under(p, scope) and p not in walk_errors]
    for path, reason in walk_errors.items():
        if under(path, scope):
            catalog.record_error(path, src.id, reason)
            log.info("%s: %s", path, reason)
    if jobs:
        catalog.mark_pending(src.id, [(j.path, j.size, j.mtime_ns) for j in jobs])
    return ScanResult(
        jobs,
        deleted,
        len(changes.unchanged) - (len(todo) - len(set(changes.to_index))),
        len(changes.touched),
    )


def walk_subtree(root: Path, exclude: Sequence[str], subtree: Path) -> Iterator[Path | ExtractionError]:
    """The units of a file or folder inside a source, by the source's rules (a Maildir
    comes with its Maildir++ sub-folders, as in a full walk); nothing for a path that is
    gone (its catalog rows are dropped as deleted) unless it is a broken link."""
    subtree = Path(os.path.abspath(subtree))
    if not os.path.exists(subtree) and not os.path.islink(subtree):
        return
    yield from Rules(root, exclude).walk(subtree)
