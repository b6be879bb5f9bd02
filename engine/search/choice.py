"""The answer within a document: which of its matching sentences, or which header line, is
shown as the answer (the step after the documents are ranked)."""

from __future__ import annotations

import datetime as _dt
import re
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from engine.index.sentences import SentenceIndex
from engine.ingest.mail import EMAIL_ADDRESS, RECIPIENT_FIELDS, people_of
from engine.search.documents import _copies, _unranked_lines, is_heading_record
from engine.search.intent import QuestionIntent
from engine.search.results import (
    _WORD,
    Answer,
    Hit,
    _CatalogLike,
    _iso,
    document_fields,
    make_hit,
    question_terms,
)
from engine.search.settings import DEFAULT, SearchSettings


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




def _pick(
    items: list[tuple[float, dict[str, Any]]],
    field: str = "",
    names: frozenset[str] = frozenset(),
    heading_weight: float = DEFAULT.heading_weight,
) -> list[tuple[float, dict[str, Any]]]:
    """A document's matching sentences in answer order: the header line the question asks
    for (``field``) first, a long list's first line when it is cut into several
    (``mail_header_lines``); for an address question, a line where one person has more of
    the person's ``names`` (``wanted_address``); then by score, headings and word-less lines
    counting ``heading_weight`` of theirs (the list's other lines among them, so the
    sentences that say what the message is about still follow the answer)."""

    named = {m["sentence_id"]: _address_words(m, names) for _, m in items}

    def key(sm: tuple[float, dict[str, Any]]) -> tuple[int, float, int]:
        score, meta = sm
        weight = heading_weight if is_heading_record(meta) else 1.0
        return (-named[meta["sentence_id"]], -score * weight, meta["sentence_id"])

    ordered = sorted(items, key=key)
    asked = [sm for sm in ordered if field and sm[1].get("field") == field]
    if not asked:
        return ordered
    first = min(asked, key=lambda sm: (-named[sm[1]["sentence_id"]], sm[1]["sentence_id"]))
    return [first, *(sm for sm in ordered if sm is not first)]


def _complete(index: SentenceIndex, key: str, items: list, field: str, names: frozenset[str]) -> list:
    """A message's matching sentences with the header lines the question asks for that did
    not rank: the asked-for field's line(s) (so the answer is the line, or a long list's first
    line, not a later one that happened to match "gas" in "ron.gaskey"), or for an address
    question the lines naming the person (a name every message holds weighs nothing; a long
    list's line holding the whole name may rank below one holding its words apart)."""
    if field and field != "date":
        return items + _unranked_lines(index, key, items, lambda m: m.get("field") == field)
    if names:
        return items + _unranked_lines(index, key, items, lambda m: bool(m.get("field")) and _address_words(m, names) > 0)
    return items


def build_answers(
    index: SentenceIndex,
    intent: QuestionIntent,
    keys: list[str],
    groups: dict[str, list[tuple[float, dict[str, Any]]]],
    doc_rank: dict[str, float],
    catalog: _CatalogLike | None,
    text_of: Any,
    top: int,
    settings: SearchSettings = DEFAULT,
) -> list[Answer]:
    """An :class:`Answer` per shown document, in ``keys``' order, at most ``top``: its answer
    (``_pick``: the asked-for header line, the person's address, or its best sentence; the
    message's date for "When was it sent?"), its other matching sentences, its fields. A file
    held twice (byte-identical) shows once with its copies; a message held twice once."""
    field = intent.field if settings.field_answers else ""
    names = intent.address_of if settings.address_order else frozenset()
    terms = question_terms(intent.ranking)
    copies = _copies(keys, groups, catalog)
    shown: dict[tuple[str, str], Answer] = {}
    out: list[Answer] = []
    messages: set[str] = set()
    for key in keys:
        if not groups.get(key):  # a document with no live sentence is gone
            continue
        same = copies.get(key)
        if same is not None and same in shown:  # the same file at another path shows once
            shown[same].copies.append(groups[key][0][1].get("path", ""))
            continue
        if len(out) >= top:  # full: only the copies of those shown are still looked for
            continue
        mail = groups[key][0][1].get("kind") == "email"  # only a message has header lines
        if mail:
            groups[key] = _complete(index, key, groups[key], field, names)
        items = _pick(groups[key], field, names, settings.heading_weight)
        score, meta = items[0]
        fields = document_fields(meta, catalog)
        message_id = fields.get("message_id") if meta.get("kind") == "email" else None
        if message_id:  # the same message held by two sources (or twice in one) shows once
            if message_id in messages:
                continue
            messages.add(message_id)
        best = make_hit(meta, score, terms, text_of)
        others = [make_hit(m, s, terms, text_of) for s, m in items[1 : 1 + settings.max_others]]
        when = date_hit(meta, score) if field == "date" and mail else None
        if when is not None:  # the date is the answer; what matched says which message it is
            best, others, meta = when, [best, *others][: settings.max_others], {**meta, "field": "date"}
        out.append(
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
                page=int(fields["page"]) if "page" in fields else None,
                pages=int(fields["pages"]) if "pages" in fields else None,
                section=fields.get("section"),
            )
        )
        if same is not None:
            shown[same] = out[-1]
    return out


def order_answers(answers: list[Answer], intent: QuestionIntent, settings: SearchSettings = DEFAULT) -> None:
    """The answers' last order, in place. An address question: an answer showing the person's
    address before one that names them without it (a forwarded list's "Grunenberg, Franz", a
    Lotus Notes "Souad Mahmassani/Corp/Enron@ENRON"), and one whose address spells the name
    before an opaque one (``address_shown``). A name typed alone: the person's own messages
    (the name in a message's From, To, Cc or Bcc) before those naming them in their text or
    in a forwarded header. Each group in the ranking's order."""
    names, person = intent.address_of, intent.typed_name
    if names and settings.address_order:
        answers[:] = sorted(answers, key=lambda a: -address_shown(a.best.sentence, names))
    elif person and settings.name_order:
        answers[:] = sorted(answers, key=lambda a: not in_own_header(a.best, person))
