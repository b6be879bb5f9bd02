"""The indexer: sources -> walk -> change detection -> extraction -> sentences -> encoder -> index.

One run (:meth:`Indexer.run`) takes a list of *targets* (a source, or a file or folder inside
one), finds the extraction units under them with :func:`engine.walk.walk`, compares them with
the catalog (size and mtime, then content hash) and re-indexes only what changed:

* a unit is extracted with :func:`engine.extract.iter_extract` in a producer thread (so
  parsing overlaps with ONNX encoding, which releases the GIL); each Document is cut into
  passages and sentences by :func:`engine.segment.split_passages`, and each sentence is
  encoded with the other sentences of its passage, joined by spaces, as context;
* sentences are encoded in batches across units and added to the tantivy index;
* within a changed unit, documents whose text and fields did not change are kept as they
  are (an mbox with one new message re-encodes one message), the others are deleted from
  the index and re-added, and documents that disappeared are deleted.

Crash safety (kill -9 at any point loses at most the uncommitted batch, and a restart
leaves no duplicates). Changes are committed every ``commit_every`` sentences or
``commit_seconds`` seconds, in three steps:

  (a) catalog transaction: the text and digest of every document touched since the last
      commit, and a *journal* row (unit, document key) for each;
  (b) the tantivy commit;
  (c) catalog transaction: for every unit finished before the commit, its documents,
      messages and file row (status, size, mtime, hash, generation), and its journal rows
      are cleared; deleted files are forgotten.

A unit whose file row was not written in (c) is re-indexed by the next run (its row still
has the old size/mtime, or is pending, or absent), and before re-adding a document the
indexer deletes every key the catalog knows for the unit: the committed documents and the
journal, which covers whatever (a) announced and (b) may have committed. So the catalog
never claims what the index lacks, and the index never keeps a sentence the catalog cannot
find again.

The journal and the document texts (for the preview pane and for "did this document
change?") live in two tables of the catalog database that this module owns
(:class:`TextStore`); everything else goes through :class:`engine.catalog.Catalog`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import getaddresses, parseaddr
from pathlib import Path
from typing import Any

from engine import diskspace
from engine.catalog import (
    Catalog,
    DocumentRow,
    FileState,
    Generation,
    MessageRow,
    Source,
    content_hash,
    now_iso,
)
from engine.docindex import DocumentText, mail_header_lines
from engine.documents import LINE_KINDS, SKIPPED_PREFIX, Document, ExtractionError, UnsupportedFormat
from engine.encode import DEFAULT_BATCH, SparseEncoder
from engine.extract import MAX_FILE_BYTES, iter_extract, name_only_document
from engine.index import (
    META_FILE,
    IndexFormatError,
    IndexLockedError,
    SentenceIndex,
    SentenceRecord,
    folder_terms,
)
from engine.paths import Layout, display
from engine.quantize import Quantizer
from engine.segment import Span, split_passages
from engine.sparse import SparseVector, stack_weights
from engine.walk import IGNORE_FILE, Rules, classify, is_maildir, walk

log = logging.getLogger(__name__)

__all__ = [
    "IndexLockedError",
    "Indexer",
    "ModelIdentity",
    "Progress",
    "Target",
    "TextStore",
    "allowed",
    "fit_quantizer",
    "model_identity",
    "unit_for",
]

#: Commit after this many new sentences ...
COMMIT_EVERY = 2000
#: ... or this many seconds, whichever comes first.
COMMIT_SECONDS = 20.0
#: Sentences encoded per ONNX call. Small on purpose: the bundle's graph materialises a
#: float32 [batch, sentence positions, vocabulary] tensor before max-pooling, so peak memory
#: grows ~35 MB per sentence of batch, and on 1-2 threads batches of 1-4 were also the
#: fastest (bench/indexing.py; batch 32: 58/s and 1.0 GB, batch 4: 97/s and 0.3 GB).
BATCH_SIZE = DEFAULT_BATCH  # see engine.encode
#: Sentences collected (across documents and units) before they are encoded and added.
FLUSH_SENTENCES = 128
#: The quantiser is fitted on the first encoded batch; weights above its top level are
#: clamped, so leave some room for later batches with larger weights.
QUANT_HEADROOM = 1.25
#: At most this many per-part errors are kept in a file's ``last_error``.
MAX_REASONS = 5


def fit_quantizer(vectors: Sequence[SparseVector]) -> Quantizer:
    """The quantiser a new index gets from its first encoded batch (the first
    ``FLUSH_SENTENCES`` sentences of a run): the batch's largest weight x ``QUANT_HEADROOM``
    maps to the top level. Public so that the evaluation builds its index the same way."""
    weights = stack_weights(vectors)
    return Quantizer.fit(weights, headroom=QUANT_HEADROOM) if weights.size else Quantizer(0.05)


# --------------------------------------------------------------------------- progress


@dataclass
class Progress:
    """Where an indexing run stands (``engine.api.Progress`` is this class).

    ``phase``: ``scanning``, ``indexing``, ``paused``, ``committing``, ``done`` or
    ``cancelled``. ``rate`` is sentences per second since the run started; ``eta_s`` the
    seconds left, estimated from the bytes of the units still to do (None until known).
    """

    phase: str
    files_done: int
    files_total: int
    sentences_done: int
    rate: float
    eta_s: float | None
    current: str | None


# --------------------------------------------------------------------------- model identity


@dataclass(frozen=True)
class ModelIdentity:
    """Name and fingerprinted version of a bundle: a different fingerprint needs a new generation."""

    name: str
    version: str
    training_steps: int


def model_identity(bundle_dir: Path) -> ModelIdentity:
    """The bundle's name, and its version plus a digest of ``config.json`` and the ONNX file.

    The placeholder bundle and a trained one share a name and version string; the digest
    tells them apart, so an index built with one is never searched with the other's
    question weights.
    """
    raw = (bundle_dir / "config.json").read_bytes()
    cfg = json.loads(raw)
    h = hashlib.blake2b(raw, digest_size=8)
    onnx = bundle_dir / cfg.get("onnx", "model.onnx")
    try:
        with open(onnx, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError as exc:  # the identity is then config.json's alone; loading the model says more
        log.warning("cannot read %s for the model's identity: %s", onnx, exc)
    return ModelIdentity(
        str(cfg.get("name", bundle_dir.name)),
        f"{cfg.get('version', '0')}+{h.hexdigest()}",
        int(cfg.get("training_steps", 0) or 0),
    )


# --------------------------------------------------------------------------- units on disk


def _is_file(e: os.DirEntry[str]) -> bool:
    """``e.is_file()``, False for an entry that cannot be resolved (a symbolic link loop)."""
    try:
        return e.is_file()
    except OSError:
        return False


def _maildir_files(folder: Path) -> list[os.DirEntry[str]]:
    out: list[os.DirEntry[str]] = []
    for sub in ("cur", "new"):
        try:
            with os.scandir(folder / sub) as it:
                out.extend(e for e in it if not e.name.startswith(".") and _is_file(e))
        except FileNotFoundError:  # a Maildir may lack "new" (or "cur") until mail arrives
            continue
        except OSError as exc:  # extracting the Maildir reports it as failed, with this reason
            log.debug("cannot read the Maildir folder %s: %s", folder / sub, exc)
    return out


def unit_stat(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)`` of a unit; for a Maildir folder, the total size of its messages
    and the latest mtime of ``cur``, ``new`` and the messages (a folder's own mtime does not
    change when a message arrives in ``new``)."""
    if os.path.isdir(path):
        size = 0
        mtime = 0
        # A missing folder or a message moved (new -> cur) since the listing: ordinary
        # Maildir life, and _maildir_files logs a folder it cannot read.
        for sub in ("cur", "new"):
            with contextlib.suppress(OSError):
                mtime = max(mtime, os.stat(path / sub).st_mtime_ns)
        for e in _maildir_files(path):
            try:
                st = e.stat()
            except OSError:
                continue
            size += st.st_size
            mtime = max(mtime, st.st_mtime_ns)
        return size, mtime
    st = os.stat(path)
    return int(st.st_size), int(st.st_mtime_ns)


