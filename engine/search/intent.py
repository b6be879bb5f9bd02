"""What kind of query the user typed: a question or request, or a keyword search.

People type both into the same box ("Who sent the budget?" and "budget report 2001"). A
keyword search is judged by the words it holds: a document holding all of them is listed
before one holding some, and one holding none of them last, whatever its neural score
(issue 36, item 6) -- a search engine's first promise. A question is not: its answer may
hold other words than the question's. The words that open a question are data per
language (``engine.common.lang``, ``QUESTION_OPENERS``).
"""

from __future__ import annotations

import re

from engine.common.lang import words

_WORD = re.compile(r"[\w'’-]+", re.UNICODE)

#: A keyword search is short: longer queries are sentences even without "?".
MAX_KEYWORDS = 6

#: Words naming a message rather than what it says ("mail", "messages"): a document need not
#: hold them.
_MESSAGE_WORDS = re.compile(r"^(?:e-?mails?|mail(?:s|ed)?|messages?)$", re.I)


def is_keyword_query(query: str) -> bool:
    """True for a keyword search: no "?", at most ``MAX_KEYWORDS`` words, and a first word
    that opens no question or request in any of our languages ("budget report", "Doubletree
    lunch"; not "who sent the budget", "find the budget", "wann kommt Bob")."""
    if "?" in query:
        return False
    found = _WORD.findall(query)
    if not found or len(found) > MAX_KEYWORDS:
        return False
    return found[0].lower() not in words("QUESTION_OPENERS")


def keyword_terms(query: str, stopwords: frozenset[str]) -> list[str]:
    """The words of a keyword search a document should hold: all but ``stopwords`` and the
    words naming a message (every word typed counts: "price list" keeps "list")."""
    return [w for w in _WORD.findall(query) if w.lower() not in stopwords and not _MESSAGE_WORDS.match(w)]
