"""The held-out questions (issue 37): phrasings and languages no rule was tuned on.

The product benchmark's questions (``bench.product``) come from five templates ("What is the
email address of X?", "Who sent the e-mail about S?", ...), and the engine's wording rules were
tuned on them, so its figures are tuning figures. This set is generated differently, from the
same mailboxes (the product benchmark's Enron ``mail`` collection and the Maildir sample,
their files and homes reused), by its own seed, in the ways people type:

* finding a message: "mail from X about T", "X's email about T", "what did First say about
  T?", keywords "Last T", and German, French and Spanish ("Mail von X über T", "le mail de X
  sur T", "el correo de X sobre T"). T is a topic: half the time three or four words of the
  subject, half the time three rare words of the body's opening (what one remembers of a
  message); the answer is that message (or its copies: same sender, same subject).
* an address: "What's X's email?", "X's address", "email for X", "E-Mail-Adresse von X",
  "adresse e-mail de X", "correo electrónico de X"; right when the first answer shows one of
  X's addresses.

Each family is asked through the engine (``Engine.ask``, the default search) and, for the
message families, through BM25 over whole messages with the same text (the baseline of
``bench.product``). Only aggregates are printed and saved: the questions are not to be read
one by one (the brief: tune apart from judging), so no question-level file is written.

    python -m bench.heldout [--work runs/product-040] [--per-family 60]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness, product
from engine.common.lang import words
from engine.search.settings import DEFAULT, RULES, SearchSettings, with_rules_off
from trainer.metrics import reciprocal_rank

ROOT = Path(__file__).resolve().parents[1]
SEED = 3707  # not the product benchmark's 13: other messages, other people
TOP = 10

#: Finding a message. ``{name}`` "Julie Kearney", ``{first}`` "Julie", ``{last}`` "Kearney".
MESSAGE_PHRASINGS = {
    "from-about": "mail from {name} about {topic}",
    "possessive": "{name}'s email about {topic}",
    "said-about": "what did {first} say about {topic}?",
    "keywords": "{last} {topic}",
    "de": "Mail von {name} über {topic}",
    "fr": "le mail de {name} sur {topic}",
    "es": "el correo de {name} sobre {topic}",
}
#: Asking who sent or received a message (phrasings the tune set's "Who sent the e-mail about
#: S?" is not), and a person's name typed alone (their own messages first): the rules
#: ``field_answers``, ``name_order`` and ``address_order`` judged off the tune set.
FIELD_PHRASINGS = {
    "who-wrote": ("Who wrote the mail about {topic}?", "from"),
    "recipient": ("Who got the email about {topic}?", "to"),
    "de-who-wrote": ("Wer hat die Mail über {topic} geschrieben?", "from"),
}
NAME_ALONE = "name-alone"
#: Asking for an address.
ADDRESS_PHRASINGS = {
    "whats-email": "What's {name}'s email?",
    "possessive-address": "{name}'s address",
    "email-for": "email for {name}",
    "de-address": "E-Mail-Adresse von {name}",
    "fr-address": "adresse e-mail de {name}",
    "es-address": "correo electrónico de {name}",
}

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
#: The languages the phrasings ask in: a topic is asked in each of them.
LANGUAGES = ("en", "de", "fr", "es")
#: Words the engine never reads as what a question is about, in any language a topic is asked
#: in (``engine.common.lang``, the lists highlighting, coverage and the document query read):
#: stopwords, request words ("please", "know") and words naming a message ("note", "memo").
_STOP = words("STOPWORDS", LANGUAGES) | words("REQUEST_WORDS", LANGUAGES) | words("MESSAGE_WORDS", LANGUAGES)


@dataclass
class HeldOut:
    family: str
    text: str
    gold_docs: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    #: a field question: right when the first answer is a gold message showing one of ``addresses``
    asks_field: bool = False


@dataclass
class Message:
    key: str
    sender: str  # address
    name: str  # "Julie Kearney" from the address
    subject: str
    body: str
    to: tuple[str, ...] = ()  # recipient addresses (To)


def read_messages(col: product.Collection) -> list[Message]:
    """The collection's Enron messages with a person's address as sender (BIPIA's are left out:
    their senders are shops)."""
    out = []
    for key, path in sorted(col.docs.items()):
        if key.startswith("bipia/"):
            continue
        msg = product.parse_message(path.read_bytes())
        pairs = product.mailboxes(str(msg["from"] or ""))
        addr = next((a for _, a in pairs if a), "")
        name = product.person_name(addr) if addr else None
        if not name:
            continue
        subject = product._SUBJECT_PREFIX.sub("", " ".join(str(msg["subject"] or "").split()))
        to = tuple(a.lower() for _, a in product.mailboxes(str(msg["to"] or "")) if a)
        out.append(Message(key, addr.lower(), name, subject, product.body_text(msg), to))
    return out


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in _STOP]


def topics(messages: Sequence[Message], rng: random.Random) -> dict[str, tuple[str, str]]:
    """A topic per message: (words, source) with source "subject" or "body"."""
    df = Counter(w.lower() for m in messages for w in set(_content(m.body)))
    out = {}
    for m in messages:
        subject = _content(m.subject)
        body = [w for w in dict.fromkeys(_content(" ".join(m.body.split()[:80]))) if df[w.lower()] <= 3]
        use_subject = len(subject) >= 2 and (len(body) < 3 or rng.random() < 0.5)
        if use_subject:
            out[m.key] = (" ".join(subject[:4]), "subject")
        elif len(body) >= 3:
            out[m.key] = (" ".join(body[:3]), "body")
    return out


#: A question whose person and topic fit more messages than this has no one answer (an
#: automated sender's "Start Date: 2/3/02; HourAhead hour: 11;" among dozens told apart by a
#: number): not asked.
MAX_ANSWERS = 3


def _holding(messages: Sequence[Message], m: Message, topic: str) -> list[str]:
    """The messages of ``m``'s sender that hold every word of ``topic`` (subject or body)."""
    want = {w.lower() for w in _WORD.findall(topic)}
    return [
        o.key
        for o in messages
        if o.sender == m.sender and want <= {w.lower() for w in _WORD.findall(o.subject + " " + o.body)}
    ]


