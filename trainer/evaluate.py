"""Evaluate SPARC against BM25 and a dense baseline on a pool in the generic format.

    sparcdesk-train evaluate --sentences S --questions Q --model BUNDLE_DIR \\
        [--json OUT] [--baselines bm25,dense] [--limit N] [--idf] [--hybrid] [--scorer index|float]

``S``/``Q`` are ``sentences.jsonl``/``questions.jsonl`` (see ``trainer.pools`` and
docs/evaluation.md). Every system ranks the whole pool for every question and keeps the top
1000; the table gives MRR@1000, Recall@1 and Recall@10 (percent), the median number of index
entries per sentence, and the mean time of one question searched alone (ms). ``--limit N``
evaluates the first N questions against the full pool. ``--model`` may be left out to run the
baselines only; ``--baselines none`` runs SPARC only.

A question with ``gold_passages`` instead of ``gold`` is judged at document level: units
(a sentence's ``doc_id``, else its ``passage_id``) are ranked by their best sentence (first
occurrence in the sentence ranking) and the metrics, nDCG@10 included, are over units.

SPARC ranking (``--scorer``): by default through the app itself (``IndexRetriever``): the
pool's encoded vectors go into a real ``engine.index.sentences.SentenceIndex`` (temporary folder),
quantised as the indexer quantises (``engine.index.quantize.fit_quantizer`` on the first batch),
and every question is ranked by ``engine.search.answers.rank_sentences``, the calls ``ask`` makes
(``SentenceIndex.search``, and for the hybrid ``SentenceIndex.bm25`` + ``engine.search.answers.fuse``
over ``HYBRID_DEPTH``). ``--scorer float`` keeps the float scorer (``SparcRetriever``, the
tests' oracle, SPARC.md §1): a CSR matrix of sentence sparse vectors (sentences x vocabulary)
times the question's bag of token ids; a token id the encoder returns twice counts twice.
Encoded sentence vectors are cached per (bundle, pool) under ``runs/cache`` as ``.npz`` and
serve both scorers. ``--idf`` adds a row with each question token weighted by
``log(N / N_t)`` over the pool's sentences (``engine.index.quantize.idf_weight``, the app's
``idf`` option; the index path rounds it to the index's grid as the app does); ``--hybrid``
adds rows fusing SPARC with the app's BM25 (``engine.search.answers.fuse``: raw scores over each
system's top 100, a missing score filled with that list's minimum).

Learned question weights (issue 13, ``sparcdesk-train query-weights``): ``--query-weights T``
adds a "SPARC +QW" row ranked with table ``T`` multiplied into each question id's weight,
``--query-weights-idf T`` a "SPARC +IDF +QW" row with ``T`` times the index's IDF (and their
hybrids with ``--hybrid``). ``T`` is a ``.npy`` table or a bundle folder shipping one; the rows
go through the app's own ``rank_sentences(..., table=T)`` (index scorer only).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from trainer.baselines import TOP_K, top_k_indices
from trainer.metrics import Relevance, evaluate_rankings
from trainer.pools import PoolSentence, contexts_of, read_questions, read_sentences

DEFAULT_CACHE = Path("runs/cache")
BASELINES = ("bm25", "dense")
LATENCY_SAMPLE = 200
ENCODE_CHUNK = 256
#: Depth of each list the float hybrid fuses (the app's ``engine.search.answers.HYBRID_DEPTH``).
HYBRID_DEPTH = 100
#: How the SPARC rows are ranked: through the app's index (default) or by the float scorer.
SCORERS = ("index", "float")


# ---------------------------------------------------------------------------------------------
# SPARC


def load_sparse_encoder(bundle_dir: str | Path, threads: int | None = None):
    """``engine.model.encoder.SparseEncoder`` for a model bundle (imported late: it is optional here)."""
    try:
        from engine.model.encoder import SparseEncoder
    except ImportError as exc:  # pragma: no cover - until engine/model/encoder.py lands
        raise SystemExit(f"cannot evaluate a bundle: engine.model.encoder is not available ({exc})") from exc
    return SparseEncoder(str(bundle_dir), threads=threads)


def bundle_fingerprint(bundle_dir: str | Path) -> str:
    """sha1 over the names and contents of every file of the bundle."""
    h = hashlib.sha1()
    root = Path(bundle_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def pool_fingerprint(sentences: Sequence[str], contexts: Sequence[str]) -> str:
    h = hashlib.sha1()
    for s, c in zip(sentences, contexts, strict=True):
        h.update(s.encode("utf-8") + b"\0" + c.encode("utf-8") + b"\1")
    return h.hexdigest()


def _bundle_vocab_size(bundle_dir: str | Path | None) -> int | None:
    if bundle_dir is None:
        return None
    config = Path(bundle_dir) / "config.json"
    if config.exists():
        value = json.loads(config.read_text(encoding="utf-8")).get("vocab_size")
        return int(value) if value else None
    return None


def encode_matrix(
    encoder,
    sentences: Sequence[str],
    contexts: Sequence[str],
    vocab_size: int | None,
    groups: Sequence | None = None,
) -> sp.csr_matrix:
    """Sentence sparse vectors as a float32 CSR matrix [n_sentences, vocab]. A passage
    bundle's encoder (``encoding: passage``) gets ``groups`` (each sentence's passage id) and
    chunks that never cut a passage."""
    passage = getattr(getattr(encoder, "config", None), "encoding", "sentence") == "passage"
    indptr = [0]
    indices: list[np.ndarray] = []
    data: list[np.ndarray] = []
    progress = None
    if sys.stderr.isatty() and len(sentences) > ENCODE_CHUNK:
        from tqdm import tqdm

        progress = tqdm(total=len(sentences), desc="SPARC encode", unit="sent", file=sys.stderr)
    bounds = list(range(0, len(sentences), ENCODE_CHUNK)) + [len(sentences)]
    if passage and groups is not None:  # move each cut forward to the next passage's start
        starts = [j for j in range(len(groups)) if j == 0 or groups[j] != groups[j - 1]] + [len(groups)]
        bounds = sorted({starts[bisect.bisect_left(starts, b)] for b in bounds})
    for start, end in zip(bounds, bounds[1:], strict=False):
        if start == end:
            continue
        chunk = (list(sentences[start:end]), list(contexts[start:end]))
        if passage:
            vectors = encoder.encode(*chunk, groups=None if groups is None else list(groups[start:end]))
        else:
            vectors = encoder.encode(*chunk)
        for vec in vectors:
            ids = np.asarray(vec.ids, dtype=np.int64)
            weights = np.asarray(vec.weights, dtype=np.float32)
            keep = weights != 0
            indices.append(ids[keep])
            data.append(weights[keep])
            indptr.append(indptr[-1] + int(keep.sum()))
        if progress is not None:
            progress.update(len(vectors))
    if progress is not None:
        progress.close()
    all_ids = np.concatenate(indices) if indices else np.empty(0, dtype=np.int64)
    width = max(vocab_size or 0, int(all_ids.max()) + 1 if all_ids.size else 0)
    matrix = sp.csr_matrix(
        (np.concatenate(data) if data else np.empty(0, np.float32), all_ids, np.asarray(indptr)),
        shape=(len(sentences), width),
        dtype=np.float32,
    )
    matrix.sum_duplicates()
    return matrix


def idf_vector(matrix: sp.csr_matrix, vocab_size: int | None = None) -> np.ndarray:
    """IDF of every vocabulary id over the rows of ``matrix`` (sentence vectors), with the
    app's own ``idf_weight``: a sentence holds an id when its weight for it is positive."""
    from engine.index.quantize import idf_weight

    width = matrix.shape[1] if vocab_size is None else vocab_size
    df = np.bincount(matrix.indices[matrix.data > 0], minlength=width)[:width]
    n = matrix.shape[0]
    return np.array([idf_weight(int(d), n) for d in df.tolist()], dtype=np.float32)


