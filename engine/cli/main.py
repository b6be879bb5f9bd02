"""``sparcdesk``: index folders and mail, ask questions, watch, report -- from a terminal.

    sparcdesk demo                      index the built-in samples and ask three questions
    sparcdesk index PATH... [--exclude GLOB]
    sparcdesk ask "question" [--top N] [--json] [--no-idf] [--no-hybrid] [--folder F] [--kind K]
                             [--from DATE] [--to DATE] [--sender ADDR] [--mailbox NAME]
    sparcdesk watch                     keep the index fresh until Ctrl-C
    sparcdesk status [--json]           counts per source and per-file errors with reasons
    sparcdesk sources | remove PATH
    sparcdesk gui [app options]         open the desktop window

``--home`` (or ``$SPARCDESK_HOME``) picks the data folder, ``--model`` (or
``$SPARCDESK_MODEL``) the model bundle. Exit codes: 0 ok, 1 error, 2 usage, 3 another
sparcdesk process is writing the index, 4 the data folder's disk is full (the index answers as
of its last commit; the same command continues once space is free), 130 interrupted.
Whatever fails, the terminal gets one line; the traceback goes to HOME/logs/sparcdesk.log.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports the engine lazily: "sparcdesk --help" stays quick
    from engine.search.results import Answers

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEMO_QUESTIONS = 3

EXIT_LOCKED = 3
EXIT_DISK_FULL = 4


# --------------------------------------------------------------------------- output helpers


def _use_color(stream) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def bold(self, s: str) -> str:
        return f"\033[1m{s}\033[0m" if self.color else f"**{s}**"

    def dim(self, s: str) -> str:
        return f"\033[2m{s}\033[0m" if self.color else s

    def head(self, s: str) -> str:
        return f"\033[1;36m{s}\033[0m" if self.color else s


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _location(a) -> str:
    f = a.fields
    if a.kind == "email":
        bits = [f.get("from", ""), (a.date or "")[:10], f.get("mailbox", "")]
        return " | ".join(b for b in bits if b) + f"\n      {a.path}"
    if f.get("attachment_of"):
        return f"attachment of {f.get('subject') or f['attachment_of']}\n      {a.path}"
    return f"{a.path}" + (f"  (modified {(a.date or '')[:10]})" if a.date else "")


def _passage_with_bold(hit, style: _Style, width: int = 600) -> str:
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


def print_answers(question: str, answers: Answers, style: _Style, out=None, none_found: str = NOTHING_INDEXED) -> None:
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


# --------------------------------------------------------------------------- engine


def _engine(args):
    from engine.api.facade import Engine

    home = Path(args.home) if args.home else None
    bundle = Path(args.model) if args.model else None
    engine = Engine(home=home, bundle_dir=bundle, threads=args.threads)
    for note in engine.repairs:  # damage found and repaired as it opened: one line each
        print(f"sparcdesk: repaired: {note}", file=sys.stderr)
    return engine


class _Bar:
    """tqdm progress bar over files, with sentences, rate and phase in its postfix."""

    def __init__(self, disable: bool = False) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=0, unit="file", disable=disable, dynamic_ncols=True, file=sys.stderr)

    def __call__(self, p) -> None:
        if self.bar.total != p.files_total:
            self.bar.total = p.files_total
        self.bar.n = p.files_done
        post = f"{p.sentences_done} sentences, {p.rate:.0f}/s"
        if p.phase not in ("indexing",):
            post += f", {p.phase}"
        self.bar.set_postfix_str(post, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _run_index(engine, paths, quiet: bool) -> int:
    bar = _Bar(disable=quiet)
    cancel = threading.Event()
    try:
        p = engine.index(paths, progress=bar, cancel=cancel)
    except KeyboardInterrupt:
        bar.close()
        print("interrupted: what was committed is kept; run the same command to continue", file=sys.stderr)
        return 130
    finally:
        bar.close()
    errors = engine.errors()
    st = engine.status()
    done = (
        f"re-read {p.files_done} file(s) for what this version indexes, {p.sentences_done} sentences encoded"
        if p.upgrade
        else f"indexed {p.files_done} changed file(s), {p.sentences_done} sentences"
    )
    print(f"{done} ({p.rate:.0f}/s); index holds {st['sentences']} sentences from {st['files']} files")
    skipped = sum(e.skipped for e in errors)
    if len(errors) > skipped:
        print(f"{len(errors) - skipped} file(s) with problems: run 'sparcdesk status' for the reasons")
    if skipped:
        print(f"{skipped} file(s) skipped (format not read; found by name): see 'sparcdesk status'")
    return 0


# --------------------------------------------------------------------------- commands


def cmd_index(args) -> int:
    engine = _engine(args)
    try:
        engine.lock_wait_s = None if args.wait is not None and args.wait < 0 else (args.wait or 0.0)
        if args.commit_every:
            engine.commit_every = args.commit_every
        if not args.paths:
            # as recollindex does: no path brings every source up to date
            if args.exclude:
                print("--exclude applies to the paths being added: name them", file=sys.stderr)
                return 2
            if not engine.sources():
                print("nothing to index yet: sparcdesk index PATH (a folder, mbox, Maildir or .eml)", file=sys.stderr)
                return 2
            return _run_index(engine, None, args.quiet)
        paths = [Path(p) for p in args.paths]
        for p in paths:
            engine.add_source(p, exclude=args.exclude or ())
        return _run_index(engine, paths, args.quiet)
    finally:
        engine.close()


def cmd_ask(args) -> int:
    from engine.api.facade import SearchFilters

    engine = _engine(args)
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
            print_answers(args.question, answers, _Style(_use_color(sys.stdout)), none_found=none_found)
            print(_Style(_use_color(sys.stdout)).dim(f"({len(answers)} documents in {ms:.0f} ms)"))
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


def cmd_status(args) -> int:
    engine = _engine(args)
    try:
        st = engine.status()
        if args.json:
            print(json.dumps(st, indent=1))
            return 0
        m = st["model"]
        print(f"home:      {st['home']}")
        print(f"model:     {m['name']} {m['version']} (training steps: {m['training_steps']})")
        print(
            f"index:     {st['sentences']} sentences, {st['files']} files, {st['index_bytes'] / 1e6:.1f} MB"
        )
        if st["building"]:
            b = st["building"]
            print(
                f"rebuilding: {b['model']} has {b['files_done']} of {b['files_total']} files; any"
                " 'sparcdesk index' run completes it and switches to it (the current index answers"
                " until then)"
            )
        elif st["rebuilding"]:
            print(
                "           the model changed: any 'sparcdesk index' run rebuilds the index with it"
                " (every source; the current index answers until then)"
            )
        if not st["sources"]:
            print("sources:   none (add one with: sparcdesk index PATH)")
        for s in st["sources"]:
            print(
                f"source:    {s['path']} [{s['kind']}]: {s['files']} files, {s['sentences']} sentences, "
                f"{s['errors']} could not be read, last indexed {s['last_indexed'] or 'never'}"
            )
        # the same three kinds, counted the same way, as the window's (FileError.kind)
        groups = (
            ("unreadable", "could not be read ({n}): found by their name at most"),
            ("skipped", "skipped ({n}): formats that are not read, or links to special files"),
            ("note", "read, with a note ({n})"),
        )
        for kind, head in groups:
            listed = [e for e in st["errors"] if e.get("kind", "unreadable") == kind]
            if listed:
                print(head.format(n=len(listed)))
                for e in listed:
                    print(f"  {e['path']}\n      {e['reason']}")
        return 0
    finally:
        engine.close()


def cmd_sources(args) -> int:
    engine = _engine(args)
    try:
        for s in engine.sources():
            ex = f" (exclude: {', '.join(s.exclude)})" if s.exclude else ""
            print(f"{s.path}\t{s.kind}\t{s.files} files\t{s.sentences} sentences{ex}")
        return 0
    finally:
        engine.close()


def cmd_remove(args) -> int:
    engine = _engine(args)
    try:
        for p in args.paths:
            try:
                engine.remove_source(Path(p))
            except KeyError as exc:
                print(f"sparcdesk: {exc.args[0]}", file=sys.stderr)
                return 1
            print(f"removed {os.path.abspath(p)} and its documents")
        return 0
    finally:
        engine.close()


def cmd_watch(args) -> int:
    engine = _engine(args)
    try:
        if not engine.sources():
            print("no sources to watch: add one with 'sparcdesk index PATH'", file=sys.stderr)
            return 1

        def changed(paths: list[str]) -> None:
            stamp = time.strftime("%H:%M:%S")
            for p in paths:
                print(f"{stamp} re-indexed {p}", flush=True)

        # Ctrl-C and SIGTERM (a service manager, `kill`) both stop cleanly. Set explicitly: a
        # process started in the background by a shell inherits SIGINT ignored, and Python
        # then installs no KeyboardInterrupt handler of its own.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.default_int_handler)
        # Watch first, then catch up with what changed while nothing watched (and finish a
        # run cut short): a change made during the catch-up is an event, not a gap. The
        # watcher's batches wait for the catch-up (one writer per process at a time).
        engine.start_watch(on_change=changed, debounce_s=args.debounce)
        if not args.no_initial:
            code = _run_index(engine, None, args.quiet)
            if code:
                return code
        print(f"watching {len(engine.sources())} source(s); Ctrl-C to stop", flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        return 0
    finally:
        engine.close()


def cmd_adapt(args) -> int:
    from tqdm import tqdm

    from engine.common.progress import Cancelled
    from engine.model.bundle import Bundle

    engine = _engine(args)
    bar = tqdm(total=args.steps, unit="step", desc="adapt", disable=args.quiet, file=sys.stderr)

    def on_adapt(p) -> None:
        bar.n = p.step
        bar.set_postfix_str(p.phase if p.loss is None else f"loss {p.loss:.2f}", refresh=False)
        bar.refresh()

    cancel = threading.Event()
    reencode = _Bar(disable=args.quiet)
    try:
        bundle = engine.adapt(
            steps=args.steps,
            mlm=args.mlm,
            vocab_expansion=args.vocab,
            on_adapt=on_adapt,
            progress=reencode,
            cancel=cancel,
            reencode=not args.no_reencode,
        )
    except (KeyboardInterrupt, Cancelled):
        print("\ninterrupted: run 'sparcdesk adapt' again to resume where it stopped", file=sys.stderr)
        return 130
    except ValueError as exc:
        print(f"sparcdesk: {exc}", file=sys.stderr)
        return 1
    finally:
        bar.close()
        reencode.close()
        engine.close()
    a = Bundle.open(bundle).adaptation or {}
    print(
        f"adapted model: {bundle}\n"
        f"  {a.get('steps')} steps on {a.get('sentences')} sentences ({a.get('mlm')}), "
        f"{a.get('rows_changed')} embedding rows changed, {a.get('seconds')} s"
        + (
            ""
            if args.no_reencode
            else "\n  answers now come from the re-encoded index; 'sparcdesk restore' undoes it"
        )
    )
    return 0


def cmd_restore(args) -> int:
    engine = _engine(args)
    try:
        done = engine.restore_model(progress=_Bar(disable=args.quiet))
    except LookupError as exc:
        print(f"sparcdesk: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.close()
    print(
        f"restored {done['bundle']} (generation {done['generation']}); "
        f"{done['removed_documents']} deleted document(s) dropped, {done['reindexed_files']} file(s) brought up to date"
    )
    return 0


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
    engine = _engine(args)
    try:
        src = next((s for s in engine.sources() if s.path == str(SAMPLES)), None)
        st = engine.status()
        stale = st["generation"] is None or st["rebuilding"]
        if src is None or src.last_indexed is None or stale:
            print(f"indexing the sample corpus ({SAMPLES}) into {engine.layout.home} ...")
            engine.add_source(SAMPLES)
            code = _run_index(engine, [SAMPLES], args.quiet)
            if code:
                return code
        else:
            print(f"the sample corpus is already indexed in {engine.layout.home}")
        # the demo asks the way `sparcdesk ask` does by default: the best measured configuration
        print("(answers: SPARC with corpus IDF + BM25, the best configuration measured; docs/ood.md)")
        style = _Style(_use_color(sys.stdout))
        for q in _demo_questions(DEMO_QUESTIONS):
            print()
            print(style.head(f"Q: {q['question']}"))
            answers = engine.ask(q["question"], top=args.top)
            print_answers(q["question"], answers, style)
        print('Ask your own:  sparcdesk ask "..."     Index your files:  sparcdesk index ~/Documents')
        return 0
    finally:
        engine.close()


#: Entry-point group through which other packages add sub-commands: ``name = "module:function"``,
#: the function takes the arguments after the name and returns an exit code. The desktop app
#: adds ``gui`` (pyproject.toml), so the command line never imports the app itself.
COMMANDS_GROUP = "sparcdesk.commands"
#: Sub-commands added at run time (the frozen bundle's launcher adds ``gui`` this way):
#: name -> (one line of help, run).
COMMANDS: dict[str, tuple[str, Callable[[list[str]], int]]] = {}


def register_command(name: str, help: str, run: Callable[[list[str]], int]) -> None:
    """Add a sub-command that parses its own arguments (``sparcdesk NAME ...``)."""
    COMMANDS[name] = (help, run)


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=COMMANDS_GROUP)}


def added_command(name: str) -> Callable[[list[str]], int] | None:
    """The added sub-command ``name`` (registered, else an installed entry point), or None."""
    if name in COMMANDS:
        return COMMANDS[name][1]
    ep = _entry_points().get(name)
    if ep is None:
        return None
    try:
        return ep.load()
    except ImportError as exc:
        reason = str(exc)

        def unavailable(_args: list[str]) -> int:
            print(f"sparcdesk: the {name} command is not available: {reason}", file=sys.stderr)
            return 1

        return unavailable


# --------------------------------------------------------------------------- parser


def version_text() -> str:
    """``sparcdesk 0.1.0 (shipped model sparc-tiny 0.3.0)``: ``--version`` and Help > About."""
    from engine import __version__
    from engine.model.bundle import Bundle, BundleError
    from engine.model.encoder import default_bundle_dir

    try:
        shipped = Bundle.open(default_bundle_dir())
        model = f"{shipped.name} {shipped.version}"
    except BundleError:
        model = "not found"
    return f"sparcdesk {__version__} (shipped model {model})"


#: The command line's own sub-commands (anything else may be an added one).
BUILT_IN = frozenset({"index", "ask", "status", "sources", "remove", "watch", "adapt", "restore", "demo"})


def build_parser(added: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``added=False`` leaves out the added sub-commands (reading
    the installed entry points costs every command ~30 ms, and a built-in one needs none)."""
    from engine.home.paths import home_argument
    from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF, FUSIONS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--home", type=home_argument, help="data folder (default: $SPARCDESK_HOME or the user data folder)"
    )
    common.add_argument("--model", help="model bundle folder (default: $SPARCDESK_MODEL or the shipped one)")
    common.add_argument(
        "--threads", type=int, default=None, help="encoder threads (default: cores, at most 4)"
    )
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    p = argparse.ArgumentParser(prog="sparcdesk", description="Private desktop question answering, offline.")
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser(
        "index", parents=[common], help="add folders or mail stores and index them (none: update every source)"
    )
    s.add_argument(
        "paths", nargs="*", help="folders, mbox files, Maildir folders, .eml files (none: every source added before)"
    )
    s.add_argument("--exclude", action="append", metavar="GLOB", help="skip matching paths (repeatable)")
    s.add_argument("--commit-every", type=int, default=None, metavar="N", help="commit every N sentences")
    s.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another sparcdesk process is writing the index, wait up to this long for it"
        " (-1: as long as it takes; default: do not wait, exit with code 3)",
    )
    s.set_defaults(func=cmd_index)

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

    s = sub.add_parser("watch", parents=[common], help="keep the index fresh as files change")
    s.add_argument("--debounce", type=float, default=0.5, help="seconds of quiet before re-indexing")
    s.add_argument("--no-initial", action="store_true", help="skip the catch-up indexing pass")
    s.set_defaults(func=cmd_watch)

    s = sub.add_parser("status", parents=[common], help="counts per source and per-file errors")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("sources", parents=[common], help="list sources")
    s.set_defaults(func=cmd_sources)

    s = sub.add_parser("remove", parents=[common], help="remove sources and their documents")
    s.add_argument("paths", nargs="+")
    s.set_defaults(func=cmd_remove)

    s = sub.add_parser(
        "adapt", parents=[common], help="adapt the model to your documents, then re-encode them"
    )
    s.add_argument("--steps", type=int, default=500, help="masked-LM steps (default 500)")
    s.add_argument(
        "--mlm",
        choices=("direct", "head", "direct-base"),
        default=None,
        help="how masked words are predicted",
    )
    s.add_argument(
        "--vocab", action="store_true", help="also add frequent new words of your documents to the vocabulary"
    )
    s.add_argument(
        "--no-reencode",
        action="store_true",
        help="only build the adapted model; 'sparcdesk index' re-encodes",
    )
    s.set_defaults(func=cmd_adapt)

    s = sub.add_parser(
        "restore", parents=[common], help="go back to the model and index used before the last switch"
    )
    s.set_defaults(func=cmd_restore)

    s = sub.add_parser("demo", parents=[common], help="index the built-in samples and ask three questions")
    s.add_argument("--top", type=int, default=3)
    s.set_defaults(func=cmd_demo)

    extra = {name: f"{name} (options: sparcdesk {name} --help)" for name in _entry_points()} if added else {}
    extra.update({name: help for name, (help, _) in COMMANDS.items()})
    for name, help in sorted(extra.items()):
        s = sub.add_parser(name, help=help, add_help=False)
        s.add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv: list[str] | None = None) -> int:
    from engine.catalog.store import CatalogVersionError
    from engine.index.sentences import IndexLockedError, IndexVersionError

    argv = list(sys.argv[1:] if argv is None else argv)
    # File names that are not valid UTF-8 are printed as their bytes (as ls does) instead of
    # stopping the command with UnicodeEncodeError under a strict UTF-8 locale.
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    run = added_command(argv[0]) if argv and not argv[0].startswith("-") and argv[0] not in BUILT_IN else None
    if run is not None:  # an added command (the window) parses its own options
        return int(run(argv[1:]) or 0)
    args = build_parser(added=not argv or argv[0] not in BUILT_IN).parse_args(argv)
    import logging

    from engine.home import logs

    # HOME/logs/sparcdesk.log; warnings still reach the terminal as before
    logs.setup(getattr(args, "home", None), console=logging.WARNING)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except IndexLockedError as exc:
        print(
            f"sparcdesk: {exc}. Wait for it to finish (or close the other sparcdesk window) and retry,"
            " or add --wait SECONDS.",
            file=sys.stderr,
        )
        return EXIT_LOCKED
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            return _failed(exc, getattr(args, "home", None))
        print(
            f"sparcdesk: the catalog is busy: another sparcdesk process has held it for over 30 s ({exc})."
            " Retry when it is done.",
            file=sys.stderr,
        )
        return EXIT_LOCKED
    except FileNotFoundError as exc:
        print(f"sparcdesk: {exc}", file=sys.stderr)
        return 1
    except (CatalogVersionError, IndexVersionError) as exc:  # what to do is in the message
        print(f"sparcdesk: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # never a traceback: one line, the details in the log file
        return _failed(exc, getattr(args, "home", None))


def _pipe_closed() -> int:
    """The reader of stdout went away (``sparcdesk ask ... | head``): stop quietly, as Unix
    tools killed by SIGPIPE do (exit code 141), with what is still buffered sent nowhere."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 128 + 13


def _failed(exc: BaseException, home: str | None = None) -> int:
    """One line for an unexpected failure; its traceback goes to the log file. A failure that
    comes of a full disk says so (exit code 4)."""
    import logging

    from engine.home import diskspace, logs
    from engine.home.paths import Layout

    layout = Layout.resolve(home)
    if diskspace.is_disk_full(exc, layout.home):
        if not isinstance(exc, diskspace.DiskFullError):
            exc = diskspace.DiskFullError(layout.home, diskspace.free_bytes(layout.home), diskspace.MIN_FREE_BYTES)
        print(f"sparcdesk: {exc}", file=sys.stderr)
        return EXIT_DISK_FULL

    record = logging.getLogger("sparcdesk").makeRecord(
        "sparcdesk", logging.ERROR, __file__, 0, "command failed", (), (type(exc), exc, exc.__traceback__)
    )
    text = " ".join(str(exc).split()) or type(exc).__name__
    where = ""
    for h in logging.getLogger().handlers:
        if getattr(h, "_sparcdesk_file", False):  # the file only: the terminal gets one line
            h.handle(record)
            where = f" (details in {getattr(h, 'baseFilename', logs.LOG_FILE)})"
    print(f"sparcdesk: {type(exc).__name__}: {text}{where}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
