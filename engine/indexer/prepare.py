"""A Document as the index holds it: its sentences, each with its context and record, the
whole document for the document-level BM25, and a digest that says whether it changed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.catalog.store import MessageRow
from engine.home.paths import display
from engine.index.docindex import DocumentText, mail_header_lines
from engine.index.sentences import SentenceRecord, folder_terms
from engine.ingest.documents import SECTIONS, Document, ExtractionError
from engine.ingest.mailheaders import QUOTED_AT, RECIPIENT_FIELDS, addresses, sender_address
from engine.ingest.segment import Span, passages_of

#: What a document becomes in the index. A new value re-reads every file on the next run
#: and re-encodes the documents whose records it changes (2: e-mail header lines as
#: sentences; 3: a file's name as a line of its own; 4: a long To/Cc list as several lines,
#: see ``records_of`` and ``engine.index.docindex.mail_header_lines``; 5: a message's Bcc
#: list as lines of its own, and an address header the standard parser finds invalid read
#: whole, ``engine.ingest.mail.message_fields``: only messages with such headers change; an
#: attachment's file name as a line, added without re-encoding its text; a Word file's
#: content controls, text boxes, tracked insertions and notes read, ``engine.ingest.formats._docx``,
#: and an OpenDocument file's frames, footnotes and table cells kept apart from the words
#: around them, ``_odf_blocks``: only files holding them change; 6: a forwarded message's
#: From/To/Cc lines kept in the message that forwards it, ``engine.ingest.mail.clean_body``:
#: only messages holding a forward change; and a Word file's comments, headers and footers
#: read, ``engine.ingest.formats._docx_parts``, and an HTML image's alternative text,
#: ``html_to_text``: only files holding them change; 7: a reply's quoted history kept after
#: its own words, ``engine.ingest.mail.quoted_history``: only messages quoting one change).
RECORDS_VERSION = "7"


def has_name_line(doc: Document) -> bool:
    """Whether ``doc`` is a file of its own or a named attachment (not an e-mail), whose name
    is indexed as a line (``field="name"``, ``file_name``), so that every file can be found by
    its name, and an attachment by its file name ("q3-forecast.xlsx")."""
    if doc.kind == "email" or not doc.path:
        return False
    return doc.parent_key is None or bool(doc.fields.get("filename"))


def file_name(doc: Document) -> str:
    """The name ``doc`` is found by: a file's on disk, an attachment's as its message names it."""
    if doc.parent_key:
        return doc.fields.get("filename") or Path(doc.path).name
    return Path(doc.path).name


def records_of(doc: Document, header: list[tuple[str, str]] | None = None) -> str:
    """The records version in which the records of a document like ``doc`` last changed (at
    most ``RECORDS_VERSION``). It is part of the document's digest, so a new version
    re-encodes only the documents whose records it changes. ``header``: a message's
    ``mail_header_lines`` when the caller has them already (``prepare``)."""
    if doc.kind == "email":
        # header lines came with 2; a To/Cc list cut into several lines with 4, Bcc lines with
        # 5, so upgrading re-encodes only the messages that have such a list or a Bcc header
        # (on a large mailbox most have neither)
        names = [name for name, _ in (mail_header_lines(doc.fields) if header is None else header)]
        if "bcc" in names:
            return str(min(5, int(RECORDS_VERSION)))
        cut = names.count("to") > 1 or names.count("cc") > 1
        return str(min(4 if cut else 2, int(RECORDS_VERSION)))
    if not has_name_line(doc):
        return ""
    return "5" if doc.parent_key else "3"  # a file's name line came with 3, an attachment's with 5


#: A document that cuts into more sentences than this is not indexed (its name is): no
#: real document of a desktop comes near it (a 1,500-page book has ~40,000), and a hostile
#: one (a 672 KB DOCX of 2,000,000 one-word paragraphs) would take hours to encode.
MAX_SENTENCES = 60_000


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


def _digested_fields(fields: dict[str, str]) -> dict[str, str]:
    """``fields`` as the digest reads them: a field added after messages were indexed
    ("bcc", records 5) counts only where set, so a message without one keeps its digest and
    its vectors. A document's headings (``SECTIONS``) are the catalog's, not the index's: a
    file indexed before they were read keeps its vectors when read again."""
    return {k: v for k, v in fields.items() if (v or k != "bcc") and k != SECTIONS}


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
        json.dumps(_digested_fields(doc.fields), sort_keys=True),
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
    #: What the indexer should say of the document in status (a line cut short).
    notes: list[str] = field(default_factory=list)


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
    date = iso_to_epoch(f.get("date") or origin.get("date"))
    # What every record of the document carries (display and filter fields).
    common: dict[str, Any] = {
        "doc_key": doc.key,
        "title": doc.title,
        "path": doc.path,
        "kind": doc.kind,
        "date": date,
        "sender": sender,
        "recipients": [a for name in RECIPIENT_FIELDS for a in addresses(origin.get(name, ""))],
        "subject": origin.get("subject", ""),
        "mailbox": origin.get("mailbox", ""),
    }
    out = PreparedDoc(doc, "", [], [], [])
    passages = passages_of(doc.text, doc.kind, out.notes)
    quoted_at = _quoted_at(doc)
    n = sum(len(p) for p in passages)
    if n > MAX_SENTENCES:
        raise ExtractionError(doc.key, f"too many sentences ({n:,} > {MAX_SENTENCES:,} limit): skipped")
    _add_text(out, passages, common, quoted_at)
    header = mail_header_lines(f) if doc.kind == "email" else []
    if has_name_line(doc):
        # A file is found by its name, also when its content is not read (an unsupported
        # format, a damaged file: then this line is all it has). Shown as its name, it only
        # answers when no other sentence of the file matches (engine.search.answers.is_heading_record).
        header = [("name", display(file_name(doc)))]
    if out.records or header:
        _add_header(out, header, len(passages), common)
    if out.records:
        out.whole = _whole_text(doc, origin, header, quoted_at, common)
    out.digest = document_digest(doc, records_of(doc, header if doc.kind == "email" else None))
    return out


def _add_text(out: PreparedDoc, passages: list[list[Span]], common: dict[str, Any], quoted_at: int) -> None:
    """A record per sentence of the document's text, passage by passage."""
    doc = out.doc
    for number, passage in enumerate(passages):
        p_start, p_end = passage[0].start, passage[-1].end
        passage_text = doc.text[p_start:p_end]
        for i, span in enumerate(passage):
            out.passages.append(number)
            out.sentences.append(span.text)
            out.contexts.append(_context(passage, i))
            rec = SentenceRecord(
                text=span.text,
                start=span.start,
                end=span.end,
                position=len(out.records),
                passage=passage_text,
                passage_start=p_start,
                passage_end=p_end,
                quoted=span.start >= quoted_at,
                **common,
            )
            out.records.append(rec)


