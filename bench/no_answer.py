"""The no-answer decision on what users keep (issue 37, item 4): per family of files, how many
answerable questions it keeps answered and how many unanswerable ones it refuses.

The decision ("Nothing in your files answers this question") was calibrated on BIPIA's e-mails
and SQuAD's articles only (docs/product.md). Here it meets other families, each with questions
it can answer and questions about things the files do not hold:

* ``notes``: short notes, one paragraph each (SQuAD *train* paragraphs, other articles than the
  product benchmark's dev set), some saved without an extension like a TODO file; answerable: a
  question of the note's paragraph; unanswerable: a question of an article not saved.
* ``portuguese``: the same from FaQuAD (Portuguese), the non-English family.
* ``sheets``: two workbooks beside the notes, a contact list (name, e-mail, company) and a
  mail log (date, sender, subject) of Enron messages; answerable: a listed person's address,
  who sent a logged subject; unanswerable: the same for people and subjects not in them.
* ``mail-headers``: the product benchmark's 1,000 Enron messages (its home reused): answerable:
  its address, sender and date questions; unanswerable: the address of a person no indexed
  header names, and the sender of a message whose subject no indexed message has (both from
  Enron messages left out of the collection).
* ``bipia`` and ``squad``: the product benchmark's own calibration sets (a seeded sample of
  each kind), so that one run weighs every family and the pooled refusals count them too.

Probes alternate between a *tune* half (even) and a *held-out* half (odd): the thresholds are
chosen on the tune half, the held-out half is reported (docs/product.md). Each probe's row keeps
what the decision rests on (coverage, match, the first document's lead over the next, the
rarest word), so a rule can be weighed from the rows before it is built.

    python -m bench.no_answer [--work runs/product-040] [--per-family 150] [--off RULES]
                              [--set standout_lead=none] [--set foreign_low_coverage=none]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness, product
from engine.search.settings import RULES, SearchSettings, with_rules_off

ROOT = Path(__file__).resolve().parents[1]
SEED = 5151
SQUAD_TRAIN = "squad/train-v1.1.reconstructed.json.gz"
FAQUAD = "portuguese/faquad/dataset.json"


@dataclass
class Probe:
    family: str
    text: str
    answerable: bool


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "note"


def note_family(
    family: str, articles: list[dict], folder: Path, per_family: int, rng: random.Random
) -> list[Probe]:
    """Half the articles' paragraphs saved as notes (every fifth without an extension); a
    question per saved note, and as many questions of the other half's articles."""
    rng.shuffle(articles)
    saved, other = articles[: len(articles) // 2], articles[len(articles) // 2 :]
    paragraphs = [(a["title"], p) for a in saved for p in a["paragraphs"] if p.get("qas")]
    rng.shuffle(paragraphs)
    probes: list[Probe] = []
    for i, (title, p) in enumerate(paragraphs[:per_family]):
        name = f"{_slug(title)}-{i:03d}" + ("" if i % 5 == 0 else ".txt")
        path = folder / family / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != p["context"]:
            path.write_text(p["context"], encoding="utf-8")
        probes.append(Probe(family, rng.choice(p["qas"])["question"], True))
    questions = [q["question"] for a in other for p in a["paragraphs"] for q in p.get("qas", [])]
    rng.shuffle(questions)
    probes += [Probe(family, q, False) for q in questions[:per_family]]
    return probes


def _letters(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 1}


def _alike(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= 0.5


def sheet_family(enron_rows: list[dict], folder: Path, per_family: int, rng: random.Random) -> list[Probe]:
    """Two workbooks a person keeps: a contact list (name, e-mail, company) and a log of
    messages (date, sender, subject), from Enron messages. Answerable: the address of a person
    on the list, who sent a logged subject; unanswerable: the same of people and subjects the
    sheets do not hold."""
    import openpyxl

    people: dict[str, str] = {}
    for r in enron_rows:
        for _, a in product.mailboxes(r.get("from", "") + "," + r.get("to", "")):
            name = product.person_name(a) if a else None
            if name and name not in people:
                people[name] = a.lower()
    names = sorted(people)
    rng.shuffle(names)
    cut = min(200, len(names) // 2)  # half the people on the list, half strangers to it
    listed, strangers = names[:cut], names[cut:]
    logged = [r for r in enron_rows if len(" ".join((r.get("subject") or "").split()).split()) >= 3]
    rng.shuffle(logged)
    kept = logged[:200]
    # a subject not in the log is one no logged subject resembles (automated mail repeats its
    # subjects but for a date): otherwise the "unanswerable" question is answered by the log
    held = [_letters(r["subject"]) for r in kept]
    others = [r for r in logged[200:] if not any(_alike(_letters(r["subject"]), h) for h in held)]
    sheets = folder / "sheets"
    sheets.mkdir(parents=True, exist_ok=True)
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = "Contacts"
    ws.append(["Name", "E-mail", "Company"])
    for n in listed:
        ws.append([n, people[n], people[n].split("@")[-1].split(".")[0].title()])
    book.save(sheets / "contacts.xlsx")
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = "Mail log"
    ws.append(["Date", "From", "Subject"])
    for r in kept:
        ws.append([r.get("date", ""), r.get("from", ""), " ".join(r["subject"].split())])
    book.save(sheets / "mail-log.xlsx")
    half = per_family // 2
    probes = [Probe("sheets", f"What is the email address of {n}?", True) for n in listed[:half]]
    probes += [Probe("sheets", f"Who sent {' '.join(r['subject'].split())}?", True) for r in kept[: per_family - half]]
    probes += [Probe("sheets", f"What is the email address of {n}?", False) for n in strangers[:half]]
    probes += [Probe("sheets", f"Who sent {' '.join(r['subject'].split())}?", False) for r in others[: per_family - half]]
    return probes


def header_family(col: product.Collection, enron_rows: list[dict], per_family: int, rng: random.Random) -> list[Probe]:
    """The mail collection's address, sender and date questions (answerable), and questions
    about people and subjects of Enron messages the collection leaves out (unanswerable)."""
    headers: dict[str, dict] = {}
    for key, path in col.docs.items():
        if key.startswith("enron/"):
            msg = product.parse_message(path.read_bytes())
            headers[key] = {h: str(msg[h] or "") for h in ("from", "to", "cc", "subject")} | {
                "body": product.body_text(msg),
                "date_utc": product.date_utc(msg),
            }
    asked = [q for q in product.enron_questions(headers) if q.kind in ("address", "sender", "date")]
    rng.shuffle(asked)
    probes = [Probe("mail-headers", q.text, True) for q in asked[:per_family]]
    known = {
        product.person_name(a)
        for r in headers.values()
        for h in ("from", "to", "cc")
        for _, a in product.mailboxes(r[h])
        if a and product.person_name(a)
    }
    subjects = {product._SUBJECT_PREFIX.sub("", r["subject"]).strip().lower() for r in headers.values()}
    strangers: list[str] = []
    other_subjects: list[str] = []
    for r in enron_rows:
        for _, a in product.mailboxes(r.get("from", "") + "," + r.get("to", "")):
            name = product.person_name(a) if a else None
            if name and name not in known:
                strangers.append(name)
        s = product._SUBJECT_PREFIX.sub("", " ".join((r.get("subject") or "").split())).strip()
        if len(s.split()) >= 3 and s.lower() not in subjects:
            other_subjects.append(s)
    strangers, other_subjects = sorted(set(strangers)), sorted(set(other_subjects))
    rng.shuffle(strangers)
    rng.shuffle(other_subjects)
    half = per_family // 2
    probes += [Probe("mail-headers", f"What is the email address of {n}?", False) for n in strangers[:half]]
    probes += [Probe("mail-headers", f"Who sent the e-mail about {s}?", False) for s in other_subjects[: per_family - half]]
    return probes


def calibration_family(family: str, questions: Sequence[product.Question], per_family: int, rng: random.Random) -> list[Probe]:
    """The product benchmark's own calibration set (``email``: BIPIA's questions, those no
    e-mail answers unanswerable; ``squad``: questions of held-out articles unanswerable), a
    seeded sample of ``per_family`` of each kind, so that every family is weighed in one run."""
    ans = [q.text for q in questions if q.answerable]
    una = [q.text for q in questions if not q.answerable]
    rng.shuffle(ans)
    rng.shuffle(una)
    return [Probe(family, t, True) for t in ans[:per_family]] + [Probe(family, t, False) for t in una[:per_family]]


def decisions(eng: Any, probes: Sequence[Probe], settings: SearchSettings) -> tuple[dict[str, dict], list[dict]]:
    """Per family: answered % of the answerable, refused % of the unanswerable; and each
    probe's decision with what it rests on (coverage, match, rare), for :func:`sweep`."""
    from engine.search.intent import parse

    rows = []
    for i, p in enumerate(probes):
        result = eng.ask(p.text, settings=settings)
        intent = parse(p.text)
        words = " ".join(intent.content)
        reader = eng._get_reader()
        rare = reader.rarest_held(words, result[0].doc_key) if result and words else 1.0
        # what the next document holds and scores: a question whose first document stands
        # out from the rest is about that document (a query-performance signal, measured)
        cov2 = reader.coverage(words, result[1].doc_key)[0] if len(result) > 1 and words else 0.0
        rows.append(
            {
                "family": p.family,
                "answerable": p.answerable,
                "answered": bool(result.answered),
                "coverage": round(float(result.coverage), 4),
                "match": round(float(result.match), 4),
                "rare": round(float(rare), 6),
                "coverage2": round(float(cov2), 4),
                "score1": round(float(result[0].score), 4) if result else 0.0,
                "score2": round(float(result[1].score), 4) if len(result) > 1 else 0.0,
                "lead": round(min(float(result.lead), 99.0), 4),
                "words": len(intent.content),
                "intent": "address" if intent.address_of else intent.field or intent.language,
                "half": "tune" if i % 2 == 0 else "held-out",
            }
        )
    return summary(rows), rows


def summary(rows: Sequence[dict], answered: Any = None) -> dict[str, dict]:
    """Per family: answered % of the answerable, refused % of the unanswerable (``answered``:
    a rule applied to each row instead of the row's own decision)."""
    said = answered or (lambda r: r["answered"])
    out: dict[str, dict] = {}
    for family in dict.fromkeys(r["family"] for r in rows):
        ans = [said(r) for r in rows if r["family"] == family and r["answerable"]]
        una = [said(r) for r in rows if r["family"] == family and not r["answerable"]]
        out[family] = {
            "answerable": len(ans),
            "unanswerable": len(una),
            "answered_when_answerable": round(100 * sum(ans) / max(len(ans), 1), 1),
            "refused_when_unanswerable": round(100 * (len(una) - sum(una)) / max(len(una), 1), 1),
        }
    return out


#: The rare-word shares a sweep tries (``SearchSettings.rare_share``).
RARE_GRID = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05)


def sweep(rows: Sequence[dict], coverage: float = 0.4, grid: Sequence[float] = RARE_GRID) -> dict[str, dict]:
    """What ``rare_share`` would decide, from a run without it: a row is answered as it was,
    or when its first document holds ``coverage`` of its words and its rarest word at most
    ``share`` of the documents hold. Per share and half (tune: even probes, held-out: odd)."""
    out: dict[str, dict] = {}
    for share in grid:
        rule = lambda r, s=share: r["answered"] or (r["coverage"] >= coverage and r["rare"] <= s)  # noqa: E731
        out[str(share)] = {half: summary([r for r in rows if r["half"] == half], rule) for half in ("tune", "held-out")}
    return out


#: The decision's fields ``--set`` may change.
DECISION_FIELDS = (
    "answer_match",
    "answer_coverage",
    "foreign_coverage",
    "foreign_low_coverage",
    "foreign_match",
    "standout_lead",
    "standout_coverage",
    "standout_match",
    "rare_share",
)


def _assignments(items: Sequence[str]) -> dict[str, float | None]:
    """``["standout_lead=none", "foreign_match=0.5"]`` as settings changes; ValueError naming a
    field the decision does not have or a value that is no number."""
    out: dict[str, float | None] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in DECISION_FIELDS:
            raise ValueError(f"--set {item!r}: choose a field of {','.join(DECISION_FIELDS)}")
        try:
            out[name] = None if value.strip().lower() == "none" else float(value)
        except ValueError:
            raise ValueError(f"--set {item!r}: {value!r} is no number (or 'none')") from None
    return out


def pooled(found: dict[str, dict], families: Sequence[str] | None = None) -> float:
    """% of the unanswerable questions refused over ``families`` (all by default) together."""
    rows = [r for f, r in found.items() if families is None or f in families]
    total = sum(r["unanswerable"] for r in rows)
    refused = sum(r["unanswerable"] * r["refused_when_unanswerable"] / 100 for r in rows)
    return round(100 * refused / max(total, 1), 1)


#: The families issue 37 added to the calibration (BIPIA and SQuAD were its first).
USER_FAMILIES = ("notes", "portuguese", "sheets", "mail-headers")


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "product-040", help="the product benchmark's work dir (its mail home is reused)")
    ap.add_argument("--per-family", type=int, default=150)
    ap.add_argument("--off", default="", help=f"comma-separated rules to turn off (of {','.join(RULES)})")
    ap.add_argument("--rare-share", type=float, default=None, help="SearchSettings.rare_share (default: the shipped one)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a numeric SearchSettings field of the decision ('none' turns a rule off), e.g. standout_lead=none",
    )
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    from engine.api.facade import Engine

    try:
        changes: dict[str, float | None] = {} if args.rare_share is None else {"rare_share": args.rare_share}
        changes.update(_assignments(args.set))
        settings = with_rules_off(args.off, **changes)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    off = [r for r in RULES if not getattr(settings, r)]
    recorder = harness.Run("no_answer", argv)
    rng = random.Random(SEED)
    notes_dir = args.work / "files" / "notes"
    with gzip.open(product.DATA / SQUAD_TRAIN, "rt", encoding="utf-8") as f:
        squad = json.load(f)["data"]
    faquad = json.loads((product.DATA / FAQUAD).read_text(encoding="utf-8"))["data"]
    probes = note_family("notes", list(squad), notes_dir, args.per_family, rng)
    probes += note_family("portuguese", list(faquad), notes_dir, args.per_family, rng)
    with gzip.open(product.DATA / product.ENRON_FILE, "rt", encoding="utf-8") as f:
        enron_rows = [json.loads(line) for line in f if line.strip()]
    probes += sheet_family(enron_rows[4000:], notes_dir, args.per_family, random.Random(SEED + 1))
    results: dict[str, dict] = {}
    with Engine(args.work / "homes" / "notes", threads=1) as eng:
        product.source_indexed(eng, notes_dir)
        found, rows = decisions(eng, probes, settings)
        results.update(found)
    col, mail_questions = product.build_mail(args.work, 1000)
    mail_probes = header_family(col, enron_rows, args.per_family, rng)
    bipia = [q for q in mail_questions if q.set == "email"]
    mail_probes += calibration_family("bipia", bipia, args.per_family, random.Random(SEED + 2))
    squad_col, squad_questions = product.build_squad(args.work, product.SIZES["full"]["squad_articles"])
    squad_probes = calibration_family("squad", squad_questions, args.per_family, random.Random(SEED + 3))
    for home, folder, asked in ((col.name, col.folder, mail_probes), (squad_col.name, squad_col.folder, squad_probes)):
        with Engine(args.work / "homes" / home, threads=1) as eng:
            product.source_indexed(eng, folder)
            found, more = decisions(eng, asked, settings)
            results.update(found)
            rows += more
    out = {
        "seed": SEED,
        "per_family": args.per_family,
        "rules_off": off,
        "rare_share": settings.rare_share,
        "settings": {f: getattr(settings, f) for f in DECISION_FIELDS},
        "pooled_refused": {"all": pooled(results), "issue_37_families": pooled(results, USER_FAMILIES)},
        "results": results,
        "halves": {h: summary([r for r in rows if r["half"] == h]) for h in ("tune", "held-out")},
        "sweep": sweep(rows),
        "rows": rows,
    }
    print("| family | answerable | answered % | unanswerable | refused % |\n|---|---|---|---|---|")
    for fam, r in results.items():
        print(
            f"| {fam} | {r['answerable']} | {r['answered_when_answerable']} | {r['unanswerable']} "
            f"| {r['refused_when_unanswerable']} |"
        )
    print("\n| half | " + " | ".join(results) + " | pooled refused (all) | pooled refused (issue 37's four) |")
    print("|---" * (len(results) + 3) + "|")
    for half, found in out["halves"].items():
        cells = [f"{r['answered_when_answerable']} / {r['refused_when_unanswerable']}" for r in found.values()]
        print(f"| {half} | " + " | ".join(cells) + f" | {pooled(found)} | {pooled(found, USER_FAMILIES)} |")
    print(f"| both | {' | '.join('' for _ in results)} | {pooled(results)} | {pooled(results, USER_FAMILIES)} |")
    print("\nrare_share sweep (answered % / refused % per family; tune half | held-out half):")
    for share, halves in out["sweep"].items():
        cells = [
            f"{fam} {t['answered_when_answerable']}/{t['refused_when_unanswerable']} | {h['answered_when_answerable']}/{h['refused_when_unanswerable']}"
            for fam, t in halves["tune"].items()
            for h in [halves["held-out"][fam]]
        ]
        print(f"  {share}: " + "; ".join(cells))
    if not args.no_save:
        path = harness.save_result("no_answer", out, run=recorder)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return out


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
