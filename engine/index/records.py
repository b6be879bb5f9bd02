"""The sentence index's format: its schema and metadata files, what a sentence is when it is
indexed (:class:`SentenceRecord`) and when it is found (:class:`IndexHit`), how a record
becomes a tantivy document and a stored document becomes fields again, and the errors an
index that cannot be opened raises (:mod:`engine.index.sentences` is the index itself)."""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tantivy

from engine.home.paths import to_store
from engine.index.docindex import add_filter_fields
from engine.index.filters import _epoch, folder_terms

#: 2: SPARC levels in the column store (1 had them as tantivy impact terms).
FORMAT_VERSION = 2
META_FILE = "sparcdesk-index.json"
IDS_FILE = "sparcdesk-ids.json"
TANTIVY_META = "meta.json"
TEXT_ANALYZER = "sparc_en"

# Stored display fields travel as one JSON blob in a stored-only bytes field: tantivy text
# fields are always indexed, and indexing passages or recipients would only cost space.
_META_KEYS = (
    "doc_key",
    "passage",
    "start",
    "end",
    "position",
    "title",
    "path",
    "kind",
    "date",
    "sender",
    "recipients",
    "subject",
    "mailbox",
    "field",
)


class IndexLockedError(RuntimeError):
    """Another writer (this process or another sparcdesk process) holds the index."""


class IndexFormatError(RuntimeError):
    """The directory is not a sparcdesk sentence index this code can read."""


class IndexVersionError(IndexFormatError):
    """The index was made by another version of sparcdesk, in another index format. An older
    one is rebuilt from the sources (:mod:`engine.upkeep.repair`); a newer one is left as it is."""

    def __init__(self, path: Path, found: int) -> None:
        self.path, self.found = Path(path), found
        self.newer = found > FORMAT_VERSION
        if self.newer:
            what = (
                f"the index {path} was made by a newer sparcdesk (index format {found}; this version"
                f" reads format {FORMAT_VERSION}): run that newer sparcdesk, or, to index afresh with"
                " this one, move the data folder aside and add your folders again"
            )
        else:
            what = (
                f"the index {path} was made by an older sparcdesk (index format {found}; this version"
                f" reads format {FORMAT_VERSION}): run 'sparcdesk index' on your folders ('sparcdesk sources'"
                " lists them) to rebuild it"
            )
        super().__init__(what)


def index_format(path: str | os.PathLike[str]) -> int | None:
    """The index format recorded in the index at ``path`` (None: no readable metadata)."""
    try:
        meta = json.loads((Path(path) / META_FILE).read_text(encoding="utf-8"))
        return int(meta.get("format", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


@dataclass
class SentenceRecord:
    """One sentence and what the app shows or filters on.

    ``start``/``end`` are character offsets of the sentence in its document's text,
    ``position`` its index among the document's sentences, ``passage`` its passage text
    (the encoder's context) or a passage id. ``date`` is seconds since the epoch (UTC) or a
    timezone-aware datetime; a naive datetime is taken as UTC.
    """

    doc_key: str
    text: str
    start: int = 0
    end: int = 0
    position: int = 0
    passage: str = ""
    title: str = ""
    path: str = ""
    kind: str = ""
    date: int | _dt.date | None = None
    sender: str = ""
    recipients: Sequence[str] = ()
    subject: str = ""
    mailbox: str = ""
    sentence_id: int | None = None
    #: For an e-mail header line indexed as a sentence ("From: Ann <ann@x.org>"): which
    #: header it is (``from``, ``to``, ``cc``, ``subject``); empty for text sentences.
    field: str = ""
    #: The passage's character offsets in the document's text. When set, the index stores
    #: them instead of the passage's text (which the catalog holds with the document's):
    #: ~75 bytes a sentence of prose (issue 34); ``passage`` is then not stored.
    passage_start: int | None = None
    passage_end: int | None = None
    #: In the quoted history of a reply (``engine.ingest.mail.quoted_history``): searchable,
    #: ranked below the message's own words (stored only when true).
    quoted: bool = False


@dataclass
class IndexHit:
    """One ranked sentence of the index; ``fields`` holds its stored fields when they were
    loaded. (An answer's sentence, with its passage and highlights, is ``engine.search.answers.Hit``.)"""

    sentence_id: int
    score: float
    fields: dict[str, Any] | None = field(default=None, repr=False)


def _text_analyzer() -> tantivy.TextAnalyzer:
    """English BM25 analysis: lowercase, Lucene English stopwords, Snowball stemmer
    (SPARC.md §4 finds stemming and stopwords make BM25 a much stronger baseline)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def build_schema() -> tantivy.Schema:
    """The sentence index schema.

    ``sentence_id`` is a signed i64 that is indexed (tantivy silently deletes nothing by
    term on unsigned fields, and aborts when deleting on a fast-only field) and fast (for
    cheap id lookup of 1,000 hits and the max id).
    """
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("sentence_id", stored=True, indexed=True, fast=True)
    sb.add_text_field("doc_key", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", stored=True, tokenizer_name=TEXT_ANALYZER, index_option="position")
    sb.add_bytes_field("meta", stored=True, indexed=False)
    add_filter_fields(sb)
    return sb.build()


def sentence_document(sid: int, rec: SentenceRecord) -> tantivy.Document:
    """The tantivy document of sentence ``sid``: its text, its filter fields and the display
    fields as one stored JSON blob (:func:`stored_fields` reads it back)."""
    doc = tantivy.Document()
    doc.add_integer("sentence_id", sid)
    doc.add_text("doc_key", to_store(rec.doc_key))
    doc.add_text("text", rec.text)
    date = _epoch(rec.date)
    meta = {k: getattr(rec, k) for k in _META_KEYS}
    meta["date"] = date
    if rec.quoted:
        meta["quoted"] = True
    if rec.passage_start is not None and rec.passage_end is not None and not rec.field:
        del meta["passage"]  # the reader slices it from the document's text
        meta["passage_start"], meta["passage_end"] = rec.passage_start, rec.passage_end
    meta["recipients"] = list(rec.recipients)
    # surrogatepass: file names that are not valid UTF-8 (lone surrogates) round-trip.
    meta_json = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
    doc.add_bytes("meta", meta_json.encode("utf-8", "surrogatepass"))
    if rec.path:
        for f in folder_terms(rec.path):
            doc.add_text("folder", to_store(f))
    if rec.kind:
        doc.add_text("kind", rec.kind)
    if date is not None:
        doc.add_integer("date", date)
    if rec.sender:
        doc.add_text("sender", rec.sender.strip().lower())
    if rec.mailbox:
        doc.add_text("mailbox", rec.mailbox.strip().lower())
    return doc


def stored_fields(searcher: tantivy.Searcher, addr: Any) -> dict[str, Any]:
    """Stored fields of one hit as a flat dict (display fields, ``text``, ``sentence_id``)."""
    doc = searcher.doc(addr)
    fields: dict[str, Any] = json.loads(bytes(doc.get_first("meta")).decode("utf-8", "surrogatepass"))
    fields["sentence_id"] = int(doc.get_first("sentence_id"))
    fields["text"] = doc.get_first("text")
    return fields
