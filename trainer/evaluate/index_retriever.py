"""SPARC ranked by the app itself (``IndexRetriever``, the default scorer) on a ``PoolIndex``
of the encoded pool, with the app's IDF, hybrid and learned question weight tables
(``load_table``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trainer.baselines import TOP_K
from trainer.evaluate.pool_index import PoolIndex
from trainer.evaluate.sparc import SparcRetriever


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