def prune_rows(matrix: sp.csr_matrix, ratio: float) -> sp.csr_matrix:
    """Keep each row's entries >= ratio x that row's largest (the bundle's ``prune_ratio``,
    applied to vectors already encoded: pruning at r after r0 <= r equals pruning at r)."""
    if ratio <= 0 or matrix.nnz == 0:
        return matrix
    m = matrix.tocsr()
    lengths = np.diff(m.indptr)
    rows = np.repeat(np.arange(m.shape[0]), lengths)
    row_max = np.zeros(m.shape[0], dtype=m.data.dtype)
    nonempty = lengths > 0
    row_max[nonempty] = np.maximum.reduceat(m.data, m.indptr[:-1][nonempty])
    keep = (m.data > 0) & (m.data >= ratio * row_max[rows])
    out = sp.csr_matrix(
        (
            m.data[keep],
            m.indices[keep],
            np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=m.shape[0]))]),
        ),
        shape=m.shape,
    )
    return out


class SparcRetriever:
    """Scores = sentence matrix . question bag of ids; the same interface as the baselines.

    With ``idf`` each question token's weight is multiplied by ``log(N / N_t)`` over the
    pool's sentences (N_t: sentences whose vector has the token; 1 when none has it), the
    app's ``idf`` option without its rounding of the IDF to the index's integer grid.
    """

    name = "SPARC"

    def __init__(
        self,
        encoder,
        sentences: Sequence[str],
        contexts: Sequence[str],
        bundle_dir: str | Path | None = None,
        cache_dir: str | Path | None = DEFAULT_CACHE,
        idf: bool = False,
        matrix: sp.csr_matrix | None = None,
        prune_ratio: float = 0.0,
        groups: Sequence | None = None,
    ):
        self.encoder = encoder
        self.use_idf = idf
        if idf:
            self.name = "SPARC +IDF"
        vocab_size = (
            getattr(encoder, "vocab_size", None)
            or getattr(getattr(encoder, "config", None), "vocab_size", None)
            or _bundle_vocab_size(bundle_dir)
        )
        self.cache_path: Path | None = None
        self.from_cache = matrix is not None
        if matrix is None and cache_dir is not None and bundle_dir is not None:
            bundle = Path(bundle_dir)
            name = f"sparc-{bundle.resolve().name}-{bundle_fingerprint(bundle)[:12]}-{pool_fingerprint(sentences, contexts)[:12]}.npz"
            self.cache_path = Path(cache_dir) / name
            if self.cache_path.exists():
                matrix = sp.load_npz(self.cache_path).tocsr()
                if matrix.shape[0] != len(sentences):
                    matrix = None
                else:
                    self.from_cache = True
        if matrix is None:
            matrix = encode_matrix(encoder, sentences, contexts, vocab_size, groups)
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_path.with_name(self.cache_path.stem + ".tmp.npz")
                sp.save_npz(tmp, matrix)
                tmp.replace(self.cache_path)
        self.prune_ratio = prune_ratio
        matrix = prune_rows(matrix, prune_ratio)
        self.matrix = matrix
        self.n = matrix.shape[0]
        self.median_nnz = float(np.median(np.diff(matrix.indptr))) if self.n else 0.0
        # column access for scoring: rows and weights of every vocabulary id
        csc = matrix.tocsc()
        self._col_ptr, self._col_rows, self._col_data = csc.indptr, csc.indices, csc.data
        self.idf = self._idf_vector() if idf else None

    def _idf_vector(self) -> np.ndarray:
        return idf_vector(self.matrix)

    def with_idf(self) -> SparcRetriever:
        """The same encoded pool scored with IDF (shares the matrix; no re-encoding)."""
        other = SparcRetriever.__new__(SparcRetriever)
        other.__dict__.update(self.__dict__)
        other.use_idf, other.name = True, "SPARC +IDF"
        other.idf = self._idf_vector()
        return other

    def scores(self, question: str) -> np.ndarray:
        ids = np.asarray(self.encoder.question_ids(question), dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < self.matrix.shape[1])]
        scores = np.zeros(self.n, dtype=np.float32)
        if ids.size == 0:
            return scores
        uniq, counts = np.unique(ids, return_counts=True)
        for v, c in zip(uniq.tolist(), counts.tolist(), strict=True):
            lo, hi = self._col_ptr[v], self._col_ptr[v + 1]
            if hi > lo:
                weight = c * (float(self.idf[v]) if self.idf is not None else 1.0)
                scores[self._col_rows[lo:hi]] += weight * self._col_data[lo:hi]
        return scores

    def top(self, question: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k sentence indices with their scores (what the hybrid fuses)."""
        scores = self.scores(question)
        idx = top_k_indices(scores, k)
        return idx, scores[idx]

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        return top_k_indices(self.scores(question), k)

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        return [self.search(q, k) for q in questions]


# ---------------------------------------------------------------------------------------------
# the app's BM25 and hybrid


class AppBM25Retriever:
    """The app's BM25: ``SentenceIndex.bm25`` of a real index of the pool's sentences (the
    index's own analyzer and tantivy scoring), so that the float hybrid fuses the scores the
    app would fuse. Built text-only, or shares a ``PoolIndex`` (``index=``)."""

    name = "BM25 (app)"

    def __init__(self, sentences: Sequence[str], index: PoolIndex | None = None):
        self.pool_index = index if index is not None else PoolIndex(sentences)
        self.n = len(sentences)
        self.median_nnz = None

    def top(self, question: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``SentenceIndex.bm25``: distinct analysed terms, OR query, ties by sentence id."""
        hits = self.pool_index.index.bm25(question, k)
        return (
            np.array([h.sentence_id for h in hits], dtype=np.int64),
            np.array([h.score for h in hits], dtype=np.float64),
        )

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        return self.top(question, k)[0]

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        return [self.search(q, k) for q in questions]


class HybridRetriever:
    """SPARC + the app's BM25 fused by the app's own ``engine.search.answers.fuse`` (CAI) over each
    system's top ``depth``, with one of its fusion methods (``sum``: raw scores, CAI's rule and
    the app's default; ``minmax``: each list normalised first; ``rrf``: reciprocal ranks).
    The ranking is the fused list only (at most 2 x depth sentences), as in the app."""

    def __init__(
        self,
        sparc: SparcRetriever,
        bm25: AppBM25Retriever,
        depth: int = HYBRID_DEPTH,
        method: str | None = None,
    ):
        from engine.search.defaults import DEFAULT_FUSION

        self.sparc, self.bm25, self.depth = sparc, bm25, depth
        self.method = method or DEFAULT_FUSION
        self.name = f"{sparc.name} +hybrid" + ("" if self.method == DEFAULT_FUSION else f" ({self.method})")
        self.median_nnz = sparc.median_nnz

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        from engine.index.sentences import IndexHit
        from engine.search.answers import fuse

        s_idx, s_sc = self.sparc.top(question, self.depth)
        s_keep = s_sc > 0  # the app's index returns only sentences that match a token
        b_idx, b_sc = self.bm25.top(question, self.depth)
        fused = fuse(
            [IndexHit(int(i), float(v)) for i, v in zip(s_idx[s_keep], s_sc[s_keep], strict=True)],
            [IndexHit(int(i), float(v)) for i, v in zip(b_idx, b_sc, strict=True)],
            self.method,
            self.depth,
        )
        return np.array([sid for sid, _ in fused[:k]], dtype=np.int64)

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        return [self.search(q, k) for q in questions]


# ---------------------------------------------------------------------------------------------
# SPARC through the app's own index (the default scorer)


def _close_and_remove(index, path: str) -> None:
    with contextlib.suppress(Exception):
        index.close()
    shutil.rmtree(path, ignore_errors=True)


class PoolIndex:
    """A real ``engine.index.sentences.SentenceIndex`` of a pool, built as the app's indexer builds one.

    Sentence ``i`` of the pool gets sentence id ``i`` (so the index's ties, sentence id
    ascending, are pool order), its unit as document key and its text for BM25. With a
    ``matrix`` of encoded vectors (one row per sentence) the quantiser is fitted as
    ``engine.indexer.run`` fits it: ``fit_quantizer`` on the first encoded batch, the first
    ``FLUSH_SENTENCES`` sentences, with the pipeline's headroom; later weights above its range
    are clamped to the top level, as in the app (``clamped`` counts them). Without a matrix
    the index holds text only (for BM25). The index lives in a temporary folder (or ``path``,
    which must not hold one), is committed once, reopened read-only and removed with this
    object.
    """

    def __init__(
        self,
        texts: Sequence[str],
        matrix: sp.csr_matrix | None = None,
        units: Sequence[str] | None = None,
        path: str | Path | None = None,
        model: dict | None = None,
    ):
        from engine.index.quantize import Quantizer, fit_quantizer
        from engine.index.sentences import SentenceIndex, SentenceRecord
        from engine.indexer.run import FLUSH_SENTENCES
        from engine.model.sparse import SparseVector

        t0 = time.perf_counter()
        n = len(texts)
        if matrix is not None and matrix.shape[0] != n:
            raise ValueError(f"{matrix.shape[0]} vectors for {n} sentences")
        m = matrix.tocsr() if matrix is not None else None

        def vectors(lo: int, hi: int) -> list[SparseVector]:
            if m is None:
                return [SparseVector(np.zeros(0, np.int32), np.zeros(0, np.float32)) for _ in range(lo, hi)]
            out = []
            for r in range(lo, hi):
                a, b = m.indptr[r], m.indptr[r + 1]
                ids, w = m.indices[a:b], m.data[a:b]
                keep = w > 0  # the encoder's vectors hold positive weights only
                out.append(SparseVector(ids[keep], w[keep]))
            return out

        self.quantizer = fit_quantizer(vectors(0, min(FLUSH_SENTENCES, n))) if m is not None else Quantizer(1.0)
        self.clamped = self.quantizer.clamped(m.data) if m is not None else 0
        own = path is None
        folder = tempfile.mkdtemp(prefix="sparcdesk-eval-index-") if own else str(path)
        writer = SentenceIndex.create(folder, self.quantizer, model=model or {"evaluation": True})
        try:
            for lo in range(0, n, FLUSH_SENTENCES):
                hi = min(lo + FLUSH_SENTENCES, n)
                records = [
                    SentenceRecord(
                        doc_key=str(units[i]) if units is not None else str(i),
                        text=texts[i],
                        position=i,
                        sentence_id=i,
                    )
                    for i in range(lo, hi)
                ]
                writer.add(records, vectors(lo, hi))
            writer.commit()
        finally:
            writer.close()
        self.path = Path(folder)
        self.index = SentenceIndex.open(folder)
        self.n = n
        self.build_s = time.perf_counter() - t0
        self._finalizer = weakref.finalize(self, _close_and_remove, self.index, folder) if own else None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        else:
            self.index.close()


def _table_name(path: str | None) -> str:
    """A learned table's name in a row: its folder's (a run's ``--out``), else its file's."""
    p = Path(path or "table")
    return p.parent.name or p.stem


class IndexRetriever:
    """SPARC ranked by the app itself: ``engine.search.answers.rank_sentences`` (the calls
    ``engine.search.answers.ask`` makes: ``SentenceIndex.search(question_ids, k, idf=True|None)``,
    and for the hybrid ``SentenceIndex.bm25`` fused by ``engine.search.answers.fuse`` over the app's
    ``HYBRID_DEPTH``) on a ``PoolIndex`` of the encoded pool. Scores are the index's
    quantised ones; with ``idf`` the IDF is the index's, rounded to its integer grid."""

    def __init__(
        self,
        encoder,
        pool_index: PoolIndex,
        idf: bool = False,
        hybrid: bool = False,
        method: str | None = None,
        median_nnz: float | None = None,
        table: np.ndarray | None = None,
        table_path: str | None = None,
    ):
        from engine.search.defaults import DEFAULT_FUSION

        self.encoder, self.pool_index = encoder, pool_index
        self.use_idf, self.hybrid = idf, hybrid
        self.table, self.table_path = table, table_path
        self.method = method or DEFAULT_FUSION
        self.median_nnz = median_nnz
        self.cache_path: Path | None = None
        self.from_cache = False
        self.name = "SPARC" + (" +IDF" if idf else "") + (f" +QW({_table_name(table_path)})" if table is not None else "") + (" +hybrid" if hybrid else "")
        if hybrid and self.method != DEFAULT_FUSION:
            self.name += f" ({self.method})"

    @classmethod
    def from_float(cls, sparc: SparcRetriever, texts: Sequence[str], units: Sequence[str] | None = None) -> IndexRetriever:
        """The index path for the vectors a ``SparcRetriever`` holds (after its pruning)."""
        pool_index = PoolIndex(texts, sparc.matrix, units)
        out = cls(sparc.encoder, pool_index, median_nnz=sparc.median_nnz)
        out.cache_path, out.from_cache = sparc.cache_path, sparc.from_cache
        return out

    def _variant(
        self, idf: bool, hybrid: bool, method: str | None, table: np.ndarray | None = None, table_path: str | None = None
    ) -> IndexRetriever:
        if table is None:
            table, table_path = self.table, self.table_path
        other = IndexRetriever(self.encoder, self.pool_index, idf, hybrid, method, self.median_nnz, table, table_path)
        other.cache_path, other.from_cache = self.cache_path, self.from_cache
        return other

    def with_table(self, table: np.ndarray, path: str, idf: bool) -> IndexRetriever:
        """The same index searched with a learned question weight table (times IDF with ``idf``)."""
        return self._variant(idf, self.hybrid, self.method, table, path)

    def with_idf(self) -> IndexRetriever:
        """The same index searched with the app's IDF option."""
        return self._variant(True, self.hybrid, self.method)

    def with_hybrid(self, method: str | None = None) -> IndexRetriever:
        """The same index searched as the app's hybrid (``fusion`` ``method``, default the app's)."""
        return self._variant(self.use_idf, True, method)

    def ranked(self, question: str, k: int = TOP_K) -> list[tuple[int, float]]:
        """``(sentence index, score)`` as the app ranks sentences (hybrid: at most 2 x depth)."""
        from engine.search.answers import rank_sentences, ranking_text

        question = ranking_text(question)  # as ask reads it
        qids = self.encoder.question_ids(question)
        return rank_sentences(
            self.pool_index.index,
            qids,
            question,
            idf=self.use_idf,
            hybrid=self.hybrid,
            fusion=self.method,
            depth=k,
            table=self.table,
        )

    def top(self, question: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.ranked(question, k)[:k]
        return (
            np.array([i for i, _ in rows], dtype=np.int64),
            np.array([v for _, v in rows], dtype=np.float64),
        )

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        return np.array([i for i, _ in self.ranked(question, k)[:k]], dtype=np.int64)

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        return [self.search(q, k) for q in questions]


# ---------------------------------------------------------------------------------------------
# evaluation


@dataclass
class EvalSet:
    """A pool read for evaluation: questions with sentence-index or unit-level relevance."""

    pool: list[PoolSentence]
    questions: list[str]
    relevants: list[Relevance]  # sentence indices, or {unit id: grade} when doc_level
    doc_level: list[bool]
    units: list[str]  # unit (doc_id, else passage_id) of every sentence
    skipped: int = 0

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.pool]

    def contexts(self) -> list[str]:
        return contexts_of(self.pool)


def load_eval_set(
    sentences_path: str | Path, questions_path: str | Path, limit: int | None = None
) -> EvalSet:
    """Read and check a pool; a question with neither gold is skipped (and counted)."""
    pool = read_sentences(sentences_path)
    index = {s.id: i for i, s in enumerate(pool)}
    if len(index) != len(pool):
        raise ValueError(f"{sentences_path}: sentence ids are not unique")
    units = [s.unit for s in pool]
    unit_set = set(units)
    questions: list[str] = []
    relevants: list[Relevance] = []
    doc_level: list[bool] = []
    skipped = 0
    for q in read_questions(questions_path):
        if q.gold_passages:
            missing = [u for u in q.gold_passages if u not in unit_set]
            if missing:
                raise ValueError(f"question {q.id}: gold passages {missing[:3]} are not in {sentences_path}")
            questions.append(q.question)
            relevants.append(dict(q.gold_passages))
            doc_level.append(True)
            continue
        missing = [g for g in q.gold if g not in index]
        if missing:
            raise ValueError(f"question {q.id}: gold ids {missing[:3]} are not in {sentences_path}")
        if not q.gold:
            skipped += 1
            continue
        questions.append(q.question)
        relevants.append({index[g] for g in q.gold})
        doc_level.append(False)
    if limit is not None:
        questions, relevants, doc_level = questions[:limit], relevants[:limit], doc_level[:limit]
    return EvalSet(pool, questions, relevants, doc_level, units, skipped)


def unit_ranking(ranking: Sequence[int], units: Sequence[str]) -> list[str]:
    """Units ranked by their best sentence: first occurrence in the sentence ranking."""
    seen: dict[str, None] = {}
    for i in ranking:
        seen.setdefault(units[int(i)], None)
    return list(seen)


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


def load_table(source: str | Path, vocab_size: int | None = None) -> tuple[np.ndarray, str]:
    """A learned question weight table and where it was read: a bundle folder's own
    (``Bundle.query_weights``), a ``.npy`` file (``engine.model.bundle.read_query_weights``) or
    a folder holding ``query_weights.npy`` (``sparcdesk-train query-weights --out``)."""
    from engine.model.bundle import CONFIG, QUERY_WEIGHTS_FILE, Bundle, read_query_weights

    path = Path(source)
    if path.is_dir() and not (path / CONFIG).exists():
        path = path / QUERY_WEIGHTS_FILE
    if path.is_dir():
        table = Bundle.open(path).query_weights
        if table is None:
            raise SystemExit(f"{path}: the bundle ships no query weight table")
        return table, str(path / str(Bundle.open(path).config["query_weights"]))
    if vocab_size is None:
        vocab_size = int(np.load(path, mmap_mode="r", allow_pickle=False).shape[0])
    try:
        return read_query_weights(path, vocab_size), str(path)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


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
    pool, questions, relevants, skipped = data.pool, data.questions, data.relevants, data.skipped
    texts = data.texts
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    report: dict = {
        "sentences": str(sentences_path),
        "questions": str(questions_path),
        "model": str(model_dir) if model_dir else None,
        "n_sentences": len(pool),
        "n_questions": len(questions),
        "questions_without_gold": skipped,
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

    systems = []
    for name in baselines:
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
    if model_dir is not None or encoder is not None:
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
            contexts_of(pool),
            groups=[s.passage_id for s in pool],
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
            vocab = _bundle_vocab_size(model_dir) or getattr(getattr(encoder, "config", None), "vocab_size", None)
            for with_idf, tables in ((False, query_weights), (True, query_weights_idf)):
                for t in tables:
                    table, where = load_table(t, vocab)
                    sparc_rows.append(retriever.with_table(table, where, with_idf))
        systems.extend((r, index_s) for r in sparc_rows)
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

    for retriever, index_s in systems:
        row = measure(
            retriever,
            questions,
            relevants,
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
        report["results"].append(row)
        log(
            f"{row['system']}: MRR {row['mrr@1000']:.2f} R@1 {row['r@1']:.2f} R@10 {row['r@10']:.2f} "
            f"(index {index_s:.1f} s, rank all {row['rank_all_s']:.1f} s)"
        )
    return report


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


# ---------------------------------------------------------------------------------------------
# command


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
