"""Brute-force scorer over the same quantised vectors as the index.

It exists to prove the index's scoring (the column store, :mod:`engine.index.columns`) exact
(tests compare top-k ids and scores) and as the baseline in ``bench/search_latency.py``. It holds every sentence's levels in a scipy sparse
matrix and scores a question with plain numpy, using the integer arithmetic of
:mod:`engine.index.quantize`, so its scores are bit-identical to the index's.

Ranking rule shared with the index: score descending, then sentence id ascending; only
sentences with a positive score are returned (a sentence sharing no token with the
question is not a hit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from engine.index.quantize import Quantizer, QueryWeights, idf_weight, query_weights
from engine.model.sparse import VOCAB_SIZE, SparseVector


def rank_top_k(scores: np.ndarray, sentence_ids: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best entries: score descending, sentence id ascending; score > 0."""
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0 or k <= 0:
        return positive[:0]
    if positive.size > k:
        # Everything tied with the k-th score stays a candidate so the id tie-break decides.
        kth = np.partition(scores[positive], positive.size - k)[positive.size - k]
        positive = positive[scores[positive] >= kth]
    order = np.lexsort((sentence_ids[positive], -scores[positive]))
    return positive[order[:k]]


class BruteForceOracle:
    """All sentences' quantised vectors in memory; exact top-k by exhaustive scoring.

    Stored column-major (CSC, uint8 levels): scoring a question reads only the columns of
    its tokens, so it is an exhaustive sum, but not a full matrix-vector product over a
    billion entries at 1M sentences.
    """

    def __init__(
        self,
        sentence_ids: np.ndarray,
        levels: sp.spmatrix,
        quantizer: Quantizer,
        float_weights: sp.spmatrix | None = None,
    ) -> None:
        self.sentence_ids = np.asarray(sentence_ids, dtype=np.int64)
        self.levels = sp.csc_matrix(levels, dtype=np.uint8)
        if self.levels.shape[0] != self.sentence_ids.shape[0]:
            raise ValueError("one row of levels per sentence id")
        self.quantizer = quantizer
        self.float_weights = None if float_weights is None else sp.csc_matrix(float_weights, dtype=np.float32)
        self._df = np.diff(self.levels.indptr)

    @classmethod
    def from_vectors(
        cls,
        sentence_ids: Sequence[int] | np.ndarray,
        vectors: Sequence[SparseVector],
        quantizer: Quantizer,
        vocab_size: int = VOCAB_SIZE,
        keep_float: bool = False,
    ) -> BruteForceOracle:
        """Quantise ``vectors`` with ``quantizer``; ``keep_float`` also keeps the float weights
        (for measuring how much quantisation changes rankings)."""
        n = len(vectors)
        lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        ids = np.concatenate([v.ids for v in vectors]) if n else np.zeros(0, np.int32)
        weights = np.concatenate([v.weights for v in vectors]) if n else np.zeros(0, np.float32)
        lv = quantizer.levels(weights)
        levels = sp.csr_matrix((lv, ids, indptr), shape=(n, vocab_size))
        fw = sp.csr_matrix((weights, ids, indptr), shape=(n, vocab_size)) if keep_float else None
        return cls(np.asarray(sentence_ids, dtype=np.int64), levels, quantizer, fw)

    @property
    def num_sentences(self) -> int:
        """Number of sentences scored."""
        return int(self.sentence_ids.shape[0])

    @property
    def matrix(self) -> sp.csr_matrix:
        """Dequantised weights as a CSR ``[n_sentences, vocab]`` float32 matrix."""
        m = self.levels.tocsr().astype(np.float32)
        m.data *= np.float32(self.quantizer.scale)
        return m

    def doc_freq(self, token: int) -> int:
        """Number of sentences whose vector contains ``token``."""
        return int(self._df[token]) if 0 <= token < self._df.shape[0] else 0

    def idf(self, tokens: Iterable[int]) -> dict[int, float]:
        """CAI IDF of ``tokens`` over these sentences (see :func:`engine.index.quantize.idf_weight`)."""
        n = self.num_sentences
        return {int(t): idf_weight(self.doc_freq(int(t)), n) for t in tokens}

    def weights_for(self, query_ids: Iterable[int], idf: Mapping[int, float] | None = None) -> QueryWeights:
        """The integer question weights the index would use for the same question."""
        return query_weights(query_ids, self.quantizer.scale, idf, self.quantizer.max_level)

    def raw_scores(self, qw: QueryWeights) -> np.ndarray:
        """Exact integer sums ``sum_t multiplier_t * level(t, s)`` for every sentence (float64)."""
        n = self.num_sentences
        if len(qw) == 0:
            return np.zeros(n, dtype=np.float64)
        indptr, indices, data = self.levels.indptr, self.levels.indices, self.levels.data
        rows: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        for t, m in zip(qw.tokens.tolist(), qw.multipliers.tolist(), strict=True):
            if t >= self.levels.shape[1]:
                continue
            a, b = indptr[t], indptr[t + 1]
            rows.append(indices[a:b])
            vals.append(data[a:b].astype(np.float64) * m)
        if not rows:
            return np.zeros(n, dtype=np.float64)
        return np.bincount(np.concatenate(rows), weights=np.concatenate(vals), minlength=n)

    def scores(self, query_ids: Iterable[int], idf: Mapping[int, float] | None = None) -> np.ndarray:
        """Score of every sentence (row order), as the index computes it."""
        qw = self.weights_for(query_ids, idf)
        return np.asarray(qw.scores(self.raw_scores(qw)), dtype=np.float64)

    def score(
        self,
        query_ids: Iterable[int],
        idf: Mapping[int, float] | None = None,
        top_k: int = 10,
        mask: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k ``(sentence_ids, scores)``; ``mask`` (bool per row) emulates filters."""
        s = self.scores(query_ids, idf)
        if mask is not None:
            s = np.where(mask, s, 0.0)
        pos = rank_top_k(s, self.sentence_ids, top_k)
        return self.sentence_ids[pos], s[pos]

    def float_score(
        self, query_ids: Iterable[int], idf: Mapping[int, float] | None = None, top_k: int = 10
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k under the unquantised float weights (needs ``keep_float``): the reference for
        measuring the quantiser's recall. Uses the exact float IDF, not the rounded one."""
        if self.float_weights is None:
            raise ValueError("oracle was built without keep_float=True")
        fw = self.float_weights
        weights: dict[int, float] = {}
        for t in query_ids:
            t = int(t)
            if 0 <= t < fw.shape[1]:
                weights[t] = weights.get(t, 0.0) + (1.0 if idf is None else float(idf.get(t, 1.0)))
        rows = [fw.indices[fw.indptr[t] : fw.indptr[t + 1]] for t in weights]
        vals = [fw.data[fw.indptr[t] : fw.indptr[t + 1]].astype(np.float64) * w for t, w in weights.items()]
        n = self.num_sentences
        s = (
            np.bincount(np.concatenate(rows), weights=np.concatenate(vals), minlength=n)
            if rows
            else np.zeros(n, dtype=np.float64)
        )
        pos = rank_top_k(s, self.sentence_ids, top_k)
        return self.sentence_ids[pos], s[pos]
