"""The product benchmark's questions (bench.product): what each set asks and how it is
derived from the files written (``bench.product.data``), and ``keyword_form``, a question as a
user of keyword search would type it."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SEED = 13
#: At most this many questions of a kind (seeded sample).
MAX_SQUAD = 1000
MAX_SQUAD_UNANSWERABLE = 300
MAX_ADDRESS = 150
MAX_SENDER = 100
MAX_DATE = 50


@dataclass
class Question:
    """One question. ``gold_docs``: document keys (paths relative to the collection folder);
    ``values``: answer@1 holds if the shown text contains one of them (case-insensitive,
    whitespace collapsed); ``sentences``: gold sentences (SQuAD; see ``sentence_match``);
    ``amount``: BIPIA's dollar rule; ``answerable``: False for the calibration questions."""

    qid: str
    set: str
    kind: str
    text: str
    gold_docs: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    amount: bool = False
    answerable: bool = True
    #: What a user of keyword search would type instead (``keyword_form``): the person's name
    #: of an address or who-is question, the subject a sender or date question quotes;
    #: empty: the question's own words less stopwords and question words.
    keywords: str = ""


# ---------------------------------------------------------------------------------------------
# e-mail headers: who, what, when

_ADDR = re.compile(r"[A-Za-z0-9._%+'=-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_ENRON_SUFFIX = re.compile(r"(@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)@ENRON\b", re.IGNORECASE)
_PERSON_LOCAL = re.compile(r"^[a-z]{2,}(?:\.[a-z])?\.[a-z]{2,}$")
#: "Mary Joyce, Vice President" in a body: a person named with a role (``who-is`` questions).
_PERSON_ROLE = re.compile(
    r"\b([A-Z][a-z]+ (?:[A-Z]\. )?[A-Z][a-z]+), (?:the |our |a )?"
    r"((?:Senior |Executive |Managing |Vice )*(?:President|Vice President|Director|Manager|CEO"
    r"|Chief [A-Z][a-z]+ Officer|Chairman|Analyst|Counsel|Partner|Professor|Head)\b)"
)
_ROLE_WORDS = frozenset(
    [
        "President",
        "Director",
        "Manager",
        "CEO",
        "Chief",
        "Officer",
        "Chairman",
        "Analyst",
        "Counsel",
        "Partner",
        "Professor",
        "Head",
        "Senior",
        "Executive",
        "Managing",
        "Vice",
        "Department",
        "General",
        "Deputy",
        "Assistant",
    ]
)
_SUBJECT_PREFIX = re.compile(r"^\s*((re|fw|fwd)\s*:\s*)+", re.IGNORECASE)


def mailboxes(value: str) -> list[tuple[str, str]]:
    """(display name, address) pairs of an Enron JSON header value. Lotus Notes' ``@ENRON``
    suffix is dropped from internet addresses; an Exchange X.500 recipient
    (``Tracy </O=ENRON/OU=NA/CN=RECIPIENTS/CN=Tgeacco>``) or a bare Notes name has no address
    (``""``) and keeps only its display name."""
    out = []
    for part in re.split(r"[;,]", _ENRON_SUFFIX.sub(r"\1", value or "")):
        part = part.strip()
        if not part or part == "<>":
            continue
        m = _ADDR.search(part)
        addr = m.group(0) if m else ""
        name = (part.replace(addr, "") if addr else re.sub(r"<[^>]*>", "", part)).replace("<>", "")
        name = name.strip().strip('"').strip()
        out.append((name if name.lower() != addr.lower() else "", addr))
    return out



def person_name(addr: str) -> str | None:
    """``julie.kearney@enron.com`` -> ``Julie Kearney`` (``mary.k.miller`` -> ``Mary K Miller``);
    None unless the local part is first[.initial].last, letters only."""
    local = addr.split("@", 1)[0].lower()
    if not _PERSON_LOCAL.match(local):
        return None
    return " ".join(p.capitalize() for p in local.split("."))


def enron_questions(headers: dict[str, dict], seed: int = SEED, set_name: str = "enron") -> list[Question]:
    """Questions derived from the Enron headers of the indexed messages (seeded samples):

    * ``address``: "What is the email address of <First Last>?" for every person address
      (first.last@..., name from its local part) in From/To/Cc; gold documents = the messages
      with that address in From/To/Cc; answer = the address shown (in any document).
    * ``sender``: "Who sent the e-mail about <subject>?" for messages whose subject (Re:/Fw:
      removed) is unique in the collection and has at least three words; gold = that message;
      answer = its sender's address or display name shown.
    * ``who-is``: "Who is <First Last>?" for every person a body names with a role
      ("Mary Joyce, Vice President": ``_PERSON_ROLE``); gold documents = the messages saying
      so; answer = "<name>, <role>" shown.
    * ``date``: "When was the e-mail about <subject> sent?" for unique subjects as above that
      no ``sender`` question asks about (seeded, drawn after the others so they stay as they
      were); gold = that message; answer = its date (``date_utc`` in this machine's zone, as
      the engine shows it) shown, as "08 Feb 2001", "February 8, 2001" or "2001-02-08".
    """
    by_addr: dict[str, set[str]] = defaultdict(set)
    for key, r in headers.items():
        for h in ("from", "to", "cc"):
            for _, a in mailboxes(r[h]):
                if a:
                    by_addr[a.lower()].add(key)
    named = sorted((a, person_name(a)) for a in by_addr if person_name(a))
    names: dict[str, list[str]] = defaultdict(list)
    for a, n in named:
        names[n].append(a)  # two addresses for one name: both are right
    rng = random.Random(seed + 2)
    picked = sorted(names)
    rng.shuffle(picked)
    out = [
        Question(
            f"addr-{i}",
            set_name,
            "address",
            f"What is the email address of {n}?",
            gold_docs=sorted(set().union(*(by_addr[a] for a in names[n]))),
            values=names[n],
            keywords=n,
        )
        for i, n in enumerate(sorted(picked[:MAX_ADDRESS]))
    ]
    subjects: dict[str, list[str]] = defaultdict(list)
    for key, r in headers.items():
        s = _SUBJECT_PREFIX.sub("", " ".join((r.get("subject") or "").split()))
        if len(re.findall(r"[A-Za-z]{2,}", s)) >= 3:
            subjects[s.lower()].append(key)
    unique = sorted(ks[0] for ks in subjects.values() if len(ks) == 1)
    rng.shuffle(unique)
    for i, key in enumerate(sorted(unique[:MAX_SENDER])):
        r = headers[key]
        s = _SUBJECT_PREFIX.sub("", " ".join(r["subject"].split()))
        name, addr = next((n, a) for n, a in mailboxes(r["from"]) if a)
        values = [addr] + ([name] if len(name.split()) >= 2 else [])
        out.append(
            Question(f"sender-{i}", set_name, "sender", f"Who sent the e-mail about {s}?", [key], values, keywords=s)
        )
    roles: dict[str, dict[str, str]] = defaultdict(dict)  # name -> {key: "Name, Title"}
    for key, r in headers.items():
        for m in _PERSON_ROLE.finditer(r.get("body") or ""):
            if set(m.group(1).split()) & _ROLE_WORDS:  # "Department Head, Professor"
                continue
            roles[m.group(1)].setdefault(key, " ".join(m.group(0).split()))
    for i, name in enumerate(sorted(roles)):
        keys = sorted(roles[name])
        values = sorted(set(roles[name].values()))
        out.append(Question(f"who-{i}", set_name, "who-is", f"Who is {name}?", keys, values, keywords=name))
    asked = set(unique[:MAX_SENDER])
    dated = [k for k in unique if k not in asked and headers[k].get("date_utc") is not None]
    rng.shuffle(dated)
    for i, key in enumerate(sorted(dated[:MAX_DATE])):
        s = _SUBJECT_PREFIX.sub("", " ".join(headers[key]["subject"].split()))
        d = headers[key]["date_utc"].astimezone()
        values = [f"{d:%d %b %Y}", f"{d:%B} {d.day}, {d.year}", f"{d:%Y-%m-%d}"]
        out.append(
            Question(f"date-{i}", set_name, "date", f"When was the e-mail about {s} sent?", [key], values, keywords=s)
        )
    return out


def bipia_questions(rows: list[dict], key_of: dict[str, str]) -> list[Question]:
    """BIPIA's questions (set ``email``) over its e-mails (``key_of``: context -> document key).

    BIPIA labels a question per e-mail; asked of the mailbox, the same text is one question,
    answerable when any of its e-mails answers it ("paid to Athena" is `unknown` for one
    e-mail and answered by two others): gold = every answering e-mail, and only a text no
    e-mail answers is unanswerable. (Kept per row, one question text was counted both ways.)"""
    from trainer.ood import bipia_question

    questions: list[Question] = []
    by_text: dict[str, list[tuple[int, dict]]] = {}
    for n, r in enumerate(rows):
        by_text.setdefault(bipia_question(r["question"]), []).append((n, r))
    for text, group in by_text.items():
        answering = [(n, r) for n, r in group if r["ideal"].strip().lower() != "unknown"]
        unknown = not answering
        questions.append(
            Question(
                f"bipia-{group[0][0]}",
                "email",
                "bipia-unknown" if unknown else "bipia",
                text,
                gold_docs=list(dict.fromkeys(key_of[r["context"]] for _, r in answering or group)),
                values=list(dict.fromkeys(r["ideal"].strip() for _, r in answering)),
                amount=not unknown,
                answerable=not unknown,
            )
        )
    return questions


def squad_questions(
    pool: Any,
    article_of: Callable[[str], int],
    answers: dict[str, list[str]],
    key_of_article: dict[int, str],
    held_out: Iterable[int],
    seed: int = SEED,
) -> list[Question]:
    """SQuAD's questions over its articles (``key_of_article``: the indexed ones; ``article_of``:
    a question's or passage's article): a seeded sample of ``MAX_SQUAD`` answerable ones, gold
    sentence = the MultiReQA sentence holding the answer (``pool``:
    ``trainer.pools.build_pool``), gold document = the article holding it; then one of
    ``MAX_SQUAD_UNANSWERABLE`` of the ``held_out`` articles' questions, the unanswerable set."""
    indexed, held_out = set(key_of_article), set(held_out)
    text_of = {s.id: s.text for s in pool.sentences}
    sent_article = {s.id: article_of(s.passage_id) for s in pool.sentences}
    answerable, unanswerable = [], []
    for q in pool.questions:
        art = article_of(q.id)
        if art in indexed:
            gold = sorted({key_of_article[sent_article[g]] for g in q.gold if sent_article[g] in indexed})
            answerable.append(
                Question(
                    q.id,
                    "squad",
                    "squad",
                    q.question,
                    gold_docs=gold,
                    sentences=sorted({text_of[g] for g in q.gold}),
                    answers=answers.get(q.id, []),
                )
            )
        elif art in held_out:
            unanswerable.append(Question(q.id, "squad", "squad-heldout", q.question, answerable=False))
    rng = random.Random(seed + 4)
    rng.shuffle(answerable)
    rng.shuffle(unanswerable)
    return answerable[:MAX_SQUAD] + unanswerable[:MAX_SQUAD_UNANSWERABLE]


def classic_key(name: str, doc: str) -> str:
    """A CISI or TIME document's file: ``cisi-0042.txt``."""
    return f"{name}-{int(doc):04d}.txt"


def classic_questions(
    name: str, qids: Iterable[str], queries: dict[str, str], qrels: dict[str, set[str]], keep: set[str]
) -> list[Question]:
    """A classic collection's queries with judgments (document metrics only): gold = the judged
    documents among those written (``keep``); a query left without one is dropped."""
    questions = [
        Question(
            q,
            name,
            name,
            " ".join(queries[q].split()),
            gold_docs=sorted(classic_key(name, d) for d in qrels[q] if d in keep),
        )
        for q in qids
    ]
    return [q for q in questions if q.gold_docs]


# ---------------------------------------------------------------------------------------------
# typed as keywords

#: Left out of a question to type it as keywords: Lucene's 33 English stopwords (the BM25
#: baseline's list) and the words that make a sentence a question.
_NOT_KEYWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
        "they", "this", "to", "was", "will", "with", "what", "which", "who", "whom", "whose", "when",
        "where", "why", "how", "do", "does", "did", "can", "could", "would", "should", "has", "have",
        "had", "were", "find",
    }
)


def keyword_form(q: Question) -> str:
    """The question as a user of keyword search would type it: ``q.keywords`` when the set
    names what it asks about (a person, a subject), else its words less ``_NOT_KEYWORDS``
    ("Find the $ value paid to Mixpanel?" -> "value paid Mixpanel")."""
    if q.keywords:
        return q.keywords
    return " ".join(w for w in re.findall(r"\w+(?:['.-]\w+)*", q.text) if w.lower() not in _NOT_KEYWORDS)
