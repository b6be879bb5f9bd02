"""The catalog's documents and e-mail messages: the documents extracted from each file
(their keys are the index's ``doc_key``) and the header fields of every message, which the
sender and mailbox lists, threads and the preview read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from engine.catalog.connection import CatalogConnection
from engine.catalog.rows import DocumentRow, MessageRow
from engine.common import people
from engine.common.subjects import normal_subject
from engine.home.paths import from_store, to_store

#: At most this many subjects per ``messages_with_subject`` call (one SQL parameter each).
SUBJECTS_ASKED = 2000


class DocumentsAndMessages(CatalogConnection):
    """Documents and messages (part of :class:`engine.catalog.store.Catalog`)."""

    # ---- documents and messages

    def replace_documents(self, path: str, documents: Sequence[DocumentRow]) -> list[str]:
        """Replace the documents extracted from ``path``; returns the keys that existed before
        (the indexer deletes those from the index before adding the new ones)."""
        with self.transaction():
            old = [r[0] for r in self._conn.execute("SELECT key FROM documents WHERE path = ?", (path,))]
            self._conn.execute("DELETE FROM documents WHERE path = ?", (path,))
            self._conn.executemany(
                """INSERT OR REPLACE INTO documents (key, path, kind, title, parent_key, n_sentences, pages, sections)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (d.key, d.path, d.kind, d.title, d.parent_key, d.n_sentences, d.pages or None, d.sections or None)
                    for d in documents
                ],
            )
        return old

    def documents(self, path: str) -> list[DocumentRow]:
        """Documents extracted from one file."""
        return [
            _document(r) for r in self.db["documents"].rows_where("path = ?", [path], order_by="key")
        ]

    def get_document(self, key: str) -> DocumentRow | None:
        """One document by key."""
        rows = list(self.db["documents"].rows_where("key = ?", [key]))
        if not rows:
            return None
        return _document(rows[0])

    def messages_with_subject(self, subjects: Iterable[str]) -> list[str]:
        """Keys of the messages whose subject is one of ``subjects``, both compared as
        :func:`~engine.common.subjects.normal_subject` puts them (markers and tags left out,
        Unicode case-folded): the stored side once, when the message was indexed."""
        wanted = [s for s in dict.fromkeys(normal_subject(s) for s in subjects) if s][:SUBJECTS_ASKED]
        if not wanted:
            return []
        # a catalog opened read-only as it stands may predate the column: each row's subject
        # is put in that form as it is read (a scan, where the column is one index search)
        column = "subject_key" if self._has_subject_key() else "normal_subject(subject)"
        marks = ", ".join("?" * len(wanted))
        return [r["key"] for r in self.db["messages"].rows_where(f"{column} IN ({marks})", wanted, select="key")]

    def _has_subject_key(self) -> bool:
        return any(r[1] == "subject_key" for r in self._conn.execute("PRAGMA table_info(messages)"))

    def upsert_messages(self, messages: Sequence[MessageRow]) -> None:
        """Insert or replace e-mail header rows."""
        with self.transaction():
            self._conn.executemany(
                """INSERT OR REPLACE INTO messages (key, file, message_id, thread, from_addr, to_addrs,
                   cc_addrs, date, subject, mailbox, bcc_addrs, quoted_at, subject_key)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
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
                        normal_subject(m.subject or ""),
                    )
                    for m in messages
                ],
            )

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
            args.append(_contains(containing))
        return [(str(h), int(n)) for h, n in self._conn.execute(sql + " GROUP BY from_addr", args)]

    def names_correspondent(self, person: Iterable[str], direction: str = "from") -> bool:
        """Some stored message's From (``direction`` "from") or To/Cc ("to") names every word
        of ``person`` (lower case; ``engine.common.people``): "mail from Bob about ..." names
        someone who wrote mail, "what did the tariff say about ..." does not."""
        want = sorted({w for w in person if w}, key=len, reverse=True)
        if not want:
            return False
        columns = ("from_addr",) if direction == "from" else ("to_addrs", "cc_addrs")
        for column in columns:
            like = " AND ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in want)
            rows = self._conn.execute(f"SELECT {column} FROM messages WHERE {like} LIMIT 50", [_contains(w) for w in want])
            for (value,) in rows:
                headers = json.loads(value) if column != "from_addr" else [value]
                if people.names((str(h) for h in headers), want):
                    return True
        return False

    def mailbox_units(self) -> list[tuple[str, str, int]]:
        """(mailbox name, unit holding the messages, message count) of the stored messages: a
        Maildir folder or mbox file per store, an e-mail file per message otherwise."""
        sql = "SELECT mailbox, file, COUNT(*) FROM messages WHERE mailbox != '' GROUP BY mailbox, file"
        return [(str(m), str(f), int(n)) for m, f, n in self._conn.execute(sql)]


def _contains(text: str) -> str:
    """A ``LIKE ? ESCAPE '\\'`` pattern matching text that holds ``text`` (its ``%``, ``_`` and
    ``\\`` taken literally)."""
    return "%" + re.sub(r"([%_\\])", r"\\\1", text) + "%"


def sql_normal_subject(stored: str | None) -> str | None:
    """:func:`~engine.common.subjects.normal_subject` as the SQL function ``normal_subject``
    (``Catalog`` registers it on its connection): the schema step that adds ``subject_key``
    fills it from the stored subjects with it, and a catalog without the column is read with it.
    It sees and returns the stored form of text (``engine.home.paths.to_store``)."""
    return None if stored is None else to_store(normal_subject(from_store(str(stored))))


def _document(r: dict) -> DocumentRow:
    return DocumentRow(
        r["key"], r["path"], r["kind"], r["title"] or "", r["parent_key"], r["n_sentences"] or 0,
        r.get("pages") or "", r.get("sections") or "",
    )  # fmt: skip
