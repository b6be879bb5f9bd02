"""The app's BM25 on a pool (``AppBM25Retriever``) and SPARC fused with it by the app's own
``fuse`` (``HybridRetriever``): the hybrid rows of the float scorer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainer.baselines import TOP_K
from trainer.evaluate.pool_index import PoolIndex
from trainer.evaluate.sparc import SparcRetriever

#: Depth of each list the float hybrid fuses (the app's ``engine.search.answers.HYBRID_DEPTH``).
HYBRID_DEPTH = 100


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
