"""What a search returns: answers (a document, its best sentence and others), their hits and
the fields shown with them, and the filters a search takes (issue 37: search/ as its steps;
this is the presentation step's vocabulary, shared by the others)."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.ingest.documents import page_at, section_at
from engine.search.intent import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)


# --------------------------------------------------------------------------- public records


@dataclass
class SearchFilters:
    """Restrict answers without changing scores. ``folder``: documents under this folder;
    ``kinds``: any of these kinds (``text``, ``pdf``, ``email`` ...); ``date_from``/``date_to``:
    inclusive (file modification date, or an e-mail's Date); ``sender``: an address (or a
    From header, whose address is used), several (any of them), or, through ``Engine.ask``,
    part of a sender's name or address; ``mailbox``: a mailbox name (an mbox file's, a
    Maildir's, an e-mail file's folder), or through ``Engine.ask`` a label of
    ``Engine.mailboxes()`` ('all_documents (wolfe-j)') or a mailbox's path: that one alone."""

    folder: str | None = None
    kinds: list[str] | None = None
    date_from: _dt.date | None = None
    date_to: _dt.date | None = None
    sender: str | Sequence[str] | None = None
    mailbox: str | None = None


@dataclass
class Hit:
    """One sentence; ``start``/``end`` is its span inside ``passage`` (for bold).

    ``highlights``: spans of question words inside ``passage`` (same stem, stopwords
    left out). ``sentence_id`` identifies the sentence in the live index generation.
    """

    sentence: str
    score: float
    passage: str
    start: int
    end: int
    highlights: list[tuple[int, int]] = field(default_factory=list)
    sentence_id: int = -1
    #: When the sentence is one of an e-mail's header lines: which (``from``, ``to``,
    #: ``cc``, ``bcc``, ``subject``; ``date`` for the message's date stated as the answer of
    #: "When was it sent?", ``date_hit``, which no index line holds: ``sentence_id`` -1), so
    #: it is shown as that field; empty for a sentence of the text.
    field: str = ""


@dataclass
class Answer:
    """One document that answers: its best sentence and other matching ones.

    ``fields``: what the app shows about the document (for e-mail ``from``, ``to``, ``cc``,
    ``bcc``, ``subject``, ``date``, ``mailbox``, ``message_id``, ``thread``; for an attachment also
    ``attachment_of``; for files ``path`` and ``modified``). ``doc_start``: the best
    sentence's character offset in :meth:`engine.api.facade.Engine.document_text`, -1 when the
    answer is a header line (``best.field``), which is not part of the text.
    """

    doc_key: str
    path: str
    kind: str
    title: str
    date: str | None
    fields: dict[str, str]
    best: Hit
    others: list[Hit]
    doc_start: int
    #: What ranked the document: its best sentence's score; in the hybrid its best sentences'
    #: (``sentence_evidence``) plus its whole-document BM25 (answers come in descending order of it).
    score: float = 0.0
    #: Other paths of the same document in a byte-identical file (a download kept twice, a
    #: folder copied as a backup): listed here rather than as answers of their own.
    copies: list[str] = field(default_factory=list)
    #: A paged document's answer (a PDF): the page its best sentence is on, of ``pages``.
    page: int | None = None
    pages: int | None = None
    #: A document with headings (DOCX, ODT, EPUB, Markdown, HTML): the heading its best
    #: sentence is under (the last one starting at or before it).
    section: str | None = None


class _CatalogLike(Protocol):
    def message(self, key: str) -> Any: ...

    def get_document(self, key: str) -> Any: ...

    def file_hashes(self, paths: Iterable[str]) -> dict[str, str]: ...

    def messages_with_subject(self, subjects: Iterable[str]) -> list[str]: ...

    def names_correspondent(self, person: Iterable[str], direction: str = "from") -> bool: ...


class _Stemmer:
    _impl: Any = None

    @classmethod
    def stem(cls, word: str) -> str:
        if cls._impl is None:
            try:
                import Stemmer

                cls._impl = Stemmer.Stemmer("english")
            except ImportError:  # PyStemmer is a dependency; keep highlighting alive without it
                cls._impl = False
        if cls._impl is False:
            return word
        return cls._impl.stemWord(word)


def question_terms(question: str) -> set[str]:
    """Stems of the question's words, stopwords left out (what gets highlighted)."""
    words = (w.lower() for w in _WORD.findall(question))
    return {_Stemmer.stem(w) for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())}


