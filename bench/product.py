"""Product-level benchmark (issue 12, item 1): the app as a user meets it, on real files.

Writes real files from the public sets in ../shared/data into ``--work`` (default
``runs/product``), indexes them with the real pipeline (:class:`engine.api.facade.Engine`, one
sparcdesk home per collection, reused between runs because indexing is incremental), asks
every question through :meth:`engine.api.facade.Engine.ask` with the app's defaults (what
``sparcdesk ask --json`` runs) and scores, per set:

* document MRR@10 and hit@1 (the first answer's document is a gold document);
* answer@1: the first answer is in a gold document and what it shows (its best sentence, or
  its field value when the answer marks a field answer) holds the gold sentence or value;
* the no-answer decision when the engine gives one (``answered``): % of answerable questions
  answered, % of unanswerable ones not answered ("n/a" before the engine has it);
* MRR@10 and hit@1 again with each answerable question typed as keywords (``keyword_form``:
  a name, a subject, the words less stopwords; ``--no-keywords`` leaves it out);

next to BM25 over whole documents with their header fields (bm25s, Lucene formula, k1 0.9,
b 0.4, English stopwords, Snowball stemmer: ``trainer.baselines.BM25Retriever``) over the
texts read back from the same files, in the same run.

Collections (homes) and sets, see docs/product.md for how each question is derived:

* ``mail``: BIPIA e-mails as .eml + Enron messages as .eml with full headers. Sets ``email``
  (BIPIA questions, one per distinct text; those no e-mail answers, every row "unknown", are
  the unanswerable calibration set) and ``enron``
  (questions derived from the Enron headers: e-mail address of a person, sender of an e-mail).
* ``squad``: SQuAD v1.1 dev, one Markdown file per article (rebuilt, see ``squad_articles``);
  10% of the articles are held out of the index and their questions are the unanswerable set.
* ``cisi``, ``time``: the classic IR collections, one .txt per document, document judgments.

    .venv/bin/python -m bench.product --quick              # a few minutes, small corpora
    .venv/bin/python -m bench.product --doc docs/product.md  # the published run

Writes bench/results/product-<stamp>.json (metrics, sizes, timings, machine, load) and
product-<stamp>.questions.jsonl.gz beside it (one row per question: ranked documents, the top
answer, its score, ``answered``), for analysis without re-running.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gzip
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.metrics import reciprocal_rank  # noqa: E402  (one definition of the metric)

DATA = Path(os.environ.get("SPARCDESK_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "bench" / "results"
SETS = ("email", "enron", "maildir", "squad", "cisi", "time")
COLLECTION_OF = {
    "email": "mail",
    "enron": "mail",
    "maildir": "maildir",
    "squad": "squad",
    "cisi": "cisi",
    "time": "time",
}
SEED = 13
TOP = 10

BIPIA_DIR = "email/emailqa-bipia"
ENRON_FILE = "email/enron-messages.jsonl.gz"
MAILDIR_DIR = "email/maildir-sample"
SQUAD_JSON = "squad/dev-v1.1.json.gz"
SQUAD_MRQA = "squad/dev-v1.1.mrqa.jsonl.gz"
SQUAD_CANDIDATES = "multireqa/data/dev/SQuAD/candidates.json.gz"

#: Corpus sizes: the full run and ``--quick``.
SIZES = {
    "full": {"enron": 1000, "squad_articles": 48, "cisi_docs": 0, "time_docs": 0, "questions": 0},
    "quick": {
        "enron": 200,
        "squad_articles": 7,
        "cisi_docs": 250,
        "time_docs": 100,
        "questions": 40,
        "classic_questions": 12,
    },
}
#: At most this many questions of a kind (seeded sample).
MAX_SQUAD = 1000
MAX_SQUAD_UNANSWERABLE = 300
MAX_ADDRESS = 150
MAX_SENDER = 100
MAX_DATE = 50
#: Sentence-pool figures for SQuAD dev quoted next to answer@1 (docs/ood.md, "Every
#: combination", and README "Where it stands": sparc-tiny 0.3.0, the MultiReQA pool).
SQUAD_POOL = {
    "source": "docs/ood.md / README.md (sparc-tiny 0.3.0, MultiReQA SQuAD dev pool)",
    "default_search": {"MRR": 80.42, "R@1": 73.04},
    "sparc_alone": {"MRR": 74.28, "R@1": 65.88},
    "bm25": {"MRR": 73.36, "R@1": 65.80},
}


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


@dataclass
class Collection:
    name: str
    folder: Path
    docs: dict[str, Path] = field(default_factory=dict)  # key -> file


# ---------------------------------------------------------------------------------------------
# files


def _write(path: Path, data: bytes) -> None:
    """Write only when the content changed (an unchanged file is not re-indexed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.read_bytes() == data:
        return
    path.write_bytes(data)


def _prune(folder: Path, keep: Iterable[Path]) -> None:
    """Remove files of an earlier run that this run does not use (the index then drops them)."""
    wanted = {p.resolve() for p in keep}
    if not folder.is_dir():
        return
    for p in folder.rglob("*"):
        if p.is_file() and p.resolve() not in wanted:
            p.unlink()


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


# ---------------------------------------------------------------------------------------------
# e-mail: BIPIA + Enron as .eml

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


def enron_date(value: str) -> str:
    """``31/05/2001 11:21:48 AM`` (day first, zone unknown) as an RFC 5322 date (``-0000``)."""
    try:
        dt = _dt.datetime.strptime(value.strip(), "%d/%m/%Y %I:%M:%S %p")
    except ValueError:
        dt = _dt.datetime(2001, 1, 1)
    return format_datetime(dt)  # naive -> "-0000": no known zone


def _message_id(seed: str) -> str:
    return f"<{hashlib.sha1(seed.encode()).hexdigest()[:20]}.JavaMail.bench@sparcdesk>"


def enron_eml(row: dict) -> bytes:
    """An Enron JSON message as an RFC 5322 .eml, shaped like the raw Maildir files: From/To/Cc
    with the addresses that exist, X-From/X-To/X-cc with the original display forms."""
    msg = EmailMessage()
    msg["Message-ID"] = _message_id(row["path"])
    msg["Date"] = enron_date(row["date"])
    sender = next(((n, a) for n, a in mailboxes(row["from"]) if a), None)
    assert sender is not None
    msg["From"] = formataddr(sender)
    for header, key in (("To", "to"), ("Cc", "cc")):
        addrs = [formataddr((n, a)) for n, a in mailboxes(row[key]) if a]
        if addrs:
            msg[header] = ", ".join(addrs)
    msg["Subject"] = " ".join((row.get("subject") or "").split())
    msg["X-From"] = " ".join((row["from"] or "").split())
    msg["X-To"] = " ".join((row["to"] or "").split())
    msg["X-cc"] = " ".join((row["cc"] or "").split())
    msg["X-Folder"] = f"{row['mailbox']}/{row['folder']}"
    msg.set_content(row["body"] or "")
    return bytes(msg)


def bipia_eml(fields: dict[str, str], n: int) -> bytes:
    """A BIPIA context as .eml: its SUBJECT / EMAIL_FROM / RECEIVED DATE as headers. The 35
    contexts without headers get a placeholder sender ``unknown@bipia.invalid`` and a fixed
    date (2022-02-01, the month the others were received)."""
    msg = EmailMessage()
    msg["Message-ID"] = _message_id(f"bipia-{n}")
    msg["Date"] = fields.get("received date") or "Tue, 01 Feb 2022 12:00:00 +0000"
    msg["From"] = fields.get("email_from") or "unknown@bipia.invalid"
    if fields.get("subject"):
        msg["Subject"] = fields["subject"]
    msg.set_content(fields.get("content", "").strip("\n") + "\n")
    return bytes(msg)


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_mail(work: Path, n_enron: int, seed: int = SEED) -> tuple[Collection, list[Question]]:
    from trainer.ood import bipia_question, parse_bipia

    col = Collection("mail", work / "files" / "mail")
    questions: list[Question] = []
    rows = [r for name in ("train.jsonl", "test.jsonl") for r in _read_jsonl(DATA / BIPIA_DIR / name)]
    key_of: dict[str, str] = {}
    for r in rows:
        if r["context"] not in key_of:
            key = f"bipia/bipia-{len(key_of):03d}.eml"
            key_of[r["context"]] = key
            col.docs[key] = col.folder / key
            _write(col.docs[key], bipia_eml(parse_bipia(r["context"]), len(key_of) - 1))
    # BIPIA labels a question per e-mail; asked of the mailbox, the same text is one question,
    # answerable when any of its e-mails answers it ("paid to Athena" is `unknown` for one
    # e-mail and answered by two others): gold = every answering e-mail, and only a text no
    # e-mail answers is unanswerable. (Kept per row, one question text was counted both ways.)
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

    enron = _read_jsonl(DATA / ENRON_FILE)
    order = list(range(len(enron)))
    random.Random(seed).shuffle(order)
    chosen: list[int] = []
    for i in order:
        if len(chosen) >= n_enron:
            break
        r = enron[i]
        if (r.get("body") or "").strip() and any(a for _, a in mailboxes(r["from"])):
            chosen.append(i)
    headers: dict[str, dict] = {}
    for i in chosen:
        r = enron[i]
        key = f"enron/{r['mailbox']}-{i:05d}.eml"
        col.docs[key] = col.folder / key
        data = enron_eml(r)
        _write(col.docs[key], data)
        headers[key] = {**r, "date_utc": date_utc(parse_message(data))}
    _prune(col.folder, col.docs.values())
    questions += enron_questions(headers, seed)
    return col, questions


def parse_message(data: bytes) -> Any:
    """An RFC 822 message as one parser reads it for the whole benchmark (``policy.default``:
    encoded words decoded, bodies by their charset), for the mail sets' questions and for the
    BM25 baseline's text alike."""
    from email import policy
    from email.parser import BytesParser

    return BytesParser(policy=policy.default).parsebytes(data)


def _printable(text: str) -> str:
    return "".join(c for c in text if c.isprintable() or c.isspace())


def body_text(msg: Any) -> str:
    """A parsed message's body: its plain-text part (else its HTML), decoded."""
    body = msg.get_body(preferencelist=("plain", "html"))
    return body.get_content() if body is not None else ""


def build_maildir(work: Path, seed: int = SEED) -> tuple[Collection, list[Question]]:
    """The raw Enron Maildir sample (``email/maildir-sample``: two people's mailboxes, RFC 822
    files with full headers in the original layout) copied under ``work`` as it is and
    indexed as a mail store. Its messages are the real thing: mailings to 100+ people,
    forwards, disclaimers. Questions derived from their headers and bodies as for the Enron
    set (``enron_questions``)."""
    src = DATA / MAILDIR_DIR
    col = Collection("maildir", work / "files" / "maildir")
    headers: dict[str, dict] = {}
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        key = path.relative_to(src).as_posix()
        data = path.read_bytes()
        col.docs[key] = col.folder / key
        _write(col.docs[key], data)
        msg = parse_message(data)
        # a decoded header keeps Enron's control characters ("Mind\x01,s Eye", an apostrophe
        # lost in export); nobody types one, so a question leaves them out
        headers[key] = {h: " ".join(_printable(str(msg[h] or "")).split()) for h in ("from", "to", "cc", "subject")}
        headers[key]["body"] = body_text(msg)
        headers[key]["date_utc"] = date_utc(msg)
    _prune(col.folder, col.docs.values())
    return col, enron_questions(headers, seed, set_name="maildir")


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


def date_utc(msg: Any) -> _dt.datetime | None:
    """A parsed message's Date in UTC as the engine keeps it (``engine.ingest.mail.message_date``);
    None if absent or unreadable. (A question's answer values are in this machine's zone, as
    the engine shows a date.)"""
    from engine.ingest.mail import message_date

    when = message_date(msg)
    return _dt.datetime.fromisoformat(when) if when else None


# ---------------------------------------------------------------------------------------------
# SQuAD dev as articles

#: SQuAD v1.1 dev's 48 article titles in the order of the file, with a pattern that marks
#: paragraphs about each (the MRQA release that ../shared/data holds dropped the titles).
SQUAD_TITLES: list[tuple[str, str]] = [
    ("Super Bowl 50", "Super Bowl|Broncos|Panthers"),
    ("Warsaw", "Warsaw"),
    ("Normans", "Norman"),
    ("Nikola Tesla", "Tesla"),
    ("Computational complexity theory", "complexity"),
    ("Teacher", "teacher"),
    ("Martin Luther", "Luther"),
    ("Southern California", "Southern California"),
    ("Sky (United Kingdom)", "Sky|BSkyB"),
    ("Victoria (Australia)", "Victoria"),
    ("Huguenot", "Huguenot"),
    ("Steam engine", "steam"),
    ("Oxygen", "oxygen"),
    ("1973 oil crisis", "oil"),
    ("Apollo program", "Apollo"),
    ("European Union law", "EU|European"),
    ("Amazon rainforest", "Amazon"),
    ("Ctenophora", "ctenophore|Ctenophor"),
    ("Fresno, California", "Fresno"),
    ("Packet switching", "packet"),
    ("Black Death", "Black Death|plague"),
    ("Geology", "geolog"),
    ("Newcastle upon Tyne", "Newcastle"),
    ("Victoria and Albert Museum", "V&A|museum|Museum"),
    ("American Broadcasting Company", "ABC"),
    ("Genghis Khan", "Genghis|Temüjin|Mongol"),
    ("Pharmacy", "pharmac"),
    ("Immune system", "immune"),
    ("Civil disobedience", "disobedience"),
    ("Construction", "construction"),
    ("Private school", "private school|independent school"),
    ("Harvard University", "Harvard"),
    ("Jacksonville, Florida", "Jacksonville"),
    ("Economic inequality", "inequality"),
    ("Doctor Who", "Doctor"),
    ("University of Chicago", "University of Chicago|Chicago"),
    ("Yuan dynasty", "Yuan"),
    ("Kenya", "Kenya"),
    ("Intergovernmental Panel on Climate Change", "IPCC"),
    ("Chloroplast", "chloroplast"),
    ("Prime number", "prime"),
    ("Rhine", "Rhine"),
    ("Scottish Parliament", "Scottish Parliament|Parliament|MSP"),
    ("Islamism", "Islamis"),
    ("Imperialism", "imperialism|Imperialism"),
    ("United Methodist Church", "Methodist"),
    ("French and Indian War", "French|Indian War"),
    ("Force", "force"),
]


def squad_articles(paragraphs: Sequence[str]) -> list[int]:
    """The article (index into ``SQUAD_TITLES``) of every SQuAD dev paragraph.

    The MRQA file keeps the articles' order but not their titles, and neighbouring articles'
    paragraphs interleave near their borders. Rebuilt in two steps: (1) an order-preserving
    labelling that maximises the paragraphs matching their article's pattern (dynamic
    programming); (2) six rounds of nearest-centroid reassignment (TF-IDF cosine), each
    paragraph choosing among its current article and the two next to it. The gold document of
    a question is by construction the file holding its paragraph, so a misplaced paragraph
    only makes an article less pure, never a gold label wrong.
    """
    import numpy as np
    from scipy import sparse

    from engine.search.answers import STOPWORDS

    k = len(SQUAD_TITLES)
    n = len(paragraphs)
    hit = np.array([[1.0 if re.search(p, t) else 0.0 for _, p in SQUAD_TITLES] for t in paragraphs])
    dp = np.full((n, k), -1e9)
    back = np.zeros((n, k), dtype=np.int64)
    dp[0] = hit[0] - np.arange(k) * 100.0
    for i in range(1, n):
        arg = np.zeros(k, dtype=np.int64)
        cur = 0
        for j in range(k):
            if dp[i - 1][j] >= dp[i - 1][cur]:
                cur = j
            arg[j] = cur
        dp[i] = dp[i - 1][arg] + hit[i]
        back[i] = arg
    lab = np.zeros(n, dtype=np.int64)
    lab[-1] = k - 1
    for i in range(n - 1, 0, -1):
        lab[i - 1] = back[i][lab[i]]

    docs = [[w for w in re.findall(r"[a-z0-9]{2,}", t.lower()) if w not in STOPWORDS] for t in paragraphs]
    df: dict[str, int] = defaultdict(int)
    for d in docs:
        for w in set(d):
            df[w] += 1
    vocab = {w: i for i, w in enumerate(sorted(w for w, c in df.items() if c >= 2))}
    rows, cols, vals = [], [], []
    for r, d in enumerate(docs):
        counts: dict[str, int] = defaultdict(int)
        for w in d:
            if w in vocab:
                counts[w] += 1
        for w, c in counts.items():
            rows.append(r)
            cols.append(vocab[w])
            vals.append((1 + math.log(c)) * (math.log((1 + n) / (1 + df[w])) + 1))
    x = sparse.csr_matrix((vals, (rows, cols)), shape=(n, len(vocab)))
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1))).ravel()
    x = sparse.diags(1 / np.maximum(norms, 1e-9)) @ x
    for _ in range(6):
        c = np.vstack([np.asarray(x[lab == j].mean(axis=0)) for j in range(k)])
        c /= np.linalg.norm(c, axis=1, keepdims=True) + 1e-9
        s = np.asarray(x @ c.T)
        new = lab.copy()
        for i in range(n):
            cand = range(max(0, lab[i] - 1), min(k, lab[i] + 2))
            new[i] = max(cand, key=lambda j, i=i: s[i, j])
        if (new == lab).all():
            break
        lab = new
    return [int(v) for v in lab]


