"""The product benchmark's collections (bench.product): real files written from the public
sets in ../shared/data into ``--work``, one folder per collection (a sparcdesk home each),
rewritten only where their bytes change, so a rerun's index is incremental. Each builder
returns the collection and the questions asked of it (``bench.product.questions``)."""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import math
import os
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path
from typing import Any

from bench.product.questions import (
    SEED,
    Question,
    bipia_questions,
    classic_key,
    classic_questions,
    enron_questions,
    mailboxes,
    squad_questions,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("SPARCDESK_DATA", ROOT.parent / "shared" / "data"))
SETS = ("email", "enron", "maildir", "squad", "cisi", "time")
COLLECTION_OF = {
    "email": "mail",
    "enron": "mail",
    "maildir": "maildir",
    "squad": "squad",
    "cisi": "cisi",
    "time": "time",
}

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


# ---------------------------------------------------------------------------------------------
# e-mail: BIPIA + Enron as .eml


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
    from trainer.ood import parse_bipia

    col = Collection("mail", work / "files" / "mail")
    rows = [r for name in ("train.jsonl", "test.jsonl") for r in _read_jsonl(DATA / BIPIA_DIR / name)]
    key_of: dict[str, str] = {}
    for r in rows:
        if r["context"] not in key_of:
            key = f"bipia/bipia-{len(key_of):03d}.eml"
            key_of[r["context"]] = key
            col.docs[key] = col.folder / key
            _write(col.docs[key], bipia_eml(parse_bipia(r["context"]), len(key_of) - 1))
    questions = bipia_questions(rows, key_of)

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
    answers = {qa["id"]: [a["text"] for a in qa["answers"]] for p in paragraphs for qa in p["qas"]}
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
    questions = squad_questions(
        pool, lambda i: labels[para_of_qid[i]], answers, key_of_article, held_out, seed
    )
    return col, questions


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
        key = classic_key(name, d)
        col.docs[key] = col.folder / key
        _write(col.docs[key], (docs[d].strip() + "\n").encode())
    _prune(col.folder, col.docs.values())
    return col, classic_questions(name, qids, queries, qrels, keep)
