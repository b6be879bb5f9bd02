"""The search box's syntax, parsed in one place for the window and the CLI.

What people know from Recoll and web search::

    "exact phrase"        documents that hold the phrase (also ranks by its words)
    -word  -"a phrase"    documents without it
    a OR b                either restriction (between phrases or fields)
    from:ann  to:bob      sender / recipient (To, Cc or Bcc) name or address part
    subject:budget        words of an e-mail's subject
    name:roadmap          words of a file name
    ext:pdf  type:email   file extension / kind of document
    dir:~/Documents       documents under a folder
    after:2001-05  before:2002  date:2001-05-14   dates (YYYY, YYYY-MM or YYYY-MM-DD)

Phrases, exclusions and fields restrict which documents compete; the remaining words rank
them with SPARC and BM25 as a plain question would. When no document holds the required
phrases, they are dropped and the rest is searched, saying so (``Answers.relaxed``): a
question pasted with quotes in it ("the "Holy Club's" teachings") still finds what its words
match. A field value may be quoted (``from:"ann lee"``). Anything that is not syntax is a word: a lone ``-``, a ``-`` word ending
in punctuation (``-DRAFT-?``), ``OR`` at either end, an unknown ``field:``, a date that does
not parse, an unclosed quote.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

#: Field name in the box -> field of the document index (``engine.index.docindex``).
TEXT_FIELDS = {"from": "from", "to": "to", "subject": "subject", "name": "name", "filename": "name"}
KIND_FIELDS = ("type", "kind")
EXT_FIELDS = ("ext",)
DIR_FIELDS = ("dir", "folder", "in")
DATE_FIELDS = ("after", "before", "date")

#: The syntax as the window's help sheet and ``sparcdesk ask --help`` show it.
SYNTAX_HELP: tuple[tuple[str, str], ...] = (
    ('"exact phrase"', "only documents that hold the phrase (if none does: its words, said so)"),
    ("-word, -\"a phrase\"", "leave out documents that hold it"),
    ('"a b" OR "c d"', "either one (between phrases or fields)"),
    ("from:ann, to:bob", "sender / recipient (To, Cc or Bcc): a name or part of the address"),
    ("subject:budget", "words of an e-mail's subject"),
    ("name:roadmap", "words of a file name"),
    ("ext:pdf, type:email", "file extension / kind of document"),
    ("dir:~/Documents", "documents under a folder"),
    ("after:2001-05, before:2002, date:2001-05-14", "dates: a year, a month or a day"),
)

_TOKEN = re.compile(r'(-?)(?:(\w+):)?(?:"([^"]*)"|(\S+))')


@dataclass(frozen=True)
class Clause:
    """One restriction on documents: ``field`` is ``body`` (a phrase or word of the text),
    a header/name field of the document index, or ``ext``/``kind``; ``text`` its value."""

    field: str
    text: str


@dataclass
class ParsedQuery:
    """A search box's text taken apart: ``text`` ranks; ``required`` is a list of groups, each
    satisfied by any of its clauses (``OR``); documents matching any of ``excluded`` are left
    out; ``folder``/``date_from``/``date_to`` restrict as the filter panel does."""

    text: str
    required: list[list[Clause]] = field(default_factory=list)
    excluded: list[Clause] = field(default_factory=list)
    folder: str | None = None
    date_from: _dt.date | None = None
    date_to: _dt.date | None = None

    @property
    def restricts(self) -> bool:
        return bool(self.required or self.excluded)

    @property
    def phrases(self) -> list[str]:
        """The quoted phrases and words the documents must hold (``body`` clauses of
        ``required``), in the order typed."""
        return [c.text for g in self.required for c in g if c.field == "body"]

    def without_phrases(self) -> ParsedQuery:
        """The same query with its required phrases dropped (their words still rank): what is
        searched when no document holds them, as web search does. Fields, exclusions, folder
        and dates stay."""
        groups = [[c for c in g if c.field != "body"] for g in self.required]
        return replace(self, required=[g for g in groups if g])


def relaxed_notice(phrases: Sequence[str], found: bool = True) -> str:
    """What the CLI and the window say when the box's phrases were dropped
    (``Answers.relaxed``), or "" when none were; ``found``: whether the search without them
    found anything."""
    if not phrases:
        return ""
    quoted = " and ".join(f'"{p}"' for p in phrases)
    # several: perhaps each is somewhere, but not as the box combines them
    held = quoted if len(phrases) == 1 else f"{quoted} as asked"
    it = "it" if len(phrases) == 1 else "them"
    if not found:
        return f"No document holds {held}, and nothing matches without {it} either."
    return f"No document holds {held}: showing matches without {it}."


def absent_notice(words: Sequence[str], found: bool = True) -> str:
    """What the CLI and the window say of the question's words that no document holds
    (``Answers.absent``), or "" when there are none; ``found``: whether anything matched the
    other words."""
    if not words:
        return ""
    listed = ", ".join(words)
    if not found:
        return f"No document contains {listed}."
    return f"No document contains {listed}: showing matches for the other words."


def parse_date(value: str, end: bool = False) -> _dt.date | None:
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` as its first day (or last, with ``end``)."""
    m = re.fullmatch(r"(\d{4})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2}))?)?", value.strip())
    if not m:
        return None
    year, month, day = int(m.group(1)), m.group(2), m.group(3)
    try:
        if month is None:
            return _dt.date(year, 12, 31) if end else _dt.date(year, 1, 1)
        mon = int(month)
        if day is None:
            return _dt.date(year, mon, calendar.monthrange(year, mon)[1] if end else 1)
        return _dt.date(year, mon, int(day))
    except ValueError:
        return None