def _slug(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_")


def build_squad(work: Path, n_articles: int, seed: int = SEED) -> tuple[Collection, list[Question]]:
    """One Markdown file per article: ``# Title`` then its paragraphs in file order. 10% of the
    chosen articles (at least one, seeded) are held out of the index; their questions are the
    unanswerable set. Gold sentence = the MultiReQA sentence holding the answer
    (``trainer.pools.build_pool``); gold document = the article holding it."""
    from trainer.pools import build_pool

    with gzip.open(DATA / SQUAD_JSON, "rt", encoding="utf-8") as f:
        paragraphs = json.load(f)["data"][0]["paragraphs"]
    labels = squad_articles([p["context"] for p in paragraphs])
    para_of_qid = {qa["id"]: i for i, p in enumerate(paragraphs) for qa in p["qas"]}
    answers_of = {qa["id"]: [a["text"] for a in qa["answers"]] for p in paragraphs for qa in p["qas"]}
    rng = random.Random(seed + 3)
    articles = list(range(len(SQUAD_TITLES)))
    rng.shuffle(articles)
    articles = articles[:n_articles]
    n_out = max(1, round(len(articles) / 10))
    held_out, indexed = set(articles[:n_out]), set(articles[n_out:])

    col = Collection("squad", work / "files" / "squad")
    key_of_article: dict[int, str] = {}
    for a in sorted(indexed):
        title = SQUAD_TITLES[a][0]
        key = f"{a + 1:02d}-{_slug(title)}.md"
        key_of_article[a] = key
        body = "\n\n".join(p["context"].strip() for i, p in enumerate(paragraphs) if labels[i] == a)
        col.docs[key] = col.folder / key
        _write(col.docs[key], f"# {title}\n\n{body}\n".encode())
    _prune(col.folder, col.docs.values())

    pool = build_pool(DATA / SQUAD_MRQA, DATA / SQUAD_CANDIDATES)
    text_of = {s.id: s.text for s in pool.sentences}
    article_of_passage = {s.passage_id: labels[para_of_qid[s.passage_id]] for s in pool.sentences}
    sent_article = {s.id: article_of_passage[s.passage_id] for s in pool.sentences}
    answerable, unanswerable = [], []
    for q in pool.questions:
        art = labels[para_of_qid[q.id]]
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
                    answers=answers_of.get(q.id, []),
                )
            )
        elif art in held_out:
            unanswerable.append(Question(q.id, "squad", "squad-heldout", q.question, answerable=False))
    rng = random.Random(seed + 4)
    rng.shuffle(answerable)
    rng.shuffle(unanswerable)
    return col, answerable[:MAX_SQUAD] + unanswerable[:MAX_SQUAD_UNANSWERABLE]