def _add_header(out: PreparedDoc, header: list[tuple[str, str]], passages: int, common: dict[str, Any]) -> None:
    """A message's header lines (or a file's name line) after its text, each a passage of its own.

    A message's header lines are sentences too, so a question about a person finds the
    messages they sent or received and can be answered by the line itself ("From: Ann Lee
    <ann.lee@x.org>"). Each is encoded alone: the model pools over the context's positions
    too, so the other lines as context would give every line the names of all the others."""
    for name, line in header:
        out.passages.append(passages + len(out.passages))  # a passage of its own
        out.sentences.append(line)
        out.contexts.append("")
        out.records.append(SentenceRecord(text=line, position=len(out.records), passage=line, field=name, **common))


def _whole_text(
    doc: Document, origin: dict[str, str], header: list[tuple[str, str]], quoted_at: int, common: dict[str, Any]
) -> DocumentText:
    """The whole document for the document-level BM25 index, its header lines first."""
    head = [x for _, x in header] if header and doc.kind == "email" else [doc.title, Path(doc.path).name]
    return DocumentText(
        doc_key=doc.key,
        # a reply's quoted history is not its own: the document ranks by what it says
        body="\n".join([*head, doc.text[:quoted_at]]),
        folders=tuple(folder_terms(doc.path)) if doc.path else (),
        kind=doc.kind,
        date=common["date"],
        sender=common["sender"],
        mailbox=origin.get("mailbox", ""),
        from_text=origin.get("from", ""),
        to_text=" ".join(x for x in (origin.get(name, "") for name in RECIPIENT_FIELDS) if x),
        subject=origin.get("subject", ""),
        name=file_name(doc) if doc.path and doc.kind != "email" else "",
    )


#: The context of a sentence is cut to this many characters: the encoder reads at most
#: ``max_length`` word pieces of sentence and context together (128-256), so more is never
#: read, and a bound here keeps a document's cost linear in its length.
MAX_CONTEXT_CHARS = 4000


def _context(passage: list[Span], i: int) -> str:
    """The other sentences of sentence ``i``'s passage, joined by spaces; past
    ``MAX_CONTEXT_CHARS``, its neighbours first (those after it, then those before), cut there."""
    others = [s.text for j, s in enumerate(passage) if j != i]
    if sum(len(t) + 1 for t in others) <= MAX_CONTEXT_CHARS:
        return " ".join(others)
    near = (passage[j].text for j in (*range(i + 1, len(passage)), *range(i - 1, -1, -1)))
    return " ".join(near)[:MAX_CONTEXT_CHARS]


def _quoted_at(doc: Document) -> int:
    """Where a message's quoted history starts in its text (``QUOTED_AT``); past its end
    when it quotes nothing."""
    try:
        return int(doc.fields.get(QUOTED_AT) or len(doc.text) + 1)
    except ValueError:
        return len(doc.text) + 1


def _listed(fields: dict[str, str], name: str) -> list[str]:
    """The addresses of a To, Cc or Bcc field, or the field as written when none parses."""
    return addresses(fields.get(name, "")) or ([fields[name]] if fields.get(name) else [])


def message_row(doc: Document, unit: str) -> MessageRow:
    f = doc.fields
    return MessageRow(
        key=doc.key,
        file=unit,
        message_id=f.get("message_id", ""),
        thread=f.get("thread", ""),
        from_addr=f.get("from", ""),
        to_addrs=_listed(f, "to"),
        cc_addrs=_listed(f, "cc"),
        bcc_addrs=_listed(f, "bcc"),
        date=iso_to_epoch(f.get("date")),
        subject=f.get("subject", ""),
        mailbox=f.get("mailbox", ""),
        quoted_at=_quoted_at(doc) if QUOTED_AT in f else None,
    )
