"""Exact question scoring over the column store: a question's tokens added into an int32
accumulator per segment (:meth:`engine.index.segments.Segment.add_scores`), then the top k
(:func:`top_rows`) among all rows or the rows a filter lets through. :class:`ColumnView` is the
segments of one committed state, as :mod:`engine.index.columns` loads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from engine.index.segments import Segment, State

#: top_rows guesses the k-th score from every SAMPLE_STEP-th positive row.
SAMPLE_STEP = 32


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows that can be in the top ``k`` (score > 0): the best ``k`` and all ties of the k-th,
    ascending.

    The k-th score is selected among the positive rows only: with sparse vectors most rows
    score 0, and ``np.partition`` over a mostly-zero array is ~10x slower than finding the
    positive rows and partitioning those. With many more positive rows than ``k`` (a 1M
    sentence segment has ~100k per question), a guess of the k-th score from every
    ``SAMPLE_STEP``-th row first narrows them to ~2k: when at least ``k`` rows reach the
    guess, the k-th score is at least the guess, so no row that can rank is dropped (otherwise
    all positive rows are partitioned, as without the guess)."""
    if k <= 0 or scores.shape[0] == 0:
        return np.zeros(0, np.int64)
    pos = np.flatnonzero(scores > 0)
    if pos.shape[0] <= k:
        return pos
    vals = scores[pos]
    if vals.shape[0] >= 8 * k:
        sample = vals[::SAMPLE_STEP]
        j = min(sample.shape[0], 2 * k // SAMPLE_STEP + 1)
        guess = np.partition(sample, sample.shape[0] - j)[sample.shape[0] - j]
        keep = np.flatnonzero(vals >= guess)
        if keep.shape[0] >= k:
            pos, vals = pos[keep], vals[keep]
    kth = np.partition(vals, vals.shape[0] - k)[vals.shape[0] - k]
    return pos[vals >= kth]


class ColumnView:
    """The segments of one state, memory-mapped; scoring and document frequencies."""

    def __init__(self, root: Path, state: State, reuse: Mapping[str, Segment] | None = None) -> None:
        self.root = root
        self.state = state
        segs: list[Segment] = []
        for name, deletes in state.segments:
            old = (reuse or {}).get(name)
            if old is not None and old.deletes_file == deletes:
                segs.append(old)
            else:
                segs.append(Segment.load(root, name, deletes))
        self.segments: tuple[Segment, ...] = tuple(segs)

    @property
    def num_live(self) -> int:
        return sum(s.live for s in self.segments)

    def doc_freq(self, token: int) -> int:
        return sum(s.doc_freq(token) for s in self.segments)

    def top_k(
        self,
        tokens: Sequence[int],
        multipliers: Sequence[int],
        k: int,
        allowed: Sequence[np.ndarray | None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` ``(sentence_ids, raw integer scores)``: score desc, id asc, > 0.

        ``allowed[i]`` (the live rows of segment ``i`` a filter lets through, ascending, as
        :meth:`allowed_rows` gives them; None for all) restricts the candidates without
        changing any score: the top k is selected among those rows' scores alone, so a
        filter costs a gather of its rows, not a pass over the whole segment."""
        pairs = [(int(t), int(m)) for t, m in zip(tokens, multipliers, strict=True) if t >= 0 and m > 0]
        ids: list[np.ndarray] = []
        raws: list[np.ndarray] = []
        if not pairs or k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        for i, seg in enumerate(self.segments):
            keep = None if allowed is None else allowed[i]
            if seg.n == 0 or (keep is not None and keep.shape[0] == 0):
                continue
            acc = np.zeros(seg.n, dtype=np.int32)
            tmp = np.empty(seg.n, dtype=np.int32)
            for t, m in pairs:
                seg.add_scores(acc, t, m, tmp)
            if keep is None:
                if seg.deleted.size:
                    acc[seg.deleted] = 0
                rows = top_rows(acc, k)
            else:  # allowed rows are live rows
                rows = keep[top_rows(acc[keep], k)]
            ids.append(np.asarray(seg.sids[rows], dtype=np.int64))
            raws.append(acc[rows].astype(np.int64))
        if not ids:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        sid, raw = np.concatenate(ids), np.concatenate(raws)
        pos = top_rows(raw, k)
        order = pos[np.lexsort((sid[pos], -raw[pos]))][:k]
        return sid[order], raw[order]

    def allowed_rows(self, sentence_ids: np.ndarray) -> list[np.ndarray]:
        """Per segment, the live rows whose sentence id is in ``sentence_ids`` (a filter),
        ascending."""
        return [np.sort(seg.rows_of(sentence_ids)) for seg in self.segments]

