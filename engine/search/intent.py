"""Question understanding: a query parsed once into what it asks (issue 37).

People type questions, requests and keywords into the same box, in several languages:
"Who sent the budget?", "mail from Bob about the budget", "Bob's address", "Mail von Bob über
das Budget", "budget report 2001". :func:`parse` reads the text once into a
:class:`QuestionIntent` -- its language, the header field it asks for, whose address, the
person a message is from or to, whether it is a keyword search, the words it is about, the
text each ranking step reads -- and the search steps read that value, never the text again.

The words and patterns are data per language (``engine.common.lang``). Frame words (what a
question asks for: "sender", "address", "e-mail", "how many") are left out of what a question
or a request is about; a keyword search keeps every word it was typed with ("price list",
"time sheet").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from engine.common.lang import LANGUAGES, entries, words
from engine.common.subjects import normal_subject

_WORD = re.compile(r"\w+", re.UNICODE)
_NAME_WORD = re.compile(r"[^\W\d_][\w'.-]*")
#: A word with its possessive ending ("Bob's", "Jones'"), the word itself its group.
_PERSON_WORD = re.compile(r"(\w+)(?:['’]s?)?", re.UNICODE)

#: English stopwords: highlighting and the index's BM25 read these (one list for both).
STOPWORDS = words("STOPWORDS", ("en",))
#: A keyword search is short: longer queries are sentences even without "?".
MAX_KEYWORDS = 6
#: The longest run of a question's words looked for as a subject.
SUBJECT_WORDS = 12

#: Frame words of every language: what a question asks for, not what it is about.
FRAME_WORDS = _ALL_FRAME = words("FIELD_WORDS") | words("MESSAGE_WORDS") | words("REQUEST_WORDS")
#: What a person's name in an address question is not.
_NOT_NAME = words("STOPWORDS") | _ALL_FRAME | words("TOPIC_MARKERS")
_MESSAGE_WORD = re.compile(
    r"(?<![\w-])(?:" + "|".join(sorted((re.escape(w) for w in words("MESSAGE_WORDS") if len(w) > 1), key=len, reverse=True)) + r")(?![\w-])",
    re.I,
)
#: A word for an e-mail itself (not "message" or "note", which a question may be about).
_MAIL_WORD = re.compile(r"(?<![\w-])(?:e-?mails?|mails?|courriels?|correos?|correios?)(?![\w-])", re.I)
_FRAME_WORD = re.compile(
    r"\b(?:" + "|".join(sorted((re.escape(w) for w in _ALL_FRAME if "-" not in w), key=len, reverse=True)) + r")\b",
    re.I,
)


@cache
def _compiled(name: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Every language's patterns of list ``name`` (``engine.common.lang.entries``), compiled;
    ``(field, pattern)`` pairs keep their field, plain patterns get ``""``."""
    out = []
    for lang in LANGUAGES:
        for entry in entries(name, lang):
            field, pattern = entry if isinstance(entry, tuple) else ("", entry)
            out.append((field, re.compile(pattern, re.I)))
    return tuple(out)


