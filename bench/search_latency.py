"""Question latency of the sentence index (exact SPARC scoring from its column store)
against the brute-force oracle, at 100k and 1M sentences.

    python -m bench.search_latency --sentences 100000 --sentences 1000000 --queries 200 \
        [--npz runs/cache/sparc-sparc-tiny-<hash>.npz] [--top-k 1000] [--workdir /tmp/sparcdesk-bench]

For each corpus size it builds (or resumes building) an index of synthetic SPARC-shaped
vectors (bench/synthetic.py; ``--npz`` fits token popularity, non-zero counts and weight
profiles to real encoder output, e.g. the shipped model's vectors of SQuAD dev that the
evaluation cache holds), times questions on the index, then builds the oracle from the same
vectors and times the same questions on it, checks that both agree on the top 10, measures
the quantiser's recall against float scores (up to ``--recall-max``), and prints a table and
writes JSON to ``bench/results/``. Peak RSS is recorded for the index timing phase alone
(the high-water mark is reset before it) and for the whole run (which includes the oracle).

Building is resumable: vectors are generated in fixed-size chunks with per-chunk seeds, kept
as .npy files beside the index (the oracle re-reads them instead of regenerating), and each
chunk is committed, so an interrupted build continues from the last committed chunk.
Indexes live under ``--workdir`` (never inside the repository).

Timings on a shared machine are only meaningful with the load next to them: the JSON and
the table record the load average and the other processes that used CPU during the run
(e.g. a training job).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.synthetic import VectorModel, sample_questions
from engine.index.columns import COLUMNS_DIR
from engine.index.oracle import BruteForceOracle
from engine.index.quantize import Quantizer
from engine.index.sentences import IndexFilters, SentenceIndex, SentenceRecord
from engine.model.sparse import SparseVector

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


def _vmhwm_mb() -> float:
    """Peak resident memory of this process since the last reset (Linux), else ru_maxrss."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


@dataclass
class Built:
    index_dir: Path
    chunks_dir: Path
    build_seconds: float
    generate_seconds: float
    resumed_from: int
    quantizer: Quantizer
    notes: list[str] = field(default_factory=list)


def _chunk(model: VectorModel, seed: int, i: int, size: int, cache: Path) -> tuple[np.ndarray, ...]:
    """CSR ``(indptr, ids, weights)`` of chunk ``i``, generated once and kept in ``cache``."""
    f = cache / f"c{i:05d}.npz"
    if f.exists():
        with np.load(f) as d:
            return d["indptr"], d["ids"], d["weights"]
    out = model.sample_batch(size, seed=seed * 1_000_003 + i)
    tmp = cache / f"c{i:05d}.tmp.npz"
    np.savez(tmp, indptr=out[0], ids=out[1], weights=out[2])
    os.replace(tmp, f)
    return out


def _vectors(indptr: np.ndarray, ids: np.ndarray, weights: np.ndarray) -> list[SparseVector]:
    return [SparseVector(ids[a:b], weights[a:b]) for a, b in zip(indptr[:-1], indptr[1:], strict=True)]


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
    n: int, model: VectorModel, tag: str, workdir: Path, seed: int, log: Callable[[str], None]
) -> Built:
    """Build (or resume) the index of ``n`` synthetic sentences under ``workdir``."""
    name = f"cols-n{n}-{tag}-s{seed}"
    index_dir, state_file = workdir / name, workdir / f"{name}.json"
    chunks_dir = workdir / f"chunks-{tag}-s{seed}"  # chunk i is the same for every n
    chunks_dir.mkdir(parents=True, exist_ok=True)
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    chunks = (n + CHUNK - 1) // CHUNK
    if index_dir.exists() and state:
        idx = SentenceIndex.open(index_dir, writable=True, writer_heap=512_000_000)
    else:
        shutil.rmtree(index_dir, ignore_errors=True)
        first = _chunk(model, seed, 0, min(CHUNK, n), chunks_dir)
        idx = SentenceIndex.create(index_dir, Quantizer.fit(first[2]), writer_heap=512_000_000)
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
        vectors = _vectors(*_chunk(model, seed, c, size, chunks_dir))
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
    return Built(
        index_dir, chunks_dir, state["build_seconds"], state["generate_seconds"], resumed_from, quantizer
    )


