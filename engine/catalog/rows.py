"""What the catalog's rows are in Python: a source, a file's state, a scan's changes, a
document, an e-mail's header fields, an index generation, and the values their status
columns take."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

FILE_STATUSES = ("ok", "error", "pending")
SOURCE_KINDS = ("folder", "mailstore")
GENERATION_STATUSES = ("building", "active", "retired")


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
    #: a paged document's ``engine.ingest.documents.PAGES`` field ("" for others)
    pages: str = ""
    #: a document's ``engine.ingest.documents.SECTIONS`` field (its headings; "" for none)
    sections: str = ""


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
