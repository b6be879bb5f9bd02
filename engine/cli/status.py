"""``sparcdesk status``: the home, the model, the index, how well search works on the user's
files (the latest self-check, the last adaptation's decision), a rebuild under way, each
source, and the files with something to say grouped as the window groups them (``--json``:
all of it)."""

from __future__ import annotations

import argparse
import json

from engine.cli.common import open_engine
from engine.cli.selfcheck import measured_line, switch_line


def cmd_status(args) -> int:
    engine = open_engine(args)
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
        checked = st["selfcheck"]
        print(f"search on your files: {measured_line(checked.get('latest'))}")
        if checked.get("switch"):
            print(f"last adaptation: {switch_line(checked['switch'])}")
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


def add_status(sub, common: argparse.ArgumentParser) -> None:
    """The ``status`` sub-command's options."""
    s = sub.add_parser("status", parents=[common], help="counts per source and per-file errors")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)
