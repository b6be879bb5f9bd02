"""The catalog's connection: file names that are not valid UTF-8 stored losslessly
(:class:`_Connection`), and :class:`CatalogConnection`, what every part of
:class:`engine.catalog.store.Catalog` writes and reads through: the sqlite-utils database
(``db``), the raw connection (``_conn``) and the explicit write transaction."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from engine.home.paths import STORE_MARK, from_store, to_store

# The catalog writes through sqlite-utils' table helpers inside its own ``BEGIN IMMEDIATE``
# transactions: sqlite-utils 4 runs a helper inside an open transaction as a SAVEPOINT of
# it, sqlite-utils 3 commits it (``with conn:``), which would end the transaction halfway
# (measured with 4.2.1 and 3.38; docs/ARCHITECTURE.md, "sqlite-utils"). ``Database.atomic``
# came with that change.
if not hasattr(sqlite_utils.Database, "atomic"):
    raise ImportError(
        "sparcdesk's catalog needs sqlite-utils 4 or newer (its write helpers join an open"
        " transaction; sqlite-utils 3's commit it): pip install 'sqlite-utils>=4'"
    )


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



class CatalogConnection:
    """The connection a :class:`engine.catalog.store.Catalog` opened, and its write transaction.

    Writes run inside :meth:`transaction` (``BEGIN IMMEDIATE``; the connection is in
    autocommit mode, so nothing else begins or commits one)."""

    path: Path
    db: sqlite_utils.Database
    _conn: sqlite3.Connection
    #: Nesting depth of :meth:`transaction` (0: none open).
    _depth: int = 0

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

