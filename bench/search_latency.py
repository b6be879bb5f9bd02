"""Question latency of the sentence index (exact SPARC scoring from its column store)
against the brute-force oracle, at 100k and 1M sentences, and of the one-store alternative,
SPARC as tantivy impact terms (``--impact-base``, bench/impact_terms.py), in the same run.

    python -m bench.search_latency --sentences 100000 --sentences 1000000 --queries 200 \
        [--npz runs/cache/sparc-sparc-tiny-<hash>.npz] [--top-k 1000] [--workdir /tmp/sparcdesk-bench] \
        [--impact-base 16 --impact-base 256]

Every store answers the same questions unfiltered, IDF-weighted, top 10 only, and under three
filters (a kind: 1/4 of the sentences, a folder: 1/50, a date range: the newest 1/10), each
question's variants back to back; the top 10 of every store, with and without IDF and under
every filter, is compared with the oracle's (ids and scores). The column index's first
question with a new filter (which asks tantivy for the filter's sentence ids, then caches
them per commit) is timed apart as ``filter_first_ms``.

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
import resource
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench import harness
from bench.impact_terms import ImpactIndex
from bench.synthetic import VectorModel, sample_questions
from engine.index.columns import COLUMNS_DIR
from engine.index.oracle import BruteForceOracle
from engine.index.quantize import Quantizer
from engine.index.sentences import IndexFilters, SentenceIndex, SentenceRecord
from engine.model.sparse import SparseVector

RESULTS = harness.RESULTS
CHUNK = 20_000


def _percentiles(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=np.float64)
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }


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


KINDS = ("pdf", "mail", "docx", "txt")
FOLDERS = 50
T0 = 978_307_200  # 2001-01-01 UTC; sentence i is dated T0 + 60 i


def _kind_of(sid: np.ndarray) -> np.ndarray:
    """Index into KINDS of each sentence (8 sentences per document, documents cycle kinds)."""
    return (sid // 8) % len(KINDS)


def _folder_of(sid: np.ndarray) -> np.ndarray:
    return (sid // 8) % FOLDERS


def _records(start: int, n: int) -> list[SentenceRecord]:
    sid = np.arange(start, start + n)
    kind, folder = _kind_of(sid).tolist(), _folder_of(sid).tolist()
    return [
        SentenceRecord(
            doc_key=f"doc-{(start + j) // 8}",
            text="",
            position=(start + j) % 8,
            path=f"/bench/folder{folder[j]}/doc-{(start + j) // 8}.txt",
            kind=KINDS[kind[j]],
            date=T0 + (start + j) * 60,
            sentence_id=start + j,
        )
        for j in range(n)
    ]


def bench_filters(n: int) -> dict[str, tuple[IndexFilters, np.ndarray]]:
    """The filters timed at corpus size ``n`` and the oracle's mask of each (row = sentence id):
    a kind (1/4 of the sentences), a folder (1/50) and a date range (the newest 1/10)."""
    sid = np.arange(n)
    since = int(n * 0.9)
    return {
        "kind": (IndexFilters(kinds=["mail"]), _kind_of(sid) == KINDS.index("mail")),
        "folder": (IndexFilters(folder="/bench/folder7"), _folder_of(sid) == 7),
        "date": (IndexFilters(date_from=T0 + since * 60), sid >= since),
    }


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


@dataclass
class ImpactBuilt:
    index_dir: Path
    base: int
    build_seconds: float
    resumed_from: int


def build_impact(
    n: int, base: int, built: Built, model: VectorModel, tag: str, args: argparse.Namespace,
    log: Callable[[str], None],
) -> ImpactBuilt:
    """Build (or resume) the impact-term tantivy index (bench/impact_terms.py) of the same
    ``n`` sentences, records and quantiser as the column index in ``built``."""
    workdir = Path(args.workdir)
    name = f"imp{base}-n{n}-{tag}-s{args.seed}"
    index_dir, state_file = workdir / name, workdir / f"{name}.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    if index_dir.exists() and state:
        idx = ImpactIndex.open(index_dir, writer_heap=512_000_000)
    else:
        idx = ImpactIndex.create(index_dir, base, built.quantizer)
        state = {"build_seconds": 0.0}
    done = idx.num_sentences
    if done % CHUNK and done != n:
        raise SystemExit(f"{index_dir}: {done} sentences is not a whole number of chunks; delete it")
    resumed_from = done
    for c in range(done // CHUNK, (n + CHUNK - 1) // CHUNK):
        size = min(CHUNK, n - c * CHUNK)
        indptr, ids, weights = _chunk(model, args.seed, c, size, built.chunks_dir)
        t0 = time.perf_counter()
        idx.add(_records(c * CHUNK, size), indptr, ids, weights)
        idx.commit()
        state["build_seconds"] += time.perf_counter() - t0
        state_file.write_text(json.dumps(state))
        log(f"  impact B={base}: {c * CHUNK + size:>9,} / {n:,} sentences (index {state['build_seconds']:.0f} s)")
    if idx.writable:
        t0 = time.perf_counter()
        idx.wait_merging_threads()
        state["build_seconds"] += time.perf_counter() - t0
        state_file.write_text(json.dumps(state))
    return ImpactBuilt(index_dir, base, state["build_seconds"], resumed_from)


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


def _same(got: tuple[Sequence[int], Sequence[float]], want: tuple[np.ndarray, np.ndarray]) -> bool:
    """Top-10 ids and scores equal, bit for bit."""
    return list(got[0]) == want[0][:10].tolist() and list(got[1]) == want[1][:10].tolist()


def _describe(
    n: int, args: argparse.Namespace, tag: str, built: Built, idx: SentenceIndex, nnz: float,
    questions: list[list[int]], filters: dict[str, tuple[IndexFilters, np.ndarray]],
) -> dict[str, Any]:
    """The result's first keys: the corpus, the index's layout and size, its build, the
    questions and the filters."""
    size = _dir_bytes(built.index_dir)
    col_size = _dir_bytes(built.index_dir / COLUMNS_DIR)
    q_len = [len(set(q)) for q in questions]
    segs = idx._view.columns.segments
    return {
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
        "filters": {k: {"filter": repr(f), "share": float(m.mean())} for k, (f, m) in filters.items()},
    }


def _column_variants(
    idx: SentenceIndex, questions: list[list[int]], filters: dict[str, tuple[IndexFilters, np.ndarray]],
    args: argparse.Namespace, result: dict[str, Any],
) -> dict[str, Callable[[list[int]], Any]]:
    """Warm the column index up and time its first filtered questions (into ``result``);
    its timed variants."""
    # Warm-up, one pass over the questions: the first touches of the memory-mapped columns
    # come from disk.
    first_pass = [_time(lambda q=q: idx.search(q, args.top_k))[0] for q in questions]
    result["first_pass_ms"] = _percentiles(first_pass)
    # The column index finds a filter's sentence ids with tantivy once per filter and commit:
    # the first question with a new filter pays that, the next ones hit the cache.
    result["filter_first_ms"] = {
        k: _time(lambda f=f: idx.search(questions[0], args.top_k, filters=f))[0] for k, (f, _) in filters.items()
    }
    variants: dict[str, Callable[[list[int]], Any]] = {
        "plain": lambda q: idx.search(q, args.top_k),
        "idf": lambda q: idx.search(q, args.top_k, idf=True),
        "plain_top10": lambda q: idx.search(q, 10),
    }
    for k, (f, _) in filters.items():
        variants[f"filter_{k}"] = lambda q, f=f: idx.search(q, args.top_k, filters=f)
    return variants


def _impact_variants(
    n: int, impacts: list[ImpactBuilt], questions: list[list[int]],
    filters: dict[str, tuple[IndexFilters, np.ndarray]], args: argparse.Namespace,
    result: dict[str, Any], variants: dict[str, Callable[[list[int]], Any]],
) -> dict[str, ImpactIndex]:
    """Open each impact-term index, warm it up and describe it (into ``result``), and add its
    variants to ``variants``; the opened stores by name."""
    stores: dict[str, ImpactIndex] = {}
    for ib in impacts:
        imp = ImpactIndex.open(ib.index_dir)
        name = f"impact{ib.base}"
        stores[name] = imp
        # A question token's terms are looked up in tantivy's dictionary and made into query
        # objects once per searcher (cached): the first pass over the questions pays that for
        # every token, the timed pass below finds them cached (steady state: one commit,
        # recurring tokens). The first pass is reported apart.
        first_pass = [_time(lambda q=q, imp=imp: imp.search(q, args.top_k))[0] for q in questions]
        result[name] = {
            "base": ib.base,
            "index_bytes": _dir_bytes(ib.index_dir),
            "bytes_per_sentence": _dir_bytes(ib.index_dir) / n,
            "tantivy_segments": imp.num_segments,
            "build_seconds": ib.build_seconds,
            "resumed_from": ib.resumed_from,
            "first_pass_ms": _percentiles(first_pass),
        }
        variants[f"{name}_plain"] = lambda q, imp=imp: imp.search(q, args.top_k)
        variants[f"{name}_idf"] = lambda q, imp=imp: imp.search(q, args.top_k, idf=True)
        variants[f"{name}_plain_top10"] = lambda q, imp=imp: imp.search(q, 10)
        for k, (f, _) in filters.items():
            variants[f"{name}_filter_{k}"] = lambda q, imp=imp, f=f: imp.search(q, args.top_k, filters=f)
    return stores


def _time_stores(
    questions: list[list[int]], variants: dict[str, Callable[[list[int]], Any]],
    stores: dict[str, ImpactIndex], result: dict[str, Any],
) -> None:
    """Every variant of every store, question by question; the column index's times and
    each impact store's, into ``result``."""
    lat, cpu = _run_variants(questions, variants)
    result["index_ms"] = {k: v for k, v in lat.items() if not k.startswith("impact")}
    result["index_cpu_ms"] = {k: v for k, v in cpu.items() if not k.startswith("impact")}
    for name in stores:
        result[name]["ms"] = {k[len(name) + 1 :]: v for k, v in lat.items() if k.startswith(name + "_")}
        result[name]["cpu_ms"] = {k[len(name) + 1 :]: v for k, v in cpu.items() if k.startswith(name + "_")}


