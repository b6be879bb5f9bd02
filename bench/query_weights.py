"""What a learned question weight table (``sparcdesk-train query-weights``) moved, on a pool's questions.

For each table: how many vocabulary ids differ from 1, the share of the pool's question ids
(each question's ids as the bundle cuts it, ``Bundle.question_ids``) that the table moved, how
many questions have every id moved, and the ids it weighs least and most. Ids no training
question held keep exactly 1, so the share says how much of an evaluation the table can reach.

    .venv/bin/python -m bench.query_weights --model BUNDLE TABLE [TABLE ...] \\
        [--questions runs/pools/squad-dev/questions.jsonl] [--show 12]

``TABLE`` is a ``.npy``, a ``query-weights --out`` folder or a bundle shipping one.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.model.bundle import Bundle
from trainer.evaluate import load_table
from trainer.pools import read_questions

DEFAULT_QUESTIONS = Path("runs/pools/squad-dev/questions.jsonl")


def describe(bundle: Bundle, table: np.ndarray, questions: Sequence[str], show: int = 12) -> dict:
    """Moved ids, their reach over ``questions`` and the extremes of ``table``."""
    tok = bundle.tokenizer()
    moved = table != 1.0
    bags = [bundle.question_ids(q) for q in questions]
    occurrences = sum(len(b) for b in bags)
    reached = sum(int(moved[t]) for b in bags for t in b)
    order = np.argsort(table, kind="stable")
    return {
        "moved_ids": int(moved.sum()),
        "question_ids_moved_pct": 100 * reached / max(occurrences, 1),
        "questions_wholly_moved": sum(bool(b) and all(moved[t] for t in b) for b in bags),
        "questions": len(bags),
        "range": [float(table.min()), float(table.max())],
        "lowest": [(tok.id_to_token(int(i)), round(float(table[i]), 2)) for i in order[:show]],
        "highest": [(tok.id_to_token(int(i)), round(float(table[i]), 2)) for i in order[::-1][:show]],
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, type=Path, help="the bundle whose tokenizer cuts the questions")
    p.add_argument("tables", nargs="+", help="tables: .npy, query-weights --out folders or bundles")
    p.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="questions.jsonl of a pool")
    p.add_argument("--show", type=int, default=12, help="ids shown at each end")
    args = p.parse_args(argv)
    bundle = Bundle.open(args.model)
    questions = [q.question for q in read_questions(args.questions)]
    for source in args.tables:
        table, where = load_table(source, bundle.vocab_size)
        d = describe(bundle, table, questions, args.show)
        print(
            f"{where}: {d['moved_ids']} ids moved; {d['question_ids_moved_pct']:.1f}% of the question ids "
            f"({d['questions_wholly_moved']} of {d['questions']} questions wholly); "
            f"range {d['range'][0]:.3f}..{d['range'][1]:.3f}"
        )
        print("  lowest: ", ", ".join(f"{t} {w}" for t, w in d["lowest"]))
        print("  highest:", ", ".join(f"{t} {w}" for t, w in d["highest"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
