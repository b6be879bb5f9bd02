"""One evaluation: every system ranks the whole pool for every question; the report (metrics
per system, the machine, the settings) and its table."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer.baselines import TOP_K
from trainer.evaluate.cache import DEFAULT_CACHE
from trainer.evaluate.evalset import EvalSet, load_eval_set
from trainer.evaluate.hybrid import AppBM25Retriever, HybridRetriever
from trainer.evaluate.index_retriever import IndexRetriever, load_table
from trainer.evaluate.sparc import SparcRetriever, bundle_vocab_size, load_sparse_encoder
from trainer.metrics import Relevance, evaluate_rankings, unit_ranking
from trainer.pools import contexts_of

BASELINES = ("bm25", "dense")
LATENCY_SAMPLE = 200
#: How the SPARC rows are ranked: through the app's index (default) or by the float scorer.
SCORERS = ("index", "float")


def measure(
    retriever,
    questions: Sequence[str],
    relevants: Sequence[Relevance],
    k: int = TOP_K,
    latency_sample: int = LATENCY_SAMPLE,
    units: Sequence[str] | None = None,
    doc_level: Sequence[bool] | None = None,
) -> dict:
    """Metrics (percent) of one retriever, plus the mean ms of one question searched alone.

    Questions flagged in ``doc_level`` are judged on the unit ranking (``unit_ranking``).
    """
    t0 = time.perf_counter()
    rankings: list = list(retriever.search_batch(questions, k))
    rank_s = time.perf_counter() - t0
    if doc_level is not None and any(doc_level):
        if units is None:
            raise ValueError("document-level questions need the units of the sentences")
        rankings = [
            unit_ranking(r, units) if flag else r for r, flag in zip(rankings, doc_level, strict=True)
        ]
    metrics = evaluate_rankings(rankings, relevants, cutoff=k)
    sample = list(questions[:latency_sample])
    for q in sample[:3]:  # warm-up
        retriever.search(q, k)
    t0 = time.perf_counter()
    for q in sample:
        retriever.search(q, k)
    query_ms = 1000 * (time.perf_counter() - t0) / max(len(sample), 1)
    return {
        "system": retriever.name,
        "mrr@1000": 100 * metrics.get(f"mrr@{k}", 0.0),
        "r@1": 100 * metrics.get("r@1", 0.0),
        "r@10": 100 * metrics.get("r@10", 0.0),
        "ndcg@10": 100 * metrics.get("ndcg@10", 0.0),
        "median_nnz": retriever.median_nnz,
        "query_ms": query_ms,
        "latency_questions": len(sample),
        "rank_all_s": rank_s,
    }


def parse_baselines(text: str | None) -> list[str]:
    if text is None:
        return list(BASELINES)
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    if names in ([], ["none"]):
        return []
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise SystemExit(
            f"unknown baseline(s) {', '.join(unknown)}; choose from {', '.join(BASELINES)} or none"
        )
    return names


def run_evaluation(
    sentences_path: str | Path,
    questions_path: str | Path,
    model_dir: str | Path | None = None,
    baselines: Sequence[str] = BASELINES,
    limit: int | None = None,
    cache_dir: str | Path | None = DEFAULT_CACHE,
    encoder=None,
    latency_sample: int = LATENCY_SAMPLE,
    log=print,
    idf: bool = False,
    hybrid: bool = False,
    threads: int | None = None,
    fusions: Sequence[str] | None = None,
    prune_ratio: float = 0.0,
    scorer: str = "index",
    query_weights: Sequence[str | Path] = (),
    query_weights_idf: Sequence[str | Path] = (),
) -> dict:
    """Evaluate the requested systems; returns the report written as JSON by the command.

    With a model, ``idf`` adds a "SPARC +IDF" row and ``hybrid`` a "+hybrid" row for each
    SPARC row and fusion method in ``fusions`` (default: the app's; one encoding serves them all).
    ``scorer``: ``index`` ranks the SPARC rows through the app's own index and search
    (``IndexRetriever``); ``float`` with the float CSR scorer (``SparcRetriever``, the oracle).
    ``query_weights`` / ``query_weights_idf``: learned tables (``.npy`` files or bundle folders),
    each a row without / with IDF (``load_table``; index scorer only).
    """
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; choose from {', '.join(SCORERS)}")
    if (query_weights or query_weights_idf) and (scorer != "index" or (model_dir is None and encoder is None)):
        raise ValueError("learned query weight rows need a model and the index scorer")
    data = load_eval_set(sentences_path, questions_path, limit)
    report = report_header(data, sentences_path, questions_path, model_dir, limit, scorer)
    systems = baseline_systems(baselines, data.texts, cache_dir)
    if model_dir is not None or encoder is not None:
        systems += sparc_systems(
            data,
            model_dir,
            encoder,
            report,
            threads=threads,
            cache_dir=cache_dir,
            prune_ratio=prune_ratio,
            scorer=scorer,
            idf=idf,
            hybrid=hybrid,
            fusions=fusions,
            query_weights=query_weights,
            query_weights_idf=query_weights_idf,
        )
    for retriever, index_s in systems:
        row = result_row(retriever, index_s, data, latency_sample)
        report["results"].append(row)
        log(
            f"{row['system']}: MRR {row['mrr@1000']:.2f} R@1 {row['r@1']:.2f} R@10 {row['r@10']:.2f} "
            f"(index {index_s:.1f} s, rank all {row['rank_all_s']:.1f} s)"
        )
    return report


def report_header(
    data: EvalSet,
    sentences_path: str | Path,
    questions_path: str | Path,
    model_dir: str | Path | None,
    limit: int | None,
    scorer: str,
) -> dict:
    """The report's keys before its rows: the pool, the settings, the machine."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "sentences": str(sentences_path),
        "questions": str(questions_path),
        "model": str(model_dir) if model_dir else None,
        "n_sentences": len(data.pool),
        "n_questions": len(data.questions),
        "questions_without_gold": data.skipped,
        "document_level_questions": sum(data.doc_level),
        "limit": limit,
        "top_k": TOP_K,
        "scorer": scorer,
        "metrics_unit": "percent; r@k = at least one gold sentence in the top k",
        "query_ms": "mean over the first questions, each searched alone, after 3 warm-up searches",
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_at_start": list(load) if load else None,
        },
        "results": [],
    }