def unit_hash(path: str | Path) -> str:
    """Content digest of a unit: the file's bytes (:func:`engine.catalog.content_hash`), the
    listing of a Maildir (names, sizes, mtimes), or size and mtime only for a file over the
    extraction size limit (it is refused without being read, so it is not read here either)."""
    p = Path(path)
    if os.path.isdir(p):
        h = hashlib.blake2b(digest_size=20)
        for e in sorted(_maildir_files(p), key=lambda e: e.path):
            try:
                st = e.stat()
            except OSError:  # moved since the listing (see unit_stat)
                continue
            h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        return "maildir:" + h.hexdigest()
    st = os.stat(p)
    if st.st_size > MAX_FILE_BYTES:
        return f"stat:{st.st_size}:{st.st_mtime_ns}"
    return content_hash(p)


def under(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies below it (whole path components)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def allowed(root: Path, exclude: Sequence[str], path: Path) -> bool:
    """Would :func:`engine.walk.walk` of ``root`` with ``exclude`` reach ``path``? (See
    :meth:`engine.walk.Rules.allows`, the one implementation of the walk's rules.)"""
    return Rules(root, exclude).allows(path)


def unit_for(path: Path) -> Path:
    """What a changed path makes the watcher re-scan: the Maildir folder for a message file
    (``box/cur/msg``, ``box/new/msg``, ``box/tmp/msg``) or for ``box/cur`` itself, the folder
    of an edited ``.sparcdeskignore`` (its rules decide what is indexed below), else the path."""
    path = Path(os.path.abspath(path))
    parent = path.parent
    if path.name == IGNORE_FILE:
        return parent
    if parent.name in ("cur", "new", "tmp") and is_maildir(parent.parent):
        return parent.parent
    if path.name in ("cur", "new", "tmp") and is_maildir(parent):
        return parent
    return path


# --------------------------------------------------------------------------- text store and journal


class TextStore:
    """Two tables this module keeps in the catalog database.

    ``doc_texts(key, unit, digest, text)``: every document's extracted text (zlib) and a
    digest of its text and fields, for the preview pane and for deciding whether a document
    of a changed unit must be re-encoded. ``index_journal(unit, key)``: documents whose
    sentences may have reached the index without the catalog knowing yet (see the module
    docstring). Both are written inside the catalog's transactions.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.db = catalog.db
        if catalog._has_tables("doc_texts", "index_journal", "idx_doc_texts_unit"):
            return  # created before (a read only: another process may be writing)
        self.db["doc_texts"].create(
            {"key": str, "unit": str, "digest": str, "text": bytes}, pk="key", if_not_exists=True
        )
        self.db["index_journal"].create({"unit": str, "key": str}, pk=("unit", "key"), if_not_exists=True)
        self.db.execute("CREATE INDEX IF NOT EXISTS idx_doc_texts_unit ON doc_texts(unit)")

    def put(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """``(unit, key, digest, text)`` rows into the text table and the journal."""
        rows = list(rows)
        if not rows:
            return
        ex = self.db.conn.executemany
        ex(
            "INSERT OR REPLACE INTO doc_texts (key, unit, digest, text) VALUES (?, ?, ?, ?)",
            [(k, u, d, zlib.compress(t.encode("utf-8", "surrogatepass"), 6)) for u, k, d, t in rows],
        )
        ex("INSERT OR IGNORE INTO index_journal (unit, key) VALUES (?, ?)", [(u, k) for u, k, _, _ in rows])

    def text(self, key: str) -> str | None:
        row = self.db.execute("SELECT text FROM doc_texts WHERE key = ?", [key]).fetchone()
        if row is None:
            return None
        return zlib.decompress(row[0]).decode("utf-8", "surrogatepass")

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


def _delete_messages(catalog: Catalog, keys: Iterable[str]) -> None:
    """Drop e-mail header rows of documents that left their unit.

    ``Catalog`` has no call for this (``replace_documents`` keeps the messages table), so it
    is one statement on the catalog's own table, inside the caller's transaction.
    """
    fn = getattr(catalog, "delete_messages", None)
    keys = list(keys)
    if not keys:
        return
    if fn is not None:
        fn(keys)
    else:
        catalog.db.conn.executemany("DELETE FROM messages WHERE key = ?", [(k,) for k in keys])


# --------------------------------------------------------------------------- documents to records


def iso_to_epoch(value: str | None) -> int | None:
    """Seconds since the epoch of an ISO 8601 string (naive = UTC); None if empty or invalid."""
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


def sender_address(value: str) -> str:
    """The e-mail address of a From header, lower-cased (the whole header if none parses)."""
    name, addr = parseaddr(value or "")
    return (addr or value or "").strip().lower()


def addresses(value: str) -> list[str]:
    """The addresses of a To/Cc header."""
    return [a for _, a in getaddresses([value or ""]) if a]


#: What a document becomes in the index. A new value re-encodes every document whose
#: records it changes on the next run (2: e-mail header lines as sentences; 3: a file's
#: name as a line of its own, see ``records_of``).
RECORDS_VERSION = "3"


def has_name_line(doc: Document) -> bool:
    """Whether ``doc`` is a file of its own (not an e-mail, not an attachment), whose name is
    indexed as a line (``field="name"``), so that every file can be found by its name."""
    return doc.kind != "email" and doc.parent_key is None and bool(doc.path)


def records_of(doc: Document) -> str:
    """The records version in which the records of a document like ``doc`` last changed (at
    most ``RECORDS_VERSION``). It is part of the document's digest, so a new version
    re-encodes only the documents whose records it changes."""
    if doc.kind == "email":
        return str(min(2, int(RECORDS_VERSION)))  # header lines came with 2
    return "3" if has_name_line(doc) else ""  # a file's name line came with 3


#: A "sentence" longer than this (a 50 MB line without a full stop, a table flattened into
#: one line) is cut into pieces of about this size, at spaces where there are any: the
#: encoder reads at most its first ~100 tokens anyway, and one huge sentence would be
#: stored whole in the index and tokenised whole.
MAX_SENTENCE_CHARS = 2000
#: A document that cuts into more sentences than this is not indexed (its name is): no
#: real document of a desktop comes near it (a 1,500-page book has ~40,000), and a hostile
#: one (a 672 KB DOCX of 2,000,000 one-word paragraphs) would take hours to encode.
MAX_SENTENCES = 60_000


def _cut_long(span: Span, limit: int = MAX_SENTENCE_CHARS) -> list[Span]:
    if len(span.text) <= limit:
        return [span]
    out: list[Span] = []
    text, pos = span.text, 0
    while pos < len(text):
        end = min(len(text), pos + limit)
        if end < len(text):
            cut = text.rfind(" ", pos + limit // 2, end)
            end = cut if cut > pos else end
        piece = text[pos:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(span.start + pos + lead, span.start + pos + lead + len(stripped), stripped))
        pos = end
    return out


def passages_of(text: str, kind: str) -> list[list[Span]]:
    """A document's passages and sentences as the indexer cuts them (lines of spreadsheets
    and slides are sentences of their own; a very long one is cut, see
    ``MAX_SENTENCE_CHARS``)."""
    passages = split_passages(text, lines=kind in LINE_KINDS)
    if any(len(s.text) > MAX_SENTENCE_CHARS for p in passages for s in p):
        passages = [[piece for s in p for piece in _cut_long(s)] for p in passages]
    return passages


def document_digest(doc: Document, records: str | None = None) -> str:
    """Digest of what the index holds of ``doc``; ``records``: as of that records version
    (default: the current one, ``records_of``)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (
        records_of(doc) if records is None else records,
        doc.key,
        doc.kind,
        doc.title,
        doc.parent_key or "",
        json.dumps(doc.fields, sort_keys=True),
        doc.text,
    ):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


