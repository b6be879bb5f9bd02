"""Learning curve: SQuAD-dev MRR of every kept checkpoint of a training run.

Each ``step-N.pt`` is exported to an int8 bundle under ``--work`` and evaluated on a pool in
the generic format (SPARC only; the baselines do not change with training steps). Results
are appended to ``--json`` as they come, so an interrupted run resumes where it stopped.

    sparcdesk-train curve --run runs/train --sentences runs/pools/squad-dev/sentences.jsonl \\
        --questions runs/pools/squad-dev/questions.jsonl --json runs/curve.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.model.features import DEFAULT_MAX_LENGTH
from trainer.evaluate import run_evaluation
from trainer.export import export_bundle


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    found = [(int(p.stem.split("-")[1]), p) for p in run.glob("step-*.pt")]
    return sorted(found)


def evaluate_checkpoint(
    ckpt: Path,
    bundle: Path,
    sentences: Path,
    questions: Path,
    limit: int | None,
    max_length: int = DEFAULT_MAX_LENGTH,
    prune_ratio: float = 0.0,
    threads: int | None = None,
) -> dict:
    cfg = export_bundle(ckpt, bundle, max_length=max_length, prune_ratio=prune_ratio)
    report = run_evaluation(
        sentences, questions, model_dir=bundle, baselines=[], limit=limit, latency_sample=20, threads=threads
    )
    row = report["results"][0]
    return {
        "step": cfg["training_steps"],
        "exp_w": cfg["exp_w"],
        "mrr@1000": row["mrr@1000"],
        "r@1": row["r@1"],
        "r@10": row["r@10"],
        "median_nnz": row["median_nnz"],
        "n_questions": report["n_questions"],
        "max_length": max_length,
        "prune_ratio": prune_ratio,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", type=Path, required=True, help="training run folder with step-N.pt files")
    p.add_argument("--sentences", type=Path, default=Path("runs/pools/squad-dev/sentences.jsonl"))
    p.add_argument("--questions", type=Path, default=Path("runs/pools/squad-dev/questions.jsonl"))
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("runs/curve-bundles"))
    p.add_argument("--limit", type=int, default=None, help="first N questions only")
    p.add_argument("--steps", type=str, default=None, help="comma-separated steps (default: all kept)")
    p.add_argument(
        "--max-length",
        type=int,
        default=DEFAULT_MAX_LENGTH,
        help="tokens of sentence + context in the exported bundles (default: %(default)s)",
    )
    p.add_argument("--threads", type=int, default=None, help="encoder threads (default: the engine's)")
    p.add_argument(
        "--prune-ratio",
        type=float,
        default=0.0,
        help="the exported bundles' prune_ratio: keep weights >= this x the sentence's max",
    )


def run(args: argparse.Namespace) -> int:
    done = json.loads(args.json.read_text()) if args.json.is_file() else []
    seen = {r["step"] for r in done}
    wanted = {int(s) for s in args.steps.split(",")} if args.steps else None
    for step, ckpt in checkpoints(args.run):
        if step in seen or (wanted is not None and step not in wanted):
            continue
        row = evaluate_checkpoint(
            ckpt,
            args.work / args.run.name / f"step-{step}",
            args.sentences,
            args.questions,
            args.limit,
            args.max_length,
            args.prune_ratio,
            args.threads,
        )
        done.append(row)
        done.sort(key=lambda r: r["step"])
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(done, indent=2) + "\n")
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
