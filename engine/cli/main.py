"""``sparcdesk``: index folders and mail, ask questions, watch, report -- from a terminal.

    sparcdesk demo                      index the built-in samples and ask three questions
    sparcdesk index PATH... [--exclude GLOB]
    sparcdesk ask "question" [--top N] [--json] [--no-idf] [--no-hybrid] [--folder F] [--kind K]
                             [--from DATE] [--to DATE] [--sender ADDR] [--mailbox NAME]
    sparcdesk watch                     keep the index fresh until Ctrl-C
    sparcdesk status [--json]           counts per source and per-file errors with reasons
    sparcdesk selfcheck [--json] [--questions N] [--seed S]   measure search on your own files
    sparcdesk adapt [--always] | restore   adapt the model to your files (switch if it helps) / undo
    sparcdesk sources | remove PATH
    sparcdesk gui [app options]         open the desktop window

``--home`` (or ``$SPARCDESK_HOME``) picks the data folder, ``--model`` (or
``$SPARCDESK_MODEL``) the model bundle. Exit codes: 0 ok, 1 error, 2 usage, 3 another
sparcdesk process is writing the index, 4 the data folder's disk is full (the index answers as
of its last commit; the same command continues once space is free), 130 interrupted.
Whatever fails, the terminal gets one line; the traceback goes to HOME/logs/sparcdesk.log.

This module is the entry point (``engine.cli.main:main``), the parser, the added sub-commands
and the failures; the commands are one module per group (issue 40): :mod:`engine.cli.ask` (ask,
demo, answers printed and as JSON), :mod:`engine.cli.index` (index, watch, sources, remove),
:mod:`engine.cli.status`, :mod:`engine.cli.model` (adapt, restore), :mod:`engine.cli.selfcheck`
(the self-check and the lines that report it), each declaring its
sub-commands' options, with :mod:`engine.cli.common` (opening the engine, the progress bar).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

# The sub-commands live by group; these modules import the engine inside their functions.
from engine.cli.ask import NOTHING_INDEXED, SAMPLES, add_ask, add_demo, answers_json, print_answers
from engine.cli.common import Style, open_engine
from engine.cli.index import add_index, add_remove, add_sources, add_watch, run_index
from engine.cli.model import add_adapt, add_restore
from engine.cli.selfcheck import add_selfcheck
from engine.cli.status import add_status

__all__ = [
    "BUILT_IN",
    "COMMANDS",
    "COMMANDS_GROUP",
    "NOTHING_INDEXED",
    "SAMPLES",
    "Style",
    "added_command",
    "answers_json",
    "build_parser",
    "main",
    "open_engine",
    "print_answers",
    "register_command",
    "run_index",
    "version_text",
]

EXIT_LOCKED = 3
EXIT_DISK_FULL = 4


# --------------------------------------------------------------------------- added sub-commands


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
BUILT_IN = frozenset(
    {"index", "ask", "status", "selfcheck", "sources", "remove", "watch", "adapt", "restore", "demo"}
)
#: Each adds its sub-command to the parser (its options are declared beside the command), in
#: the order ``--help`` lists them.
BUILT_IN_PARSERS = (
    add_index,
    add_ask,
    add_watch,
    add_status,
    add_selfcheck,
    add_sources,
    add_remove,
    add_adapt,
    add_restore,
    add_demo,
)


def build_parser(added: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``added=False`` leaves out the added sub-commands (reading
    the installed entry points costs every command ~30 ms, and a built-in one needs none)."""
    from engine.home.paths import home_argument

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
    for add in BUILT_IN_PARSERS:
        add(sub, common)

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