def _check_against_oracle(
    oracle: BruteForceOracle, idx: SentenceIndex, stores: dict[str, ImpactIndex],
    questions: list[list[int]], idfs: dict[tuple[int, ...], Any],
    filters: dict[str, tuple[IndexFilters, np.ndarray]], keep_float: bool,
) -> tuple[dict[str, dict[str, int]], dict[str, list[float]]]:
    """Top-10 mismatches against the oracle of every store by filter, with and without IDF,
    and (``keep_float``) the quantised oracle's recall against float scores."""
    cases: list[tuple[str, IndexFilters | None, np.ndarray | None]] = [("none", None, None)]
    cases += [(k, f, m) for k, (f, m) in filters.items()]
    checks = {name: dict.fromkeys([c[0] for c in cases], 0) for name in ("columns", *stores)}
    recall: dict[str, list[float]] = {"plain@10": [], "idf@10": [], "plain@100": [], "idf@100": []}
    for q in questions:
        idf = idfs[tuple(q)]
        for w in (None, idf):
            for case, f, mask in cases:
                o = oracle.score(q, w, 100, mask=mask)
                hits = idx.search(q, 10, idf=w, filters=f)
                if not _same(([h.sentence_id for h in hits], [h.score for h in hits]), o):
                    checks["columns"][case] += 1
                for name, imp in stores.items():
                    got = imp.search(q, 10, idf=w, filters=f)
                    if not _same((got[0].tolist(), got[1].tolist()), o):
                        checks[name][case] += 1
            if keep_float:
                o_ids, _ = oracle.score(q, w, 100)
                f_ids, _ = oracle.float_score(q, w, 100)
                name = "plain" if w is None else "idf"
                for k in (10, 100):
                    recall[f"{name}@{k}"].append(
                        len(set(f_ids[:k]) & set(o_ids[:k])) / max(1, len(f_ids[:k]))
                    )
    return checks, recall


