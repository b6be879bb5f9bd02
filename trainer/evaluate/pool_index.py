"""A pool in a real ``engine.index.sentences.SentenceIndex``: what the index scorer and the
app's BM25 rank against."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp


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
