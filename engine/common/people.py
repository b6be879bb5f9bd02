"""The words naming a person in a From/To/Cc header, one rule for the search's header
preference (``engine.search.documents.by_direction``) and the catalog's lookup of whether
anyone so named wrote or received indexed mail (``Catalog.names_correspondent``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"\w+", re.UNICODE)


def header_words(header: str) -> set[str]:
    """The lower-case words of a header ("Rodriquez Andy <Andy.Rodriquez@ENRON.com>": andy,
    rodriquez, enron, com): an address's dots and underscores separate words."""
    return set(_WORD.findall(header.lower().replace(".", " ").replace("_", " ")))


def names(headers: Iterable[str], person: Iterable[str]) -> bool:
    """Some one of ``headers`` holds every word of ``person`` (lower case)."""
    want = set(person)
    return bool(want) and any(want <= header_words(h) for h in headers)
