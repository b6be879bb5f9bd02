"""What the ``sparcdesk`` commands share: opening the engine (the damage it repaired on
opening printed, one line each), the progress bar of an indexing run, the terminal's styles.

The engine is imported inside the functions, never here: ``sparcdesk --help`` stays quick."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def use_color(stream) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


class Style:
    """Bold, dim and heading, as ANSI escapes on a colour terminal, else plain (bold as ``**``)."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def bold(self, s: str) -> str:
        return f"\033[1m{s}\033[0m" if self.color else f"**{s}**"

    def dim(self, s: str) -> str:
        return f"\033[2m{s}\033[0m" if self.color else s

    def head(self, s: str) -> str:
        return f"\033[1;36m{s}\033[0m" if self.color else s


def open_engine(args):
    """The :class:`engine.api.facade.Engine` of ``--home`` with ``--model`` and ``--threads``."""
    from engine.api.facade import Engine

    home = Path(args.home) if args.home else None
    bundle = Path(args.model) if args.model else None
    engine = Engine(home=home, bundle_dir=bundle, threads=args.threads)
    for note in engine.repairs:  # damage found and repaired as it opened: one line each
        print(f"sparcdesk: repaired: {note}", file=sys.stderr)
    return engine


class ProgressBar:
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
