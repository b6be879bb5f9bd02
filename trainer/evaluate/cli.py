"""``sparcdesk-train evaluate``: the command's arguments and its run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainer.evaluate.evaluation import BASELINES, SCORERS, format_table, parse_baselines, run_evaluation
from trainer.evaluate.sparc import load_sparse_encoder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sentences", required=True, type=Path, help="sentences.jsonl of the pool")
    parser.add_argument("--questions", required=True, type=Path, help="questions.jsonl of the pool")
    parser.add_argument("--model", type=Path, default=None, help="model bundle directory (SPARC row)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    parser.add_argument(
        "--baselines",
        default=",".join(BASELINES),
        help="comma-separated baselines to run: bm25,dense (default), or none",
    )
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N questions")
    parser.add_argument(
        "--idf",
        action="store_true",
        help="also score SPARC with each question token weighted by its IDF over the pool (the app's idf)",
    )
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also fuse SPARC with the app's BM25 as the app does (top 100 of each)",
    )
    parser.add_argument(
        "--fusion",
        default=None,
        help="with --hybrid: fusion method(s), comma-separated, of sum, minmax, rrf (default: the app's)",
    )
    parser.add_argument("--threads", type=int, default=None, help="encoder threads (default: the engine's)")
    parser.add_argument(
        "--prune-ratio",
        type=float,
        default=0.0,
        help="also drop SPARC weights below this x the sentence's max (on top of the bundle's prune_ratio)",
    )
    parser.add_argument(
        "--scorer",
        choices=SCORERS,
        default="index",
        help="rank the SPARC rows through the app's own index and search (index, the default: "
        "quantised, as the app ranks) or with the float CSR scorer (float: the tests' oracle)",
    )
    parser.add_argument(
        "--query-tokens",
        choices=("bundle", "unique", "counts"),
        default="bundle",
        help="a repeated question token counts once (unique) or per occurrence (counts); default: the bundle's",
    )
    parser.add_argument(
        "--query-weights",
        action="append",
        default=[],
        metavar="TABLE",
        help="add a row weighting question ids by this learned table (.npy or a bundle shipping one); repeatable",
    )
    parser.add_argument(
        "--query-weights-idf",
        action="append",
        default=[],
        metavar="TABLE",
        help="add a row weighting question ids by this table times the index's IDF; repeatable",
    )


def _fusions(text: str | None) -> list[str] | None:
    from engine.search.defaults import FUSIONS

    if not text:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in FUSIONS]
    if bad:
        raise SystemExit(f"--fusion: unknown {', '.join(bad)}; choose from {', '.join(FUSIONS)}")
    return names


def run(args: argparse.Namespace) -> int:
    baselines = parse_baselines(args.baselines)
    if args.model is None and not baselines:
        raise SystemExit("nothing to evaluate: give --model and/or --baselines")
    if args.model is not None and not Path(args.model).is_dir():
        raise SystemExit(f"--model {args.model}: not a directory")
    encoder = None
    if args.model is not None and args.query_tokens != "bundle":
        from engine.model.features import question_tokens

        encoder = load_sparse_encoder(args.model, threads=args.threads)
        unique = args.query_tokens == "unique"
        encoder.question_ids = lambda text: question_tokens(encoder.tokenizer, text, unique=unique)
    report = run_evaluation(
        args.sentences,
        args.questions,
        model_dir=args.model,
        baselines=baselines,
        limit=args.limit,
        encoder=encoder,
        log=lambda msg: print(msg, file=sys.stderr),
        idf=args.idf,
        hybrid=args.hybrid,
        threads=args.threads,
        fusions=_fusions(args.fusion),
        prune_ratio=args.prune_ratio,
        scorer=getattr(args, "scorer", "index"),
        query_weights=getattr(args, "query_weights", []),
        query_weights_idf=getattr(args, "query_weights_idf", []),
    )
    report["query_tokens"] = args.query_tokens
    report["prune_ratio"] = args.prune_ratio
    print(format_table(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