@dataclass
class PreparedDoc:
    """A Document cut into sentences, with each sentence's context and passage."""

    doc: Document
    digest: str
    sentences: list[str]
    contexts: list[str]
    records: list[SentenceRecord]
    #: The whole document for the document-level BM25 index (header lines included).
    whole: DocumentText | None = None
    #: Stands in for a file whose content could not be read: its name only.
    name_only: bool = False
    #: Each sentence's passage (a number within the document; a header line is one of its
    #: own): a passage bundle encodes a passage's sentences in one pass.
    passages: list[int] = field(default_factory=list)


def prepare(doc: Document, mail: dict[str, dict[str, str]]) -> PreparedDoc:
    """Sentences of ``doc`` with their context and index records.

    ``mail`` maps message keys of the current unit to their fields, so an attachment
    carries its message's sender, recipients, subject and mailbox into the index filters.
    """
    f = doc.fields
    origin = f if doc.kind == "email" else mail.get(doc.parent_key or "", {})
    if doc.kind == "email":
        mail[doc.key] = f
    sender = sender_address(origin.get("from", ""))
    recipients = addresses(origin.get("to", "")) + addresses(origin.get("cc", ""))
    date = iso_to_epoch(f.get("date") or origin.get("date"))
    # What every record of the document carries (display and filter fields).
    common: dict[str, Any] = {
        "doc_key": doc.key,
        "title": doc.title,
        "path": doc.path,
        "kind": doc.kind,
        "date": date,
        "sender": sender,
        "recipients": recipients,
        "subject": origin.get("subject", ""),
        "mailbox": origin.get("mailbox", ""),
    }
    sentences: list[str] = []
    contexts: list[str] = []
    records: list[SentenceRecord] = []
    groups: list[int] = []
    position = 0
    passages = passages_of(doc.text, doc.kind)
    n = sum(len(p) for p in passages)
    if n > MAX_SENTENCES:
        raise ExtractionError(doc.key, f"too many sentences ({n:,} > {MAX_SENTENCES:,} limit): skipped")
    for number, passage in enumerate(passages):
        p_start, p_end = passage[0].start, passage[-1].end
        passage_text = doc.text[p_start:p_end]
        for i, span in enumerate(passage):
            groups.append(number)
            sentences.append(span.text)
            contexts.append(" ".join(s.text for j, s in enumerate(passage) if j != i))
            rec = SentenceRecord(
                text=span.text,
                start=span.start,
                end=span.end,
                position=position,
                passage=passage_text,
                **common,
            )
            records.append(rec)
            position += 1
    header = mail_header_lines(f) if doc.kind == "email" else []
    if has_name_line(doc):
        # A file is found by its name, also when its content is not read (an unsupported
        # format, a damaged file: then this line is all it has). Shown as its name, it only
        # answers when no other sentence of the file matches (engine.search.is_heading_record).
        header = [("name", display(Path(doc.path).name))]
    if records or header:
        # A message's header lines are sentences too, so a question about a person finds
        # the messages they sent or received and can be answered by the line itself
        # ("From: Ann Lee <ann.lee@x.org>"). Each is encoded alone: the model pools over the
        # context's positions too, so the other lines as context would give every line the
        # names of all the others.
        for name, line in header:
            groups.append(len(passages) + len(groups))  # a passage of its own
            sentences.append(line)
            contexts.append("")
            records.append(SentenceRecord(text=line, position=position, passage=line, field=name, **common))
            position += 1
    whole = None
    if records:
        head = [x for _, x in header] if header and doc.kind == "email" else [doc.title, Path(doc.path).name]
        whole = DocumentText(
            doc_key=doc.key,
            body="\n".join([*head, doc.text]),
            folders=tuple(folder_terms(doc.path)) if doc.path else (),
            kind=doc.kind,
            date=date,
            sender=sender,
            mailbox=origin.get("mailbox", ""),
            from_text=origin.get("from", ""),
            to_text=" ".join(x for x in (origin.get("to", ""), origin.get("cc", "")) if x),
            subject=origin.get("subject", ""),
            name=Path(doc.path).name if doc.path and doc.kind != "email" else "",
        )
    return PreparedDoc(doc, document_digest(doc), sentences, contexts, records, whole, passages=groups)