def message_questions(messages: Sequence[Message], per_family: int, seed: int = SEED) -> list[HeldOut]:
    rng = random.Random(seed)
    topic = topics(messages, rng)
    copies: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in messages:
        copies[(m.sender, m.subject.lower())].append(m.key)
    usable = [m for m in messages if m.key in topic and len(_holding(messages, m, topic[m.key][0])) <= MAX_ANSWERS]
    out = []
    for family, template in MESSAGE_PHRASINGS.items():
        for m in rng.sample(usable, min(per_family, len(usable))):
            first, last = m.name.split()[0], m.name.split()[-1]
            text = template.format(name=m.name, first=first, last=last, topic=topic[m.key][0])
            gold = copies[(m.sender, m.subject.lower())] if topic[m.key][1] == "subject" else [m.key]
            out.append(HeldOut(family, text, sorted(set(gold) | {m.key})))
    return out


def field_questions(messages: Sequence[Message], per_family: int, seed: int = SEED) -> list[HeldOut]:
    """Who wrote or got a message named by its topic; and a sender's name typed alone, whose
    answer is any message they sent or received."""
    rng = random.Random(seed + 2)
    topic = topics(messages, rng)
    usable = [m for m in messages if m.key in topic and len(_holding(messages, m, topic[m.key][0])) <= MAX_ANSWERS]
    out = []
    for family, (template, who) in FIELD_PHRASINGS.items():
        pool = [m for m in usable if who == "from" or m.to]
        for m in rng.sample(pool, min(per_family, len(pool))):
            gold = _holding(messages, m, topic[m.key][0]) if topic[m.key][1] == "subject" else [m.key]
            addresses = [m.sender] if who == "from" else list(m.to)
            out.append(HeldOut(family, template.format(topic=topic[m.key][0]), sorted(set(gold)), addresses, True))
    people = sorted({(m.name, m.sender) for m in messages})
    for name, sender in rng.sample(people, min(per_family, len(people))):
        gold = [m.key for m in messages if m.sender == sender or sender in m.to]
        out.append(HeldOut(NAME_ALONE, name, sorted(gold)))
    return out


def address_questions(col: product.Collection, per_family: int, seed: int = SEED) -> list[HeldOut]:
    people: dict[str, set[str]] = defaultdict(set)
    for key, path in sorted(col.docs.items()):
        if key.startswith("bipia/"):
            continue
        msg = product.parse_message(path.read_bytes())
        for h in ("from", "to", "cc"):
            for _, a in product.mailboxes(str(msg[h] or "")):
                name = product.person_name(a) if a else None
                if name:
                    people[name].add(a.lower())
    rng = random.Random(seed + 1)
    names = sorted(people)
    out = []
    for family, template in ADDRESS_PHRASINGS.items():
        for name in rng.sample(names, min(per_family, len(names))):
            out.append(HeldOut(family, template.format(name=name), addresses=sorted(people[name])))
    return out


