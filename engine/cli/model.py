"""``sparcdesk adapt`` and ``sparcdesk restore``: adapting the model to the indexed documents
(then re-encoding them; the self-check decides whether the adapted model goes live, unless
``--always``), and going back to the model and index used before the last switch."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from engine.cli.common import ProgressBar, open_engine
from engine.cli.selfcheck import switch_report


def cmd_adapt(args) -> int:
    from tqdm import tqdm

    from engine.common.progress import Cancelled
    from engine.model.bundle import Bundle

    engine = open_engine(args)
    bar = tqdm(total=args.steps, unit="step", desc="adapt", disable=args.quiet, file=sys.stderr)

    def on_adapt(p) -> None:
        bar.n = p.step
        bar.set_postfix_str(p.phase if p.loss is None else f"loss {p.loss:.2f}", refresh=False)
        bar.refresh()

    cancel = threading.Event()
    reencode = ProgressBar(disable=args.quiet)
    try:
        bundle = engine.adapt(
            steps=args.steps,
            mlm=args.mlm,
            vocab_expansion=args.vocab,
            on_adapt=on_adapt,
            progress=reencode,
            cancel=cancel,
            reencode=not args.no_reencode,
            always=args.always,
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
    decision = engine.last_switch
    adapted = Path(decision["bundle"]) if decision else bundle
    a = Bundle.open(adapted).adaptation or {}
    print(
        f"adapted model: {adapted}\n"
        f"  {a.get('steps')} steps on {a.get('sentences')} sentences ({a.get('mlm')}), "
        f"{a.get('rows_changed')} embedding rows changed, {a.get('seconds')} s"
    )
    print(adapt_ending(args.no_reencode, decision))
    return 0


def adapt_ending(no_reencode: bool, decision: dict | None) -> str:
    """What ``sparcdesk adapt`` says after the adaptation: the self-check's decision (both
    figures, switched or kept and where), or that the re-encoded index answers now."""
    if no_reencode:
        return "  'sparcdesk index' re-encodes your files with it"
    if decision:
        return "  " + switch_report(decision).replace("\n", "\n  ")
    return "  answers now come from the re-encoded index; 'sparcdesk restore' undoes it"


def cmd_restore(args) -> int:
    engine = open_engine(args)
    try:
        done = engine.restore_model(progress=ProgressBar(disable=args.quiet))
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


def add_adapt(sub, common: argparse.ArgumentParser) -> None:
    """The ``adapt`` sub-command's options."""
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
    s.add_argument(
        "--always",
        action="store_true",
        help="switch to the adapted model whatever the self-check finds (default: only when it is"
        " better on your files by more than the interval)",
    )
    s.set_defaults(func=cmd_adapt)


def add_restore(sub, common: argparse.ArgumentParser) -> None:
    """The ``restore`` sub-command."""
    s = sub.add_parser(
        "restore", parents=[common], help="go back to the model and index used before the last switch"
    )
    s.set_defaults(func=cmd_restore)