def message_row(doc: Document, unit: str) -> MessageRow:
    f = doc.fields
    return MessageRow(
        key=doc.key,
        file=unit,
        message_id=f.get("message_id", ""),
        thread=f.get("thread", ""),
        from_addr=f.get("from", ""),
        to_addrs=addresses(f.get("to", "")) or ([f["to"]] if f.get("to") else []),
        cc_addrs=addresses(f.get("cc", "")) or ([f["cc"]] if f.get("cc") else []),
        date=iso_to_epoch(f.get("date")),
        subject=f.get("subject", ""),
        mailbox=f.get("mailbox", ""),
    )


# --------------------------------------------------------------------------- jobs


@dataclass
class Target:
    """What a run covers: a whole source (``subtree`` None) or a file or folder inside it."""

    source: Source
    subtree: Path | None = None


@dataclass
class _Job:
    """One unit to (re-)index in this run."""

    path: str
    source_id: int
    size: int
    mtime_ns: int
    prev: FileState | None
    keep: bool = False  # documents with an unchanged digest may be kept
    hash: str | None = None
    old_keys: set[str] = field(default_factory=set)
    digests: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    docs: list[DocumentRow] = field(default_factory=list)
    messages: list[MessageRow] = field(default_factory=list)
    kept_docs: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    unit_error: str | None = None
    name_only: bool = False  # its content could not be read: indexed by its name only
    sentences: int = 0
    outstanding: int = 0
    extracted: bool = False


@dataclass
class _Pending:
    job: _Job
    record: SentenceRecord
    sentence: str
    context: str
    passage: int = 0  # PreparedDoc.passages


@dataclass
class RunResult:
    """Counts of one run (for the CLI and tests)."""

    files_total: int = 0
    files_done: int = 0
    indexed: int = 0
    unchanged: int = 0
    touched: int = 0
    deleted: int = 0
    failed: int = 0
    sentences: int = 0
    commits: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    changed_paths: list[str] = field(default_factory=list)


class Cancelled(Exception):
    """Raised inside a run when the cancel event is set."""


# --------------------------------------------------------------------------- the indexer