def ask_all(
    eng: Any, col: product.Collection, bm25: product.DocBM25 | None, qs: Sequence[HeldOut], settings: SearchSettings = DEFAULT
) -> dict:
    """Aggregates per family: hit@1 and MRR@10 of the search and of BM25 (message families),
    or the share whose first answer shows the person's address (address families)."""
    rows: dict[str, list[dict]] = defaultdict(list)
    for q in qs:
        answers = product.answers_of(eng.ask(q.text, top=TOP, settings=settings))
        if q.asks_field:
            ranked = [product.doc_key(a, col.folder) for a in answers]
            shown = product.shown_text(answers[0])[0].lower() if answers else ""
            first = bool(ranked) and ranked[0] in q.gold_docs
            rows[q.family].append({"message": float(first), "right": float(first and any(a in shown for a in q.addresses))})
            continue
        if q.addresses:
            shown = product.shown_text(answers[0])[0].lower() if answers else ""
            rows[q.family].append({"shown": float(any(a in shown for a in q.addresses))})
            continue
        ranked = [product.doc_key(a, col.folder) for a in answers]
        b_ranked = bm25.ranked(q.text) if bm25 is not None else []
        rows[q.family].append(
            {
                "hit1": float(bool(ranked) and ranked[0] in q.gold_docs),
                "rr": reciprocal_rank(ranked, q.gold_docs, TOP),
                "bm25_hit1": float(bool(b_ranked) and b_ranked[0] in q.gold_docs),
                "bm25_rr": reciprocal_rank(b_ranked, q.gold_docs, TOP),
            }
        )
    out = {}
    for family, rs in rows.items():
        out[family] = {"questions": len(rs)} | {
            k: round(100 * sum(r[k] for r in rs) / len(rs), 1) for k in rs[0]
        }
        if "hit1" in rs[0]:
            out[family]["delta_hit1"] = round(out[family]["hit1"] - out[family]["bm25_hit1"], 1)
    return out


def table(results: dict) -> str:
    lines = [
        "| set | family | questions | search hit@1 | search MRR@10 | BM25 hit@1 | BM25 MRR@10 | hit@1 Δ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    addr = ["| set | family | questions | address shown first |", "|---|---|---|---|"]
    fields = ["| set | family | questions | right message first | and its line shows the person |", "|---|---|---|---|---|"]
    for set_name, fams in results.items():
        for fam, r in fams.items():
            if "right" in r:
                fields.append(f"| {set_name} | {fam} | {r['questions']} | {r['message']} | {r['right']} |")
            elif "hit1" in r:
                lines.append(
                    f"| {set_name} | {fam} | {r['questions']} | {r['hit1']} | {r['rr']} | {r['bm25_hit1']} "
                    f"| {r['bm25_rr']} | {r['delta_hit1']:+.1f} |"
                )
            else:
                addr.append(f"| {set_name} | {fam} | {r['questions']} | {r['shown']} |")
    return "\n".join(lines) + "\n\n" + "\n".join(addr) + "\n\n" + "\n".join(fields)


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "product-040", help="the product benchmark's work dir (its files and homes are reused)")
    ap.add_argument("--per-family", type=int, default=60)
    ap.add_argument("--enron", type=int, default=1000, help="Enron messages of the product mail collection")
    ap.add_argument("--bundle", type=Path, default=None)
    ap.add_argument("--off", default="", help=f"comma-separated wording rules to turn off (of {','.join(RULES)})")
    ap.add_argument(
        "--seed", type=int, default=SEED,
        help=f"another sample of the same generator (default {SEED}, the published one; another seed is a development sample)",
    )
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    from engine.api.facade import Engine

    try:
        settings = with_rules_off(args.off)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    off = [r for r in RULES if not getattr(settings, r)]

    recorder = harness.Run("heldout", argv)
    t0 = time.perf_counter()
    results: dict[str, dict] = {}
    cols = {
        "enron": product.build_mail(args.work, args.enron)[0],
        "maildir": product.build_maildir(args.work)[0],
    }
    for set_name, col in cols.items():
        home = args.work / "homes" / col.name
        with Engine(home, bundle_dir=args.bundle, threads=1) as eng:
            product.source_indexed(eng, col.folder)
            messages = read_messages(col)
            qs = message_questions(messages, args.per_family, args.seed) + address_questions(col, args.per_family, args.seed)
            qs += field_questions(messages, args.per_family, args.seed)
            results[set_name] = ask_all(eng, col, product.DocBM25(col), qs, settings)
        print(f"{set_name}: {len(qs)} questions", file=sys.stderr)
    payload = {
        "seed": args.seed,
        "per_family": args.per_family,
        "rules_off": off,
        "results": results,
        "total_s": round(time.perf_counter() - t0, 1),
    }
    # command, when, git, git_dirty, machine, environment: the harness's header
    out = harness.with_header(payload, recorder)
    print(table(results))
    if not args.no_save:
        path = harness.write_json(harness.result_path("heldout"), out)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