def baseline_systems(
    names: Sequence[str], texts: list[str], cache_dir: str | Path | None
) -> list[tuple[Any, float]]:
    """The baselines' retrievers (``trainer.baselines``), each with the seconds it took to build."""
    systems = []
    for name in names:
        t0 = time.perf_counter()
        if name == "bm25":
            from trainer.baselines import BM25Retriever

            retriever = BM25Retriever(texts)
        elif name == "dense":
            from trainer.baselines import DenseRetriever

            retriever = DenseRetriever(texts, cache_dir=cache_dir)
        else:
            raise ValueError(f"unknown baseline {name!r}")
        systems.append((retriever, time.perf_counter() - t0))
    return systems


def sparc_systems(
    data: EvalSet,
    model_dir: str | Path | None,
    encoder,
    report: dict,
    *,
    threads: int | None,
    cache_dir: str | Path | None,
    prune_ratio: float,
    scorer: str,
    idf: bool,
    hybrid: bool,
    fusions: Sequence[str] | None,
    query_weights: Sequence[str | Path],
    query_weights_idf: Sequence[str | Path],
) -> list[tuple[Any, float]]:
    """The SPARC rows (plain, IDF, learned tables, their hybrids), each with the seconds the
    pool's encoding and index took; the index scorer's quantiser goes into ``report["index"]``."""
    texts = data.texts
    t0 = time.perf_counter()
    if encoder is None:
        encoder = (
            load_sparse_encoder(model_dir, threads=threads)
            if threads is not None
            else load_sparse_encoder(model_dir)
        )
    retriever = SparcRetriever(
        encoder,
        texts,
        contexts_of(data.pool),
        groups=[s.passage_id for s in data.pool],
        bundle_dir=model_dir,
        cache_dir=cache_dir,
        prune_ratio=prune_ratio,
    )
    if scorer == "index":
        retriever = IndexRetriever.from_float(retriever, texts, data.units)
        pool_index = retriever.pool_index
        report["index"] = {
            "quantizer": pool_index.quantizer.to_dict(),
            "clamped_weights": pool_index.clamped,
            "build_s": pool_index.build_s,
        }
    index_s = time.perf_counter() - t0
    sparc_rows = [retriever] + ([retriever.with_idf()] if idf else [])
    if isinstance(retriever, IndexRetriever):
        vocab = bundle_vocab_size(model_dir) or getattr(getattr(encoder, "config", None), "vocab_size", None)
        for with_idf, tables in ((False, query_weights), (True, query_weights_idf)):
            for t in tables:
                table, where = load_table(t, vocab)
                sparc_rows.append(retriever.with_table(table, where, with_idf))
    systems: list[tuple[Any, float]] = [(r, index_s) for r in sparc_rows]
    if hybrid and scorer == "index":
        systems.extend((r.with_hybrid(m), index_s) for r in sparc_rows for m in (fusions or [None]))
    elif hybrid:
        t0 = time.perf_counter()
        app_bm25 = AppBM25Retriever(texts)
        bm25_s = time.perf_counter() - t0
        systems.extend(
            (HybridRetriever(r, app_bm25, method=m), index_s + bm25_s)
            for r in sparc_rows
            for m in (fusions or [None])
        )
    return systems


def result_row(retriever, index_s: float, data: EvalSet, latency_sample: int) -> dict:
    """One system's row of the report: ``measure``'s metrics, plus where its vectors came from."""
    row = measure(
        retriever,
        data.questions,
        data.relevants,
        latency_sample=latency_sample,
        units=data.units,
        doc_level=data.doc_level,
    )
    row["index_s"] = index_s
    sparc = retriever.sparc if isinstance(retriever, HybridRetriever) else retriever
    if isinstance(sparc, SparcRetriever | IndexRetriever):
        row["scorer"] = "index" if isinstance(sparc, IndexRetriever) else "float"
        row["cache"] = str(sparc.cache_path) if sparc.cache_path else None
        row["from_cache"] = sparc.from_cache
    if isinstance(sparc, IndexRetriever) and sparc.table is not None:
        row["query_weights"] = sparc.table_path
    return row


COLUMNS = (
    ("MRR@1000", "mrr@1000", "{:.2f}"),
    ("R@1", "r@1", "{:.2f}"),
    ("R@10", "r@10", "{:.2f}"),
    ("median nnz", "median_nnz", "{:.0f}"),
    ("query ms", "query_ms", "{:.2f}"),
)


def format_table(report: dict) -> str:
    rows = [["system", *(c[0] for c in COLUMNS)]]
    for r in report["results"]:
        rows.append(
            [r["system"], *(fmt.format(r[key]) if r.get(key) is not None else "-" for _, key, fmt in COLUMNS)]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    title = f"{report['n_questions']} questions, {report['n_sentences']} sentences ({report['sentences']})"
    return title + "\n" + "\n".join(lines)
