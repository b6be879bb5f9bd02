"""``sparcdesk ask`` and ``sparcdesk demo``: a question's answers as the terminal shows them
(the best sentence in bold within its passage, where it is, the same file elsewhere, other
sentences) or as JSON (``--json``), and the demo over the built-in samples."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.common import Style, open_engine, use_color
from engine.cli.index import run_index

if TYPE_CHECKING:  # the CLI imports the engine lazily: "sparcdesk --help" stays quick
    from engine.search.results import Answers

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEMO_QUESTIONS = 3


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _location(a) -> str:
    f = a.fields
    if a.kind == "email":
        bits = [f.get("from", ""), (a.date or "")[:10], f.get("mailbox", "")]
        return " | ".join(b for b in bits if b) + f"\n      {a.path}"
    if f.get("attachment_of"):
        return f"attachment of {f.get('subject') or f['attachment_of']}\n      {a.path}"
    page = f", page {a.page} of {a.pages}" if getattr(a, "page", None) else ""
    section = f', under "{a.section}"' if getattr(a, "section", None) else ""
    return f"{a.path}{page}{section}" + (f"  (modified {(a.date or '')[:10]})" if a.date else "")


def _passage_with_bold(hit, style: Style, width: int = 600) -> str:
    p, s, e = hit.passage, hit.start, hit.end
    before, sent, after = p[:s], p[s:e], p[e:]
    before, sent, after = _one_line(before), _one_line(sent), _one_line(after)
    room = max(0, width - len(sent))
    if len(before) > room // 2:
        before = "..." + before[-(room // 2) :]
    if len(after) > room // 2:
        after = after[: room // 2] + "..."
    return " ".join(x for x in (before, style.bold(sent), after) if x)


NOTHING_INDEXED = "No answer found. Index some folders first: sparcdesk index PATH"


def print_answers(question: str, answers: Answers, style: Style, out=None, none_found: str = NOTHING_INDEXED) -> None:
    """The answers as the terminal shows them; ``none_found`` is the line when there are none."""
    from engine.search.query import absent_notice, relaxed_notice

    out = out or sys.stdout
    relaxed = relaxed_notice(answers.relaxed, found=bool(answers))
    absent = absent_notice(answers.absent, found=bool(answers))
    relaxed = " ".join(x for x in (relaxed, absent) if x)
    if relaxed:
        print(style.head(relaxed), file=out)
    if not answers:
        if not relaxed:
            print(none_found, file=out)
        return
    if relaxed:
        print(file=out)
    if not answers.answered:
        print(style.head("Nothing in your files answers this question. Closest matches:"), file=out)
        print(file=out)
    for i, a in enumerate(answers, 1):
        title = a.title or Path(a.path).name
        # the document's score, which orders the list (a header line shown as the answer may
        # have matched no question word and score 0 itself)
        print(f"{style.head(f'{i}. {title}')}  {style.dim(f'[{a.kind}, score {a.score:.2f}]')}", file=out)
        print(f"   {_passage_with_bold(a.best, style)}", file=out)
        print(f"   {style.dim('in: ' + _location(a))}", file=out)
        for path in a.copies:  # the same file elsewhere, not an answer of its own
            print(f"   {style.dim('same file: ' + path)}", file=out)
        for o in a.others:
            print(f"   {style.dim('also:')} {_one_line(o.sentence)[:200]}", file=out)
        print(file=out)


def answers_json(question: str, answers: Answers) -> str:
    # "answered" is read by outside scripts: keep its name and meaning stable.
    data = {
        "question": question,
        "answered": bool(answers.answered),
        # the quoted phrases no document holds, dropped from the search (their words rank)
        "relaxed": list(answers.relaxed),
        # the question's words no indexed sentence holds ("xyzzyq")
        "absent": list(answers.absent),
        "answers": [asdict(a) for a in answers],
    }
    text = json.dumps(data, ensure_ascii=False, indent=1)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8: \udcXX escapes keep it exact
        text = json.dumps(data, indent=1)
    return text


def _date(value: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {value}") from None


def cmd_ask(args) -> int:
    from engine.api.facade import SearchFilters

    engine = open_engine(args)
    try:
        filters = None
        if any([args.folder, args.kind, args.date_from, args.date_to, args.sender, args.mailbox]):
            filters = SearchFilters(
                folder=args.folder,
                kinds=args.kind,
                date_from=args.date_from,
                date_to=args.date_to,
                sender=args.sender,
                mailbox=args.mailbox,
            )
        t0 = time.perf_counter()
        answers = engine.ask(
            args.question, top=args.top, filters=filters, idf=args.idf, hybrid=args.hybrid, fusion=args.fusion
        )
        ms = (time.perf_counter() - t0) * 1000
        if args.json:
            print(answers_json(args.question, answers))
        else:
            none_found = "" if answers else _none_found(engine, args.question, filters)
            print_answers(args.question, answers, Style(use_color(sys.stdout)), none_found=none_found)
            print(Style(use_color(sys.stdout)).dim(f"({len(answers)} documents in {ms:.0f} ms)"))
        return 0
    finally:
        engine.close()


def _none_found(engine, question: str, filters) -> str:
    """Why a question got no document at all, as the window says it: no word to search for,
    filters that leave nothing, or an index with nothing in it yet."""
    if not any(c.isalnum() for c in question):
        return "No answer found: the question has no word to search for."
    if filters is not None:
        return "No answer found with these filters. Try other words, or loosen the filters."
    if not engine.status().get("sentences"):
        return NOTHING_INDEXED
    return "No answer found. Try other words."


def _demo_questions(n: int) -> list[dict]:
    path = SAMPLES / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    # One from a document, one from a PDF, one from e-mail, when there are such questions.
    picks: list[dict] = []
    for want in ("documents/warsaw", "documents/normans.pdf", "mail/"):
        for r in rows:
            if r["file"].startswith(want) and r not in picks:
                picks.append(r)
                break
    for r in rows:
        if len(picks) >= n:
            break
        if r not in picks:
            picks.append(r)
    return picks[:n]


def cmd_demo(args) -> int:
    if not (SAMPLES / "questions.jsonl").is_file():
        print(
            f"sparcdesk: the sample corpus is not here ({SAMPLES}); run from a source checkout",
            file=sys.stderr,
        )
        return 1
    engine = open_engine(args)
    try:
        src = next((s for s in engine.sources() if s.path == str(SAMPLES)), None)
        st = engine.status()
        stale = st["generation"] is None or st["rebuilding"]
        if src is None or src.last_indexed is None or stale:
            print(f"indexing the sample corpus ({SAMPLES}) into {engine.layout.home} ...")
            engine.add_source(SAMPLES)
            code = run_index(engine, [SAMPLES], args.quiet)
            if code:
                return code
        else:
            print(f"the sample corpus is already indexed in {engine.layout.home}")
        # the demo asks the way `sparcdesk ask` does by default: the best measured configuration
        print("(answers: SPARC with corpus IDF + BM25, the best configuration measured; docs/ood.md)")
        style = Style(use_color(sys.stdout))
        for q in _demo_questions(DEMO_QUESTIONS):
            print()
            print(style.head(f"Q: {q['question']}"))
            answers = engine.ask(q["question"], top=args.top)
            print_answers(q["question"], answers, style)
        print('Ask your own:  sparcdesk ask "..."     Index your files:  sparcdesk index ~/Documents')
        return 0
    finally:
        engine.close()


def add_ask(sub, common: argparse.ArgumentParser) -> None:
    """The ``ask`` sub-command's options."""
    from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF, FUSIONS
    from engine.search.query import SYNTAX_HELP

    s = sub.add_parser(
        "ask",
        parents=[common],
        help="ask a question",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="search syntax (words outside quotes rank the answers):\n"
        + "\n".join(f"  {k:<46} {v}" for k, v in SYNTAX_HELP),
    )
    s.add_argument("question", help="a question or words, with the search syntax below")
    s.add_argument("--top", type=int, default=5, help="documents to show (default 5)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument(
        "--idf",
        action=argparse.BooleanOptionalAction,
        default=DEFAULT_IDF,
        help="weight question words by their IDF in your files (default: on, the measured best)",
    )
    s.add_argument(
        "--hybrid",
        action=argparse.BooleanOptionalAction,
        default=DEFAULT_HYBRID,
        help="add BM25 to the neural score (default: on, the measured best)",
    )
    s.add_argument(
        "--fusion",
        choices=FUSIONS,
        default=DEFAULT_FUSION,
        help="how --hybrid combines the two top-100 lists (default: %(default)s, the measured best)",
    )
    s.add_argument("--folder", help="only documents under this folder")
    s.add_argument("--kind", action="append", help="only this kind (text, pdf, email, ...; repeatable)")
    s.add_argument("--from", dest="date_from", type=_date, help="on or after this date (YYYY-MM-DD)")
    s.add_argument("--to", dest="date_to", type=_date, help="on or before this date (YYYY-MM-DD)")
    s.add_argument("--sender", help="only e-mail from senders whose name or address holds this")
    s.add_argument(
        "--mailbox", help="only e-mail in this mailbox: its name, or its label as in 'all_documents (lay-k)'"
    )
    s.set_defaults(func=cmd_ask)


def add_demo(sub, common: argparse.ArgumentParser) -> None:
    """The ``demo`` sub-command's options."""
    s = sub.add_parser("demo", parents=[common], help="index the built-in samples and ask three questions")
    s.add_argument("--top", type=int, default=3)
    s.set_defaults(func=cmd_demo)
