"""The catalog's schema: :data:`MIGRATIONS`, one versioned step after another from an empty
file to :data:`SCHEMA_VERSION` (every table of the file, the text store's included), and
the error a catalog of a newer schema is refused with. :class:`engine.catalog.store.Catalog`
applies the steps when it opens a file (``Catalog._migrate``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    Migration(
        6,
        "a paged document's pages (engine.ingest.documents.PAGES: its page count and where each"
        " page starts in its text), so an answer says which page it is on; rows from before hold"
        " none until their file is indexed again",
        ('ALTER TABLE "documents" ADD COLUMN "pages" TEXT',),
    ),
    Migration(
        7,
        "a document's headings (engine.ingest.documents.SECTIONS: where each heading of a DOCX,"
        " ODT, EPUB, Markdown or HTML file starts in its text), so an answer names the heading it"
        " is under; rows from before hold none until their file is read again",
        ('ALTER TABLE "documents" ADD COLUMN "sections" TEXT',),
    ),
    Migration(
        8,
        "a message's subject as questions are compared with it (engine.common.subjects."
        "normal_subject: reply markers and tags left out, Unicode case-folded; SQLite's lower()"
        " folds ASCII only, so \"Änderung der Preise\" typed in lower case was never found),"
        " filled from the stored subjects by the SQL function the catalog registers; it replaces"
        " schema 4's index on lower(subject)",
        (
            'ALTER TABLE "messages" ADD COLUMN "subject_key" TEXT',
            "UPDATE messages SET subject_key = normal_subject(subject)",
            "DROP INDEX idx_messages_subject",
            "CREATE INDEX idx_messages_subject ON messages(subject_key)",
        ),
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
