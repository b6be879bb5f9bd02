"""Question latency of the tantivy sentence index against the brute-force oracle.

    python -m bench.search_latency --sentences 100000 [--sentences 1000000] --queries 200
        [--npz real_vectors.npz] [--base 16] [--top-k 1000] [--workdir /tmp/sparcdesk-bench]

For each corpus size it builds (or resumes building) an index of synthetic SPARC-shaped
vectors (bench/synthetic.py; ``--npz`` fits token popularity, non-zero counts and weight
profiles to real encoder output), then times the same questions on the index and on the
oracle, checks that both agree on the top 10, measures the quantiser's recall against float
scores, and prints a table and writes JSON to ``bench/results/``.

Building is resumable: vectors are generated in fixed-size chunks with per-chunk seeds and
each chunk is committed, so an interrupted build continues from the last committed chunk.
Indexes live under ``--workdir`` (never inside the repository).

Timings on a shared machine are only meaningful with the load next to them: the JSON and
the table record the load average and the other processes that used CPU during the run
(e.g. a training job).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.synthetic import VectorModel, sample_questions
from engine.index import SentenceIndex, SentenceRecord
from engine.oracle import BruteForceOracle
from engine.quantize import Quantizer
from engine.sparse import SparseVector

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 20_000


def _percentiles(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=np.float64)
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }


def _busy_processes(min_cpu: float = 15.0) -> list[str]:
    """Other processes using CPU right now (name and command line, shortened)."""
    try:
        import psutil
    except ImportError:
        return ["(psutil not installed)"]
    procs = list(psutil.process_iter(["pid", "cmdline", "name"]))
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.cpu_percent(None)
    time.sleep(1.0)
    out: list[str] = []
    me = os.getpid()
    for p in procs:
        try:
            cpu = p.cpu_percent(None)
            if p.pid != me and cpu >= min_cpu:
                cmd = " ".join(p.info["cmdline"] or [p.info["name"] or "?"])
                out.append(f"{cpu:.0f}% {cmd[:120]}")
        except psutil.Error:
            pass
    return out


@dataclass
class Built:
    index_dir: Path
    build_seconds: float
    generate_seconds: float
    resumed_from: int
    quantizer: Quantizer
    notes: list[str] = field(default_factory=list)


def _chunk_vectors(model: VectorModel, seed: int, i: int, size: int) -> list[SparseVector]:
    return model.sample(size, seed=seed * 1_000_003 + i)


def _records(start: int, n: int) -> list[SentenceRecord]:
    kinds = ("pdf", "mail", "docx", "txt")
    return [
        SentenceRecord(
            doc_key=f"doc-{(start + j) // 8}",
            text="",
            position=(start + j) % 8,
            path=f"/bench/folder{((start + j) // 8) % 50}/doc-{(start + j) // 8}.txt",
            kind=kinds[((start + j) // 8) % 4],
            date=978_307_200 + (start + j) * 60,
            sentence_id=start + j,
        )
        for j in range(n)
    ]


def build(
    n: int, model: VectorModel, workdir: Path, base: int, seed: int, threads: int, log: Callable[[str], None]
) -> Built:
    """Build (or resume) the index of ``n`` synthetic sentences under ``workdir``."""
    index_dir = workdir / f"n{n}-b{base}-s{seed}"
    state_file = workdir / f"n{n}-b{base}-s{seed}.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    chunks = (n + CHUNK - 1) // CHUNK
    if index_dir.exists() and state:
        idx = SentenceIndex.open(index_dir, writable=True, writer_heap=512_000_000, writer_threads=threads)
    else:
        shutil.rmtree(index_dir, ignore_errors=True)
        first = _chunk_vectors(model, seed, 0, min(CHUNK, n))
        quantizer = Quantizer.fit(np.concatenate([v.weights for v in first]))
        idx = SentenceIndex.create(
            index_dir, quantizer, base=base, writer_heap=512_000_000, writer_threads=threads
        )
        state = {"build_seconds": 0.0, "generate_seconds": 0.0}
    done = idx.num_sentences
    if done % CHUNK and done != n:
        raise SystemExit(f"{index_dir}: {done} sentences is not a whole number of chunks; delete it")
    resumed_from = done
    if done:
        log(f"  resuming at {done:,} of {n:,} sentences")
    for c in range(done // CHUNK, chunks):
        size = min(CHUNK, n - c * CHUNK)
        t0 = time.perf_counter()
        vectors = _chunk_vectors(model, seed, c, size)
        t1 = time.perf_counter()
        idx.add(_records(c * CHUNK, size), vectors)
        idx.commit()
        t2 = time.perf_counter()
        state["generate_seconds"] += t1 - t0
        state["build_seconds"] += t2 - t1
        state_file.write_text(json.dumps(state))
        log(
            f"  {c * CHUNK + size:>9,} / {n:,} sentences  "
            f"(index {state['build_seconds']:.0f} s, generate {state['generate_seconds']:.0f} s)"
        )
    t0 = time.perf_counter()
    idx.wait_merging_threads()
    state["build_seconds"] += time.perf_counter() - t0
    state_file.write_text(json.dumps(state))
    quantizer = idx.quantizer
    idx.close()
    return Built(index_dir, state["build_seconds"], state["generate_seconds"], resumed_from, quantizer)


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _time(fn: Callable[[], Any], cpu: list[float] | None = None) -> tuple[float, Any]:
    """Wall milliseconds of ``fn()``; appends this thread's CPU milliseconds to ``cpu`` (CPU
    time is what a question costs on an idle machine: it ignores waiting for a core)."""
    c0 = time.thread_time()
    t0 = time.perf_counter()
    out = fn()
    wall = (time.perf_counter() - t0) * 1000.0
    if cpu is not None:
        cpu.append((time.thread_time() - c0) * 1000.0)
    return wall, out


def run_size(
    n: int, args: argparse.Namespace, model: VectorModel, log: Callable[[str], None]
) -> dict[str, Any]:
    """Build, time and check one corpus size; returns the JSON-able result."""
    log(f"== {n:,} sentences (base {args.base})")
    built = build(n, model, Path(args.workdir), args.base, args.seed, args.threads, log)
    idx = SentenceIndex.open(built.index_dir)
    size = _dir_bytes(built.index_dir)
    qvecs = _chunk_vectors(model, args.seed, 0, min(CHUNK, n))
    questions = sample_questions(qvecs, args.queries, seed=args.seed + 1)
    q_len = [len(set(q)) for q in questions]

    result: dict[str, Any] = {
        "sentences": n,
        "base": args.base,
        "top_k": args.top_k,
        "segments": idx.num_segments,
        "index_bytes": size,
        "bytes_per_sentence": size / n,
        "build_seconds": built.build_seconds,
        "build_sentences_per_second": n / max(built.build_seconds, 1e-9),
        "generate_seconds": built.generate_seconds,
        "resumed_from": built.resumed_from,
        "question_tokens": {"min": min(q_len), "median": statistics.median(q_len), "max": max(q_len)},
        "quantizer": built.quantizer.to_dict(),
    }

    oracle: BruteForceOracle | None = None
    keep_float = n <= args.recall_max
    if n <= args.oracle_max:
        log("  building the oracle")
        vectors: list[SparseVector] = []
        for c in range((n + CHUNK - 1) // CHUNK):
            vectors += _chunk_vectors(model, args.seed, c, min(CHUNK, n - c * CHUNK))
        oracle = BruteForceOracle.from_vectors(np.arange(n), vectors, built.quantizer, keep_float=keep_float)
        del vectors
    else:
        built.notes.append(f"oracle skipped above --oracle-max {args.oracle_max:,} sentences (memory)")

    # Warm-up (page cache, per-token term lists), then every variant of one question runs
    # back to back, so load changes on a shared machine hit all variants alike.
    log("  timing")
    for q in questions[:20]:
        idx.search(q, args.top_k)
    variants: dict[str, Callable[[list[int], dict[int, float]], Any]] = {
        "cold": lambda q, idf: (idx.clear_caches(), idx.search(q, args.top_k)),
        "plain": lambda q, idf: idx.search(q, args.top_k),
        "idf": lambda q, idf: idx.search(q, args.top_k, idf=True),
        "plain_top10": lambda q, idf: idx.search(q, 10),
    }
    if oracle is not None:
        variants["oracle_plain"] = lambda q, idf: oracle.score(q, None, args.top_k)
        variants["oracle_idf"] = lambda q, idf: oracle.score(q, idf, args.top_k)
    lat: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for q in questions:
        idf = idx.idf(q)
        for name, fn in variants.items():
            lat[name].append(_time(lambda fn=fn, q=q, idf=idf: fn(q, idf), cpu[name])[0])
    result["tantivy_ms"] = {k: _percentiles(v) for k, v in lat.items() if not k.startswith("oracle")}
    result["tantivy_cpu_ms"] = {k: _percentiles(v) for k, v in cpu.items() if not k.startswith("oracle")}
    result["oracle_ms"] = None
    if oracle is not None:
        result["oracle_ms"] = {k[7:]: _percentiles(v) for k, v in lat.items() if k.startswith("oracle")}
        result["oracle_cpu_ms"] = {k[7:]: _percentiles(v) for k, v in cpu.items() if k.startswith("oracle")}

        log("  checking exactness and recall")
        mismatches = 0
        recall: dict[str, list[float]] = {"plain@10": [], "idf@10": [], "plain@100": [], "idf@100": []}
        for q in questions:
            idf = idx.idf(q)
            for w in (None, idf):
                o_ids, o_sc = oracle.score(q, w, 100)
                hits = idx.search(q, 10, idf=w)
                if [h.sentence_id for h in hits] != o_ids[:10].tolist() or [h.score for h in hits] != o_sc[
                    :10
                ].tolist():
                    mismatches += 1
                if keep_float:
                    f_ids, _ = oracle.float_score(q, w, 100)
                    name = "plain" if w is None else "idf"
                    for k in (10, 100):
                        recall[f"{name}@{k}"].append(
                            len(set(f_ids[:k]) & set(o_ids[:k])) / max(1, len(f_ids[:k]))
                        )
        result["top10_mismatches"] = mismatches
        result["top10_checked"] = 2 * len(questions)
        if keep_float:
            result["recall_vs_float"] = {k: float(np.mean(v)) for k, v in recall.items()}
    result["notes"] = built.notes
    return result


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'sentences':>10} {'B':>4} {'seg':>4} {'bytes/sent':>10} {'build s':>8} "
        f"{'tv p50':>7} {'tv p95':>7} {'cpu p50':>7} {'cpu p95':>7} {'idf p50':>7} {'idf p95':>7} "
        f"{'cold p50':>8} {'top10 p50':>9} "
        f"{'orc p50':>8} {'orc p95':>8} {'mismatch':>8} {'R@10':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        t = r["tantivy_ms"]
        o = r.get("oracle_ms") or {}
        rec = r.get("recall_vs_float", {}).get("plain@10")
        lines.append(
            f"{r['sentences']:>10,} {r['base']:>4} {r['segments']:>4} {r['bytes_per_sentence']:>10.0f} "
            f"{r['build_seconds']:>8.0f} {t['plain']['p50']:>7.2f} {t['plain']['p95']:>7.2f} "
            f"{r['tantivy_cpu_ms']['plain']['p50']:>7.2f} {r['tantivy_cpu_ms']['plain']['p95']:>7.2f} "
            f"{t['idf']['p50']:>7.2f} {t['idf']['p95']:>7.2f} {t['cold']['p50']:>8.2f} "
            f"{t['plain_top10']['p50']:>9.2f} "
            f"{(o.get('plain') or {}).get('p50', float('nan')):>8.2f} "
            f"{(o.get('plain') or {}).get('p95', float('nan')):>8.2f} "
            f"{r.get('top10_mismatches', '-')!s:>8} {'' if rec is None else f'{rec:.4f}':>6}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, action="append", help="corpus size (repeatable)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=1000)
    ap.add_argument(
        "--base", type=int, default=16, help="impact-term digit base (16..256; 256 = one term per level)"
    )
    ap.add_argument("--npz", help="real vectors (CSR: indptr, ids, weights) to fit the synthetic model to")
    ap.add_argument("--workdir", default="/tmp/sparcdesk-bench")
    ap.add_argument("--threads", type=int, default=1, help="tantivy writer threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--oracle-max", type=int, default=300_000, help="largest corpus to build the oracle for")
    ap.add_argument(
        "--recall-max", type=int, default=100_000, help="largest corpus to measure float recall on"
    )
    ap.add_argument("--note", default="", help="free text stored with the results")
    args = ap.parse_args(argv)
    sizes = args.sentences or [100_000]
    Path(args.workdir).mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    model = VectorModel.from_npz(args.npz) if args.npz else VectorModel.zipf(seed=args.seed)
    env_before = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    log(f"load average {env_before['loadavg']}; busy processes: {env_before['busy'] or 'none'}")
    rows = [run_size(n, args, model, log) for n in sizes]
    env_after = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    out = {
        "command": "python -m bench.search_latency " + " ".join(argv or sys.argv[1:]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "vectors": f"npz {args.npz}" if args.npz else "synthetic Zipf(0.9), median nnz 1000",
        "environment": {"before": env_before, "after": env_after},
        "note": args.note,
        "results": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"search_latency-{'-'.join(str(n) for n in sizes)}-b{args.base}-{stamp}.json"
    path.write_text(json.dumps(out, indent=1))
    print()
    print(_table(rows))
    print(f"\nmilliseconds per question; top_k={args.top_k}; {args.queries} questions")
    print(f"other load: before {env_before['loadavg']} {env_before['busy']}")
    print(f"            after  {env_after['loadavg']} {env_after['busy']}")
    print(f"written {path}")


if __name__ == "__main__":
    main()