# ---------------------------------------------------------------------------------------------
# CISI and TIME


def _classic(name: str) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    from trainer import ood

    if name == "cisi":
        root = DATA / ood.CISI_DIR
        recs = ood.read_smart(root / "CISI.ALL")
        docs = {k: "\n\n".join(p for p in (d.get("T", ""), d.get("W", "")) if p) for k, d in recs.items()}
        queries = {k: q.get("W", "") for k, q in ood.read_smart(root / "CISI.QRY").items()}
        qrels: dict[str, set[str]] = defaultdict(set)
        for line in (root / "CISI.REL").read_text(encoding="latin-1").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                qrels[parts[0]].add(parts[1])
        return docs, queries, dict(qrels)
    root = DATA / ood.TIME_DIR
    records = ood._star_records(root / "TIME.ALL", "TEXT")
    docs = {str(n): text for n, text in enumerate(records.values(), start=1)}
    queries = ood._star_records(root / "TIME.QUE", "FIND")
    qrels = {}
    for line in (root / "TIME.REL").read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            qrels[parts[0]] = {str(ood.time_position(int(p))) for p in parts[1:]}
    return docs, queries, qrels


def build_classic(name: str, work: Path, n_docs: int, n_questions: int, seed: int = SEED):
    """One .txt per document (CISI: title, blank line, abstract; TIME: the article), questions
    = the queries with judgments. With ``n_docs`` (quick mode): ``n_questions`` seeded queries,
    their judged documents, then seeded others up to ``n_docs``."""
    docs, queries, qrels = _classic(name)
    qids = sorted((q for q in queries if qrels.get(q) and any(d in docs for d in qrels[q])), key=int)
    keep = set(docs)
    if n_docs:
        rng = random.Random(seed + 5)
        rng.shuffle(qids)
        qids = sorted(qids[: n_questions or len(qids)], key=int)
        keep = {d for q in qids for d in qrels[q] if d in docs}
        rest = sorted(set(docs) - keep, key=int)
        rng.shuffle(rest)
        keep |= set(rest[: max(0, n_docs - len(keep))])
    col = Collection(name, work / "files" / name)
    for d in sorted(keep, key=int):
        key = f"{name}-{int(d):04d}.txt"
        col.docs[key] = col.folder / key
        _write(col.docs[key], (docs[d].strip() + "\n").encode())
    _prune(col.folder, col.docs.values())
    questions = [
        Question(
            q,
            name,
            name,
            " ".join(queries[q].split()),
            gold_docs=sorted(f"{name}-{int(d):04d}.txt" for d in qrels[q] if d in keep),
        )
        for q in qids
    ]
    return col, [q for q in questions if q.gold_docs]