@dataclass(frozen=True)
class QuestionIntent:
    """What a query asks, parsed once (:func:`parse`)."""

    #: the query as typed (less the box syntax, which ``engine.search.query`` reads)
    text: str
    #: its language by its function words: "en", "de", "fr", "es", "nl", "pt"
    language: str = "en"
    #: no question, no request, at most ``MAX_KEYWORDS`` words: judged by the words it holds
    keyword: bool = False
    #: the header field it asks for ("from", "to", "cc", "bcc", "subject", "date") or ""
    field: str = ""
    #: whose e-mail address it asks for (their name's words, lower case), or empty
    address_of: frozenset[str] = frozenset()
    #: a message asked for by whom it is "from" or "to" ("mail from Bob", "Bob's email about",
    #: "Mail von Bob"), and that person's words; a soft preference, never a filter
    direction: str = ""
    person: frozenset[str] = frozenset()
    #: the query is a person's name alone ("Kay Mann"), its words
    typed_name: frozenset[str] = frozenset()
    #: it names a message ("the e-mail about ...", "Mail von ...")
    names_message: bool = False
    #: the words it is about: what a document must hold to answer it
    content: tuple[str, ...] = ()
    #: what the sentence ranking reads
    ranking: str = ""
    #: the ranking less the person a direction names ("mail from Bob about the budget": "the
    #: budget"): the person is the header preference's to weigh, and a short message whose
    #: signature or From line is all it shares with the question would rank by the name
    #: (``SearchSettings.direction_topic``); the ranking itself when nothing else is left
    topic: str = ""

    @property
    def fired(self) -> bool:
        """An intent that uses frame words fired (a field, an address, a direction)."""
        return bool(self.field or self.address_of or self.direction)

    def document_query(self) -> str:
        """What the whole-document BM25 reads: the content words, or the words less stopwords
        when it has none ("Who sent the e-mail?")."""
        return " ".join(self.content) or " ".join(w for w in _WORD.findall(self.text) if w.lower() not in STOPWORDS)

    def match_text(self) -> str:
        """What the no-answer decision's match scores: the ranking's text, or the question
        with its frame words blanked when the ranking read it as typed."""
        return self.ranking if self.ranking != self.text else without_frame(self.text)

    def quotes_subject(self, subject: str) -> bool:
        """Whether the query names a message by its whole ``subject`` (its reply and forward
        markers left out): the query is the subject ("where are you"), or it names a message
        and holds the subject's words in a row with nothing but stopwords and frame words after
        them ("Who sent the e-mail about where are you?", "When was the e-mail about X sent?";
        not "... about where are you going tonight?"). The subject needs two words that are
        not frame words ("the e-mail" is no name)."""
        said = _WORD.findall(normal_subject(subject))
        if sum(1 for w in said if w not in FRAME_WORDS) < 2:
            return False
        asked = [w.casefold() for w in _WORD.findall(self.text)]
        if asked == said:
            return True
        n = len(said)
        return self.names_message and any(
            asked[i : i + n] == said and all(w in STOPWORDS or w in FRAME_WORDS for w in asked[i + n :])
            for i in range(len(asked) - n + 1)
        )

    def subject_candidates(self) -> list[str]:
        """The subjects by which the query may name a message, each as
        :func:`~engine.common.subjects.normal_subject` puts it (the form the catalog keeps a
        subject in, so reply markers, tags and case do not matter): every run of 2 to
        ``SUBJECT_WORDS`` of its words as typed (quotes and a final "?" left out) when it names a
        message, else the whole query."""
        text = self.text.strip().rstrip("?").strip()
        typed = [w.strip("\"'“”‘’") for w in text.split()]
        typed = [w for w in typed if w]
        if self.names_message:
            runs = [
                " ".join(typed[i : i + n])
                for n in range(2, min(SUBJECT_WORDS, len(typed)) + 1)
                for i in range(len(typed) - n + 1)
            ]
        else:
            runs = [" ".join(typed)] if len(typed) >= 2 else []
        return [s for s in dict.fromkeys(normal_subject(run) for run in runs) if s]


def stopwords(language: str) -> frozenset[str]:
    """The stopwords a question in ``language`` is read with: English's and its own."""
    return STOPWORDS if language == "en" else words("STOPWORDS", ("en", language))


#: The lists whose words tell a query's language.
_LANGUAGE_SIGNS = ("STOPWORDS", "QUESTION_OPENERS", "MESSAGE_WORDS", "FIELD_WORDS", "TOPIC_MARKERS")


def detect_language(tokens: list[str]) -> str:
    """The language whose function words, question openers, message, field and topic words a
    query holds most; English unless another holds at least two and more than English."""
    counts = {
        lang: sum(
            1
            for t in tokens
            if any(t in words(name, (lang,)) for name in _LANGUAGE_SIGNS)
        )
        for lang in LANGUAGES
    }
    best = max(LANGUAGES, key=lambda lang: (counts[lang], lang == "en"))
    return best if best != "en" and counts[best] >= 2 and counts[best] > counts["en"] else "en"


def first_clause(text: str) -> str:
    """The question a text asks: up to its first "?" when more follows ("When did the
    shipment arrive? Bob's mail said Tuesday" asks the first part only)."""
    head, mark, rest = text.partition("?")
    return head + mark if mark and rest.strip() else text


def wanted_field(question: str) -> str:
    """The header field a question asks for ("Who sent ...?" -> ``from``, "When was the
    e-mail ... sent?" -> ``date``), or "". Read on its first clause."""
    clause = first_clause(question)
    found = next((field for field, pattern in _compiled("FIELD_QUESTIONS") if pattern.search(clause)), "")
    if found:
        return found
    dated = any(p.search(clause) for _, p in _compiled("DATE_QUESTIONS"))
    return "date" if dated and _MESSAGE_WORD.search(clause) else ""


def _name_words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text) if len(w) > 1 and w.lower() not in _NOT_NAME)


def wanted_address(question: str) -> frozenset[str]:
    """For a question asking for someone's e-mail address ("What is the email address of Jun
    Tanaka?", "What's Bob's email?", "email for Bob", "E-Mail-Adresse von Bob Jones"), the
    words naming whose (lower case); else an empty set."""
    if not any(p.search(question) for _, p in _compiled("ADDRESS_QUESTIONS")):
        return frozenset()
    return _name_words(question)


