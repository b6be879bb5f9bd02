"""The record every extractor returns, and the error every extractor raises.

One type for files, e-mail messages and attachments keeps the indexer and the catalog
ignorant of formats: they only see a unique ``key``, the file on disk it came from, some
plain text to segment (paragraphs separated by blank lines, see ``engine.ingest.segment``) and a
few string fields for display and filtering.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

KINDS = (
    *("text", "markdown", "html", "pdf", "docx", "odt", "epub", "rtf", "email"),
    *("xlsx", "pptx", "ods", "odp"),
    "image",  # a picture read by OCR (engine.ingest.readers.ocr)
    "other",  # a file whose content is not read (an unsupported format): indexed by its name only
)

#: Kinds whose text is laid out in lines (a spreadsheet's rows, a slide's text paragraphs):
#: each line is cut into sentences on its own, a paragraph (a sheet, a slide) is a passage,
#: and a short line without closing punctuation is content, not a heading.
LINE_KINDS = frozenset({"xlsx", "pptx", "ods", "odp"})

#: How the reason of a file that was skipped (its format is not read; its name is indexed)
#: begins in the catalog, so status and the sources dialog tell it from a failure.
SKIPPED_PREFIX = "skipped: "

# Keys that every e-mail Document carries in ``fields`` (empty string when the header is absent).
EMAIL_FIELDS = (
    "from",
    "to",
    "cc",
    "bcc",
    "date",
    "subject",
    "message_id",
    "in_reply_to",
    "references",
    "thread",
    "mailbox",
)


@dataclass
class Document:
    """One searchable unit: a file, an e-mail message, or an attachment of a message.

    ``key`` is unique across a collection: the absolute file path for a file;
    ``"PATH#<message-id>"`` (or ``"PATH#<index>"`` when the message has no usable id) for a
    message inside an mbox file or Maildir folder; ``"PARENTKEY/attachment/<n>:<filename>"``
    for an attachment. ``path`` is the file on disk that holds the unit.

    ``fields`` for files: ``date`` (modification time, ISO 8601 UTC) and ``title`` when the
    format records one; ``encoding`` and ``note`` when plain text had to be decoded with a
    fallback codec. For e-mail: every name in ``EMAIL_FIELDS`` (``date`` in ISO 8601 UTC;
    ids without angle brackets; ``references`` space-separated).
    """

    key: str
    path: str
    kind: str
    title: str
    text: str
    fields: dict[str, str] = field(default_factory=dict)
    parent_key: str | None = None

    def __post_init__(self) -> None:
        # Every string the tokenizer, tantivy and SQLite will see is valid Unicode: a lone
        # surrogate (a file name decoded with surrogateescape copied into a header, a broken
        # UTF-16 text) made the tokenizer raise TypeError for the whole batch, and no value
        # is None whatever an extractor found. ``key`` and ``path`` name the file on disk
        # and stay as they are.
        title, text, fields = self.title, self.text, self.fields
        self.title = valid_text(title)
        self.text = valid_text(text)
        self.fields = {str(k): valid_text(v) for k, v in fields.items()}
        olds = [(title, self.title), (text, self.text), *((v, self.fields[str(k)]) for k, v in fields.items())]
        if any(isinstance(old, str) and old != new for old, new in olds):  # None -> "" is no note
            add_note(self.fields, REPLACED_NOTE)


#: The note (``fields["note"]``, shown in status) of a document whose text or headers held
#: bytes no decoder could read as characters.
REPLACED_NOTE = "characters that are not valid Unicode were replaced"

#: A paged document's field (a PDF): its page count and where each page with text starts in
#: its text, "30|0:1,1530:2,3021:4" (pages without text have no start). The catalog keeps it;
#: an answer says which page it is on (issue 39).
PAGES = "pages"


def pages_field(total: int, starts: list[tuple[int, int]]) -> str:
    """``PAGES`` for ``total`` pages whose text starts at ``(offset, page number)``."""
    return f"{total}|" + ",".join(f"{o}:{n}" for o, n in starts)


def page_at(pages: str, offset: int) -> tuple[int, int] | None:
    """(page number, page count) of the character at ``offset`` of a document with the
    ``PAGES`` field ``pages``; None when it has none (or it does not parse)."""
    try:
        total, _, rest = pages.partition("|")
        starts = [tuple(int(x) for x in part.split(":")) for part in rest.split(",") if part]
        page = max((n for o, n in starts if o <= offset), default=starts[0][1] if starts else 0)
        return (page, int(total)) if page else None
    except (ValueError, IndexError):
        return None


#: A document's headings (a DOCX/ODT heading, an EPUB chapter, a Markdown or HTML heading):
#: where each starts in its text and what it says, as JSON, ``[[0, "Introduction"], [1530,
#: "Installation"]]``. The catalog keeps it; an answer names the heading it is under (issue 39).
SECTIONS = "sections"
#: A heading longer than this is kept cut to it (with "…"): it names a place, it is not read.
MAX_HEADING_CHARS = 120


def section_fields(starts: list[tuple[int, str]]) -> dict[str, str]:
    """A reader's fields for headings that start at ``(offset, heading)``: ``{SECTIONS: ...}``,
    or no field when there are none."""
    cut = MAX_HEADING_CHARS - 1
    named = [[o, h if len(h) <= MAX_HEADING_CHARS else h[:cut].rstrip() + "…"] for o, h in starts]
    return {SECTIONS: json.dumps(named, ensure_ascii=False)} if named else {}


def section_at(sections: str, offset: int) -> str | None:
    """The heading the character at ``offset`` is under (the last one starting at or before
    it) in a document with the ``SECTIONS`` field ``sections``; None before the first heading,
    when there are none, or when the field does not parse."""
    try:
        starts = json.loads(sections)
        found = [str(h) for o, h in starts if int(o) <= offset]
    except (ValueError, TypeError):
        return None
    return found[-1] if found else None


def add_note(fields: dict[str, str], note: str) -> None:
    """Add ``note`` to a Document's ``fields["note"]`` (notes are joined by "; ")."""
    old = fields.get("note", "")
    if note not in old:
        fields["note"] = f"{old}; {note}" if old else note


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value: object) -> str:
    """``value`` as a string that encodes to UTF-8: ``None`` is empty, lone surrogates
    become U+FFFD (the replacement character)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


class ExtractionError(Exception):
    """A unit that could not be extracted; carries the file (or message key) and why.

    Raised (or yielded, by the iterators that must keep going) instead of letting library
    exceptions escape, so the indexer can record a readable problem and move on.
    """

    def __init__(self, path: str | object, reason: str) -> None:
        super().__init__(str(path), reason)
        self.path = str(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class UnsupportedFormat(ExtractionError):
    """A file in a format sparcdesk does not read (a legacy Office file, unknown binary data):
    not a failure. The indexer records it as skipped, with the reason, and indexes its name."""