# ---------------------------------------------------------------------------------------------
# what a user is shown, and the metrics


def answers_of(result: Any) -> list:
    """The answers of ``Engine.ask``: a list today; an object with ``.answers`` tomorrow."""
    return list(result if isinstance(result, list) else getattr(result, "answers", result) or [])


def answered_of(result: Any, answers: list) -> bool | None:
    """The engine's no-answer decision for the question, where it gives one: ``answered`` on
    the result, else on its first answer; None when neither has it."""
    value = getattr(result, "answered", None)
    if value is None and answers:
        value = getattr(answers[0], "answered", None)
    return None if value is None else bool(value)


def shown_text(answer: Any) -> tuple[str, str | None]:
    """What the first answer shows as the answer: the value of its field when it marks a field
    answer (``best.field``, or ``field``/``answer_field`` on the answer, names a key of
    ``fields``, e.g. an e-mail's ``from``; its header line when ``fields`` lacks it), else its
    best sentence.
    Returns (text, field name or None)."""
    name = (
        getattr(answer, "field", None)
        or getattr(answer, "answer_field", None)
        or getattr(answer.best, "field", None)
    )
    if isinstance(name, str) and name:
        value = (getattr(answer, "fields", {}) or {}).get(name)
        return str(value or answer.best.sentence), name
    return answer.best.sentence, None