def wanted_direction(question: str) -> tuple[str, frozenset[str]]:
    """("from" or "to", the person's words) for a message asked for by whom it is from or to
    ("mail from Bob about ...", "Bob's e-mail about ...", "what did Bob say about ...", "Mail
    von Bob über ..."); ("", empty) otherwise, and when the person would be more than four words."""
    to_words = words("DIRECTION_TO")
    for _, pattern in _compiled("DIRECTION_QUESTIONS"):
        m = pattern.search(question)
        if m is None:
            continue
        who = _name_words(m.group("who"))
        if not who or len(who) > 4:
            continue
        way = (m.groupdict().get("dir") or "from").lower()
        return ("to" if way in to_words else "from"), who
    return "", frozenset()


def typed_name(query: str) -> frozenset[str]:
    """The words of a query that is a person's name alone ("Kay Mann", "mahmassani souad"):
    two to four words, no question, no restriction; else an empty set. Whether it is one is
    told by the header lines it matches (``engine.search.answers.in_own_header``), not here."""
    typed = query.split()
    if not 2 <= len(typed) <= 4 or any(not _NAME_WORD.fullmatch(w) for w in typed):
        return frozenset()
    return frozenset(w.lower().strip(".") for w in typed)


def is_keyword_query(query: str) -> bool:
    """True for a keyword search: no "?", at most ``MAX_KEYWORDS`` words, and a first word
    that opens no question or request in any of our languages ("budget report", "Doubletree
    lunch"; not "who sent the budget", "find the budget", "wann kommt Bob")."""
    if "?" in query:
        return False
    found = re.findall(r"[\w'’-]+", query)
    if not found or len(found) > MAX_KEYWORDS:
        return False
    return found[0].lower() not in words("QUESTION_OPENERS")


def without_frame(question: str) -> str:
    """The question with its frame words (field, message and request words of every language)
    blanked out, the rest (stopwords, punctuation, "$") as typed."""
    return _MESSAGE_WORD.sub(" ", _FRAME_WORD.sub(" ", question))


def keyword_terms(query: str, stop: frozenset[str] = STOPWORDS) -> list[str]:
    """The words of a keyword search a document should hold: all but stopwords and the words
    naming a message (every word typed counts: "price list" keeps "list")."""
    return [w for w in re.findall(r"[\w'’-]+", query) if w.lower() not in stop and not _MESSAGE_WORD.fullmatch(w)]


def parse(text: str) -> QuestionIntent:
    """``text`` (the query less its box syntax) read once into a :class:`QuestionIntent`."""
    tokens = [w.lower() for w in _WORD.findall(text)]
    language = detect_language(tokens)
    stop = stopwords(language)
    field = wanted_field(text)
    address_of = wanted_address(text)
    direction, person = ("", frozenset()) if field or address_of else wanted_direction(text)
    names_message = bool(_MESSAGE_WORD.search(text))
    fired = bool(field or address_of or direction)
    keyword = not fired and is_keyword_query(text)
    if keyword:  # every word typed counts ("price list", "time sheet")
        content = tuple(keyword_terms(text, stop))
    else:
        # what a request asks for is not what it is about ("mail about the time sheet": the
        # mail); a question's or a fired intent's field words neither ("What year ...?",
        # "Who sent ...?": the year, the sender)
        asks = fired or "?" in text or (bool(tokens) and tokens[0] in words("INTERROGATIVES"))
        left_out = stop | words("REQUEST_WORDS") | words("MESSAGE_WORDS") | (_ALL_FRAME if asks else frozenset())
        content = tuple(w for w in _WORD.findall(text) if w.lower() not in left_out)
    # the sentence ranking reads what the message says, not how it was asked for
    if fired and content:
        ranking = without_frame(text)
    elif content and _MAIL_WORD.search(text):  # "the e-mail about ...", not "How are messages delivered?"
        ranking = _MAIL_WORD.sub(" ", text)
    else:
        ranking = text
    topic = _without_person(ranking, person, stop) if direction else ranking
    return QuestionIntent(
        text=text,
        language=language,
        keyword=keyword,
        field=field,
        address_of=address_of,
        direction=direction,
        person=person,
        typed_name=typed_name(text),
        names_message=names_message,
        content=content,
        ranking=ranking,
        topic=topic,
    )


def _without_person(ranking: str, person: frozenset[str], stop: frozenset[str]) -> str:
    """``ranking`` with the person's words (``_WORD`` runs, as :func:`_name_words` read them)
    and their possessive "'s" blanked; ``ranking`` when no word but stopwords would be left
    ("mail from Bob")."""
    left = _PERSON_WORD.sub(lambda m: " " if m.group(1).lower() in person else m.group(), ranking)
    return left if any(w.lower() not in stop for w in _WORD.findall(left)) else ranking
