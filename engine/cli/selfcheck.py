"""``sparcdesk selfcheck``: how well search works on the user's own files (issue 38), and the
lines that report it: the latest measure (``sparcdesk status``, the window) and the last
adaptation's switch decision (``sparcdesk adapt``, ``status``, the window's notice).

The texts are here, beside the command, so the terminal and the window say the same thing;
the measuring is :meth:`engine.api.facade.Engine.selfcheck`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.cli.common import open_engine

#: Shown before anything was measured (status, the window).
NOT_MEASURED = "not measured yet (sparcdesk selfcheck)"
#: ``--questions``' default: engine.search.selfcheck.QUESTIONS, not imported here so that
#: ``sparcdesk --help`` stays quick (tests/test_cli.py checks they agree).
QUESTIONS = 240


def when(measured: str) -> str:
    """An ISO time as a person reads it: '2026-11-28 12:58' (the text itself when unparsable)."""
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(measured).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return str(measured or "at an unknown time")


def measured_line(latest: dict[str, Any] | None) -> str:
    """'hit@1 62% (measured 2026-11-28 12:58 on 240 pseudo-questions)', or :data:`NOT_MEASURED`."""
    if not latest:
        return NOT_MEASURED
    return (
        f"hit@1 {float(latest.get('hit1', 0)):.0f}% (measured {when(str(latest.get('measured', '')))}"
        f" on {int(latest.get('questions', 0))} pseudo-questions)"
    )


def switch_figures(switch: dict[str, Any]) -> str:
    """'hit@1 60% → 64% (MRR@10 68.5 → 71.2, difference 2.7, interval [0.8, 4.6])'."""
    before, after = switch.get("before") or {}, switch.get("after") or {}
    if not after.get("questions"):
        return "nothing in your files to measure with (too little text with labels)"
    c = switch.get("comparison") or {}
    lo, hi = (list(c.get("ci") or (0.0, 0.0)) + [0.0, 0.0])[:2]
    return (
        f"hit@1 {float(before.get('hit1', 0)):.0f}% → {float(after.get('hit1', 0)):.0f}%"
        f" (MRR@10 {float(c.get('before', 0)):.1f} → {float(c.get('after', 0)):.1f},"
        f" difference {float(c.get('diff', 0)):+.1f}, interval [{float(lo):.1f}, {float(hi):.1f}])"
    )


def switch_verdict(switch: dict[str, Any]) -> str:
    """'switched', or why the current model was kept."""
    if switch.get("always"):
        return "switched (--always: whatever the self-check found)"
    if switch.get("switch"):
        return "switched"
    return "kept the current model (the adapted one is not better by more than the interval)"


def switch_line(switch: dict[str, Any]) -> str:
    """The last adaptation's decision in one line (``sparcdesk status``)."""
    return f"{switch_figures(switch)}: {switch_verdict(switch)}"


def switch_report(switch: dict[str, Any] | None) -> str:
    """What ``sparcdesk adapt`` prints after the re-encoding: both figures, the decision, and
    where the adapted model is kept when it did not go live."""
    if not switch:
        return ""
    text = f"self-check on your files: {switch_line(switch)}"
    if switch.get("switch"):
        return text + f"\n  the adapted model answers now; 'sparcdesk restore' goes back to {switch.get('previous_bundle')}"
    return text + (
        f"\n  the adapted model is kept in {switch.get('bundle')}; 'sparcdesk adapt --always'"
        " switches to an adaptation whatever the self-check finds"
    )


def cmd_selfcheck(args) -> int:
    """Measure, save it as the latest figure, print it (or its JSON)."""
    engine = open_engine(args)
    try:
        check = engine.selfcheck(questions=args.questions, seed=args.seed)
    except ValueError as exc:  # nothing indexed: what to do first
        print(f"sparcdesk: {exc} (sparcdesk index PATH), then measure", file=sys.stderr)
        return 1
    finally:
        engine.close()
    if args.json:
        print(json.dumps(check.to_json(), indent=1, ensure_ascii=False))
        return 0
    print(f"search on your files: {check.line()}")
    for kind, f in check.by_kind.items():
        print(f"  {kind + ':':<10}{int(f['questions']):>4} questions, hit@1 {f['hit1']:.0f}%, MRR@10 {f['mrr10']:.0f}")
    print(
        f"measured {when(check.measured)} in {check.seconds:.1f} s with {check.model or 'the model in use'}"
        f" ({check.sentences:,} sentences indexed, seed {check.seed})"
    )
    return 0


def add_selfcheck(sub, common: argparse.ArgumentParser) -> None:
    """The ``selfcheck`` sub-command's options."""
    s = sub.add_parser(
        "selfcheck",
        parents=[common],
        help="measure search on your own files (pseudo-questions from their subjects, headings, titles)",
    )
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--questions", type=int, default=QUESTIONS, help=f"pseudo-questions to ask (default {QUESTIONS})"
    )
    s.add_argument("--seed", type=int, default=13, help="which sample of questions (default 13)")
    s.set_defaults(func=cmd_selfcheck)