def sentence_match(shown: str, gold: Sequence[str], answers: Sequence[str]) -> bool:
    """The shown sentence is a gold one: it contains a gold sentence, or it is part of one and
    holds an answer (the engine's sentence boundaries differ from MultiReQA's)."""
    s = _norm(shown)
    if not s:
        return False
    for g in map(_norm, gold):
        if g in s or (s in g and any(_norm(a) in s for a in answers if a.strip())):
            return True
    return False


def answer_correct(q: Question, doc: str | None, shown: str) -> bool:
    from trainer.ood import _amounts

    if q.kind != "address" and doc not in q.gold_docs:
        return False
    if q.sentences:
        return sentence_match(shown, q.sentences, q.answers)
    text = _norm(shown)
    if any(_norm(v) in text for v in q.values if v.strip()):
        return True
    if q.amount:
        wanted = set().union(*(_amounts(v) for v in q.values))
        return bool(wanted & _amounts(shown))
    return False


def doc_key(answer: Any, folder: Path) -> str:
    path = str(getattr(answer, "path", "") or "")
    with contextlib.suppress(ValueError):
        return Path(path).resolve().relative_to(folder.resolve()).as_posix()
    return path


# ---------------------------------------------------------------------------------------------
# BM25 over whole documents


def document_text(path: Path, mail: bool = False) -> str:
    """A generated file's text for BM25: for e-mail (an .eml, or any file with ``mail``: a
    Maildir's files have no extension) the From/To/Cc/Bcc/Subject header lines (with display
    names and addresses; X-From/X-To/X-cc/X-bcc too, the Maildir display forms) and the body;
    any other file as it is."""
    if path.suffix != ".eml" and not mail:
        return path.read_text(encoding="utf-8")
    msg = parse_message(path.read_bytes())
    heads = ("From", "To", "Cc", "Bcc", "Subject", "X-From", "X-To", "X-cc", "X-bcc")
    lines = [f"{h}: {msg[h]}" for h in heads if msg[h]]
    return "\n".join(lines) + "\n\n" + body_text(msg)


class DocBM25:
    def __init__(self, col: Collection) -> None:
        from trainer.baselines import BM25Retriever

        self.keys = sorted(col.docs)
        mail = col.name in ("mail", "maildir")
        self.bm25 = BM25Retriever([document_text(col.docs[k], mail) for k in self.keys], k1=0.9, b=0.4)

    def ranked(self, question: str, k: int = TOP) -> list[str]:
        return [self.keys[i] for i in self.bm25.search(question, k)]


# ---------------------------------------------------------------------------------------------
# running


def _index(col: Collection, home: Path, threads: int, bundle: Path | None, rebuild: bool, log) -> dict:
    from engine.api.facade import Engine

    if rebuild and home.exists():
        shutil.rmtree(home)
    t0 = time.perf_counter()
    reused = (home / "catalog.sqlite").exists() or any(home.glob("*.sqlite"))
    eng = Engine(home, bundle_dir=bundle, threads=threads)
    if not any(s.path == str(col.folder.resolve()) for s in eng.sources()):
        eng.add_source(col.folder.resolve())
    last = [0.0]

    def progress(p) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            log(f"  {col.name}: {p.phase} files {p.files_done}/{p.files_total} sentences {p.sentences_done}")

    eng.index(None, progress=progress)
    st = eng.status()
    info = {
        "home": str(home),
        "index_s": round(time.perf_counter() - t0, 1),
        "reused_home": reused,
        "files": st["files"],
        "files_error": st["files_error"],
        "sentences": st["sentences"],
        "model": f"{st['model']['name']} {st['model']['version']}",
    }
    return {"engine": eng, **info}


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


def _ranked_by_both(eng, col: Collection, bm25: DocBM25, text: str) -> tuple[list[str], bool | None, list[str]]:
    """The documents search ranks for ``text``, its no-answer decision, and BM25's documents."""
    result = eng.ask(text, top=TOP)
    answers = answers_of(result)
    return [doc_key(a, col.folder) for a in answers], answered_of(result, answers), bm25.ranked(text)


def run_questions(
    eng, col: Collection, bm25: DocBM25, questions: Sequence[Question], keywords: bool = False
) -> list[dict]:
    """Each question asked as typed, and with ``keywords`` each answerable one also as
    keywords (``keyword_form``; its ``kw_*`` fields), both through search and BM25."""
    rows = []
    for q in questions:
        t0 = time.perf_counter()
        result = eng.ask(q.text, top=TOP)
        ms = (time.perf_counter() - t0) * 1000
        answers = answers_of(result)
        ranked = [doc_key(a, col.folder) for a in answers]
        top = answers[0] if answers else None
        shown, shown_field = shown_text(top) if top is not None else ("", None)
        b_ranked = bm25.ranked(q.text)
        row = {
            "set": q.set,
            "qid": q.qid,
            "kind": q.kind,
            "question": q.text,
            "answerable": q.answerable,
            "gold_docs": q.gold_docs,
            "n_gold_docs": len(q.gold_docs),
            "gold": q.values or q.sentences[:3],
            "ranked": ranked,
            "answered": answered_of(result, answers),
            "coverage": getattr(result, "coverage", None),
            "match": getattr(result, "match", None),
            "relaxed": list(getattr(result, "relaxed", ())),
            "top_score": None if top is None else float(top.best.score),
            "top_doc_score": None if top is None else getattr(top, "score", None),
            "scores": [float(a.best.score) for a in answers],
            "doc_scores": [getattr(a, "score", None) for a in answers],
            "top_text": shown[:400],
            "top_field": shown_field,
            "ms": round(ms, 2),
            "bm25_ranked": b_ranked,
        }
        if q.answerable:
            row["rr"] = reciprocal_rank(ranked, q.gold_docs, TOP)
            row["hit1"] = float(bool(ranked) and ranked[0] in q.gold_docs)
            if q.values or q.sentences:
                row["answer1"] = float(top is not None and answer_correct(q, ranked[0], shown))
            row["bm25_rr"] = reciprocal_rank(b_ranked, q.gold_docs, TOP)
            row["bm25_hit1"] = float(bool(b_ranked) and b_ranked[0] in q.gold_docs)
            if keywords:
                kw = keyword_form(q)
                k_ranked, k_answered, kb_ranked = _ranked_by_both(eng, col, bm25, kw)
                row.update(
                    kw=kw,
                    kw_ranked=k_ranked,
                    kw_answered=k_answered,
                    kw_rr=reciprocal_rank(k_ranked, q.gold_docs, TOP),
                    kw_hit1=float(bool(k_ranked) and k_ranked[0] in q.gold_docs),
                    kw_bm25_ranked=kb_ranked,
                    kw_bm25_rr=reciprocal_rank(kb_ranked, q.gold_docs, TOP),
                    kw_bm25_hit1=float(bool(kb_ranked) and kb_ranked[0] in q.gold_docs),
                )
        rows.append(row)
    return rows


