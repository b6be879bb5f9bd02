"""On-device adaptation benchmark: what ``sparcdesk adapt`` costs on a laptop-sized corpus.

SQuAD v1.1 dev paragraphs (../shared/data) are written as text files until about
``--sentences`` sentences and indexed with the shipped bundle (not timed); then
:meth:`engine.api.facade.Engine.adapt` runs with the defaults of ``sparcdesk adapt`` (500 masked-LM
steps, batch 32, Adam 5e-5, 15% masking, direct MLM) and re-encodes the corpus into a new
generation. Reported: seconds for the adaptation and for the re-encoding, seconds per
step, peak RSS of the process (sampled every 20 ms), rows of the matrix changed, and the
machine's load. Target (issue 4): <= 15 minutes and <= 3 GB on the 2-core machine.

    .venv/bin/python -m bench.adapt --sentences 10000 --threads 2

Writes bench/results/adapt-<timestamp>.json. Say what else ran next to any figure quoted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.indexing import SQUAD, PeakRSS, write_corpus  # noqa: E402
from engine.api.facade import Engine  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--vocab", action="store_true", help="also expand the vocabulary")
    p.add_argument("--keep", type=Path, default=None, help="keep the home here instead of a temp folder")
    args = p.parse_args(argv)
    if not SQUAD.exists():
        print(f"skipped: {SQUAD} is absent (the shared data folder is needed)", file=sys.stderr)
        return {}
    recorder = harness.Run("adapt", argv)
    work = Path(tempfile.mkdtemp(prefix="sparcdesk-adapt-bench-"))
    try:
        corpus = work / "corpus"
        corpus.mkdir()
        _sentences, _contexts, _groups, files = write_corpus(corpus, args.sentences)
        home = args.keep or work / "home"
        with Engine(home=home, threads=args.threads) as engine:
            t0 = time.perf_counter()
            engine.index([corpus])
            index_s = time.perf_counter() - t0
            marks: dict[str, float] = {}

            def on_adapt(pr) -> None:
                if pr.phase == "training" and "first_step" not in marks:
                    marks["first_step"] = time.perf_counter()
                if pr.phase == "writing":
                    marks.setdefault("trained", time.perf_counter())

            load_before = harness.load()
            with PeakRSS() as rss:
                t0 = time.perf_counter()
                bundle = engine.adapt(steps=args.steps, vocab_expansion=args.vocab, on_adapt=on_adapt)
                total_s = time.perf_counter() - t0
            cfg = json.loads((Path(bundle) / "config.json").read_text(encoding="utf-8"))
            a = cfg["adaptation"]
            status = engine.status()
        trained_at = marks.get("trained", t0 + a["seconds"])
        result = {
            "benchmark": "adapt",
            "corpus": {"files": files, "sentences_indexed": status["sentences"], "source": str(SQUAD.name)},
            "settings": {k: a[k] for k in ("steps", "batch_size", "lr", "mask_prob", "mlm", "softmax", "vocab_expansion")},
            "threads": args.threads,
            "index_seconds_before": round(index_s, 1),
            "adapt_seconds": a["seconds"],
            "seconds_per_step": round(a["train_seconds"] / max(args.steps, 1), 3),
            "reencode_seconds": round(total_s - (trained_at - t0), 1),
            "total_seconds": round(total_s, 1),
            "peak_rss_mb": round(rss.peak / 2**20),
            "rows_changed": a["rows_changed"],
            "corpus_tokens": a["corpus_tokens"],
            "vocabulary_expansion": a.get("vocabulary_expansion"),
            "generation_after": status["generation"],
            "target": {"total_seconds_max": 900, "peak_rss_mb_max": 3072},
            "passed": total_s <= 900 and rss.peak <= 3 * 2**30,
            # the load just around the adaptation; the harness adds the machine and the
            # environment before and after the whole run
            "machine": {"loadavg_before": list(load_before), "loadavg_after": list(harness.load())},
        }
        result = harness.with_header(result, recorder)
        out = harness.write_json(harness.result_path("adapt"), result)
        print(json.dumps(result, indent=1))
        print(f"written: {out}")
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
