"""Word lists per language, as data: one module per language (``en``, ``de``, ``fr``, ``es``,
``nl``, ``pt``), each a set of named tuples of lower-case words. Code asks for a list by name
over every language (:func:`words`) and never spells words of its own.

Lists of words: ``STOPWORDS`` (function words), ``REQUEST_WORDS`` ("find", "how many"),
``MESSAGE_WORDS`` ("mail", "Nachricht"), ``FIELD_WORDS`` ("sender", "address"), ``TOPIC_MARKERS``
("about", "über"), ``INTERROGATIVES`` ("what", "wann"), ``DIRECTION_FROM`` / ``DIRECTION_TO`` ("from" / "to", "von" / "an"); of
regular expressions (:func:`entries`, matched case-insensitively by
``engine.search.intent``): ``FIELD_QUESTIONS`` ((field, pattern) pairs), ``DATE_QUESTIONS``,
``ADDRESS_QUESTIONS``, ``DIRECTION_QUESTIONS`` (groups ``who`` and ``dir``).
Also ``QUESTION_OPENERS`` (the words a question or a request starts with: a query
starting with none of them and without "?" is a keyword search); ``MONTHS`` (full and abbreviated month names); ``TITLES`` (abbreviations written before
a name: "Dr.", "dhr.", "Sr."), after which a sentence never ends; ``ABBREVIATIONS`` (written
with a full stop inside a sentence: "z. B.", "bzw.", "ca."), after which a sentence does not
end when the next word starts in lower case or with a digit. Abbreviations are written
without their final full stop ("z. b", "bzw"). ``REPLY_MARKERS``: what a mail program writes
before a reply's or a forward's subject ("re", "aw", "tr"; ``engine.common.subjects``).
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

# imported by name, not with importlib: a frozen app (PyInstaller) bundles only the modules
# its import analysis sees, and the packaged window failed to open without them (smoke test)
from engine.common.lang import de, en, es, fr, nl, pt

LANGUAGES = ("en", "de", "fr", "es", "nl", "pt")
_MODULES: dict[str, ModuleType] = {"en": en, "de": de, "fr": fr, "es": es, "nl": nl, "pt": pt}


@cache
def words(name: str, languages: tuple[str, ...] = LANGUAGES) -> frozenset[str]:
    """The union of list ``name`` over ``languages`` (lower case)."""
    out: set[str] = set()
    for lang in languages:
        out.update(w.lower() for w in getattr(_MODULES[lang], name, ()))
    return frozenset(out)


@cache
def entries(name: str, language: str) -> tuple:
    """List ``name`` of one ``language`` as written (regular expressions, pairs): ``()`` when
    that language has none."""
    return tuple(getattr(_MODULES[language], name, ()))