def _mean(xs: Sequence[float]) -> float | None:
    return round(100 * sum(xs) / len(xs), 2) if xs else None


def summarise(rows: Sequence[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    out: dict[str, Any] = {
        "questions": len(ans),
        "unanswerable": len(una),
        "mrr10": _mean([r["rr"] for r in ans]),
        "hit1": _mean([r["hit1"] for r in ans]),
        "answer1": _mean([r["answer1"] for r in ans if "answer1" in r]),
        "answer1_n": sum(1 for r in ans if "answer1" in r),
        "bm25_mrr10": _mean([r["bm25_rr"] for r in ans]),
        "bm25_hit1": _mean([r["bm25_hit1"] for r in ans]),
        "answered_when_answerable": None,
        "not_answered_when_unanswerable": None,
        "ask_ms_p50": round(statistics.median([r["ms"] for r in rows]), 2) if rows else None,
    }
    if ans and all(r["answered"] is not None for r in ans):
        out["answered_when_answerable"] = _mean([float(r["answered"]) for r in ans])
    if una and all(r["answered"] is not None for r in una):
        out["not_answered_when_unanswerable"] = _mean([float(not r["answered"]) for r in una])
    scores_a = [r["top_score"] for r in ans if r["top_score"] is not None]
    scores_u = [r["top_score"] for r in una if r["top_score"] is not None]
    if scores_a and scores_u:
        out["top_score_median"] = {
            "answerable": round(statistics.median(scores_a), 3),
            "unanswerable": round(statistics.median(scores_u), 3),
        }
    typed = [r for r in ans if "kw_rr" in r]
    if typed:
        out["keywords"] = {
            "questions": len(typed),
            "mrr10": _mean([r["kw_rr"] for r in typed]),
            "hit1": _mean([r["kw_hit1"] for r in typed]),
            "bm25_mrr10": _mean([r["kw_bm25_rr"] for r in typed]),
            "bm25_hit1": _mean([r["kw_bm25_hit1"] for r in typed]),
            "answered": _mean([float(r["kw_answered"]) for r in typed])
            if all(r.get("kw_answered") is not None for r in typed)
            else None,
        }
    kinds = sorted({r["kind"] for r in ans})
    if len(kinds) > 1:
        out["by_kind"] = {k: summarise([r for r in ans if r["kind"] == k]) for k in kinds}
    return out


#: The no-answer thresholds tried (``engine.search.answers.ANSWER_MATCH`` x ``ANSWER_COVERAGE``).
MATCH_GRID = (0.0, 0.25, 0.28, 0.30, 0.33, 0.36)
COVERAGE_GRID = (0.0, 0.3, 0.4, 0.5)


#: The answerable share the suggested match threshold keeps answered (issue 12's line).
KEEP_ANSWERED = 90.0


def calibration(rows: Sequence[dict], bundle: Path | None = None) -> dict:
    """The no-answer trade-off on the sets with unanswerable questions: for each pair of
    thresholds, % of answerable questions answered and % of unanswerable ones not, per set
    and over both; the setting the run used (the bundle's ``answer_match``, else the engine's
    ``ANSWER_MATCH``) is marked. ``suggested``: the highest match threshold (steps of 0.01,
    coverage as the engine's) that keeps ``KEEP_ANSWERED`` % of the answerable questions of
    all these sets answered, and what it gives: the value to write into a new bundle's
    config.json as ``answer_match``."""
    from engine.search.answers import ANSWER_COVERAGE, QueryEncoder, answer_match

    sets = sorted({r["set"] for r in rows if not r["answerable"]})
    pooled = [r for r in rows if r["set"] in sets]

    def cell(m: float, c: float) -> dict[str, Any]:
        out: dict[str, Any] = {"match": m, "coverage": c}
        for s in [*sets, "all"]:
            sub = pooled if s == "all" else [r for r in rows if r["set"] == s]
            ok = [(r["match"] or 0) >= m and (r["coverage"] or 0) >= c for r in sub]
            ans = [o for o, r in zip(ok, sub, strict=True) if r["answerable"]]
            una = [o for o, r in zip(ok, sub, strict=True) if not r["answerable"]]
            out[s] = (
                round(100 * sum(ans) / max(1, len(ans)), 1),
                round(100 * (len(una) - sum(una)) / max(1, len(una)), 1),
            )
        return out

    grid = [cell(m, c) for m in MATCH_GRID for c in COVERAGE_GRID]
    shipped = {"match": answer_match(QueryEncoder(bundle)), "coverage": ANSWER_COVERAGE}
    suggested = None
    for step in range(101):
        c = cell(step / 100, ANSWER_COVERAGE)
        if c["all"][0] >= KEEP_ANSWERED:
            suggested = c
    return {"sets": sets, "shipped": shipped, "grid": grid, "suggested": suggested}


def _doc_ranking() -> dict[str, float]:
    import engine.search.answers

    return {
        "doc_weight": engine.search.answers.DOC_WEIGHT,
        "doc_sentences": engine.search.answers.DOC_SENTENCES,
        "doc_decay": engine.search.answers.DOC_DECAY,
        "heading_weight": engine.search.answers.HEADING_WEIGHT,
    }


def _busy_processes(min_cpu: float = 15.0) -> list[str]:
    from bench.search_latency import _busy_processes as busy

    return busy(min_cpu)


def run(args: argparse.Namespace, log=print) -> dict:
    sets = [s for s in args.sets.split(",") if s]
    import engine.search.answers

    # settings to compare (--doc-weight, --doc-decay, --heading-weight): the engine's own constants
    for option, constant in (
        ("doc_weight", "DOC_WEIGHT"),
        ("doc_decay", "DOC_DECAY"),
        ("heading_weight", "HEADING_WEIGHT"),
    ):
        if getattr(args, option, None) is not None:
            setattr(engine.search.answers, constant, getattr(args, option))
    for s in sets:
        if s not in SETS:
            raise SystemExit(f"unknown set {s!r}; choose from {','.join(SETS)}")
    size = dict(SIZES["quick" if args.quick else "full"])
    for k in ("enron", "squad_articles", "cisi_docs", "time_docs"):
        if getattr(args, k, None) is not None:
            size[k] = getattr(args, k)
    limit = args.limit if args.limit is not None else (size["questions"] or None)
    seed = SEED if getattr(args, "seed", None) is None else args.seed
    work = Path(args.work or ("runs/product-quick" if args.quick else "runs/product")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env_before = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    log(f"load average {env_before['loadavg']}; busy processes: {env_before['busy'] or 'none'}")
    t_start = time.perf_counter()

    built: dict[str, tuple[Collection, list[Question]]] = {}
    for name in dict.fromkeys(COLLECTION_OF[s] for s in sets):
        t0 = time.perf_counter()
        if name == "mail":
            built[name] = build_mail(work, size["enron"], seed)
        elif name == "maildir":
            built[name] = build_maildir(work, seed)
        elif name == "squad":
            built[name] = build_squad(work, size["squad_articles"], seed)
        else:
            n_docs = size[f"{name}_docs"]
            built[name] = build_classic(name, work, n_docs, size.get("classic_questions") or limit or 0, seed)
        log(f"{name}: {len(built[name][0].docs)} files written in {time.perf_counter() - t0:.1f} s")

    results: dict[str, Any] = {}
    collections: dict[str, Any] = {}
    all_rows: list[dict] = []
    for name, (col, questions) in built.items():
        log(f"{name}: indexing {col.folder} ...")
        info = _index(col, work / "homes" / name, args.threads, args.bundle, args.rebuild, log)
        eng = info.pop("engine")
        t0 = time.perf_counter()
        bm25 = DocBM25(col)
        info["bm25_build_s"] = round(time.perf_counter() - t0, 1)
        info["documents"] = len(col.docs)
        collections[name] = info
        log(f"{name}: {info['files']} files, {info['sentences']} sentences, indexed in {info['index_s']} s")
        try:
            for s in sets:
                if COLLECTION_OF[s] != name:
                    continue
                qs = [q for q in questions if q.set == s]
                if limit:  # a seeded sample of each, every kind of question in proportion
                    pick = random.Random(seed + 6)
                    ans, una = [q for q in qs if q.answerable], [q for q in qs if not q.answerable]
                    pick.shuffle(ans)
                    pick.shuffle(una)
                    qs = ans[:limit] + una[:limit]
                t0 = time.perf_counter()
                rows = run_questions(eng, col, bm25, qs, keywords=not getattr(args, "no_keywords", False))
                all_rows += rows
                results[s] = {
                    "collection": name,
                    "documents": len(col.docs),
                    "sentences": info["sentences"],
                    **summarise(rows),
                    "ask_s": round(time.perf_counter() - t0, 1),
                }
                log(f"{s}: {json.dumps({k: v for k, v in results[s].items() if k != 'by_kind'})}")
        finally:
            eng.close()

    env_after = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF

    out = {
        "command": "python -m bench.product " + " ".join(args.argv),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": _git_head(),
        "git_dirty": _git_dirty(),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "environment": {"before": env_before, "after": env_after},
        "search": {
            "idf": DEFAULT_IDF,
            "hybrid": DEFAULT_HYBRID,
            "fusion": DEFAULT_FUSION,
            "top": TOP,
            **_doc_ranking(),
        },
        "bm25": {
            "k1": 0.9,
            "b": 0.4,
            "method": "lucene",
            "stopwords": "en",
            "stemmer": "snowball english",
            "unit": "whole document (e-mail: From/To/Cc/Subject/X-From/X-To/X-cc lines + body)",
        },
        "sizes": size,
        "seed": seed,
        "limit": limit,
        "threads": args.threads,
        "work": str(work),
        "squad_pool": SQUAD_POOL,
        "collections": collections,
        "results": results,
        "calibration": calibration(all_rows, args.bundle),
        "total_s": round(time.perf_counter() - t_start, 1),
    }
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        tag = "-quick" if args.quick else ""
        path = RESULTS / f"product{tag}-{stamp}.json"
        # gzip: a run's rows are ~5 MB of JSON, ~10x less compressed (the repository travels
        # to a lent accelerator, which takes at most 64 MiB)
        questions = path.with_suffix(".questions.jsonl.gz")
        out["questions_file"] = questions.name
        path.write_text(json.dumps(out, indent=1))
        with gzip.open(questions, "wt", encoding="utf-8") as f:
            for r in all_rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        out["path"] = str(path)
        log(f"written {path} and {questions.name}")
    out["rows"] = all_rows
    return out


def _git_dirty() -> list[str]:
    """Uncommitted changes to what is measured (engine/, the bundle) when the run started."""
    with contextlib.suppress(Exception):
        import subprocess

        out = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "engine", "assets"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        return [line[3:] for line in out.splitlines() if line.strip()]
    return []


def _git_head() -> str:
    with contextlib.suppress(Exception):
        import subprocess

        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    return ""


# ---------------------------------------------------------------------------------------------
# the table


def _f(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def table(out: dict) -> str:
    head = (
        "| set | questions (+ unanswerable) | docs | sentences indexed | search MRR@10 | search hit@1 "
        "| search answer@1 | BM25 MRR@10 | BM25 hit@1 | hit@1 Δ | answered (answerable) "
        "| not answered (unanswerable) |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s, r in out["results"].items():
        delta = None if r["hit1"] is None or r["bm25_hit1"] is None else r["hit1"] - r["bm25_hit1"]
        a1 = _f(r["answer1"]) if r["answer1_n"] else "–"
        lines.append(
            f"| {s} | {r['questions']}"
            + (f" (+{r['unanswerable']})" if r["unanswerable"] else "")
            + f" | {r['documents']:,} | {r['sentences']:,} | {_f(r['mrr10'])} | {_f(r['hit1'])} | {a1} "
            f"| {_f(r['bm25_mrr10'])} | {_f(r['bm25_hit1'])} | {'n/a' if delta is None else f'{delta:+.1f}'} "
            f"| {_f(r['answered_when_answerable'])} | {_f(r['not_answered_when_unanswerable'])} |"
        )
    return "\n".join(lines)


def kind_table(out: dict) -> str:
    lines = [
        "| set | kind | questions | search MRR@10 | search hit@1 | search answer@1 | BM25 MRR@10 | BM25 hit@1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s, r in out["results"].items():
        for k, kr in (r.get("by_kind") or {}).items():
            lines.append(
                f"| {s} | {k} | {kr['questions']} | {_f(kr['mrr10'])} | {_f(kr['hit1'])} "
                f"| {_f(kr['answer1'])} | {_f(kr['bm25_mrr10'])} | {_f(kr['bm25_hit1'])} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def keyword_table(out: dict) -> str:
    """Search against BM25 with each answerable question typed as keywords (``keyword_form``),
    per set and, where a set has several, per kind."""
    lines = [
        "| set | kind | questions | typed as, e.g. | search MRR@10 | search hit@1 | BM25 MRR@10 | BM25 hit@1 | hit@1 Δ "
        "| answered |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    examples = {}
    for r in out.get("rows") or []:
        if "kw" in r:
            examples.setdefault((r["set"], r["kind"]), r["kw"])
            examples.setdefault((r["set"], "all"), r["kw"])
    for s, r in out["results"].items():
        kinds = r.get("by_kind") or {}
        for k, kr in [("all", r), *kinds.items()]:
            kw = kr.get("keywords")
            if not kw:
                continue
            eg = examples.get((s, k), "")
            eg = eg if len(eg) <= 40 else eg[:39] + "…"
            lines.append(
                f"| {s} | {k} | {kw['questions']} | {eg.replace('|', '/')} | {_f(kw['mrr10'])} | {_f(kw['hit1'])} "
                f"| {_f(kw['bm25_mrr10'])} | {_f(kw['bm25_hit1'])} | {kw['hit1'] - kw['bm25_hit1']:+.1f} "
                f"| {_f(kw.get('answered'))} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {','.join(SETS)}")
    ap.add_argument("--limit", type=int, help="at most N answerable (and N unanswerable) questions per set")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small corpora and 40 questions per set (work dir runs/product-quick)",
    )
    ap.add_argument("--work", help="generated files and sparcdesk homes (default runs/product)")
    ap.add_argument("--rebuild", action="store_true", help="re-index from scratch (default: reuse the homes)")
    ap.add_argument("--bundle", type=Path, help="model bundle (default: the shipped one)")
    ap.add_argument("--threads", type=int, default=2, help="encoder threads while indexing")
    ap.add_argument("--doc", type=Path, help="write the markdown report here (docs/product.md)")
    ap.add_argument(
        "--doc-weight",
        type=float,
        help="weight of the whole-document BM25 in the document ranking (engine.search.answers.DOC_WEIGHT; "
        "default: the shipped one), to compare settings",
    )
    ap.add_argument(
        "--doc-decay",
        type=float,
        help="weight of a document's next best sentences (engine.search.answers.DOC_DECAY; 0 = its best "
        "sentence alone), to compare settings",
    )
    ap.add_argument(
        "--heading-weight",
        type=float,
        help="share of its score a heading or word-less line competes with for a document's answer "
        "(engine.search.answers.HEADING_WEIGHT; 0 = only when nothing else matches), to compare settings",
    )
    ap.add_argument("--enron", type=int, help="Enron distractor messages (full 1000, quick 200)")
    ap.add_argument("--squad-articles", dest="squad_articles", type=int, help="SQuAD articles (of 48)")
    ap.add_argument("--cisi-docs", dest="cisi_docs", type=int, help="CISI documents (0 = all)")
    ap.add_argument("--time-docs", dest="time_docs", type=int, help="TIME documents (0 = all)")
    ap.add_argument(
        "--seed",
        type=int,
        help=f"seed of every sample: messages, articles, documents, questions (default {SEED})",
    )
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results")
    ap.add_argument(
        "--no-keywords",
        action="store_true",
        help="do not also ask each answerable question typed as keywords (bench.product.keyword_form)",
    )
    ap.add_argument(
        "--render",
        type=Path,
        help="write --doc from a saved run (bench/results/product-<stamp>.json and its questions) instead of running",
    )
    args = ap.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    if args.render is not None:
        out = json.loads(args.render.read_text(encoding="utf-8"))
        from bench import read_rows

        out["rows"] = [json.loads(x) for x in read_rows(args.render.parent / out["questions_file"]) if x.strip()]
    else:
        if not (DATA / "README.md").is_file():
            raise SystemExit(f"shared data not found at {DATA} (see ../shared/data/README.md)")
        out = run(args)
    print()
    print(table(out))
    kt = kind_table(out)
    if kt:
        print()
        print(kt)
    kw = keyword_table(out)
    if kw:
        print()
        print(kw)
    cal = out["calibration"]
    if cal.get("suggested"):
        sug = cal["suggested"]
        print(
            f"\nno-answer decision: match >= {cal['shipped']['match']:.2f} used; for this bundle, "
            f"answer_match {sug['match']:.2f} keeps {sug['all'][0]:.1f}% of the answerable questions "
            f"answered and {sug['all'][1]:.1f}% of the unanswerable ones not (coverage >= {sug['coverage']}); "
            "give it to the bundle with `sparcdesk-train export --answer-match`"
        )
    print(
        f"\ntotal {out['total_s']} s; load before {out['environment']['before']['loadavg']}, "
        f"after {out['environment']['after']['loadavg']}"
    )
    if args.doc:
        from bench.product_doc import write_doc

        write_doc(args.doc, out, table(out), kt, kw)
        print(f"written {args.doc}")
    return out


if __name__ == "__main__":
    main()