def _oracle_phase(
    n: int, args: argparse.Namespace, built: Built, idx: SentenceIndex, stores: dict[str, ImpactIndex],
    questions: list[list[int]], filters: dict[str, tuple[IndexFilters, np.ndarray]],
    result: dict[str, Any], log: Callable[[str], None],
) -> None:
    """Build the oracle, time it, and check every store's exactness and the recall against
    it (into ``result``)."""
    log("  building the oracle")
    keep_float = n <= args.recall_max
    t0 = time.perf_counter()
    oracle = build_oracle(n, built, args.vocab, keep_float)
    result["oracle_build_seconds"] = time.perf_counter() - t0
    idfs = {tuple(q): idx.idf(q) for q in questions}
    for name, imp in stores.items():  # both stores count the same document frequencies
        result[name]["idf_equal"] = all(imp.idf(q) == idfs[tuple(q)] for q in questions[:20])
    log("  timing the oracle")
    date_mask = filters["date"][1]
    result["oracle_ms"], result["oracle_cpu_ms"] = _run_variants(
        questions,
        {
            "plain": lambda q: oracle.score(q, None, args.top_k),
            "idf": lambda q: oracle.score(q, idfs[tuple(q)], args.top_k),
            "filter_date": lambda q: oracle.score(q, None, args.top_k, mask=date_mask),
        },
    )
    log("  checking exactness and recall")
    checks, recall = _check_against_oracle(oracle, idx, stores, questions, idfs, filters, keep_float)
    result["top10_mismatches"] = checks["columns"]["none"]
    result["top10_checked"] = 2 * len(questions)
    result["top10_mismatches_by_filter"] = checks["columns"]
    for name in stores:
        result[name]["top10_mismatches_by_filter"] = checks[name]
    if keep_float:
        result["recall_vs_float"] = {k: float(np.mean(v)) for k, v in recall.items()}
    # the oracle (float scores included) is freed on return, before the run's peak RSS