class Indexer:
    """One indexing run against one catalog and one index generation.

    ``encoder`` may be shared across runs (ONNX Runtime sessions are thread-safe).
    ``on_commit`` is called after each commit (the engine refreshes its searcher there).
    Not thread-safe: one run at a time per object; the index's writer lock makes that hold
    across processes too (:class:`engine.index.IndexLockedError`).
    """

    def __init__(
        self,
        catalog: Catalog,
        layout: Layout,
        encoder: SparseEncoder | Callable[[], SparseEncoder],
        *,
        commit_every: int = COMMIT_EVERY,
        commit_seconds: float = COMMIT_SECONDS,
        batch_size: int = BATCH_SIZE,
        flush_sentences: int = FLUSH_SENTENCES,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
        on_commit: Callable[[], None] | None = None,
        progress_interval: float = 0.25,
    ) -> None:
        self.catalog = catalog
        self.layout = layout
        self.store = TextStore(catalog)
        self._encoder_src = encoder
        self._encoder: SparseEncoder | None = encoder if isinstance(encoder, SparseEncoder) else None
        self.commit_every = max(1, commit_every)
        self.commit_seconds = commit_seconds
        self.batch_size = batch_size
        self.flush_sentences = max(1, min(flush_sentences, self.commit_every))
        self.progress_cb = progress
        self.cancel = cancel or threading.Event()
        self.pause = pause or threading.Event()
        self.on_commit = on_commit
        self.progress_interval = progress_interval
        self.index: SentenceIndex | None = None
        self.generation: Generation | None = None
        self._reset()

    # ---- state

    def _reset(self) -> None:
        self._upgrading = False
        self._buffer: list[_Pending] = []
        self._deletes: list[str] = []
        self._wholes: list[DocumentText] = []
        self._handled: list[tuple[str, str, str, str]] = []
        self._finished: list[_Job] = []
        self._forget: list[str] = []
        self._dirty = False
        self._since_commit = 0
        self._last_commit = time.monotonic()
        self._t0 = time.monotonic()
        self._last_progress = 0.0
        self._phase = "scanning"
        self._current: str | None = None
        self._bytes_total = 0
        self._bytes_done = 0
        self.result = RunResult()

    @property
    def encoder(self) -> SparseEncoder:
        if self._encoder is None:
            src = self._encoder_src
            self._encoder = src() if callable(src) else src  # type: ignore[assignment]
        return self._encoder

    # ---- progress

    def snapshot(self) -> Progress:
        r = self.result
        elapsed = max(1e-9, time.monotonic() - self._t0)
        rate = r.sentences / elapsed
        eta: float | None = None
        if self._phase in ("done", "cancelled"):
            eta = 0.0
        elif self._bytes_done > 0 and self._bytes_total >= self._bytes_done:
            eta = (self._bytes_total - self._bytes_done) * elapsed / self._bytes_done
        return Progress(self._phase, r.files_done, r.files_total, r.sentences, rate, eta, self._current)

    def _report(self, force: bool = False) -> None:
        if self.progress_cb is None:
            return
        now = time.monotonic()
        if force or now - self._last_progress >= self.progress_interval:
            self._last_progress = now
            try:
                self.progress_cb(self.snapshot())
            except Exception:  # a broken progress callback must not stop indexing
                log.exception("progress callback failed")

    def _checkpoint(self) -> None:
        """Honour cancel and pause between units of work."""
        if self.cancel.is_set():
            raise Cancelled
        if self.pause.is_set():
            self._commit()  # a long pause must not hold uncommitted work
            phase, self._phase = self._phase, "paused"
            self._report(force=True)
            while self.pause.is_set() and not self.cancel.is_set():
                time.sleep(0.05)
            self._phase = phase
            self._report(force=True)
            if self.cancel.is_set():
                raise Cancelled

    # ---- generation and index

    def open_generation(self, model: ModelIdentity, create: bool = True) -> Generation | None:
        """The generation this run writes to: the active one when it was built with this
        model, else a building one for this model (created when missing). The very first
        generation is activated at once, so searches see results while it fills."""
        cat = self.catalog
        active = cat.active_generation()
        if active and (active.model_name, active.model_version) == (model.name, model.version):
            return active
        for g in reversed(cat.generations()):
            if g.status == "building" and (g.model_name, g.model_version) == (model.name, model.version):
                return g
        if not create:
            return None
        existing = [g.id for g in cat.generations()] + self.layout.generations_on_disk()
        number = max(existing, default=0) + 1
        gid = cat.create_generation(model.name, model.version, str(self.layout.generation_dir(number)))
        if active is None:
            cat.activate_generation(gid)
        return cat.get_generation(gid)

    def _open_index(self) -> None:
        """Open the generation's index for writing if it exists (IndexLockedError if busy).
        It exists once sparcdesk's metadata does: creation is atomic, and tantivy files
        without it are what an older version's interrupted creation left (replaced)."""
        assert self.generation is not None
        path = Path(self.generation.index_dir)
        if self.index is None and (path / META_FILE).exists():
            self.index = SentenceIndex.open(path, writable=True)

    def _ensure_index(self, vectors: Sequence[SparseVector]) -> SentenceIndex:
        if self.index is not None:
            return self.index
        assert self.generation is not None
        path = Path(self.generation.index_dir)
        quantizer = fit_quantizer(vectors)
        enc = self.encoder
        model = {
            "name": enc.config.name,
            "version": enc.config.version,
            "generation": self.generation.id,
            "bundle": str(enc.bundle_dir),
        }
        try:
            self.index = SentenceIndex.create(path, quantizer, model=model, records=RECORDS_VERSION)
        except FileExistsError:
            self.index = SentenceIndex.open(path, writable=True)
        return self.index

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    # ---- scanning

    def _scan(self, target: Target) -> tuple[list[_Job], list[str]]:
        """Jobs for the changed units of one target, and the catalog paths to delete."""
        src = target.source
        root = Path(src.path)
        units: list[tuple[str, int, int]] = []
        walk_errors: dict[str, str] = {}
        if target.subtree is None:
            items: Iterator[Path | ExtractionError] = walk(root, src.exclude)
            scope = str(root)
        else:
            scope = str(target.subtree)
            items = self._walk_subtree(root, src.exclude, target.subtree)
        for item in items:
            if isinstance(item, ExtractionError):
                walk_errors[item.path] = item.reason
                continue
            try:
                size, mtime = unit_stat(item)
            except OSError as exc:
                walk_errors[str(item)] = exc.strerror or str(exc)
                continue
            units.append((str(item), size, mtime))
            if len(units) % 500 == 0:
                self.result.files_total = len(units)
                self._report()
        changes = self.catalog.scan_changes(src.id, units, hasher=unit_hash)
        known = {f.path: f for f in self.catalog.files(src.id)}
        gen = self.generation.id if self.generation else None
        redo = set(self.store.journal_units())
        todo = set(changes.to_index)
        for path in changes.unchanged:
            st = known.get(path)
            # A failed file is in the index by its name (it has a generation; one failed
            # before names were indexed is re-read by the upgrade); it follows a new model.
            indexed = st is not None and (
                st.status == "ok" or (st.status == "error" and (st.generation is not None or self._upgrading))
            )
            if indexed and (st.generation != gen or path in redo or self._upgrading):
                todo.add(path)
        stats = {p: (s, m) for p, s, m in units}
        jobs = []
        for path in sorted(todo):
            size, mtime = stats[path]
            jobs.append(_Job(path, src.id, size, mtime, known.get(path)))
        self.result.unchanged += len(changes.unchanged) - (len(todo) - len(set(changes.to_index)))
        self.result.touched += len(changes.touched)
        deleted = [p for p in changes.deleted if under(p, scope) and p not in walk_errors]
        for path, reason in walk_errors.items():
            if under(path, scope):
                self.catalog.record_error(path, src.id, reason)
        if jobs:
            self.catalog.mark_pending(src.id, [(j.path, j.size, j.mtime_ns) for j in jobs])
        return jobs, deleted

    @staticmethod
    def _walk_subtree(root: Path, exclude: Sequence[str], subtree: Path) -> Iterator[Path | ExtractionError]:
        """The units of a file or folder inside a source, by the source's rules (a Maildir
        comes with its Maildir++ sub-folders, as in a full walk); nothing for a path that is
        gone (its catalog rows are dropped as deleted) unless it is a broken link."""
        subtree = Path(os.path.abspath(subtree))
        if not os.path.exists(subtree) and not os.path.islink(subtree):
            return
        yield from Rules(root, exclude).walk(subtree)

    # ---- the run

    def run(self, targets: Sequence[Target], model: ModelIdentity, activate: bool = False) -> RunResult:
        """Index ``targets``; ``activate`` (a run over every source) switches a building
        generation live when the run completes."""
        self._reset()
        diskspace.check(self.layout.home, diskspace.MIN_FREE_BYTES)
        try:
            return self._run(targets, model, activate)
        except diskspace.DiskFullError:
            raise
        except Exception as exc:
            if not diskspace.is_disk_full(exc, self.layout.home):
                raise
            # Every store's commit is atomic and the failed one was rolled back (close()):
            # the index answers as of the last commit; the journal redoes the rest.
            log.info("disk full in %s: %s", self.layout.home, exc)
            raise diskspace.DiskFullError(
                self.layout.home, diskspace.free_bytes(self.layout.home), self._space_needed(), self.result.files_done
            ) from exc

    def _space_needed(self) -> int:
        """About how many more bytes this run needs: its next commit, and the files still to
        do at the sentences per byte seen so far."""
        need = diskspace.commit_estimate(
            self._since_commit + len(self._buffer), sum(len(t) for *_, t in self._handled)
        )
        rest = max(0, self._bytes_total - self._bytes_done)
        per_byte = self.result.sentences / self._bytes_done if self._bytes_done and self.result.sentences else 0.01
        return need + int(rest * per_byte * diskspace.BYTES_PER_SENTENCE)

    def _run(self, targets: Sequence[Target], model: ModelIdentity, activate: bool) -> RunResult:
        self.generation = self.open_generation(model)
        if self.generation is not None and self.generation.status == "building":
            targets, activate = self.complete_targets(targets), True
        self._open_index()
        # An index written before the current records (e.g. without e-mail header lines or
        # whole documents): every unit is re-read; documents whose records did not change
        # keep their vectors and only gain what is new (no re-encoding).
        self._upgrading = self.index is not None and (
            self.index.records_version != RECORDS_VERSION or not self.index.documents_complete
        )
        full = {t.source.id for t in targets if t.subtree is None} >= {s.id for s in self.catalog.sources()}
        producer: threading.Thread | None = None
        stop = threading.Event()
        try:
            jobs: list[_Job] = []
            deletions: list[str] = []
            seen_paths: set[str] = set()
            for target in targets:
                self._checkpoint()
                j, d = self._scan(target)
                for job in j:
                    if job.path not in seen_paths:
                        seen_paths.add(job.path)
                        jobs.append(job)
                deletions += [p for p in d if p not in seen_paths]
            self.result.files_total = len(jobs)
            self._bytes_total = sum(j.size for j in jobs)
            self._phase = "indexing"
            self._report(force=True)
            for path in dict.fromkeys(deletions):
                self._delete_unit(path)
            q: queue.Queue[tuple[str, _Job | None, object]] = queue.Queue(maxsize=64)
            producer = threading.Thread(
                target=_produce, args=(jobs, q, stop), name="sparcdesk-extract", daemon=True
            )
            producer.start()
            while True:
                self._checkpoint()
                kind, job, payload = q.get()
                if kind == "done":
                    break
                assert job is not None
                self._current = job.path
                if kind == "start":
                    self._start_job(job, payload)  # type: ignore[arg-type]
                elif kind == "doc":
                    self._add_document(job, payload)  # type: ignore[arg-type]
                elif kind == "error":
                    self._part_error(job, payload)  # type: ignore[arg-type]
                elif kind == "end":
                    self._end_job(job)
                if len(self._buffer) >= self.flush_sentences:
                    self._flush()
                self._maybe_commit()
                self._report()
            self._flush()
            self._commit()
            if self._upgrading and full and self.index is not None:
                self.index.set_records_version(RECORDS_VERSION)
            self._phase = "done"
            if activate and self.generation is not None and self.generation.status != "active":
                self._activate()
        except Cancelled:
            self.result.cancelled = True
            stop.set()
            _drain(q if producer is not None else None, producer)
            # Buffered sentences belong to unfinished units, which the journal makes the
            # next run redo: drop them rather than spend seconds encoding on a cancel.
            self._buffer = []
            self._commit()
            self._phase = "cancelled"
        finally:
            stop.set()
            if producer is not None and producer.is_alive():
                _drain(q, producer)
            self.close()
        self._current = None
        self.result.seconds = time.monotonic() - self._t0
        self._report(force=True)
        return self.result

    def complete_targets(self, targets: Sequence[Target]) -> list[Target]:
        """``targets`` followed by every source they do not cover whole.

        A run on a building generation (a new or adapted model) indexes only into it, and it
        goes live only once it holds every source: a partial run (``index FILE``, a watch
        batch) used to leave it building for ever, its files unsearchable. So any run on it
        also brings the rest up to date (files already in it are skipped) and switches it."""
        whole = {t.source.id for t in targets if t.subtree is None}
        return [*targets, *(Target(s) for s in self.catalog.sources() if s.id not in whole)]

    def _activate(self) -> None:
        """Switch the building generation live and retire the old one. The generation just
        retired keeps its folder (``sparcdesk restore`` can make it live again); older
        retired ones are removed."""
        assert self.generation is not None
        previous = self.catalog.activate_generation(self.generation.id)
        self.generation = self.catalog.get_generation(self.generation.id)
        keep = {self.generation.id if self.generation else None, previous.id if previous else None}
        for g in self.catalog.generations():
            if g.status == "retired" and g.id not in keep and os.path.isdir(g.index_dir):
                shutil.rmtree(g.index_dir, ignore_errors=True)

    # ---- per unit

    def _start_job(self, job: _Job, file_hash: object) -> None:
        job.hash = file_hash if isinstance(file_hash, str) else None
        prev_docs = {d.key: d for d in self.catalog.documents(job.path)}
        journal = self.store.journal(job.path)
        gen = self.generation.id if self.generation else None
        job.keep = (
            job.prev is not None and job.prev.generation == gen and job.prev.status in ("ok", "pending")
        )
        job.old_keys = set(prev_docs) | journal
        if job.keep:
            digests = self.store.digests(job.path)
            job.digests = {k: d for k, d in digests.items() if k in prev_docs and k not in journal}
            job.kept_docs = {k: prev_docs[k].n_sentences for k in job.digests}

    def _add_document(self, job: _Job, prepared: PreparedDoc) -> None:
        doc = prepared.doc
        if doc.key in job.seen:
            return
        job.seen.add(doc.key)
        note = doc.fields.get("note")
        if note:  # fallback decoding, empty file, skipped PDF pages: worth showing in status
            job.reasons.append(note if doc.key == job.path else f"{doc.key}: {note}")
        job.name_only = job.name_only or prepared.name_only
        if self._add_name_line(job, prepared):
            return
        if job.keep and job.digests.get(doc.key) == prepared.digest:
            if self._upgrading and prepared.whole is not None:
                self._wholes.append(prepared.whole)
            n = job.kept_docs.get(doc.key, 0)
            job.docs.append(DocumentRow(doc.key, job.path, doc.kind, doc.title, doc.parent_key, n))
            job.sentences += n
            return
        try:
            if doc.key in job.old_keys:
                self._deletes.append(doc.key)
            self._handled.append((job.path, doc.key, prepared.digest, doc.text))
            job.docs.append(
                DocumentRow(doc.key, job.path, doc.kind, doc.title, doc.parent_key, len(prepared.records))
            )
            if doc.kind == "email":
                job.messages.append(message_row(doc, job.path))
            job.sentences += len(prepared.records)
            if prepared.whole is not None:
                self._wholes.append(prepared.whole)
            for rec, s, c, g in zip(
                prepared.records, prepared.sentences, prepared.contexts, prepared.passages, strict=True
            ):
                self._buffer.append(_Pending(job, rec, s, c, g))
                job.outstanding += 1
        except Exception as exc:  # anything odd in one document must not stop the run
            job.reasons.append(f"{doc.key}: {type(exc).__name__}: {exc}")

    def _add_name_line(self, job: _Job, prepared: PreparedDoc) -> bool:
        """While upgrading an index from before file names were lines (records version 2):
        a kept file gains its name line alone, without re-encoding its text. Journalled like
        any re-added document, so a crash before its unit is recorded re-adds it whole."""
        doc = prepared.doc
        stored = job.digests.get(doc.key)
        if not (self._upgrading and job.keep and stored is not None and has_name_line(doc)):
            return False
        names = [i for i, r in enumerate(prepared.records) if r.field == "name"]
        if (
            stored == prepared.digest
            or stored != document_digest(doc, records="")
            or len(names) != 1
            or job.kept_docs.get(doc.key) != len(prepared.records) - 1
        ):
            return False
        i = names[0]
        self._handled.append((job.path, doc.key, prepared.digest, doc.text))
        job.docs.append(DocumentRow(doc.key, job.path, doc.kind, doc.title, doc.parent_key, len(prepared.records)))
        job.sentences += len(prepared.records)
        if prepared.whole is not None:
            self._wholes.append(prepared.whole)
        self._buffer.append(
            _Pending(job, prepared.records[i], prepared.sentences[i], prepared.contexts[i], prepared.passages[i])
        )
        job.outstanding += 1
        return True

    def _part_error(self, job: _Job, err: ExtractionError) -> None:
        if err.path == job.path and isinstance(err, UnsupportedFormat):
            # not a failure: listed as skipped, and found by its name (the producer adds it)
            job.reasons.insert(0, f"{SKIPPED_PREFIX}{err.reason}; only its name is searchable")
        elif err.path == job.path:
            job.unit_error = err.reason
        else:
            job.reasons.append(f"{err.path}: {err.reason}")

    def _end_job(self, job: _Job) -> None:
        job.extracted = True
        if job.unit_error is not None and not job.docs:
            # The whole unit failed: stale sentences of an earlier version must go too.
            self._deletes.extend(sorted(job.old_keys))
        else:
            self._deletes.extend(sorted(job.old_keys - job.seen))
            if job.unit_error is not None and not job.name_only:
                job.reasons.insert(0, job.unit_error)
                job.unit_error = None
        if job.outstanding == 0:
            self._finish(job)

    def _finish(self, job: _Job) -> None:
        self._finished.append(job)
        self.result.files_done += 1
        self._bytes_done += job.size
        if job.unit_error is not None:
            self.result.failed += 1
        else:
            self.result.indexed += 1
        self.result.changed_paths.append(job.path)

    def _delete_unit(self, path: str) -> None:
        keys = {d.key for d in self.catalog.documents(path)} | self.store.journal(path)
        self._deletes.extend(sorted(keys))
        self._forget.append(path)
        self.result.deleted += 1
        self.result.changed_paths.append(path)

    # ---- encoding, adding, committing

    def _apply_deletes(self) -> None:
        """Deletes, then the whole documents queued since (which replace what was deleted)."""
        if self._deletes and self.index is not None:
            for key in self._deletes:
                self.index.delete_document(key)
            self._dirty = True
        self._deletes = []
        if self._wholes and self.index is not None:
            self.index.add_documents(self._wholes)
            self._wholes = []
            self._dirty = True

    def _flush(self) -> None:
        if not self._buffer:
            self._apply_deletes()
            return
        items, self._buffer = self._buffer, []
        # a document's sentences are buffered together, so no passage spans two flushes
        vectors = self.encoder.encode(
            [p.sentence for p in items],
            [p.context for p in items],
            self.batch_size,
            groups=[(id(p.job), p.record.doc_key, p.passage) for p in items],
        )
        index = self._ensure_index(vectors)
        self._apply_deletes()
        index.add([p.record for p in items], vectors)
        self._dirty = True
        self._since_commit += len(items)
        self.result.sentences += len(items)
        for p in items:
            p.job.outstanding -= 1
            if p.job.outstanding == 0 and p.job.extracted:
                self._finish(p.job)

    def _maybe_commit(self) -> None:
        if self._since_commit >= self.commit_every or (
            (self._dirty or self._finished) and time.monotonic() - self._last_commit >= self.commit_seconds
        ):
            self._flush()
            self._commit()

    def _commit(self) -> None:
        """Steps (a), (b), (c) of the module docstring."""
        self._apply_deletes()
        if not (self._dirty or self._finished or self._forget or self._handled):
            return
        # Short of space for what this commit writes: stop before writing anything.
        texts = sum(len(t) for *_, t in self._handled)
        needed = diskspace.commit_estimate(self._since_commit if self._dirty else 0, texts)
        free = diskspace.free_bytes(self.layout.home)
        if free is not None and free < needed:
            raise diskspace.DiskFullError(self.layout.home, free, self._space_needed(), self.result.files_done)
        phase, self._phase = self._phase, "committing"
        self._report(force=True)
        cat = self.catalog
        if self._handled:
            with cat.transaction():
                self.store.put(self._handled)
            self._handled = []
        if self._dirty and self.index is not None:
            self.index.commit()
            self.result.commits += 1
        self._dirty = False
        with cat.transaction():
            for job in self._finished:
                self._record_job(job)
            for path in self._forget:
                cat.remove_file(path)
                self.store.forget_unit(path)
        self._finished = []
        self._forget = []
        self._since_commit = 0
        self._last_commit = time.monotonic()
        self._phase = phase
        if self.on_commit is not None:
            try:
                self.on_commit()
            except Exception:
                log.exception("on_commit callback failed")

    def _record_job(self, job: _Job) -> None:
        cat = self.catalog
        gen = self.generation.id if self.generation else None
        if job.unit_error is not None and not job.docs:
            old = cat.replace_documents(job.path, [])
            _delete_messages(cat, old)
            self.store.forget_unit(job.path)
            cat.record_error(job.path, job.source_id, job.unit_error, job.size, job.mtime_ns)
            return
        old = cat.replace_documents(job.path, job.docs)
        gone = set(old) - job.seen
        _delete_messages(cat, gone)
        self.store.delete_keys(gone)
        if job.messages:
            cat.upsert_messages(job.messages)
        reason = None
        if job.reasons:
            extra = len(job.reasons) - MAX_REASONS
            reason = "; ".join(job.reasons[:MAX_REASONS]) + (f"; and {extra} more" if extra > 0 else "")
        if job.sentences == 0:
            reason = "nothing to index: " + (reason or ("no documents" if not job.docs else "no text found"))
        status = "ok"
        if job.unit_error is not None:
            # Its content could not be read (a damaged file, a permission): a failure, listed
            # and retried when it changes, but the file is in the index by its name.
            status = "error"
            reason = job.unit_error + (f"; {reason}" if reason else "")
        cat.upsert_file(
            FileState(
                job.path,
                job.source_id,
                job.size,
                job.mtime_ns,
                job.hash,
                status,
                reason,
                job.sentences,
                now_iso(),
                gen,
            )
        )
        self.store.clear_journal(job.path)