def build_oracle(n: int, built: Built, vocab: int, keep_float: bool) -> BruteForceOracle:
    """The oracle of the same vectors, assembled column-wise chunk by chunk (two passes over
    the cached chunks), so the peak is the final matrix, not several copies of it."""
    chunks = (n + CHUNK - 1) // CHUNK
    counts = np.zeros(vocab, dtype=np.int64)
    for c in range(chunks):
        with np.load(built.chunks_dir / f"c{c:05d}.npz") as d:
            counts += np.bincount(d["ids"], minlength=vocab)[:vocab]
    indptr = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    rows = np.empty(nnz, dtype=np.int32)
    levels = np.empty(nnz, dtype=np.uint8)
    floats = np.empty(nnz, dtype=np.float32) if keep_float else None
    cursor = indptr[:-1].copy()
    for c in range(chunks):
        with np.load(built.chunks_dir / f"c{c:05d}.npz") as d:
            ip, ids, w = d["indptr"], d["ids"].astype(np.int64), d["weights"]
        r = np.repeat(np.arange(c * CHUNK, c * CHUNK + ip.shape[0] - 1, dtype=np.int32), np.diff(ip))
        order = np.argsort(ids.astype(np.uint16) if vocab <= 1 << 16 else ids, kind="stable")
        t = ids[order]
        cnt = np.bincount(t, minlength=vocab)
        start = np.zeros(vocab, dtype=np.int64)
        np.cumsum(cnt[:-1], out=start[1:])
        pos = cursor[t] + (np.arange(t.shape[0]) - start[t])
        rows[pos] = r[order]
        levels[pos] = built.quantizer.levels(w[order])
        if floats is not None:
            floats[pos] = w[order]
        cursor += cnt
    shape = (n, vocab)
    lv = sp.csc_matrix((levels, rows, indptr), shape=shape)
    fw = sp.csc_matrix((floats, rows, indptr), shape=shape) if floats is not None else None
    return BruteForceOracle(np.arange(n), lv, built.quantizer, fw)


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