def highlight_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans of the words of ``text`` whose stem is one of ``terms``."""
    terms = set(terms)
    if not terms:
        return []
    return [(m.start(), m.end()) for m in _WORD.finditer(text) if _Stemmer.stem(m.group().lower()) in terms]


def _passage_offsets(fields: dict[str, Any], text_of: Any = None) -> tuple[int, int]:
    """The sentence's span inside its stored passage.

    Uses ``passage_start`` when the index stores it; else locates the sentence text in the
    passage (the first occurrence, or with the document text the one whose passage really
    starts at ``start - offset`` when the sentence repeats inside its passage).
    """
    passage: str = fields.get("passage") or ""
    sentence: str = fields.get("text") or ""
    if "passage_start" in fields and fields["passage_start"] is not None:
        s = int(fields["start"]) - int(fields["passage_start"])
        return s, s + len(sentence)
    first = passage.find(sentence)
    if first < 0:
        return 0, 0
    if passage.find(sentence, first + 1) >= 0 and text_of is not None:
        doc_text = text_of(fields.get("doc_key", ""))
        start = int(fields.get("start", 0))
        if doc_text:
            pos = first
            while pos >= 0:
                if doc_text[start - pos : start - pos + len(passage)] == passage:
                    return pos, pos + len(sentence)
                pos = passage.find(sentence, pos + 1)
    return first, first + len(sentence)


def stored_passage(fields: dict[str, Any], text_of: Any = None) -> str:
    """The sentence's passage: stored with it (indexes before 0.4), or sliced from its
    document's text by ``passage_start``/``passage_end``; the sentence alone when neither
    can be had."""
    if fields.get("passage"):
        return str(fields["passage"])
    ps, pe = fields.get("passage_start"), fields.get("passage_end")
    if ps is not None and pe is not None and text_of is not None:
        doc_text = text_of(fields.get("doc_key", "")) or ""
        passage = doc_text[int(ps) : int(pe)]
        sentence = fields.get("text") or ""
        s = int(fields.get("start", 0)) - int(ps)
        if passage[s : s + len(sentence)] == sentence:
            return passage
    return str(fields.get("text") or "")


def make_hit(fields: dict[str, Any], score: float, terms: set[str], text_of: Any = None) -> Hit:
    passage = stored_passage(fields, text_of)
    if passage is not fields.get("passage"):
        fields = {**fields, "passage": passage}
        if passage == fields.get("text") and "passage_start" in fields:
            fields["passage_start"] = fields.get("start")
    start, end = _passage_offsets(fields, text_of)
    if end == 0 and not passage.startswith(fields.get("text", "") or "\0"):
        passage = fields.get("text") or ""
        start, end = 0, len(passage)
    return Hit(
        sentence=fields.get("text") or "",
        score=float(score),
        passage=passage,
        start=start,
        end=end,
        highlights=highlight_spans(passage, terms),
        sentence_id=int(fields.get("sentence_id", -1)),
        field=str(fields.get("field") or ""),
    )


def _iso(epoch: Any) -> str | None:
    if epoch is None:
        return None
    try:
        return _dt.datetime.fromtimestamp(int(epoch), tz=_dt.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return None


def document_fields(meta: dict[str, Any], catalog: _CatalogLike | None) -> dict[str, str]:
    """Display fields of a document from its stored sentence fields and the catalog."""
    out: dict[str, str] = {}
    kind = meta.get("kind", "")
    key = meta.get("doc_key", "")
    date = _iso(meta.get("date"))
    if kind == "email" or meta.get("sender") or meta.get("subject"):
        msg = catalog.message(key) if catalog is not None and kind == "email" else None
        if msg is not None:
            out.update(
                {
                    "from": msg.from_addr,
                    "to": ", ".join(msg.to_addrs),
                    "cc": ", ".join(msg.cc_addrs),
                    "bcc": ", ".join(msg.bcc_addrs),
                    "subject": msg.subject,
                    "mailbox": msg.mailbox,
                    "message_id": msg.message_id,
                    "thread": msg.thread,
                    # where the text's quoted history starts (the preview dims it)
                    "quoted_at": "" if msg.quoted_at is None else str(msg.quoted_at),
                }
            )
        else:
            out.update(
                {
                    "from": meta.get("sender", ""),
                    "to": ", ".join(meta.get("recipients") or []),
                    "subject": meta.get("subject", ""),
                    "mailbox": meta.get("mailbox", ""),
                }
            )
        if date:
            out["date"] = date
    row = catalog.get_document(key) if kind != "email" and catalog is not None else None
    if row is not None and row.parent_key and "from" in out:  # an attachment: its message
        out["attachment_of"] = row.parent_key
    if kind != "email":
        out["path"] = meta.get("path", "")
        if date:
            out["modified"] = date
        in_text = row is not None and not meta.get("field")  # a header line is in no page or section
        where = page_at(row.pages, int(meta.get("start") or 0)) if in_text and row.pages else None
        if where is not None:  # a PDF's answer: which page it is on (issue 39)
            out["page"], out["pages"] = str(where[0]), str(where[1])
        section = section_at(row.sections, int(meta.get("start") or 0)) if in_text and row.sections else None
        # a DOCX/ODT/EPUB answer: the heading it is under (issue 39); not the document's own
        # title again (a page whose one heading is its title says nothing more by it)
        if section and " ".join(section.split()).casefold() != " ".join(str(meta.get("title") or "").split()).casefold():
            out["section"] = section
    return {k: v for k, v in out.items() if v}


class Answers(list):
    """The answers to one question, best document first, and whether they answer it.

    ``answered`` is the engine's decision for the question as a whole: False when nothing
    indexed answers it, in which case the list holds the closest matches, marked as such
    by the app and the CLI. It rests on ``match`` (the best sentence's IDF-weighted SPARC
    score over the highest the question could reach, 0..1) and ``coverage`` (the
    IDF-weighted share of the question's content words the first document holds, 0..1).

    ``relaxed`` names the quoted phrases no document holds: they were dropped from the
    restrictions (their words still rank), and the app and the CLI say so. ``absent`` names
    the question's content words that no indexed sentence holds ("xyzzyq"): when every one is
    absent there are no answers at all, not a page of unrelated "closest matches"."""

    answered: bool
    coverage: float
    match: float
    relaxed: tuple[str, ...]
    absent: tuple[str, ...]
    #: the share of documents holding the question's rarest word, when the first one holds
    #: it (1.0: it does not; ``DocumentIndex.rarest_held``)
    rare: float = 1.0
    #: how far the first document stands above the next: the log of its score over the second
    #: answer's (``math.inf`` when no other document matched; ``decision.stands_out``)
    lead: float = 0.0

    def __init__(
        self,
        items: Iterable[Answer] = (),
        answered: bool = False,
        coverage: float = 0.0,
        match: float = 0.0,
        relaxed: Sequence[str] = (),
        absent: Sequence[str] = (),
    ) -> None:
        super().__init__(items)
        self.answered = answered
        self.coverage = coverage
        self.match = match
        self.relaxed = tuple(relaxed)
        self.absent = tuple(absent)
