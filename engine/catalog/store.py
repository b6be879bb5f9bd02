"""The SQLite catalog: what was indexed, from where, in which state, by which model.

The tantivy index answers questions; the catalog answers "what do I need to (re)index?".
It records every source folder or mail store, every file with the (size, mtime, content
hash) it was indexed at, per-file errors, the documents and e-mail messages extracted from
each file (their keys are the index's ``doc_key``), and the index *generations*: each full
re-encoding (new model, adapted embeddings) builds a new index directory, and the app
switches to it in one transaction when it is complete.

Why SQLite in WAL mode: one file, crash-safe transactions, and readers (the window) never
block the writer (the indexer). The schema is :data:`MIGRATIONS`, one versioned step after
another (every table of the file, the text store's included); writes use plain SQL
inside explicit ``BEGIN IMMEDIATE`` transactions, because sqlite-utils' helpers commit on
their own and would break the atomicity of multi-table updates such as
:meth:`Catalog.activate_generation`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from engine.home import crashpoints
from engine.home.paths import STORE_MARK, from_store, parse_generation, to_store

log = logging.getLogger(__name__)

#: How long a write waits for another connection's transaction (SQLite's busy timeout).
BUSY_TIMEOUT_S = 30.0

FILE_STATUSES = ("ok", "error", "pending")
#: At most this many subjects per ``messages_with_subject`` call (one SQL parameter each).
SUBJECTS_ASKED = 2000
SOURCE_KINDS = ("folder", "mailstore")
GENERATION_STATUSES = ("building", "active", "retired")


@dataclass(frozen=True)
class Migration:
    """One step of the catalog's schema: the statements that take a catalog of schema
    ``version - 1`` to ``version``. A released step never changes (catalogs of every earlier
    version go through it); a new schema appends a step."""

    version: int
    why: str
    statements: tuple[str, ...]


#: Every step from an empty file to the current schema, in order. Each is applied in one
#: transaction that also sets SQLite's ``user_version`` to its ``version``
#: (:meth:`Catalog._migrate`), so a crash leaves the file at the last complete version.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "the catalog's tables. IF NOT EXISTS: before the steps, schema 1 was created one"
        " statement at a time and a process killed meanwhile left some of them at version 0",
        (
            """CREATE TABLE IF NOT EXISTS "sources" (
   "id" INTEGER PRIMARY KEY,
   "path" TEXT NOT NULL,
   "kind" TEXT NOT NULL,
   "added" TEXT NOT NULL,
   "last_indexed" TEXT,
   "exclude" TEXT
)""",
            """CREATE TABLE IF NOT EXISTS "files" (
   "path" TEXT PRIMARY KEY,
   "source_id" INTEGER NOT NULL REFERENCES "sources"("id"),
   "size" INTEGER,
   "mtime_ns" INTEGER,
   "content_hash" TEXT,
   "status" TEXT NOT NULL,
   "last_error" TEXT,
   "sentences" INTEGER,
   "indexed_at" TEXT,
   "generation" INTEGER
)""",
            """CREATE TABLE IF NOT EXISTS "documents" (
   "key" TEXT PRIMARY KEY,
   "path" TEXT,
   "kind" TEXT,
   "title" TEXT,
   "parent_key" TEXT,
   "n_sentences" INTEGER
)""",
            """CREATE TABLE IF NOT EXISTS "messages" (
   "key" TEXT PRIMARY KEY,
   "file" TEXT,
   "message_id" TEXT,
   "thread" TEXT,
   "from_addr" TEXT,
   "to_addrs" TEXT,
   "cc_addrs" TEXT,
   "date" INTEGER,
   "subject" TEXT,
   "mailbox" TEXT
)""",
            """CREATE TABLE IF NOT EXISTS "generations" (
   "id" INTEGER PRIMARY KEY,
   "model_name" TEXT,
   "model_version" TEXT,
   "created" TEXT,
   "status" TEXT NOT NULL,
   "index_dir" TEXT
)""",
            "CREATE UNIQUE INDEX IF NOT EXISTS idx_sources_path ON sources(path)",
            "CREATE INDEX IF NOT EXISTS idx_files_source ON files(source_id)",
            "CREATE INDEX IF NOT EXISTS idx_files_status ON files(status)",
            "CREATE INDEX IF NOT EXISTS idx_documents_path ON documents(path)",
            "CREATE INDEX IF NOT EXISTS idx_messages_file ON messages(file)",
            "CREATE INDEX IF NOT EXISTS idx_messages_thread ON messages(thread)",
            # The database itself enforces "at most one active generation".
            "CREATE UNIQUE INDEX IF NOT EXISTS idx_one_active ON generations(status) WHERE status = 'active'",
        ),
    ),
    Migration(
        2,
        "the text store's tables (engine.catalog.texts) become part of the schema (schema 1 left"
        " them to the first indexing run), and the two e-mail lists read every message: the"
        " senders (from_headers) and the mailboxes (mailbox_units) scanned the messages table"
        " and sorted it for GROUP BY; with these indexes each is one covering index scan",
        (
            """CREATE TABLE IF NOT EXISTS "doc_texts" (
   "key" TEXT PRIMARY KEY,
   "unit" TEXT,
   "digest" TEXT,
   "text" BLOB
)""",
            """CREATE TABLE IF NOT EXISTS "index_journal" (
   "unit" TEXT,
   "key" TEXT,
   PRIMARY KEY ("unit", "key")
)""",
            "CREATE INDEX IF NOT EXISTS idx_doc_texts_unit ON doc_texts(unit)",
            "CREATE INDEX idx_messages_from ON messages(from_addr)",
            "CREATE INDEX idx_messages_mailbox ON messages(mailbox, file)",
        ),
    ),
    Migration(
        3,
        "a message's Bcc addresses (engine.ingest.mail.message_fields): the sender's copy of a"
        " message keeps them, and the preview shows them; rows from before hold none until"
        " their message is indexed again (records version 5 re-reads every file once)",
        ('ALTER TABLE "messages" ADD COLUMN "bcc_addrs" TEXT',),
    ),
    Migration(
        4,
        "messages by their subject in lower case (messages_with_subject): a question naming a"
        " message by a subject of stopwords (\"where are you\") finds it, which no index term"
        " reaches",
        ("CREATE INDEX idx_messages_subject ON messages(lower(subject))",),
    ),
    Migration(
        5,
        "where a reply's quoted history starts in its text (engine.ingest.mail.QUOTED_AT): the"
        " preview dims what the reply quotes; rows from before hold none (shown undimmed) until"
        " their message is indexed again",
        ('ALTER TABLE "messages" ADD COLUMN "quoted_at" INTEGER',),
    ),
)
#: The catalog's schema, kept in SQLite's ``user_version``: the last step of
#: :data:`MIGRATIONS`. Opening a catalog of an older schema applies the steps it lacks; one
#: of a newer schema is refused with :class:`CatalogVersionError` and left as it is.
SCHEMA_VERSION = MIGRATIONS[-1].version


class CatalogVersionError(RuntimeError):
    """The catalog was written by a newer sparcdesk (a newer schema than this one reads)."""

    def __init__(self, path: Path, found: int) -> None:
        self.path, self.found = Path(path), found
        super().__init__(
            f"the catalog {path} was written by a newer sparcdesk (catalog schema {found}; this version"
            f" reads schema {SCHEMA_VERSION} and older): run that newer sparcdesk, or, to index afresh"
            f" with this one, move the data folder {Path(path).parent} aside and add your folders again"
        )


def now_iso() -> str:
    """UTC timestamp in ISO 8601, second precision (what every ``*_at`` column holds)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Source:
    """A folder or mail store the user added."""

    id: int
    path: str
    kind: str
    added: str
    last_indexed: str | None
    exclude: list[str] = field(default_factory=list)


