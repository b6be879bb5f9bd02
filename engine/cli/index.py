"""``sparcdesk index``, ``watch``, ``sources`` and ``remove``: adding sources and keeping their
index up to date, from a terminal."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from engine.cli.common import ProgressBar, open_engine


def run_index(engine, paths, quiet: bool) -> int:
    """One indexing run of ``paths`` (None: every source) with a progress bar, then what it did."""
    bar = ProgressBar(disable=quiet)
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


def cmd_index(args) -> int:
    engine = open_engine(args)
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
            return run_index(engine, None, args.quiet)
        paths = [Path(p) for p in args.paths]
        for p in paths:
            engine.add_source(p, exclude=args.exclude or ())
        return run_index(engine, paths, args.quiet)
    finally:
        engine.close()


def cmd_sources(args) -> int:
    engine = open_engine(args)
    try:
        for s in engine.sources():
            ex = f" (exclude: {', '.join(s.exclude)})" if s.exclude else ""
            print(f"{s.path}\t{s.kind}\t{s.files} files\t{s.sentences} sentences{ex}")
        return 0
    finally:
        engine.close()


def cmd_remove(args) -> int:
    engine = open_engine(args)
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
    engine = open_engine(args)
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
            code = run_index(engine, None, args.quiet)
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


def add_index(sub, common: argparse.ArgumentParser) -> None:
    """The ``index`` sub-command's options."""
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


def add_watch(sub, common: argparse.ArgumentParser) -> None:
    """The ``watch`` sub-command's options."""
    s = sub.add_parser("watch", parents=[common], help="keep the index fresh as files change")
    s.add_argument("--debounce", type=float, default=0.5, help="seconds of quiet before re-indexing")
    s.add_argument("--no-initial", action="store_true", help="skip the catch-up indexing pass")
    s.set_defaults(func=cmd_watch)


def add_sources(sub, common: argparse.ArgumentParser) -> None:
    """The ``sources`` sub-command."""
    s = sub.add_parser("sources", parents=[common], help="list sources")
    s.set_defaults(func=cmd_sources)


def add_remove(sub, common: argparse.ArgumentParser) -> None:
    """The ``remove`` sub-command's arguments."""
    s = sub.add_parser("remove", parents=[common], help="remove sources and their documents")
    s.add_argument("paths", nargs="+")
    s.set_defaults(func=cmd_remove)