#: Extract in a worker process under limits (engine.extract_worker); False: in this
#: process, as before (tests that replace ``iter_extract`` in this process use it).
ISOLATE_EXTRACTION = True


def _extract_items(path: str, stop: threading.Event) -> Iterator[Document | ExtractionError]:
    """The documents and errors of one unit: in the worker under limits, or in-process."""
    if ISOLATE_EXTRACTION:
        from engine import extract_worker

        return extract_worker.shared().extract(path, MAX_FILE_BYTES, stop)
    return iter_extract(Path(path))


def _produce(jobs: Sequence[_Job], q: queue.Queue, stop: threading.Event) -> None:
    """Producer thread: extract and segment units, in order, into ``q``."""

    def put(item: tuple[str, _Job | None, object]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    try:
        for job in jobs:
            if stop.is_set():
                return
            try:
                file_hash: str | None = unit_hash(job.path)
            except OSError as exc:  # extracting it reports why it cannot be read
                log.debug("cannot hash %s: %s", job.path, exc)
                file_hash = None
            if not put(("start", job, file_hash)):
                return
            mail: dict[str, dict[str, str]] = {}
            docs = 0
            failed = False
            try:
                with contextlib.closing(_extract_items(job.path, stop)) as items:  # type: ignore[type-var]
                    for item in items:
                        if stop.is_set():
                            return
                        if isinstance(item, ExtractionError):
                            msg: tuple[str, _Job | None, object] = ("error", job, item)
                            failed = failed or item.path == job.path
                        else:
                            msg = _prepared(job, item, mail)
                            if msg[0] == "doc":
                                docs += 1
                            else:
                                failed = failed or item.key == job.path
                        if not put(msg):
                            return
            except Exception as exc:  # a bug on one odd unit must not stop the run
                log.exception("extraction of %s failed", job.path)
                failed = True
                if not put(
                    ("error", job, ExtractionError(job.path, f"indexing failed: {type(exc).__name__}: {exc}"))
                ):
                    return
            name_only = _name_only(job.path) if failed and not docs else None
            if name_only is not None and not put(("doc", job, name_only)):
                return
            if not put(("end", job, None)):
                return
    finally:
        while True:
            try:
                q.put(("done", None, None), timeout=0.1)
                break
            except queue.Full:
                if stop.is_set():
                    with contextlib.suppress(queue.Empty):
                        q.get_nowait()


def _prepared(job: _Job, doc: Document, mail: dict[str, dict[str, str]]) -> tuple[str, _Job, object]:
    """``("doc", job, PreparedDoc)``, or ``("error", job, ExtractionError)`` for a document
    over a limit or one the segmenter fails on (one odd document must not cost its unit)."""
    try:
        return ("doc", job, prepare(doc, mail))
    except ExtractionError as exc:
        return ("error", job, exc)
    except Exception as exc:
        log.exception("segmenting %s failed", doc.key)
        return ("error", job, ExtractionError(doc.key, f"indexing failed: {type(exc).__name__}: {exc}"))


def _name_only(path: str) -> PreparedDoc | None:
    """A file whose content could not be read (or is in a format not read), as a document of
    its name alone, so that every file can be found; None for a mail store or a file gone."""
    try:
        if not os.path.isfile(path) or classify(Path(path)) != "file":
            return None
        prepared = prepare(name_only_document(path), {})
    except Exception:  # never worse than the failure it stands in for
        log.exception("indexing the name of %s failed", path)
        return None
    prepared.name_only = True
    return prepared


def _drain(q: queue.Queue | None, producer: threading.Thread | None) -> None:
    if q is None or producer is None:
        return
    while producer.is_alive():
        with contextlib.suppress(queue.Empty):
            q.get(timeout=0.05)
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            break


def source_kind(path: Path) -> str:
    """``mailstore`` for an mbox file, a Maildir folder or a single ``.eml``; else ``folder``."""
    try:
        unit = classify(path)
    except OSError as exc:  # indexing it reports why it cannot be read
        log.debug("cannot classify %s: %s", path, exc)
        return "folder"
    if unit in ("mbox", "maildir") or path.suffix.lower() == ".eml":
        return "mailstore"
    return "folder"


__all__ += ["IndexFormatError", "RunResult", "source_kind"]