@dataclass
class FileState:
    """What the catalog knows about one file. ``mtime_ns`` is ``os.stat().st_mtime_ns``."""

    path: str
    source_id: int
    size: int
    mtime_ns: int
    content_hash: str | None = None
    status: str = "pending"
    last_error: str | None = None
    sentences: int = 0
    indexed_at: str | None = None
    generation: int | None = None


@dataclass
class Changes:
    """Result of comparing a scan with the catalog.

    ``new``: never seen. ``modified``: size/mtime differ and the hash (when checked) too, or
    a previous run left the file pending. ``touched``: size or mtime changed but the hash
    did not (the catalog was updated, nothing to index). ``deleted``: in the catalog under
    this source but not in the scan. ``unchanged``: same size and mtime.
    """

    new: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def to_index(self) -> list[str]:
        """Files that need (re-)indexing."""
        return self.new + self.modified


@dataclass
class DocumentRow:
    """One indexed document (a file, an e-mail, an attachment); ``key`` is the index doc_key."""

    key: str
    path: str
    kind: str
    title: str = ""
    parent_key: str | None = None
    n_sentences: int = 0


@dataclass
class MessageRow:
    """Header fields of one e-mail; ``key`` is its document key, ``file`` the file holding it."""

    key: str
    file: str
    message_id: str = ""
    thread: str = ""
    from_addr: str = ""
    to_addrs: list[str] = field(default_factory=list)
    cc_addrs: list[str] = field(default_factory=list)
    date: int | None = None
    subject: str = ""
    mailbox: str = ""
    bcc_addrs: list[str] = field(default_factory=list)
    #: where the quoted history of a reply starts in its text (None: it quotes nothing)
    quoted_at: int | None = None


