"""A full disk under the data folder: detected before a commit and recognised during one.

Before each commit the indexer compares the free space of the data folder's disk with what
the commit will write (:func:`commit_estimate`); short of it, the run stops *before* writing
anything, so the last commit stays as it was. A disk that fills anyway (another program
writing, a quota) makes SQLite, tantivy or numpy fail half-way through a write; every
store's commit is atomic (SQLite's transaction, tantivy's meta.json, the column manifest),
so the failed commit is rolled back and the journal makes the next run redo its files.

Either way the run ends with :class:`DiskFullError`: one line that names the data folder, the
space left and about how much more the run needs. Nothing is lost; the next run, once space
is free, continues from the last commit.
"""

from __future__ import annotations

import errno
import re
import shutil
import sqlite3
from pathlib import Path

#: Below this much free space nothing is started (a commit also writes the catalog's
#: journal, tantivy's meta files and the column manifest).
MIN_FREE_BYTES = 4 * 1024 * 1024
#: Index bytes per sentence (tantivy text and stored fields + columns; README: ~3.7 KB),
#: doubled for a commit: segment merges write the merged copy before the old one goes.
BYTES_PER_SENTENCE = 4096
#: A write error that does not say why counts as a full disk when less than this is free.
NEARLY_FULL_BYTES = 1024 * 1024
MERGE_FACTOR = 2

#: numpy's message for a short write (it gives no errno).
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
_FULL_WORDS = ("no space left", "disk is full", "database or disk is full", "os error 28", "quota exceeded")


def free_bytes(path: Path | str) -> int | None:
    """Free bytes on the disk holding ``path`` (its nearest existing parent); None if unknown."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free)
    except OSError:
        return None


def fmt_bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.0f} MB"
    return f"{max(n, 0) // 1024} KB"


class DiskFullError(OSError):
    """The disk of the data folder is full: the run stopped at its last commit."""

    def __init__(self, home: Path | str, free: int | None, needed: int, files_done: int = 0) -> None:
        self.home = Path(home)
        self.free = free
        self.needed = max(needed, MIN_FREE_BYTES)
        self.files_done = files_done
        left = "" if free is None else f" ({fmt_bytes(free)} free)"
        super().__init__(
            errno.ENOSPC,
            f"the disk holding the data folder {self.home} is full{left}: indexing stopped and the index"
            f" answers as of its last commit. It needs about {fmt_bytes(self.needed)} free there: free some"
            " space (or move the data folder with SPARCDESK_HOME), then run the same command again to continue",
        )

    def __str__(self) -> str:
        return str(self.strerror)


def is_disk_full(exc: BaseException, home: Path | str) -> bool:
    """Whether ``exc`` (from SQLite, tantivy, numpy or a plain write) comes of a full disk.

    ENOSPC/EDQUOT, or the words the libraries use for it; a write error that says nothing
    (numpy's "N requested and M written", SQLite's "disk I/O error") counts when the disk
    is nearly full right now."""
    if isinstance(exc, DiskFullError):
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return True
    text = str(exc).lower()
    if any(w in text for w in _FULL_WORDS) or _SHORT_WRITE.search(text):
        return True
    if isinstance(exc, (OSError, sqlite3.Error, ValueError, RuntimeError)):
        free = free_bytes(home)
        return free is not None and free < max(MIN_FREE_BYTES, NEARLY_FULL_BYTES)
    return False


def commit_estimate(sentences: int, text_bytes: int) -> int:
    """Bytes a commit of ``sentences`` new sentences and ``text_bytes`` of document text may
    write (index with merge headroom, the texts and journal in the catalog's WAL)."""
    return sentences * BYTES_PER_SENTENCE * MERGE_FACTOR + 2 * text_bytes + MIN_FREE_BYTES


def check(home: Path | str, needed: int, files_done: int = 0) -> None:
    """Raise :class:`DiskFullError` unless the data folder's disk has ``needed`` bytes free."""
    free = free_bytes(home)
    if free is not None and free < needed:
        raise DiskFullError(home, free, needed, files_done)


__all__ = ["DiskFullError", "check", "commit_estimate", "free_bytes", "is_disk_full"]
