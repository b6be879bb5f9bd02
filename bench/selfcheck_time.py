"""How long the self-check takes on a laptop-sized mailbox (issue 38: at most 30 s at 100k
sentences on 2 cores), and whether it gives the same figure twice.

    python -m bench.selfcheck_time --sentences 100000 [--runs 3] [--questions 240]

Writes Enron messages (``email/enron-messages.jsonl.gz``, in file order) as .eml files under
``--work`` until the indexed home holds ``--sentences`` sentences (header lines included, as
the app indexes them), then times ``Engine.selfcheck()`` ``--runs`` times on it, each on a
fresh engine (nothing cached between runs). JSON in bench/results/ with the machine and load.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Sequence
from pathlib import Path

from bench import harness
from bench.product.data import DATA, enron_eml
from engine.search import selfcheck as sc

#: Messages written per round until the home holds enough sentences.
STEP = 1000


def messages() -> list[dict]:
    with gzip.open(DATA / "email" / "enron-messages.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_home(work: Path, sentences: int, threads: int) -> tuple[Path, int]:
    """A home of at least ``sentences`` sentences (resumed where a previous run stopped)."""
    from engine.api.facade import Engine

    folder, home = work / "mail", work / "home"
    folder.mkdir(parents=True, exist_ok=True)
    rows = messages()
    done = [int(f.stem) for f in folder.glob("*.eml")]
    pos = max(done) + 1 if done else 0  # rows consumed (a row without a sender writes no file)
    eng = Engine(home, threads=threads)
    if not eng.sources():
        eng.add_source(folder)
    eng.index(None)
    while eng.status()["sentences"] < sentences and pos < len(rows):
        for i in range(pos, min(pos + STEP, len(rows))):
            try:
                (folder / f"{i:05d}.eml").write_bytes(enron_eml(rows[i]))
            except AssertionError:  # no sender address
                continue
        pos = min(pos + STEP, len(rows))
        eng.index(None)
        print(f"  {pos} messages read, {eng.status()['sentences']:,} sentences", flush=True)
    n = int(eng.status()["sentences"])
    eng.close()
    return home, n


def main(argv: Sequence[str] | None = None) -> dict:
    from engine.api.facade import Engine

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sentences", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--questions", type=int, default=sc.QUESTIONS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", default="runs/selfcheck-time")
    args = p.parse_args(argv)
    if not DATA.exists():
        raise SystemExit(f"{DATA} is absent: this benchmark needs ../shared/data")
    run = harness.Run("selfcheck_time", argv)
    t0 = time.perf_counter()
    home, n = build_home(Path(args.work).resolve(), args.sentences, args.threads)
    build_s = time.perf_counter() - t0
    results = []
    for i in range(args.runs):
        eng = Engine(home, threads=args.threads)
        t = time.perf_counter()
        check = eng.selfcheck(args.questions, save=False)
        wall = time.perf_counter() - t
        eng.close()
        results.append({"seconds": round(wall, 2), "hit1": check.hit1, "mrr10": check.mrr10, "questions": check.questions, "by_kind": check.by_kind})
        print(f"run {i + 1}: {wall:.1f} s, {check.line()}", flush=True)
    same = len({(r["hit1"], r["mrr10"]) for r in results}) == 1
    payload = {
        "sentences": n,
        "build_s": round(build_s, 1),
        "questions": args.questions,
        "runs": results,
        "same_figure_every_run": same,
        "max_seconds": max(r["seconds"] for r in results),
        "bound_s": 30,
    }
    print(f"{n:,} sentences: self-check {min(r['seconds'] for r in results):.1f}–{payload['max_seconds']:.1f} s; same figure every run: {same}")
    print(f"saved {run.save('selfcheck_time', payload)}")
    return payload


if __name__ == "__main__":
    main()