def _run_variants(
    questions: list[list[int]], variants: dict[str, Callable[[list[int]], Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every variant of one question back to back, so load changes hit all alike."""
    lat: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for q in questions:
        for name, fn in variants.items():
            lat[name].append(_time(lambda fn=fn, q=q: fn(q), cpu[name])[0])
    return {k: _percentiles(v) for k, v in lat.items()}, {k: _percentiles(v) for k, v in cpu.items()}


def run_size(
    n: int, args: argparse.Namespace, model: VectorModel, tag: str, log: Callable[[str], None]
) -> dict[str, Any]:
    """Build, time and check one corpus size; returns the JSON-able result."""
    log(f"== {n:,} sentences ({tag})")
    built = build(n, model, tag, Path(args.workdir), args.seed, log)
    _reset_peak_rss()
    rss0 = _vmhwm_mb()
    idx = SentenceIndex.open(built.index_dir)
    size = _dir_bytes(built.index_dir)
    col_size = _dir_bytes(built.index_dir / COLUMNS_DIR)
    first = _chunk(model, args.seed, 0, min(CHUNK, n), built.chunks_dir)
    questions = sample_questions(_vectors(*first)[:2000], args.queries, seed=args.seed + 1)
    q_len = [len(set(q)) for q in questions]
    segs = idx._view.columns.segments
    nnz = int(first[0][-1]) / (first[0].shape[0] - 1)

    result: dict[str, Any] = {
        "sentences": n,
        "vectors": tag,
        "mean_nnz": nnz,
        "top_k": args.top_k,
        "column_segments": len(segs),
        "dense_tokens_per_segment": [int(s.dense.shape[0]) for s in segs],
        "tantivy_segments": idx.num_segments,
        "index_bytes": size,
        "bytes_per_sentence": size / n,
        "column_bytes_per_sentence": col_size / n,
        "tantivy_bytes_per_sentence": (size - col_size) / n,
        "build_seconds": built.build_seconds,
        "build_sentences_per_second": n / max(built.build_seconds, 1e-9),
        "generate_seconds": built.generate_seconds,
        "resumed_from": built.resumed_from,
        "question_tokens": {"min": min(q_len), "median": statistics.median(q_len), "max": max(q_len)},
        "quantizer": built.quantizer.to_dict(),
    }

    # Warm-up: the first touches of the memory-mapped columns come from disk.
    log("  timing the index")
    t0 = time.perf_counter()
    for q in questions[:20]:
        idx.search(q, args.top_k)
    result["warmup_seconds_20_questions"] = time.perf_counter() - t0
    kind = IndexFilters(kinds=["mail"])
    idx.search(questions[0], 10, filters=kind)  # the filter's id set is cached per commit
    variants: dict[str, Callable[[list[int]], Any]] = {
        "plain": lambda q: idx.search(q, args.top_k),
        "idf": lambda q: idx.search(q, args.top_k, idf=True),
        "plain_top10": lambda q: idx.search(q, 10),
        "filter_kind": lambda q: idx.search(q, args.top_k, filters=kind),
    }
    result["index_ms"], result["index_cpu_ms"] = _run_variants(questions, variants)
    result["index_peak_rss_mb"] = _vmhwm_mb()
    result["rss_before_open_mb"] = rss0

    if n <= args.oracle_max:
        log("  building the oracle")
        keep_float = n <= args.recall_max
        t0 = time.perf_counter()
        oracle = build_oracle(n, built, args.vocab, keep_float)
        result["oracle_build_seconds"] = time.perf_counter() - t0
        idfs = {tuple(q): idx.idf(q) for q in questions}
        log("  timing the oracle")
        result["oracle_ms"], result["oracle_cpu_ms"] = _run_variants(
            questions,
            {
                "plain": lambda q: oracle.score(q, None, args.top_k),
                "idf": lambda q: oracle.score(q, idfs[tuple(q)], args.top_k),
            },
        )
        log("  checking exactness and recall")
        mismatches = 0
        recall: dict[str, list[float]] = {"plain@10": [], "idf@10": [], "plain@100": [], "idf@100": []}
        for q in questions:
            idf = idfs[tuple(q)]
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
        del oracle
    else:
        result["oracle_ms"] = None
        built.notes.append(f"oracle skipped above --oracle-max {args.oracle_max:,} sentences (memory)")
    result["run_peak_rss_mb"] = _vmhwm_mb()
    result["notes"] = built.notes
    return result


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'sentences':>10} {'vectors':>10} {'nnz':>5} {'seg':>4} {'bytes/sent':>10} {'build s':>8} "
        f"{'idx p50':>7} {'idx p95':>7} {'cpu p50':>7} {'idf p50':>7} {'idf p95':>7} {'top10':>6} "
        f"{'filt p50':>8} {'orc p50':>8} {'orc p95':>8} {'mismatch':>8} {'R@10':>6} {'RSS MB':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        t = r["index_ms"]
        o = r.get("oracle_ms") or {}
        rec = r.get("recall_vs_float", {}).get("plain@10")
        lines.append(
            f"{r['sentences']:>10,} {r['vectors'][:10]:>10} {r['mean_nnz']:>5.0f} {r['column_segments']:>4} "
            f"{r['bytes_per_sentence']:>10.0f} {r['build_seconds']:>8.0f} "
            f"{t['plain']['p50']:>7.2f} {t['plain']['p95']:>7.2f} {r['index_cpu_ms']['plain']['p50']:>7.2f} "
            f"{t['idf']['p50']:>7.2f} {t['idf']['p95']:>7.2f} {t['plain_top10']['p50']:>6.2f} "
            f"{t['filter_kind']['p50']:>8.2f} "
            f"{(o.get('plain') or {}).get('p50', float('nan')):>8.2f} "
            f"{(o.get('plain') or {}).get('p95', float('nan')):>8.2f} "
            f"{r.get('top10_mismatches', '-')!s:>8} {'' if rec is None else f'{rec:.4f}':>6} "
            f"{r['index_peak_rss_mb']:>7.0f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, action="append", help="corpus size (repeatable)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=1000)
    ap.add_argument("--npz", help="real vectors (CSR npz) to fit the synthetic model to")
    ap.add_argument("--workdir", default="/tmp/sparcdesk-bench")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=30522, help="oracle columns (token ids are below this)")
    ap.add_argument(
        "--oracle-max", type=int, default=1_000_000, help="largest corpus to build the oracle for"
    )
    ap.add_argument(
        "--recall-max", type=int, default=100_000, help="largest corpus to measure float recall on"
    )
    ap.add_argument("--note", default="", help="free text stored with the results")
    args = ap.parse_args(argv)
    sizes = args.sentences or [100_000]
    Path(args.workdir).mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    if args.npz:
        model = VectorModel.from_npz(args.npz)
        tag = "npz-" + hashlib.sha1(Path(args.npz).read_bytes()).hexdigest()[:8]
    else:
        model, tag = VectorModel.zipf(seed=args.seed), "zipf"
    env_before = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    log(f"load average {env_before['loadavg']}; busy processes: {env_before['busy'] or 'none'}")
    rows = [run_size(n, args, model, tag, log) for n in sizes]
    env_after = {"loadavg": os.getloadavg(), "busy": _busy_processes()}
    out = {
        "command": "python -m bench.search_latency " + " ".join(argv or sys.argv[1:]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "vectors": f"npz {args.npz} ({tag})" if args.npz else "synthetic Zipf(0.9), median nnz 1000",
        "environment": {"before": env_before, "after": env_after},
        "note": args.note,
        "results": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"search_latency-{'-'.join(str(n) for n in sizes)}-{tag}-{stamp}.json"
    path.write_text(json.dumps(out, indent=1))
    print()
    print(_table(rows))
    print(
        f"\nmilliseconds per question; top_k={args.top_k}; {args.queries} questions; RSS = index timing peak"
    )
    print(f"other load: before {env_before['loadavg']} {env_before['busy']}")
    print(f"            after  {env_after['loadavg']} {env_after['busy']}")
    print(f"written {path}")


if __name__ == "__main__":
    main()
