"""Questions in, answers grouped per document out.

A question becomes a bag of WordPiece ids (no network runs on it, SPARC.md §1) and the
index returns the exact top-1000 sentences by SPARC score, optionally with each question
token weighted by its IDF over the indexed sentences (CAI: ``log(N / N_t)``, 1 for a token
no sentence has) and by the bundle's learned question weight table when it ships one
(``term_weights``), and optionally fused with BM25 (CAI: raw BM25 plus raw SPARC over each system's top-100; a
sentence missing from one list gets that list's minimum; ``fuse`` also has min-max and
reciprocal-rank fusion, measured worse).

Sentences are then grouped by document: a document's best sentence is its answer, shown
inside its passage (with the sentence's offsets there, for bold) and with the document's
other matching sentences. Filters are constant-score restrictions in the index, so they
never change a score, only which sentences compete.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from email.utils import format_datetime, parseaddr
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.index.sentences import IndexFilters, IndexHit, SentenceIndex
from engine.ingest.documents import LINE_KINDS
from engine.ingest.mail import EMAIL_ADDRESS, RECIPIENT_FIELDS, people_of
from engine.model.bundle import Bundle
from engine.model.encoder import default_bundle_dir
from engine.search.defaults import DEFAULT_FUSION, FUSIONS
from engine.search.intent import FRAME_WORDS as QUESTION_FRAME  # noqa: F401 (public names, used outside)
from engine.search.intent import (  # noqa: F401
    STOPWORDS,
    QuestionIntent,
    typed_name,
    wanted_address,
    wanted_field,
    without_frame,
)
from engine.search.intent import parse as parse_intent
from engine.search.query import ParsedQuery
from engine.search.query import parse as parse_query

#: Sentences ranked per question before grouping (SPARC's evaluation depth).
RANK_DEPTH = 1000
#: Depth of each list fused by the hybrid (CAI).
HYBRID_DEPTH = 100
#: Other matching sentences shown per document.
MAX_OTHERS = 3
#: Stored fields are read in chunks of this many hits while grouping.
LOAD_CHUNK = 64

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


class _CatalogLike(Protocol):
    def message(self, key: str) -> Any: ...

    def get_document(self, key: str) -> Any: ...

    def file_hashes(self, paths: Iterable[str]) -> dict[str, str]: ...

    def messages_with_subject(self, subjects: Iterable[str]) -> list[str]: ...


# --------------------------------------------------------------------------- question side


class QueryEncoder:
    """A question as WordPiece ids, from the bundle's tokenizer only (no ONNX session):
    cheap enough for the window process, which never encodes sentences."""

    def __init__(self, bundle_dir: Path | None = None) -> None:
        self.bundle_dir = Path(bundle_dir) if bundle_dir else default_bundle_dir()
        self.config = Bundle.open(self.bundle_dir)
        self.tokenizer = self.config.tokenizer()
        #: the bundle's learned weight per vocabulary id, or None (``term_weights``)
        self.table: np.ndarray | None = self.config.query_weights

    def question_ids(self, text: str) -> list[int]:
        return self.config.question_ids(text)


def term_weights(
    index: SentenceIndex, qids: Sequence[int], idf: bool, table: np.ndarray | None = None
) -> dict[int, float] | bool | None:
    """How each question id is weighted, in ``SentenceIndex.search``'s terms: None (plain)
    or True (the index's IDF) without a table, as before tables existed; with the bundle's
    learned ``table`` (issue 13), ``table[t]`` times the index's IDF of ``t`` when ``idf``
    (an id past the table's end weighs 1). The index rounds the product to its integer grid."""
    if table is None:
        return True if idf else None
    ids = list(dict.fromkeys(int(t) for t in qids))
    base = index.idf(ids) if idf else {}
    n = table.shape[0]
    return {t: (float(table[t]) if 0 <= t < n else 1.0) * base.get(t, 1.0) for t in ids}


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


def to_index_filters(
    filters: SearchFilters | None,
    doc_keys: Sequence[str] | None = None,
    exclude_keys: Sequence[str] | None = None,
) -> IndexFilters | None:
    """The index's filter object for ``filters`` (folders made absolute, sender reduced to its address)."""
    if filters is None and doc_keys is None and not exclude_keys:
        return None
    f = filters or SearchFilters()
    folder = str(Path(f.folder).expanduser().absolute()) if f.folder else None
    sender: list[str] | None = None
    if f.sender:
        given = [f.sender] if isinstance(f.sender, str) else list(f.sender)
        sender = [(parseaddr(s)[1] or s).strip().lower() for s in given]
    out = IndexFilters(
        folder=folder,
        kinds=list(f.kinds) if f.kinds else None,
        date_from=f.date_from,
        date_to=f.date_to,
        sender=sender,
        mailbox=f.mailbox or None,
        doc_keys=list(doc_keys) if doc_keys is not None else None,
        exclude_keys=list(exclude_keys) if exclude_keys else None,
    )
    return None if out.is_empty() else out


# --------------------------------------------------------------------------- ranking


#: The constant of reciprocal-rank fusion (Cormack et al. 2009).
RRF_K = 60


def _normalised(scores: dict[int, float], method: str) -> dict[int, float]:
    if method == "sum" or not scores:
        return scores
    if method == "minmax":
        lo, hi = min(scores.values()), max(scores.values())
        span = hi - lo
        return {sid: (v - lo) / span if span > 0 else 1.0 for sid, v in scores.items()}
    if method == "rrf":
        order = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return {sid: 1.0 / (RRF_K + rank) for rank, (sid, _) in enumerate(order, start=1)}
    raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")


def _floor(scores: dict[int, float], n: int, depth: int | None) -> float:
    """What an item missing from a ranked list of ``n`` items (asked for ``depth``) scores
    there: the list's minimum if it was cut, else 0 (it did not match)."""
    if not scores or (depth is not None and n < depth):
        return 0.0
    return min(scores.values())


def fuse(
    sparc: Sequence[IndexHit],
    bm25: Sequence[IndexHit],
    method: str = DEFAULT_FUSION,
    depth: int | None = None,
) -> list[tuple[int, float]]:
    """CAI hybrid over the union of both lists; a sentence missing from one list gets that
    list's minimum: the list was cut at ``depth``, so it scored at most that there. A list
    shorter than ``depth`` (when given) was not cut: it holds every sentence that matches
    at all, and one missing from it scores 0 there. (With the minimum, the one sentence
    that holds a rare name got no more from BM25 than every sentence that does not.)
    ``sum`` adds raw scores (CAI); ``minmax`` first maps each list onto [0, 1] by its own
    minimum and maximum, so neither system's scale decides; ``rrf`` adds reciprocal ranks.
    Ranked by fused score, then sentence id."""
    if not sparc and not bm25:
        return []
    a = _normalised({h.sentence_id: h.score for h in sparc}, method)
    b = _normalised({h.sentence_id: h.score for h in bm25}, method)
    a_min = _floor(a, len(sparc), depth)
    b_min = _floor(b, len(bm25), depth)
    fused = {sid: a.get(sid, a_min) + b.get(sid, b_min) for sid in a.keys() | b.keys()}
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


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
        if kind != "email" and catalog is not None:
            row = catalog.get_document(key)
            if row is not None and row.parent_key:
                out["attachment_of"] = row.parent_key
    if kind != "email":
        out["path"] = meta.get("path", "")
        if date:
            out["modified"] = date
    return {k: v for k, v in out.items() if v}


# --------------------------------------------------------------------------- the search


#: How many documents the document-level BM25 contributes per question.
DOC_DEPTH = 100
#: Weight of the document's BM25 (its text and header lines) against its sentence evidence
#: in the hybrid's document ranking (chosen on docs/product.md's benchmark, half of the CISI
#: and TIME questions, checked on the other half).
DOC_WEIGHT = 3.0
#: A document's sentence evidence in the hybrid: its best fused sentence score plus its next
#: best ones, the i-th (from 0) weighted ``DOC_DECAY ** i``, ``DOC_SENTENCES`` in all. A
#: document that says what is asked in two or three sentences beats one that says it once
#: as well, yet one sentence that answers still outweighs several weak matches.
DOC_SENTENCES = 3
DOC_DECAY = 0.25
#: The no-answer decision (calibrated in docs/product.md on answerable and unanswerable
#: questions): a question is answered when the best sentence's SPARC score (question tokens
#: weighted by IDF, its ``QUESTION_FRAME`` words left out) reaches ``ANSWER_MATCH`` of the
#: highest score its ``ANSWER_TOKENS`` weightiest tokens could get,
#: and the first document holds at least ``ANSWER_COVERAGE`` of the question's content
#: words (IDF-weighted). The first says a sentence means what the question asks (SPARC's
#: expansions count), the second that the document is about what it names.
ANSWER_MATCH = 0.33
ANSWER_COVERAGE = 0.4
#: The highest score is that of the question's this many weightiest tokens, so a long
#: description is not held to a sentence matching all of its words.
ANSWER_TOKENS = 8

_SENTENCE_END = re.compile(r"[.!?;:…)\]\"'»”’]\s*$")


def is_heading(text: str, lines: bool = False) -> bool:
    """A heading, title or a line without words ("?", "***", "Cycling trip to the Alps"):
    context for the sentences under it, not an answer while a sentence answers.

    A line with fewer than two words, or a short one (up to 12 words) with no closing
    punctuation, is one; with ``lines`` (a spreadsheet row, a slide's bullet, which are
    seldom punctuated) only the first."""
    words = _WORD.findall(text)
    if sum(1 for w in words if any(c.isalpha() for c in w)) < 2:
        return True
    if _NAME_ROLE.match(text):
        return False
    return not lines and len(words) <= 12 and not _SENTENCE_END.search(text)


#: A person's name and role ("Gene Lockhart, president and CEO of The NewPower Company", a
#: speakers list's or a signature's line): it says who someone is, an answer, not a title.
_NAME_ROLE = re.compile(r"\s*[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){1,3},\s+\w+(?:[\s,&]+\w+){2,}")


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


def is_heading_record(meta: dict[str, Any]) -> bool:
    """Whether a stored sentence is a heading (a header line of an e-mail is a field, not
    one; a file's name line is one: it answers only when nothing in the file does)."""
    field_name = meta.get("field")
    if field_name:  # a message's Subject is its title; the name line a file's
        return field_name in ("name", "subject")
    return is_heading(meta.get("text") or "", lines=meta.get("kind") in LINE_KINDS)


def date_hit(meta: dict[str, Any], score: float) -> Hit | None:
    """A message's date as its answer line, as a header writes it, in this machine's zone as
    the window shows dates ("Date: Thu, 08 Feb 2001 00:29:00 +0000" in UTC; the index keeps
    the instant, not the sender's zone); None for an undated message."""
    epoch = meta.get("date")
    if epoch is None:
        return None
    line = "Date: " + format_datetime(_dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc).astimezone())
    return Hit(line, score, line, 0, len(line), field="date")


def _address_words(meta: dict[str, Any], names: frozenset[str]) -> int:
    """How many of ``names`` one person of a line holding an e-mail address has (0: no
    address): in "To: jeff.royed@x.com, luchas.johnson@x.com" nobody is Jeff Johnson,
    whereas "To: jeff.johnson@x.com" holds both words in one address."""
    text = meta.get("text") or ""
    if not names or not EMAIL_ADDRESS.search(text):
        return 0
    return max((len(names & words) for _, words in _people_words(text, meta.get("field") in _PEOPLE_FIELDS)), default=0)


#: The header fields that name people: a line of one of them is cut into its people.
_PEOPLE_FIELDS = ("from", *RECIPIENT_FIELDS)
_PEOPLE_LINE = re.compile(r"^\s*(?:From|To|Cc|Bcc)\s*:", re.I)


def _people_words(text: str, header: bool) -> list[tuple[str, set[str]]]:
    """Each person of a header line ``text`` ("To: Ann Lee <ann@x.org>, bob@x.org") with the
    lower-cased words of their name and address; any other text as one "person"."""
    people = people_of(text.split(":", 1)[1]) if header and ":" in text else [text]
    return [(p, {w.lower() for w in _WORD.findall(p)}) for p in people]


def address_shown(text: str, names: frozenset[str]) -> int:
    """How well ``text`` (a header line, or a forwarded message's "To: ..." line in a body)
    answers "What is the email address of X?" (``names``: ``wanted_address``): 2 when one
    person has every word of ``names`` and an address whose local part spells one of them
    ("Butler Janet <Janet.Butler@ENRON.com>", "jsmith@"), 1 when that person's address is
    opaque (an Exchange encapsulation, "Janet Butler <IMCEAPR2100USER-P00505103@ENRON.com>":
    the address that message used, seldom the one to write to), else 0."""
    if not names:
        return 0
    best = 0
    for person, words in _people_words(text, bool(_PEOPLE_LINE.match(text))):
        if not names <= words:
            continue
        for address in EMAIL_ADDRESS.findall(person):
            local = address.split("@", 1)[0].lower()
            best = max(best, 2 if any(len(n) > 2 and n in local for n in names) else 1)
    return best


def in_own_header(hit: Hit, names: frozenset[str]) -> bool:
    """Whether ``hit`` is a message's own From/To/Cc/Bcc line with one person holding every
    word of ``names`` (display name or address)."""
    if hit.field not in _PEOPLE_FIELDS or ":" not in hit.sentence:
        return False
    return any(names <= words for _, words in _people_words(hit.sentence, header=True))


#: A heading or word-less line competes for the answer with this share of its score: a
#: sentence that answers comes first unless the line matches far better (a title naming
#: exactly what is asked, against sentences that share only a word of it).
HEADING_WEIGHT = 0.5


def _pick(
    items: list[tuple[float, dict[str, Any]]], field: str = "", names: frozenset[str] = frozenset()
) -> list[tuple[float, dict[str, Any]]]:
    """A document's matching sentences in answer order: the header line the question asks
    for (``field``) first, a long list's first line when it is cut into several
    (``mail_header_lines``); for an address question, a line where one person has more of
    the person's ``names`` (``wanted_address``); then by score, headings and word-less lines
    counting ``HEADING_WEIGHT`` of theirs (the list's other lines among them, so the
    sentences that say what the message is about still follow the answer)."""

    named = {m["sentence_id"]: _address_words(m, names) for _, m in items}

    def key(sm: tuple[float, dict[str, Any]]) -> tuple[int, float, int]:
        score, meta = sm
        weight = HEADING_WEIGHT if is_heading_record(meta) else 1.0
        return (-named[meta["sentence_id"]], -score * weight, meta["sentence_id"])

    ordered = sorted(items, key=key)
    asked = [sm for sm in ordered if field and sm[1].get("field") == field]
    if not asked:
        return ordered
    first = min(asked, key=lambda sm: (-named[sm[1]["sentence_id"]], sm[1]["sentence_id"]))
    return [first, *(sm for sm in ordered if sm is not first)]


def rank_sentences(
    index: SentenceIndex,
    qids: Sequence[int],
    question: str,
    idf: bool = False,
    hybrid: bool = False,
    fusion: str = DEFAULT_FUSION,
    filters: IndexFilters | None = None,
    depth: int = RANK_DEPTH,
    table: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """The sentence ranking ``ask`` groups into documents: ``(sentence_id, score)``, best
    first. SPARC alone: the top ``depth`` by SPARC score (``idf``: question tokens weighted by
    their IDF over the index; ``table``: by the bundle's learned weights too, ``term_weights``).
    Hybrid: SPARC's and BM25's top ``HYBRID_DEPTH`` fused (``fuse``), at most 2 x
    ``HYBRID_DEPTH`` sentences. The evaluation ranks pools with it."""
    weights = term_weights(index, qids, idf, table)
    return _rank_sentences(index, qids, question, weights, hybrid, fusion, filters, depth)[0]


def _rank_sentences(
    index: SentenceIndex,
    qids: Sequence[int],
    question: str,
    weights: dict[int, float] | bool | None,
    hybrid: bool,
    fusion: str,
    filters: IndexFilters | None,
    depth: int,
) -> tuple[list[tuple[int, float]], float | None]:
    """``rank_sentences`` with the question's ``term_weights``, and the best sentence's SPARC
    score (None when nothing matched): with plain IDF (``weights`` True) it is the no-answer
    decision's match, which ``ask`` need not search again."""
    if not qids:
        return (fuse([], index.bm25(question, HYBRID_DEPTH, filters=filters), fusion, HYBRID_DEPTH) if hybrid else []), None
    sparc = index.search(qids, HYBRID_DEPTH if hybrid else depth, idf=weights, filters=filters)
    top = sparc[0].score if sparc else None
    if hybrid:
        return fuse(sparc, index.bm25(question, HYBRID_DEPTH, filters=filters), fusion, HYBRID_DEPTH), top
    return [(h.sentence_id, h.score) for h in sparc], top


def ask(
    index: SentenceIndex,
    query: QueryEncoder,
    question: str,
    top: int = 10,
    filters: SearchFilters | None = None,
    idf: bool = False,
    hybrid: bool = False,
    catalog: _CatalogLike | None = None,
    text_of: Any = None,
    max_others: int = MAX_OTHERS,
    fusion: str = DEFAULT_FUSION,
) -> Answers:
    """Answers to ``question`` from ``index``, best document first.

    Hybrid (the default search): sentences ranked by SPARC and BM25 (fused), documents
    ranked by their best sentences (``sentence_evidence``) plus the BM25 of the whole
    document with its header lines (:mod:`engine.index.docindex`), so evidence spread over a
    document and the names in an e-mail's headers count; the answer shown is still the
    document's best sentence.
    SPARC alone ranks documents by their best sentence.

    ``text_of(doc_key)`` (optional) returns a document's text: an index from 0.4 on stores a
    sentence's passage as offsets into it (without it an answer shows the sentence alone), and
    it places a sentence that occurs twice in its own passage.
    """
    if text_of is not None:
        text_of = functools.lru_cache(maxsize=64)(text_of)  # an answer's hits share a document
    if top <= 0 or not any(c.isalnum() for c in question):
        return Answers()  # no word: "?!" would rank whatever sentences weigh "!" and "?"
    box = box_query(index, question, filters)
    if box.nothing:
        return Answers(relaxed=box.relaxed)
    question, filters, f, relaxed = box.text, box.filters, box.index_filters, box.relaxed
    intent = parse_intent(question)  # the one reading of the question's words (issue 37)
    content = list(intent.content)
    # (an empty index holds no word: "nothing indexed yet" is the caller's to say)
    absent = index.absent_words(content) if content and index.num_sentences > 0 else []
    if content and len(absent) == len(content):
        return Answers(relaxed=relaxed, absent=absent)  # nothing holds any of its words
    ranking = intent.ranking
    qids = query.question_ids(ranking)
    terms = question_terms(ranking)
    use_idf = term_weights(index, qids, idf, query.table)
    doc_scores: dict[str, float] = {}
    ranked, sparc_top = _rank_sentences(index, qids, ranking, use_idf, hybrid, fusion, f, RANK_DEPTH)
    if hybrid:
        # Content words only (the stopword list is longer than the index analyzer's): a
        # long question's "how", "would", "about" would otherwise rank whole documents.
        doc_scores = dict(index.bm25_documents(intent.document_query(), DOC_DEPTH, filters=f))
    if not ranked and not doc_scores:
        return Answers(relaxed=relaxed, absent=absent)

    groups: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    pos = 0
    # Hybrid lists are short (<= 200): read them all so "others" come from the fused ranking.
    while pos < len(ranked) and (hybrid or len(groups) < top):
        chunk = ranked[pos : pos + LOAD_CHUNK]
        pos += len(chunk)
        found = index.get(sid for sid, _ in chunk)
        for sid, score in chunk:
            meta = found.get(sid)
            if meta is None:  # deleted between search and load
                continue
            key = meta.get("doc_key", "")
            if not hybrid and key not in groups and len(groups) >= top:
                continue
            groups.setdefault(key, []).append((score, meta))

    own = weigh_quoted(groups)
    if hybrid:
        doc_rank = rank_documents(groups, doc_scores, top * 2, DOC_DEPTH)
    else:  # SPARC alone: a document is as good as its best sentence
        doc_rank = {k: max(sc for sc, _ in groups[k]) for k in list(groups)[:top]}
    keys = list(doc_rank)
    named: list[str] = []
    if catalog is not None:
        # messages the question names by a subject no index term reaches ("where are you"):
        # from the catalog, their sentences fetched below under the question's restrictions
        named = [k for k in catalog.messages_with_subject(intent.subject_candidates()) if k not in doc_rank][:top]
        for k in named:
            doc_rank[k] = 0.0
            keys.append(k)
    # Documents whose matching sentences are missing or are only headings: find their best
    # sentences with the same search restricted to them (filters do not change scores).
    need = [k for k in keys if k not in groups or all(is_heading_record(m) for _, m in groups[k])]
    if not hybrid and max_others > 0:
        need = keys
    if need and qids:
        extra = index.search(
            qids,
            top_k=len(need) * (max_others + 1) * 4,
            idf=use_idf,
            filters=to_index_filters(filters, doc_keys=need),
        )
        have = {m["sentence_id"] for k in need for _, m in groups.get(k, [])}
        missing = [h for h in extra if h.sentence_id not in have]
        if missing:
            loaded = index.get(h.sentence_id for h in missing)
            for h in missing:
                meta = loaded.get(h.sentence_id)
                if meta is not None and meta.get("doc_key") in need:
                    score = quoted_score(h.score, meta, own)
                    if score is not None:
                        groups.setdefault(meta["doc_key"], []).append((score, meta))
    # a message the question names by its whole subject comes first, in the ranking's order
    # (how a mail reader's user names one: "the e-mail about where are you", a subject of
    # stopwords that ranks nothing)
    quoted = [k for k in keys if groups.get(k) and _quotes_subject(intent, groups[k][0][1])]
    keys = quoted + [k for k in keys if k not in quoted and k not in named]  # (a run it does not name)
    if intent.keyword:
        keys = by_words_held(index, keys, intent.content)
    elif intent.direction:
        keys = by_direction(keys, catalog, intent)
    answers = Answers(relaxed=relaxed, absent=absent)
    messages: set[str] = set()
    copies = _copies(keys, groups, catalog)
    shown: dict[tuple[str, str], Answer] = {}
    field, names = intent.field, intent.address_of
    for key in keys:
        if not groups.get(key):  # a document with no live sentence is gone
            continue
        same = copies.get(key)
        if same is not None and same in shown:  # the same file at another path shows once
            shown[same].copies.append(groups[key][0][1].get("path", ""))
            continue
        if len(answers) >= top:  # full: only the copies of those shown are still looked for
            continue
        mail = groups[key][0][1].get("kind") == "email"  # only a message has header lines
        if field and mail and field != "date":
            # the asked-for header line(s) that did not match a question word: fetched, so
            # the answer is the line, or a long list's first line (not a later one that
            # happened to match "gas" in "ron.gaskey")
            groups[key] += _unranked_lines(index, key, groups[key], lambda m: m.get("field") == field)
        elif names and mail:
            # an address question: the header lines naming the person that did not rank among
            # the message's matches (a name every message holds weighs nothing; a long list's
            # line holding the whole name may rank below one holding its words apart): fetched
            groups[key] += _unranked_lines(
                index, key, groups[key], lambda m: bool(m.get("field")) and _address_words(m, names) > 0
            )
        items = _pick(groups[key], field, names)
        score, meta = items[0]
        fields = document_fields(meta, catalog)
        message_id = fields.get("message_id") if meta.get("kind") == "email" else None
        if message_id:  # the same message held by two sources (or twice in one) shows once
            if message_id in messages:
                continue
            messages.add(message_id)
        best = make_hit(meta, score, terms, text_of)
        others = [make_hit(m, s, terms, text_of) for s, m in items[1 : 1 + max_others]]
        when = date_hit(meta, score) if field == "date" and mail else None
        if when is not None:  # the date is the answer; what matched says which message it is
            best, others, meta = when, [best, *others][:max_others], {**meta, "field": "date"}
        answers.append(
            Answer(
                doc_key=key,
                path=meta.get("path", ""),
                kind=meta.get("kind", ""),
                title=meta.get("title", "") or Path(meta.get("path", "")).name,
                date=_iso(meta.get("date")),
                fields=fields,
                best=best,
                others=others,
                doc_start=-1 if meta.get("field") else int(meta.get("start", 0)),
                score=float(doc_rank[key]),
            )
        )
        if same is not None:
            shown[same] = answers[-1]
    if names and answers:
        # an address question: an answer showing the person's address comes before one that
        # names them without it (a forwarded list's "Grunenberg, Franz", a Lotus Notes
        # "Souad Mahmassani/Corp/Enron@ENRON"), and one whose address spells the name before
        # an opaque one (``address_shown``), each group in the ranking's order
        answers[:] = sorted(answers, key=lambda a: -address_shown(a.best.sentence, names))
    elif (person := intent.typed_name) and answers:
        # a name typed alone: the person's own messages (the name in a message's From, To,
        # Cc or Bcc) before those that name them in their text or in a forwarded header
        answers[:] = sorted(answers, key=lambda a: not in_own_header(a.best, person))
    if answers:
        answers.coverage, n_terms = index.coverage(" ".join(content), answers[0].doc_key)
        if n_terms == 0 and index.num_documents == 0:  # no document index (an older generation):
            answers.coverage = 1.0  # the match alone decides
        # otherwise no term means a question that names nothing ("What is it?", "Who sent the
        # e-mail?"): coverage 0, not answered, the closest matches still shown
        # The match is measured without the question's frame words, as the coverage is: no
        # sentence need say "e-mail" or "sent" to answer "Who sent the e-mail about ...?",
        # yet with them the highest score it could reach counted their weight.
        # (a question about an e-mail was ranked without them already: ``ranking``)
        mqids = qids if ranking != question or not qids else query.question_ids(intent.match_text()) or qids
        if use_idf is not True or mqids != qids:  # the ranking's scores are not those the match needs
            best = index.search(mqids, 1, idf=True, filters=f) if mqids else []
            sparc_top = best[0].score if best else None
        ceiling = index.max_score(mqids, idf=True, tokens=ANSWER_TOKENS) if mqids else 0.0
        answers.match = sparc_top / ceiling if sparc_top is not None and ceiling > 0 else 0.0
        answers.answered = answers.coverage >= ANSWER_COVERAGE and answers.match >= answer_match(query)
    return answers


def _quotes_subject(intent: QuestionIntent, meta: dict[str, Any]) -> bool:
    return meta.get("kind") == "email" and intent.quotes_subject(meta.get("title") or "")


def _copies(
    keys: Sequence[str], groups: dict[str, list[tuple[float, dict[str, Any]]]], catalog: _CatalogLike | None
) -> dict[str, tuple[str, str]]:
    """For each ranked document that is not an e-mail (a message held twice shows once by
    its Message-ID), what tells a copy of it: its file's content hash and its place in the
    file (the key after the path: "" for a whole file). Two documents with the same pair
    are the same document in byte-identical files."""
    if catalog is None:
        return {}
    metas = {k: groups[k][0][1] for k in keys if groups.get(k) and groups[k][0][1].get("kind") != "email"}
    paths = {k: m.get("path", "") for k, m in metas.items() if m.get("path") and k.startswith(m.get("path", ""))}
    hashes = catalog.file_hashes(paths.values())
    return {k: (hashes[p], k[len(p) :]) for k, p in paths.items() if p in hashes}


def _unranked_lines(
    index: SentenceIndex, key: str, items: list[tuple[float, dict[str, Any]]], wanted: Callable[[dict[str, Any]], bool]
) -> list[tuple[float, dict[str, Any]]]:
    """The lines of document ``key`` that ``wanted(meta)`` picks and ``items`` (its ranked
    matches) lack, scored 0: a header line that answers without sharing a question word."""
    have = {m["sentence_id"] for _, m in items}
    lines = index.get(index.document_sentence_ids(key))
    return [(0.0, m) for m in lines.values() if m["sentence_id"] not in have and wanted(m)]


def answer_match(query: QueryEncoder) -> float:
    """The match threshold of the no-answer decision: the bundle's own (``answer_match`` in
    its config.json, calibrated on its scores), else ``ANSWER_MATCH``."""
    own = query.config.answer_match
    return ANSWER_MATCH if own is None else own


@dataclass(frozen=True)
class BoxQuery:
    """A search box's text applied to an index: what ``ask`` ranks and within what."""

    #: the words that rank (a phrase's words among them; with only restrictions typed, the
    #: values they name)
    text: str
    #: the filter panel's restrictions with the box's ``dir:`` and dates on top
    filters: SearchFilters | None
    #: those, with the box's phrases, exclusions and fields as document restrictions
    index_filters: IndexFilters | None
    #: the quoted phrases no document holds, dropped (``Answers.relaxed``)
    relaxed: tuple[str, ...] = ()
    #: no document satisfies the restrictions: nothing to rank
    nothing: bool = False


def box_query(index: SentenceIndex, question: str, filters: SearchFilters | None = None) -> BoxQuery:
    """``question`` as typed in the search box, applied to ``index`` (``engine.search.query``).

    When no document holds the required phrases they are dropped and the rest is searched,
    saying so (web search does; a question pasted with a quoted word in it would otherwise
    find nothing at all). Fields, exclusions, folder and dates always restrict."""
    parsed = parse_query(question)
    filters = _with_box_filters(filters, parsed)
    f = to_index_filters(filters)
    relaxed: tuple[str, ...] = ()
    text = parsed.text or " ".join(c.text for g in parsed.required for c in g) or question
    if parsed.restricts:
        kept = restrict(index, parsed, filters, f)
        if kept is None and parsed.phrases:
            relaxed = tuple(parsed.phrases)
            kept = restrict(index, parsed.without_phrases(), filters, f)
        if kept is None:
            return BoxQuery(text, filters, None, relaxed, nothing=True)
        f = kept
    return BoxQuery(text, filters, f, relaxed)


def _with_box_filters(filters: SearchFilters | None, parsed: ParsedQuery) -> SearchFilters | None:
    """The filter panel's restrictions with those typed in the box (``dir:``, dates) on top."""
    if parsed.folder is None and parsed.date_from is None and parsed.date_to is None:
        return filters
    base = filters or SearchFilters()
    return replace(
        base,
        folder=parsed.folder or base.folder,
        date_from=parsed.date_from or base.date_from,
        date_to=parsed.date_to or base.date_to,
    )


def restrict(
    index: SentenceIndex, parsed: ParsedQuery, filters: SearchFilters | None, f: IndexFilters | None
) -> IndexFilters | None:
    """The index filter with the box's phrases, exclusions and fields applied as document
    restrictions (an empty ``IndexFilters`` when nothing restricts); None only when no
    document satisfies them. (An exclusion no document holds excludes nothing: until
    2026-11-24 "religion -xyzzyq" found nothing, the unfiltered ``f`` being None too.)"""
    required = [[(c.field, c.text) for c in g] for g in parsed.required]
    excluded = [(c.field, c.text) for c in parsed.excluded]
    unrestricted = f if f is not None else IndexFilters()
    if required:
        keys = index.matching_documents(required, excluded, f)
        if keys is None:  # a generation without a document index: restrictions cannot apply
            return unrestricted
        return to_index_filters(filters, doc_keys=keys) if keys else None
    out = index.matching_documents([excluded], [], f) if excluded else []
    return to_index_filters(filters, exclude_keys=out) if out else unrestricted


#: A sentence of a reply's quoted history (``engine.ingest.mail.quoted_history``) counts
#: this much of its score: a message ranks first by what it says itself.
def by_words_held(index: SentenceIndex, keys: list[str], words: Sequence[str]) -> list[str]:
    """A keyword search's documents: those holding any of its ``words`` (in their own text,
    header lines, title or name) before those holding none, each group in the ranking's order
    (issue 36, item 6: "coldplay halftime" listed six documents holding neither word). Not
    "all the words before some": a paraphrase's answer often lacks one typed word, and that
    order cost 3 points of hit@1 on SQuAD's keyword forms (docs/product.md). Words no
    sentence holds do not count; without a document index (an older generation) the order
    stays."""
    held = [w for w in words if w not in set(index.absent_words(words))]
    if not held or len(keys) < 2:
        return keys
    text = " ".join(held)
    return sorted(keys, key=lambda key: index.coverage(text, key)[0] <= 0.0)


def by_direction(keys: list[str], catalog: _CatalogLike | None, intent: QuestionIntent) -> list[str]:
    """A message asked for by whom it is from or to ("mail from Bob about the budget",
    "Bob's e-mail about ...", "Mail von Bob über ..."): the ranked messages whose From (or
    To/Cc) names every word of that person come first, each group in the ranking's order
    (issue 37). A soft preference: the others stay listed; ``from:`` in the box filters."""
    if catalog is None or not intent.person:
        return keys

    def named(key: str) -> bool:
        msg = catalog.message(key)
        if msg is None:
            return False
        people = [msg.from_addr] if intent.direction == "from" else [*msg.to_addrs, *msg.cc_addrs]
        held = {w for p in people for w in _WORD.findall(p.lower().replace(".", " ").replace("_", " "))}
        return intent.person <= held

    first = [k for k in keys if named(k)]
    return first + [k for k in keys if k not in first] if first else keys


def content_words(question: str) -> str:
    """What ``question`` is about (``engine.search.intent.QuestionIntent.content``)."""
    return " ".join(parse_intent(question).content)


def ranking_text(question: str) -> str:
    """The question as the sentence ranking reads it (``QuestionIntent.ranking``)."""
    return parse_intent(question).ranking


def document_query(question: str) -> str:
    """The question as the whole-document BM25 reads it (``QuestionIntent.document_query``).
    Public, as are ``restrict`` and ``rank_documents``, because bench.doc_ranking replays
    ``ask``'s steps."""
    return parse_intent(question).document_query()


def subject_candidates(question: str) -> list[str]:
    """The subjects ``question`` may name a message by (``QuestionIntent.subject_candidates``)."""
    return parse_intent(question).subject_candidates()


def quotes_subject(question: str, subject: str) -> bool:
    """Whether ``question`` names a message by its whole ``subject`` (``QuestionIntent.quotes_subject``)."""
    return parse_intent(question).quotes_subject(subject)


QUOTED_WEIGHT = 0.9


def _same_text(text: Any) -> str:
    return " ".join(str(text or "").lower().split())


def quoted_score(score: float, meta: dict[str, Any], own: set[str]) -> float | None:
    """``score`` of a ranked sentence as it counts: a quoted one weighs ``QUOTED_WEIGHT`` of
    it, and none at all (None) when a sentence of the same words is ranked as a message's
    own (``own``): the quoted message is indexed and answers by itself."""
    if not meta.get("quoted"):
        return score
    if _same_text(meta.get("text")) in own or QUOTED_WEIGHT <= 0.0:  # (0: quotes not searched)
        return None
    return score * QUOTED_WEIGHT


def weigh_quoted(groups: dict[str, list[tuple[float, dict[str, Any]]]]) -> set[str]:
    """Apply ``quoted_score`` to every ranked sentence of ``groups`` (in place, each document's
    best first again; a document left with none is dropped). Returns the own sentences' words
    (for sentences ranked later)."""
    own = {_same_text(m.get("text")) for items in groups.values() for _, m in items if not m.get("quoted")}
    if not any(m.get("quoted") for items in groups.values() for _, m in items):
        return own
    for key in list(groups):
        kept = [(sc, m) for sc, m in ((quoted_score(s, m, own), m) for s, m in groups[key]) if sc is not None]
        if kept:
            groups[key] = sorted(kept, key=lambda item: -item[0])
        else:
            del groups[key]
    return own


def sentence_evidence(scores: Iterable[float]) -> float:
    """A document's sentence evidence from its sentences' fused scores: the best plus the
    next ``DOC_SENTENCES - 1``, each ``DOC_DECAY`` times the weight of the one before."""
    top = sorted(scores, reverse=True)[:DOC_SENTENCES]
    return sum(s * DOC_DECAY**i for i, s in enumerate(top))


def rank_documents(
    groups: dict[str, list[tuple[float, dict[str, Any]]]],
    doc_scores: dict[str, float],
    depth: int,
    doc_depth: int | None = None,
) -> dict[str, float]:
    """Documents by their sentence evidence (``sentence_evidence``) plus ``DOC_WEIGHT`` times
    their whole-document BM25; a document missing from one list gets that list's minimum (as
    ``fuse`` does), or no BM25 when the BM25 list, asked for ``doc_depth`` documents, holds
    fewer: every document that matches a word is in it."""
    best = {k: sentence_evidence(s for s, _ in items) for k, items in groups.items()}
    s_min = min(best.values()) if best else 0.0
    d_min = _floor(doc_scores, len(doc_scores), doc_depth)
    total = {
        k: best.get(k, s_min) + DOC_WEIGHT * doc_scores.get(k, d_min) for k in best.keys() | doc_scores.keys()
    }
    return {k: total[k] for k in sorted(total, key=lambda k: (-total[k], k))[:depth]}
