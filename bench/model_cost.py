"""The cost side of the default-model rule (issue 34, rule 1), in one run: ``bench.indexing``
on the same corpus with the old and the new bundle back to back, same threads, and the ratio
of their end-to-end rates and the whole data folder's bytes per sentence.

    .venv/bin/python -m bench.model_cost --old assets/sparc-tiny-0.3.0 --new assets/sparc-tiny \\
        --sentences 100000 --threads 2 --note "nothing else running"

Writes each run's ``indexing-<stamp>.json`` and ``model-cost-<stamp>.json`` (both runs, the
ratio and the rule's verdict) to bench/results.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import harness, indexing

ROOT = Path(__file__).resolve().parents[1]
#: Rule 1 of issue 34: the whole data folder at most this many bytes per indexed sentence ...
MAX_BYTES_PER_SENTENCE = 1024
#: ... and end-to-end indexing at least this many times the old bundle's rate.
MIN_SPEEDUP = 1.5


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, required=True, help="the bundle shipped so far")
    ap.add_argument("--new", type=Path, required=True, help="the candidate")
    ap.add_argument("--sentences", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--note", default="", help="what else was running")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    recorder = harness.Run("model_cost", argv)
    common = ["--sentences", str(args.sentences), "--threads", str(args.threads), "--no-torch"]
    common += ["--no-encoder-rate", "--note", args.note, "--out", str(args.out)]
    runs = {name: indexing.main([*common, "--bundle", str(b)]) for name, b in (("old", args.old), ("new", args.new))}
    speedup = runs["new"]["end_to_end"]["sentences_per_s"] / runs["old"]["end_to_end"]["sentences_per_s"]
    per_sentence = {k: r["index"]["whole_bytes_per_sentence"] for k, r in runs.items()}
    out = {
        "old": str(args.old),
        "new": str(args.new),
        "sentences": args.sentences,
        "threads": args.threads,
        "note": args.note,
        "rates": {k: r["end_to_end"]["sentences_per_s"] for k, r in runs.items()},
        "speedup": speedup,
        "whole_bytes_per_sentence": per_sentence,
        "parts_bytes_per_sentence": {k: r["index"]["parts_bytes_per_sentence"] for k, r in runs.items()},
        "nonzeros_median": {k: r["nonzeros_per_sentence"]["median"] for k, r in runs.items()},
        "passes": speedup >= MIN_SPEEDUP and per_sentence["new"] <= MAX_BYTES_PER_SENTENCE,
    }
    path = recorder.save("model-cost", out, folder=args.out)
    print(
        f"new / old end-to-end rate: {speedup:.2f} x (need {MIN_SPEEDUP}); whole folder bytes/sentence: "
        f"old {per_sentence['old']:.0f}, new {per_sentence['new']:.0f} (need <= {MAX_BYTES_PER_SENTENCE}); "
        f"rule 1 {'passes' if out['passes'] else 'fails'}; wrote {path}"
    )
    return out


if __name__ == "__main__":
    main()
