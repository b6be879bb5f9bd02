"""The sources of an :class:`engine.api.facade.Engine`: adding a folder or mail store (a
path inside a source is covered by it; a folder holding sources takes them over), removing
one crash-safe (:mod:`engine.upkeep.removal`), listing them.

:class:`EngineSources` is a part of ``Engine`` (its base class), split off to keep the facade
readable; it uses the engine's catalog connection (``_cat``), writer lock (``_writing``,
``_write_lock``), index reader (``_invalidate_reader``) and watcher.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from engine.api.records import SourceInfo
from engine.catalog.store import Source
from engine.ingest.documents import SKIPPED_PREFIX
from engine.ingest.walk import source_kind, under
from engine.upkeep import removal, repair

log = logging.getLogger(__name__)


class EngineSources:
    """Sources: :meth:`add_source`, :meth:`remove_source`, :meth:`sources` (see the module)."""

    @staticmethod
    def _abs(path: Path | str) -> Path:
        return Path(os.path.abspath(Path(path).expanduser()))

    def _find_source(self, path: Path) -> Source | None:
        """The source that is ``path`` or contains it (the deepest one)."""
        best: Source | None = None
        for s in self._cat().sources():
            if under(str(path), s.path) and (best is None or len(s.path) > len(best.path)):
                best = s
        return best

    def _info(self, s: Source, counts: dict[str, int] | None = None) -> SourceInfo:
        c = counts if counts is not None else self._cat().counts(s.id)
        return SourceInfo(
            s.path,
            s.kind,
            c["files"],
            c["sentences"],
            self._cat().count_unreadable(SKIPPED_PREFIX, s.id),
            s.last_indexed,
            list(s.exclude),
        )

    def add_source(self, path: Path, exclude: Sequence[str] = ()) -> SourceInfo:
        """Register a folder or mail store (mbox file, Maildir folder, .eml) for indexing.

        A path inside an existing source is already covered: that source is returned (with
        ``exclude`` added to it when given). A folder that contains existing sources takes
        them over, with their files, so nothing is re-encoded.
        """
        p = self._abs(path)
        if not os.path.exists(p):
            raise FileNotFoundError(f"no such file or folder: {p}")
        with self._writing("adding a source"):
            info = self._add_source(p, exclude)
            repair.save_sources(self.layout, self._cat().sources())
        if self._watcher is not None:
            self._watcher.refresh()  # a running watch covers the new source at once
        return info

    def _add_source(self, p: Path, exclude: Sequence[str]) -> SourceInfo:
        cat = self._cat()
        outer = self._find_source(p)
        if outer is not None and outer.path != str(p):
            if exclude:
                cat.add_source(outer.path, outer.kind, list(dict.fromkeys([*outer.exclude, *exclude])))
                outer = cat.get_source(outer.id) or outer
            return self._info(outer)
        sid = cat.add_source(str(p), source_kind(p), list(exclude))
        inner = [s for s in cat.sources() if s.id != sid and under(s.path, str(p))]
        if inner:
            with cat.transaction():
                for s in inner:
                    cat.merge_source(s.id, sid)
        src = cat.get_source(sid)
        assert src is not None
        return self._info(src)

    def remove_source(self, path: Path) -> None:
        """Forget a source and delete its documents from the index (all live generations),
        crash-safe (:mod:`engine.upkeep.removal`)."""
        p = self._abs(path)
        cat = self._cat()
        src = next((s for s in cat.sources() if s.path == str(p)), None)
        if src is None:
            raise KeyError(f"not a source: {p}")
        with self._writing("removing a source"), self._write_lock:
            removal.remove(cat, src)
            repair.save_sources(self.layout, cat.sources())
            self._invalidate_reader()
        if self._watcher is not None:
            self._watcher.refresh()

    def _finish_removals(self) -> int:
        """Finish a ``remove`` a crash interrupted (:func:`engine.upkeep.removal.finish`).
        Returns the number of documents deleted from the index; 0 when none."""
        cat = self._cat()
        if cat.read_only or not removal.orphans(cat):
            return 0
        with self._writing("finishing an interrupted removal"), self._write_lock:
            n = removal.finish(cat)  # reads the journal again: another process may have finished it
            self._invalidate_reader()
        log.info("finished an interrupted removal: %d documents deleted from the index", n)
        return n

    def sources(self) -> list[SourceInfo]:
        cat = self._cat()
        return [self._info(s) for s in cat.sources()]
