"""The catalog's sources and files: the folders and mail stores the user added, every file
with the (size, mtime, content hash) it was indexed at, its status and its last error, and
what a scan of a source changed (:meth:`SourcesAndFiles.scan_changes`). Forgetting a file
forgets its documents and e-mail rows too."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.catalog.connection import CatalogConnection
from engine.catalog.rows import FILE_STATUSES, SOURCE_KINDS, Changes, FileState, Source, now_iso

log = logging.getLogger(__name__)


class SourcesAndFiles(CatalogConnection):
    """Sources and files (part of :class:`engine.catalog.store.Catalog`)."""

    # ---- sources

    def add_source(self, path: str, kind: str = "folder", exclude: Sequence[str] = ()) -> int:
        """Register a source (idempotent by path; updates ``exclude``); returns its id."""
        if kind not in SOURCE_KINDS:
            raise ValueError(f"source kind must be one of {SOURCE_KINDS}")
        sources = self.db["sources"]
        with self.transaction():
            row = next(sources.rows_where("path = ?", [path], select="id"), None)
            if row:
                sources.update(row["id"], {"kind": kind, "exclude": json.dumps(list(exclude))})
                return int(row["id"])
            new = {"path": path, "kind": kind, "added": now_iso(), "exclude": json.dumps(list(exclude))}
            return int(sources.insert(new).last_pk or 0)

    def sources(self) -> list[Source]:
        """All sources, by id."""
        return [self._source(r) for r in self.db["sources"].rows_where(order_by="id")]

    def get_source(self, source_id: int) -> Source | None:
        """One source by id."""
        rows = list(self.db["sources"].rows_where("id = ?", [source_id]))
        return self._source(rows[0]) if rows else None

    @staticmethod
    def _source(r: dict[str, Any]) -> Source:
        return Source(
            r["id"], r["path"], r["kind"], r["added"], r["last_indexed"], json.loads(r["exclude"] or "[]")
        )

    def mark_source_indexed(self, source_id: int, when: str | None = None) -> None:
        """Record that a full pass over the source finished."""
        with self.transaction():
            self._conn.execute(
                "UPDATE sources SET last_indexed = ? WHERE id = ?", (when or now_iso(), source_id)
            )

    def remove_source(self, source_id: int) -> list[str]:
        """Forget a source, its files, documents and messages; returns the document keys to
        delete from the index."""
        with self.transaction():
            paths = [r["path"] for r in self.db["files"].rows_where("source_id = ?", [source_id], select="path")]
            keys: list[str] = []
            for p in paths:
                keys += self._forget_file(p)
            self.db["sources"].delete_where("id = ?", [source_id])
        return keys

    # ---- files

    @staticmethod
    def _file(r: dict[str, Any] | sqlite3.Row) -> FileState:
        return FileState(**{k: r[k] for k in FileState.__dataclass_fields__})

    def file_state(self, path: str) -> FileState | None:
        """The catalog's record of one file."""
        rows = list(self.db["files"].rows_where("path = ?", [path]))
        return self._file(rows[0]) if rows else None

    def files(self, source_id: int | None = None, status: str | None = None) -> list[FileState]:
        """Files, optionally of one source and/or one status, by path."""
        where, args = self._where(source_id, status)
        return [self._file(r) for r in self.db["files"].rows_where(where, args, order_by="path")]

    def upsert_file(self, state: FileState) -> None:
        """Insert or replace a file's row."""
        if state.status not in FILE_STATUSES:
            raise ValueError(f"file status must be one of {FILE_STATUSES}")
        cols = list(FileState.__dataclass_fields__)
        with self.transaction():
            self._conn.execute(
                f"INSERT OR REPLACE INTO files ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [getattr(state, c) for c in cols],
            )

    def mark_pending(self, source_id: int, files: Iterable[tuple[str, int, int]]) -> None:
        """Queue ``(path, size, mtime_ns)`` for indexing: a crash before :meth:`mark_indexed`
        leaves them pending, and the next scan re-queues them."""
        with self.transaction():
            for path, size, mtime_ns in files:
                self._conn.execute(
                    """INSERT INTO files (path, source_id, size, mtime_ns, status, sentences)
                       VALUES (?, ?, ?, ?, 'pending', 0)
                       ON CONFLICT(path) DO UPDATE SET source_id = excluded.source_id,
                         size = excluded.size, mtime_ns = excluded.mtime_ns, status = 'pending'""",
                    (path, source_id, size, mtime_ns),
                )

    def mark_indexed(
        self,
        path: str,
        source_id: int,
        size: int,
        mtime_ns: int,
        content_hash: str | None,
        sentences: int,
        generation: int | None,
    ) -> None:
        """Record a successful indexing of ``path`` (clears any previous error)."""
        self.upsert_file(
            FileState(
                path, source_id, size, mtime_ns, content_hash, "ok", None, sentences, now_iso(), generation
            )
        )

    def record_error(self, path: str, source_id: int, error: str, size: int = 0, mtime_ns: int = 0) -> None:
        """Record that ``path`` failed; it is retried when it changes (or via :meth:`retry_errors`)."""
        with self.transaction():
            self._conn.execute(
                """INSERT INTO files (path, source_id, size, mtime_ns, status, last_error, sentences, indexed_at)
                   VALUES (?, ?, ?, ?, 'error', ?, 0, ?)
                   ON CONFLICT(path) DO UPDATE SET source_id = excluded.source_id, size = excluded.size,
                     mtime_ns = excluded.mtime_ns, status = 'error', last_error = excluded.last_error,
                     sentences = 0, indexed_at = excluded.indexed_at""",
                (path, source_id, size, mtime_ns, error, now_iso()),
            )

    def errors(self, source_id: int | None = None) -> list[FileState]:
        """Files whose last attempt failed."""
        return self.files(source_id, "error")

    def retry_errors(self, source_id: int | None = None) -> list[str]:
        """Set failed files back to pending; returns their paths."""
        where, args = self._where(source_id, "error")
        with self.transaction():
            paths = [r["path"] for r in self.db["files"].rows_where(where, args, select="path")]
            self._conn.execute(f"UPDATE files SET status = 'pending' WHERE {where}", args)
        return paths

    def scan_changes(
        self,
        source_id: int,
        scanned: Iterable[tuple[str, int, int]],
        hasher: Callable[[str], str] | None = None,
    ) -> Changes:
        """Compare a scan of a source, ``(path, size, mtime_ns)`` per file, with the catalog.

        Same size and mtime: unchanged (a failed file stays failed until it changes).
        Otherwise, with ``hasher`` and a stored hash, equal hashes mean only touched: the
        new size/mtime are stored so the next scan is cheap. Files last seen pending are
        re-queued whatever their stat says, since their indexing never finished.
        """
        known = {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self._conn.execute(
                "SELECT path, size, mtime_ns, content_hash, status FROM files WHERE source_id = ?",
                (source_id,),
            )
        }
        ch = Changes()
        seen: set[str] = set()
        touched: list[tuple[int, int, str]] = []
        for path, size, mtime_ns in scanned:
            seen.add(path)
            old = known.get(path)
            if old is None:
                ch.new.append(path)
                continue
            o_size, o_mtime, o_hash, o_status = old
            if o_status == "pending":
                ch.modified.append(path)
            elif o_size == size and o_mtime == mtime_ns:
                ch.unchanged.append(path)
            elif (
                hasher is not None
                and o_hash is not None
                and o_status == "ok"
                and _safe_hash(hasher, path) == o_hash
            ):
                ch.touched.append(path)
                touched.append((size, mtime_ns, path))
            else:
                ch.modified.append(path)
        ch.deleted = sorted(p for p in known if p not in seen)
        if touched:
            with self.transaction():
                self._conn.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", touched)
        return ch

    def remove_file(self, path: str) -> list[str]:
        """Forget a deleted file with its documents and messages; returns the document keys
        to delete from the index."""
        with self.transaction():
            return self._forget_file(path)

    def _forget_file(self, path: str) -> list[str]:
        keys = [r[0] for r in self._conn.execute("SELECT key FROM documents WHERE path = ?", (path,))]
        self._conn.execute("DELETE FROM documents WHERE path = ?", (path,))
        self._conn.execute("DELETE FROM messages WHERE file = ?", (path,))
        self._conn.execute("DELETE FROM files WHERE path = ?", (path,))
        return keys

    def counts(self, source_id: int | None = None) -> dict[str, int]:
        """Files per status, total files and indexed sentences (of one source or all)."""
        where, args = self._where(source_id, None)
        sql = "SELECT status, COUNT(*), COALESCE(SUM(sentences), 0) FROM files"
        if where:
            sql += f" WHERE {where}"
        out = {s: 0 for s in FILE_STATUSES} | {"files": 0, "sentences": 0}
        for status, n, sentences in self._conn.execute(sql + " GROUP BY status", args):
            out[status] = int(n)
            out["files"] += int(n)
            out["sentences"] += int(sentences)
        return out

    def files_in_generation(self, generation_id: int) -> int:
        """Files whose last indexing went into ``generation_id`` (a rebuild's progress)."""
        return self.db["files"].count_where("generation = ?", [generation_id])

    def counts_per_source(self) -> dict[int, dict[str, int]]:
        """:meth:`counts` for every source."""
        return {s.id: self.counts(s.id) for s in self.sources()}

    def file_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        """The content hash of each indexed file among ``paths`` (files never hashed, or
        not indexed, are left out)."""
        paths = list(dict.fromkeys(paths))
        if not paths:
            return {}
        marks = ", ".join("?" * len(paths))
        rows = self.db["files"].rows_where(
            f"path IN ({marks}) AND content_hash IS NOT NULL", paths, select="path, content_hash"
        )
        return {r["path"]: r["content_hash"] for r in rows}

    def merge_source(self, inner: int, into: int) -> None:
        """Source ``inner`` (a folder inside ``into``) becomes part of ``into``: its files
        move over (indexed as they are) and its row goes."""
        with self.transaction():
            self._conn.execute("UPDATE files SET source_id = ? WHERE source_id = ?", [into, inner])
            self.db["sources"].delete_where("id = ?", [inner])

    def file_errors(self) -> list[tuple[str, str, str, str]]:
        """``(path, last_error, indexed_at, status)`` of every file with a reason, by path."""
        rows = self.db["files"].rows_where(
            "last_error IS NOT NULL", select="path, last_error, indexed_at, status", order_by="path"
        )
        return [(r["path"], r["last_error"], r["indexed_at"] or "", r["status"]) for r in rows]

    def count_unreadable(self, skipped_prefix: str, source_id: int | None = None) -> int:
        """Files that could not be read: status ``error``, not a format skipped on purpose
        (``skipped_prefix``; a link to a FIFO is recorded as an error row that is skipped)."""
        where, args = self._where(source_id, "error")
        return self.db["files"].count_where(
            f"{where} AND COALESCE(last_error, '') NOT LIKE ?", [*args, skipped_prefix + "%"]
        )

    def count_errors_starting(self, prefix: str) -> int:
        """How many files have a ``last_error`` that starts with ``prefix``."""
        return self.db["files"].count_where("last_error LIKE ?", [prefix + "%"])

    def move_files_to_generation(self, generation: int, from_generation: int, indexed_before: str) -> None:
        """Files of ``from_generation`` indexed at or before ``indexed_before`` are in
        ``generation`` as they are (a restore: the rest are re-indexed by the next run)."""
        self._conn.execute(
            "UPDATE files SET generation = ? WHERE generation = ? AND indexed_at <= ?",
            [generation, from_generation, indexed_before],
        )

    def forget_generation_files(self, generation: int) -> None:
        """No file is indexed in ``generation`` any more (its index was lost)."""
        self._conn.execute("UPDATE files SET generation = NULL WHERE generation = ?", [generation])


def _safe_hash(hasher: Callable[[str], str], path: str) -> str | None:
    try:
        return hasher(path)
    except OSError as exc:  # counted as modified: indexing it reports why it cannot be read
        log.debug("cannot hash %s: %s", path, exc)
        return None
