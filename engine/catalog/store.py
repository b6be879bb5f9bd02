"""The SQLite catalog: what was indexed, from where, in which state, by which model.

The tantivy index answers questions; the catalog answers "what do I need to (re)index?".
It records every source folder or mail store, every file with the (size, mtime, content
hash) it was indexed at, per-file errors, the documents and e-mail messages extracted from
each file (their keys are the index's ``doc_key``), and the index *generations*: each full
re-encoding (new model, adapted embeddings) builds a new index directory, and the app
switches to it in one transaction when it is complete.

Why SQLite in WAL mode: one file, crash-safe transactions, and readers (the window) never
block the writer (the indexer). The schema is :data:`MIGRATIONS`, one versioned step after
another (every table of the file, the text store's included); writes run inside explicit
``BEGIN IMMEDIATE`` transactions (:meth:`Catalog.transaction`), so that multi-table updates
such as :meth:`Catalog.activate_generation` are atomic.

The catalog is one class, :class:`Catalog`, made of a part per subject, each a module beside
this one: :mod:`engine.catalog.schema` (the migrations), :mod:`engine.catalog.rows` (the row
types), :mod:`engine.catalog.connection` (the connection and the transaction),
:mod:`engine.catalog.files` (sources and files), :mod:`engine.catalog.messages` (documents
and e-mail messages), :mod:`engine.catalog.generations` (index generations). This module
opens the file, brings its schema up to date, and re-exports those modules' names.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import sqlite_utils

from engine.catalog.connection import _Connection
from engine.catalog.files import SourcesAndFiles
from engine.catalog.generations import Generations
from engine.catalog.messages import SUBJECTS_ASKED, DocumentsAndMessages, sql_normal_subject
from engine.catalog.rows import (
    FILE_STATUSES,
    GENERATION_STATUSES,
    SOURCE_KINDS,
    Changes,
    DocumentRow,
    FileState,
    Generation,
    MessageRow,
    Source,
    now_iso,
)
from engine.catalog.schema import MIGRATIONS, SCHEMA_VERSION, CatalogVersionError, Migration
from engine.home import crashpoints

__all__ = [
    "BUSY_TIMEOUT_S",
    "FILE_STATUSES",
    "GENERATION_STATUSES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SOURCE_KINDS",
    "SUBJECTS_ASKED",
    "Catalog",
    "CatalogVersionError",
    "Changes",
    "DocumentRow",
    "FileState",
    "Generation",
    "MessageRow",
    "Migration",
    "Source",
    "now_iso",
]

log = logging.getLogger(__name__)

#: How long a write waits for another connection's transaction (SQLite's busy timeout).
BUSY_TIMEOUT_S = 30.0


class Catalog(SourcesAndFiles, DocumentsAndMessages, Generations):
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
        conn.create_function("normal_subject", 1, sql_normal_subject, deterministic=True)
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
        conn.create_function("normal_subject", 1, sql_normal_subject, deterministic=True)
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

