"""SPARC's float scorer (``SparcRetriever``, the tests' oracle; SPARC.md §1) and what it rests
on: a bundle's encoder, the pool encoded into a CSR matrix of sentence vectors (chunks that
never cut a passage for a passage bundle), the pool's IDF and encode-time pruning."""

from __future__ import annotations

import bisect
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from trainer.baselines import TOP_K, top_k_indices
from trainer.evaluate.cache import DEFAULT_CACHE, cache_file, read_matrix, write_matrix

ENCODE_CHUNK = 256


def load_sparse_encoder(bundle_dir: str | Path, threads: int | None = None):
    """``engine.model.encoder.SparseEncoder`` for a model bundle (imported late: it is optional here)."""
    try:
        from engine.model.encoder import SparseEncoder
    except ImportError as exc:  # pragma: no cover - until engine/model/encoder.py lands
        raise SystemExit(f"cannot evaluate a bundle: engine.model.encoder is not available ({exc})") from exc
    return SparseEncoder(str(bundle_dir), threads=threads)


def bundle_vocab_size(bundle_dir: str | Path | None) -> int | None:
    """The bundle's ``vocab_size`` from its config, None without one."""
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
            or bundle_vocab_size(bundle_dir)
        )
        self.cache_path: Path | None = None
        self.from_cache = matrix is not None
        if matrix is None and cache_dir is not None and bundle_dir is not None:
            self.cache_path = cache_file(cache_dir, bundle_dir, sentences, contexts)
            matrix = read_matrix(self.cache_path, len(sentences))
            self.from_cache = matrix is not None
        if matrix is None:
            matrix = encode_matrix(encoder, sentences, contexts, vocab_size, groups)
            if self.cache_path is not None:
                write_matrix(self.cache_path, matrix)
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
