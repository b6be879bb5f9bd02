"""A message's subject in the one form it is compared in (issue 37).

The catalog stores each message's subject in this form when the message is indexed
(``engine.catalog.messages``: the ``subject_key`` column) and a question's candidate subjects
are put in it before they are looked up (``engine.search.intent``), so both sides go through
:func:`normal_subject` and nothing else: a subject typed in lower case ("änderung der preise"),
without the reply marker ("Re: AW:") or the tag a mail server put before it ("[EXTERNAL]")
is the subject the message has.
"""

from __future__ import annotations

import re

from engine.common.lang import words

_MARKERS = "|".join(sorted((re.escape(w) for w in words("REPLY_MARKERS")), key=len, reverse=True))
#: What a subject starts with that is not its words: reply and forward markers of every
#: language, repeated, counted ("Re[2]:", "Re(3):"), with an ASCII or a full-width colon, and
#: tags in square brackets ("[EXTERNAL]", "[SPAM]", a mailing list's "[team]").
_LEADING = re.compile(
    rf"^(?:\s*(?:\[[^\[\]]{{0,40}}\]|(?:{_MARKERS})\s*(?:\[\d+\]|\(\d+\))?\s*[:：]))+", re.IGNORECASE
)
#: A final full stop, "?", "!" or ellipsis: a question ends with its own ("Who sent the e-mail
#: about where are you?"), so the subject's own is no part of what names it.
_TRAILING = " \t.?!…。？！"


def without_markers(subject: str) -> str:
    """``subject`` as it names its message, as written: its leading markers and tags off
    ("RE: [EXTERNAL] Budget review" -> "Budget review")."""
    return _LEADING.sub("", subject).strip()


def normal_subject(subject: str) -> str:
    """``subject`` without its leading markers and tags and its final punctuation, Unicode
    case-folded (``str.casefold``: "Ä" and "ß" too, which SQLite's lower() leaves), its white
    space collapsed to single spaces. "" for a subject of markers alone."""
    return " ".join(without_markers(subject).casefold().split()).rstrip(_TRAILING)