def run_size(
    n: int, args: argparse.Namespace, model: VectorModel, tag: str, log: Callable[[str], None]
) -> dict[str, Any]:
    """Build, time and check one corpus size; returns the JSON-able result."""
    log(f"== {n:,} sentences ({tag})")
    built = build(n, model, tag, Path(args.workdir), args.seed, log)
    impacts = [build_impact(n, b, built, model, tag, args, log) for b in args.impact_base or []]
    _reset_peak_rss()
    rss0 = _vmhwm_mb()
    idx = SentenceIndex.open(built.index_dir)
    first = _chunk(model, args.seed, 0, min(CHUNK, n), built.chunks_dir)
    questions = sample_questions(_vectors(*first)[:2000], args.queries, seed=args.seed + 1)
    nnz = int(first[0][-1]) / (first[0].shape[0] - 1)
    filters = bench_filters(n)
    result = _describe(n, args, tag, built, idx, nnz, questions, filters)

    log("  timing the column index and the impact-term indexes")
    variants = _column_variants(idx, questions, filters, args, result)
    stores = _impact_variants(n, impacts, questions, filters, args, result, variants)
    _time_stores(questions, variants, stores, result)
    result["index_peak_rss_mb"] = _vmhwm_mb()
    result["rss_before_open_mb"] = rss0

    if n <= args.oracle_max:
        _oracle_phase(n, args, built, idx, stores, questions, filters, result, log)
    else:
        result["oracle_ms"] = None
        built.notes.append(f"oracle skipped above --oracle-max {args.oracle_max:,} sentences (memory)")
    result["run_peak_rss_mb"] = _vmhwm_mb()
    result["notes"] = built.notes
    return result


def _table(rows: list[dict[str, Any]]) -> str:
    """One line per corpus size and store: p50 / p95 wall ms of each variant, bytes, exactness."""
    variants = ("plain", "idf", "plain_top10", "filter_kind", "filter_folder", "filter_date")
    head = f"{'sentences':>10} {'store':>10} {'B/sent':>7} {'seg':>4} " + " ".join(
        f"{v.replace('plain_', '').replace('filter_', 'f:'):>13}" for v in variants
    ) + f" {'mismatch':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        stores = [("columns", r["index_ms"], r["bytes_per_sentence"], r["column_segments"],
                   r.get("top10_mismatches_by_filter"))]
        for k in r:
            if k.startswith("impact") and isinstance(r[k], dict):
                i = r[k]
                stores.append((k, i["ms"], i["bytes_per_sentence"], i["tantivy_segments"],
                               i.get("top10_mismatches_by_filter")))
        o = r.get("oracle_ms")
        if o:
            stores.append(("oracle", o, float("nan"), 0, None))
        for name, ms, bps, seg, mm in stores:
            cells = " ".join(
                f"{ms[v]['p50']:>6.2f}/{ms[v]['p95']:<6.2f}" if v in ms else f"{'':>13}" for v in variants
            )
            bad = "-" if mm is None else str(sum(mm.values()))
            lines.append(f"{r['sentences']:>10,} {name:>10} {bps:>7.0f} {seg:>4} {cells} {bad:>9}")
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
    ap.add_argument(
        "--impact-base",
        type=int,
        action="append",
        help="also build and time SPARC as tantivy impact terms with this digit base (16..256,"
        " repeatable; bench/impact_terms.py)",
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
    recorder = harness.Run("search_latency", argv)
    env_before = recorder.before
    log(f"load average {env_before['loadavg']}; busy processes: {env_before['busy'] or 'none'}")
    rows = [run_size(n, args, model, tag, log) for n in sizes]
    env_after = recorder.finish()
    out = {
        "vectors": f"npz {args.npz} ({tag})" if args.npz else "synthetic Zipf(0.9), median nnz 1000",
        "note": args.note,
        "results": rows,
    }
    # command, when, git, machine and the environment before and after: the harness's header
    path = recorder.save(f"search_latency-{'-'.join(str(n) for n in sizes)}-{tag}", out, folder=RESULTS)
    print()
    print(_table(rows))
    print(
        f"\nmilliseconds per question (p50/p95 wall); top_k={args.top_k}; {args.queries} questions;"
        " mismatch = top-10 ids or scores unlike the oracle's (plain and IDF, unfiltered and each filter)"
    )
    print(f"other load: before {env_before['loadavg']} {env_before['busy']}")
    print(f"            after  {env_after['loadavg']} {env_after['busy']}")
    print(f"written {path}")


if __name__ == "__main__":
    main()
