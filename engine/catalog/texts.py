"""Document texts and the indexer's journal: two tables of the catalog database.

The indexer's commit protocol (:mod:`engine.indexer.commit`) writes both inside the catalog's
transactions; the window's preview reads the texts.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from engine.catalog.store import Catalog


class TextStore:
    """Two tables of the catalog database that the indexer writes.

    ``doc_texts(key, unit, digest, text)``: every document's extracted text (zlib) and a
    digest of its text and fields, for the preview pane and for deciding whether a document
    of a changed unit must be re-encoded. ``index_journal(unit, key)``: documents whose
    sentences may have reached the index without the catalog knowing yet (see
    :mod:`engine.indexer.commit`). Both are written inside the catalog's transactions; the
    catalog's schema creates them (:data:`engine.catalog.store.MIGRATIONS`, step 2).
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.db = catalog.db

    def put(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """``(unit, key, digest, text)`` rows into the text table and the journal."""
        rows = list(rows)
        if not rows:
            return
        texts = (
            {"key": k, "unit": u, "digest": d, "text": zlib.compress(t.encode("utf-8", "surrogatepass"), 6)}
            for u, k, d, t in rows
        )
        self.db["doc_texts"].insert_all(texts, replace=True)
        self.journal_keys((u, k) for u, k, _, _ in rows)

    def journal_keys(self, rows: Iterable[tuple[str, str]]) -> None:
        """``(unit, key)`` rows into the journal alone: documents the index holds that the
        catalog is forgetting (a removed source, ``Engine.remove_source``)."""
        self.db["index_journal"].insert_all(({"unit": u, "key": k} for u, k in rows), ignore=True)

    def keys(self) -> set[str]:
        """The key of every document with a stored text."""
        return {r["key"] for r in self.db["doc_texts"].rows_where(select="key")}

    def keys_and_kinds(self) -> list[tuple[str, str]]:
        """``(key, kind)`` of every stored text, in the order they were stored."""
        return [
            (k, kind or "")
            for k, kind in self.db.execute(
                "SELECT t.key, d.kind FROM doc_texts t LEFT JOIN documents d ON d.key = t.key ORDER BY t.rowid"
            ).fetchall()
        ]

    def clear_all_journals(self) -> None:
        """Forget the whole journal (its index is gone: every unit is re-read anyway)."""
        self.db["index_journal"].delete_where()

    def text(self, key: str) -> str | None:
        row = next(self.db["doc_texts"].rows_where("key = ?", [key], select="text"), None)
        if row is None:
            return None
        return zlib.decompress(row["text"]).decode("utf-8", "surrogatepass")

    def digests(self, unit: str) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, digest FROM doc_texts WHERE unit = ?", [unit]).fetchall())

    def journal(self, unit: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT key FROM index_journal WHERE unit = ?", [unit])}

    def journal_units(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT DISTINCT unit FROM index_journal")}

    def clear_journal(self, unit: str) -> None:
        self.db.execute("DELETE FROM index_journal WHERE unit = ?", [unit])

    def delete_keys(self, keys: Iterable[str]) -> None:
        self.db.conn.executemany("DELETE FROM doc_texts WHERE key = ?", [(k,) for k in keys])

    def forget_unit(self, unit: str) -> None:
        self.db.execute("DELETE FROM doc_texts WHERE unit = ?", [unit])
        self.clear_journal(unit)