def parse(text: str) -> ParsedQuery:
    """Take the search box's ``text`` apart (never raises: what is not syntax is words)."""
    words: list[str] = []
    q = ParsedQuery(text="")
    pending_or = False
    last_group: list[Clause] | None = None
    tokens = list(_TOKEN.finditer(text))
    for i, m in enumerate(tokens):
        neg, name, quoted, bare = m.group(1), (m.group(2) or "").lower(), m.group(3), m.group(4)
        value = quoted if quoted is not None else (bare or "")
        if name and name not in TEXT_FIELDS and name not in (*KIND_FIELDS, *EXT_FIELDS, *DIR_FIELDS, *DATE_FIELDS):
            # not a field we know ("re:", "http:"): the whole token is words
            words.append(m.group(0).lstrip("-") if not neg else m.group(0))
            continue
        if not name and quoted is None and bare == "OR" and not neg:
            if last_group is not None and i + 1 < len(tokens):
                pending_or = True
            continue
        if not name and quoted is None:
            # "-word" excludes; "-DRAFT-?" (a subject's decoration, pasted) ends in
            # punctuation, as prose does: words
            if neg and bare and bare[-1].isalnum():
                q.excluded.append(Clause("body", bare))
            else:
                words.append(m.group(0) if neg else (bare or ""))
            last_group, pending_or = None, False
            continue
        if name in DIR_FIELDS:
            q.folder = value or q.folder
            continue
        if name in DATE_FIELDS:
            lo, hi = parse_date(value), parse_date(value, end=True)
            if lo is None or hi is None:
                words.append(m.group(0))
                continue
            if name in ("after", "date"):
                q.date_from = lo
            if name in ("before", "date"):
                q.date_to = hi
            continue
        if not value.strip():
            continue
        if name in TEXT_FIELDS:
            clause = Clause(TEXT_FIELDS[name], value)
        elif name in EXT_FIELDS:
            clause = Clause("ext", value.lower().lstrip("."))
        elif name in KIND_FIELDS:
            clause = Clause("kind", value.lower())
        else:  # a quoted phrase: it restricts, and its words rank too
            clause = Clause("body", value)
            if not neg:
                words.append(value)
        if neg:
            q.excluded.append(clause)
            last_group, pending_or = None, False
        elif pending_or and last_group is not None:
            last_group.append(clause)
            pending_or = False
        else:
            last_group = [clause]
            q.required.append(last_group)
    q.text = " ".join(w for w in words if w)
    return q