@dataclass
class Generation:
    """One index build with one model; at most one is ``active``."""

    id: int
    model_name: str
    model_version: str
    created: str
    status: str
    index_dir: str


def _store_params(params: Any) -> Any:
    """Parameters with every ``str`` in its stored form (see :func:`engine.home.paths.to_store`)."""
    if isinstance(params, dict):
        return {k: to_store(v) if isinstance(v, str) else v for k, v in params.items()}
    return [to_store(v) if isinstance(v, str) else v for v in params]


def _stored_row(_cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Row factory: stored forms back to the ``str`` they were made from."""
    for v in row:
        if v.__class__ is str and v.startswith(STORE_MARK):
            return tuple(from_store(x) if x.__class__ is str else x for x in row)
    return row


class _Connection(sqlite3.Connection):
    """A connection that stores file names that are not valid UTF-8 losslessly.

    Such names reach Python as ``str`` with lone surrogates, which sqlite3 cannot encode:
    one of them used to stop every indexing run. Every ``str`` parameter goes through
    :func:`engine.home.paths.to_store` (a no-op for valid text) and every row comes back through
    :func:`engine.home.paths.from_store`, so the rest of the engine never sees the difference."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.row_factory = _stored_row

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        return super().execute(sql, _store_params(parameters))

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> sqlite3.Cursor:  # type: ignore[override]
        return super().executemany(sql, (_store_params(p) for p in seq_of_parameters))


class Catalog:
    """The catalog database (one per user profile)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Every document's text is in here: owner only (SQLite gives its -wal and -shm
            # files the database file's mode). Never open and close a descriptor of an
            # existing database: closing it drops every POSIX lock this process holds on the
            # file, SQLite's included, and another process may then checkpoint and remove the
            # WAL under this one's open connections (their commits are lost).
            try:
                if not self.path.exists():
                    os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
                elif os.name == "posix" and (os.stat(self.path).st_mode & 0o077):
                    os.chmod(self.path, 0o600)
            except FileExistsError:
                pass  # another process created it between the two calls, owner only as well
            except OSError as exc:  # opening says what is wrong, if anything is
                log.warning("cannot make %s readable by its owner only: %s", self.path, exc)
        self._depth = 0
        #: Opened read-only as the file stands (a full disk: SQLite could not even create its
        #: -wal/-shm files); answers questions, refuses writes.
        self.read_only = False
        try:
            self._open(str(path))
        except sqlite3.OperationalError as exc:
            from engine.home import diskspace

            free = diskspace.free_bytes(self.path)
            if str(path) == ":memory:" or free is None or free >= diskspace.MIN_FREE_BYTES:
                raise
            conn = getattr(self, "_conn", None)  # None: connecting itself failed
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error as close_exc:
                    log.debug("closing the failed connection to %s: %s", self.path, close_exc)
            log.warning("%s opened read-only (%s; %s free)", self.path, exc, diskspace.fmt_bytes(free))
            self._open_read_only()

    def _open(self, path: str) -> None:
        # Autocommit mode: transactions are explicit (see module docstring); a long busy
        # timeout because the indexer and the window share the file.
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False, factory=_Connection
        )
        self.db = sqlite_utils.Database(conn)
        self._conn = conn
        if path != ":memory:":
            self.db.enable_wal()
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        self._migrate()

    def _open_read_only(self) -> None:
        from urllib.parse import quote

        conn = sqlite3.connect(
            f"file:{quote(str(self.path.resolve()))}?immutable=1",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        self.db = sqlite_utils.Database(conn)
        self._conn = conn
        self.read_only = True
        found = self.schema_version()  # an older file is read as it is; a newer one refused
        if found > SCHEMA_VERSION:
            conn.close()
            raise CatalogVersionError(self.path, found)

    # ---- lifecycle

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write transaction; nested calls join the outer one."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._conn.execute("ROLLBACK")
            raise
        self._depth = 0
        self._conn.execute("COMMIT")

    def schema_version(self) -> int:
        """The schema of the file as it stands (SQLite's ``user_version``)."""
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Bring the file to :data:`SCHEMA_VERSION`, one :data:`MIGRATIONS` step per
        transaction; refuse a newer file (closed, untouched).

        A file at this schema is only read: opening a catalog another process is writing
        must not wait for that process's transaction. Otherwise each step reads the version
        again inside its write transaction (another process may have upgraded the file
        meanwhile) and sets ``user_version`` in the same transaction as its statements
        (SQLite's DDL and the header are transactional), so a kill at any instant leaves the
        file at the last complete version, and the next open goes on from there."""
        found = self.schema_version()
        if found == SCHEMA_VERSION:
            return
        if found < SCHEMA_VERSION:
            if found:
                log.info("upgrading the catalog %s from schema %d to %d", self.path, found, SCHEMA_VERSION)
            for step in MIGRATIONS:
                if step.version <= found:
                    continue
                with self.transaction():
                    if self.schema_version() >= step.version:
                        continue
                    for sql in step.statements:
                        self._conn.execute(sql)
                    self._conn.execute(f"PRAGMA user_version = {step.version}")
                    crashpoints.reached(f"catalog:migrate-{step.version}")
            found = self.schema_version()
        if found > SCHEMA_VERSION:
            self._conn.close()
            raise CatalogVersionError(self.path, found)

    # ---- sources

    def add_source(self, path: str, kind: str = "folder", exclude: Sequence[str] = ()) -> int:
        """Register a source (idempotent by path; updates ``exclude``); returns its id."""
        if kind not in SOURCE_KINDS:
            raise ValueError(f"source kind must be one of {SOURCE_KINDS}")
        with self.transaction():
            row = self._conn.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
            if row:
                self._conn.execute(
                    "UPDATE sources SET kind = ?, exclude = ? WHERE id = ?",
                    (kind, json.dumps(list(exclude)), row[0]),
                )
                return int(row[0])
            cur = self._conn.execute(
                "INSERT INTO sources (path, kind, added, exclude) VALUES (?, ?, ?, ?)",
                (path, kind, now_iso(), json.dumps(list(exclude))),
            )
            return int(cur.lastrowid or 0)

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
            paths = [
                r[0] for r in self._conn.execute("SELECT path FROM files WHERE source_id = ?", (source_id,))
            ]
            keys: list[str] = []
            for p in paths:
                keys += self._forget_file(p)
            self._conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
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

    @staticmethod
    def _where(source_id: int | None, status: str | None) -> tuple[str | None, list[Any]]:
        parts: list[str] = []
        args: list[Any] = []
        if source_id is not None:
            parts.append("source_id = ?")
            args.append(source_id)
        if status is not None:
            parts.append("status = ?")
            args.append(status)
        return (" AND ".join(parts) or None), args

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
            paths = [r[0] for r in self._conn.execute(f"SELECT path FROM files WHERE {where}", args)]
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
        row = self._conn.execute(
            "SELECT COUNT(*) FROM files WHERE generation = ?", (generation_id,)
        ).fetchone()
        return int(row[0])

    def counts_per_source(self) -> dict[int, dict[str, int]]:
        """:meth:`counts` for every source."""
        return {s.id: self.counts(s.id) for s in self.sources()}

    # ---- documents and messages

    def replace_documents(self, path: str, documents: Sequence[DocumentRow]) -> list[str]:
        """Replace the documents extracted from ``path``; returns the keys that existed before
        (the indexer deletes those from the index before adding the new ones)."""
        with self.transaction():
            old = [r[0] for r in self._conn.execute("SELECT key FROM documents WHERE path = ?", (path,))]
            self._conn.execute("DELETE FROM documents WHERE path = ?", (path,))
            self._conn.executemany(
                """INSERT OR REPLACE INTO documents (key, path, kind, title, parent_key, n_sentences)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                [(d.key, d.path, d.kind, d.title, d.parent_key, d.n_sentences) for d in documents],
            )
        return old

    def documents(self, path: str) -> list[DocumentRow]:
        """Documents extracted from one file."""
        return [
            DocumentRow(
                r["key"], r["path"], r["kind"], r["title"] or "", r["parent_key"], r["n_sentences"] or 0
            )
            for r in self.db["documents"].rows_where("path = ?", [path], order_by="key")
        ]

    def get_document(self, key: str) -> DocumentRow | None:
        """One document by key."""
        rows = list(self.db["documents"].rows_where("key = ?", [key]))
        if not rows:
            return None
        r = rows[0]
        return DocumentRow(
            r["key"], r["path"], r["kind"], r["title"] or "", r["parent_key"], r["n_sentences"] or 0
        )

    def file_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        """The content hash of each indexed file among ``paths`` (files never hashed, or
        not indexed, are left out)."""
        paths = list(dict.fromkeys(paths))
        if not paths:
            return {}
        marks = ", ".join("?" * len(paths))
        rows = self.db.execute(
            f"SELECT path, content_hash FROM files WHERE path IN ({marks}) AND content_hash IS NOT NULL", paths
        ).fetchall()
        return {path: h for path, h in rows}

    def messages_with_subject(self, subjects: Iterable[str]) -> list[str]:
        """Keys of the messages whose subject, in lower case, is one of ``subjects`` (give
        them in lower case; SQLite lowers ASCII letters only, so a subject with other
        capitals is found as written in lower case by Python, if at all)."""
        subjects = list(dict.fromkeys(subjects))[:SUBJECTS_ASKED]
        if not subjects:
            return []
        marks = ", ".join("?" * len(subjects))
        rows = self.db.execute(f"SELECT key FROM messages WHERE lower(subject) IN ({marks})", subjects).fetchall()
        return [r[0] for r in rows]

    def upsert_messages(self, messages: Sequence[MessageRow]) -> None:
        """Insert or replace e-mail header rows."""
        with self.transaction():
            self._conn.executemany(
                """INSERT OR REPLACE INTO messages (key, file, message_id, thread, from_addr, to_addrs,
                   cc_addrs, date, subject, mailbox, bcc_addrs, quoted_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (
                        m.key,
                        m.file,
                        m.message_id,
                        m.thread,
                        m.from_addr,
                        json.dumps(list(m.to_addrs)),
                        json.dumps(list(m.cc_addrs)),
                        m.date,
                        m.subject,
                        m.mailbox,
                        json.dumps(list(m.bcc_addrs)),
                        m.quoted_at,
                    )
                    for m in messages
                ],
            )

    def merge_source(self, inner: int, into: int) -> None:
        """Source ``inner`` (a folder inside ``into``) becomes part of ``into``: its files
        move over (indexed as they are) and its row goes."""
        with self.transaction():
            self._conn.execute("UPDATE files SET source_id = ? WHERE source_id = ?", [into, inner])
            self._conn.execute("DELETE FROM sources WHERE id = ?", [inner])

    def file_errors(self) -> list[tuple[str, str, str, str]]:
        """``(path, last_error, indexed_at, status)`` of every file with a reason, by path."""
        return [
            (p, e, w or "", st)
            for p, e, w, st in self._conn.execute(
                "SELECT path, last_error, indexed_at, status FROM files WHERE last_error IS NOT NULL ORDER BY path"
            ).fetchall()
        ]

    def count_unreadable(self, skipped_prefix: str, source_id: int | None = None) -> int:
        """Files that could not be read: status ``error``, not a format skipped on purpose
        (``skipped_prefix``; a link to a FIFO is recorded as an error row that is skipped)."""
        where, args = self._where(source_id, "error")
        sql = f"SELECT COUNT(*) FROM files WHERE {where} AND COALESCE(last_error, '') NOT LIKE ?"
        return int(self._conn.execute(sql, [*args, skipped_prefix + "%"]).fetchone()[0])

    def count_errors_starting(self, prefix: str) -> int:
        """How many files have a ``last_error`` that starts with ``prefix``."""
        return int(self._conn.execute("SELECT COUNT(*) FROM files WHERE last_error LIKE ?", [prefix + "%"]).fetchone()[0])

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

    def delete_messages(self, keys: Iterable[str]) -> None:
        """Drop the e-mail header rows of documents that left their unit (inside the
        caller's transaction: ``replace_documents`` keeps the messages table)."""
        self._conn.executemany("DELETE FROM messages WHERE key = ?", [(k,) for k in keys])

    @staticmethod
    def _message(r: dict[str, Any]) -> MessageRow:
        return MessageRow(
            r["key"],
            r["file"],
            r["message_id"] or "",
            r["thread"] or "",
            r["from_addr"] or "",
            json.loads(r["to_addrs"] or "[]"),
            json.loads(r["cc_addrs"] or "[]"),
            r["date"],
            r["subject"] or "",
            r["mailbox"] or "",
            json.loads(r.get("bcc_addrs") or "[]"),
            r.get("quoted_at"),
        )

    def message(self, key: str) -> MessageRow | None:
        """One message by document key."""
        rows = list(self.db["messages"].rows_where("key = ?", [key]))
        return self._message(rows[0]) if rows else None

    def thread(self, thread: str) -> list[MessageRow]:
        """Messages of one thread, oldest first."""
        return [
            self._message(r) for r in self.db["messages"].rows_where("thread = ?", [thread], order_by="date")
        ]

    def from_headers(self, containing: str = "") -> list[tuple[str, int]]:
        """Distinct From headers of the stored messages with how many each sent (only those
        containing ``containing``, ASCII case-insensitive), for sender suggestions and filters."""
        sql = "SELECT from_addr, COUNT(*) FROM messages WHERE from_addr != ''"
        args: list[Any] = []
        if containing:
            sql += " AND from_addr LIKE ? ESCAPE '\\'"
            args.append("%" + re.sub(r"([%_\\])", r"\\\1", containing) + "%")
        return [(str(h), int(n)) for h, n in self._conn.execute(sql + " GROUP BY from_addr", args)]

    def mailbox_units(self) -> list[tuple[str, str, int]]:
        """(mailbox name, unit holding the messages, message count) of the stored messages: a
        Maildir folder or mbox file per store, an e-mail file per message otherwise."""
        sql = "SELECT mailbox, file, COUNT(*) FROM messages WHERE mailbox != '' GROUP BY mailbox, file"
        return [(str(m), str(f), int(n)) for m, f, n in self._conn.execute(sql)]

    # ---- generations

    def _generation(self, r: dict[str, Any]) -> Generation:
        return Generation(
            r["id"],
            r["model_name"] or "",
            r["model_version"] or "",
            r["created"],
            r["status"],
            self._local_dir(r["index_dir"] or ""),
        )

    def _local_dir(self, index_dir: str) -> str:
        """A generation's folder in this catalog's data folder: generations live in
        ``HOME/index/gen-N`` beside the catalog, so a data folder that was moved or copied
        reads its own index wherever the stored path points."""
        if not index_dir or str(self.path) == ":memory:":
            return index_dir
        stored = Path(index_dir)
        if stored.parent.name != "index" or parse_generation(stored.name) is None:
            return index_dir
        return str(Path(os.path.abspath(self.path.parent)) / "index" / stored.name)

    def create_generation(self, model_name: str, model_version: str, index_dir: str) -> int:
        """Start building a new generation; returns its id."""
        with self.transaction():
            cur = self._conn.execute(
                """INSERT INTO generations (model_name, model_version, created, status, index_dir)
                   VALUES (?, ?, ?, 'building', ?)""",
                (model_name, model_version, now_iso(), index_dir),
            )
            return int(cur.lastrowid or 0)

    def generations(self) -> list[Generation]:
        """All generations, oldest first."""
        return [self._generation(r) for r in self.db["generations"].rows_where(order_by="id")]

    def get_generation(self, generation_id: int) -> Generation | None:
        """One generation by id."""
        rows = list(self.db["generations"].rows_where("id = ?", [generation_id]))
        return self._generation(rows[0]) if rows else None

    def active_generation(self) -> Generation | None:
        """The generation searches use, if any."""
        rows = list(self.db["generations"].rows_where("status = 'active'"))
        return self._generation(rows[0]) if rows else None

    def activate_generation(self, generation_id: int) -> Generation | None:
        """Make ``generation_id`` the active one and retire the previous active one, in one
        transaction (a crash leaves either the old or the new one active, never none or
        two). Returns the generation that was active before."""
        with self.transaction():
            row = self._conn.execute(
                "SELECT status FROM generations WHERE id = ?", (generation_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no generation {generation_id}")
            previous = self.active_generation()
            if previous is not None and previous.id == generation_id:
                return previous
            self._conn.execute("UPDATE generations SET status = 'retired' WHERE status = 'active'")
            self._conn.execute("UPDATE generations SET status = 'active' WHERE id = ?", (generation_id,))
        return previous

    def set_generation_status(self, generation_id: int, status: str) -> None:
        """Mark a building generation as retired (abandoned), etc.; use
        :meth:`activate_generation` to activate."""
        if status not in GENERATION_STATUSES or status == "active":
            raise ValueError("status must be 'building' or 'retired' (use activate_generation)")
        with self.transaction():
            self._conn.execute("UPDATE generations SET status = ? WHERE id = ?", (status, generation_id))


def _safe_hash(hasher: Callable[[str], str], path: str) -> str | None:
    try:
        return hasher(path)
    except OSError as exc:  # counted as modified: indexing it reports why it cannot be read
        log.debug("cannot hash %s: %s", path, exc)
        return None
