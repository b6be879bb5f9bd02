"""8-bit quantisation and the exact integer arithmetic shared by the index and the oracle.

Why quantise: the column store (:mod:`engine.index.columns`) keeps one byte per (sentence, token),
not a float. With ONE global scale per index every weight becomes ``level * scale`` with
``level`` in 1..255, so a question score is ``scale * sum(levels)``; the sum is an integer,
added in int32 by the column store and in float64 by the oracle, and kept below 2**24 so it
is also exact in float32. Integer sums do not depend on the order tokens are added in: that
is what lets the brute-force oracle agree with the index bit for bit, ties included.

IDF (SPARC.md §3, CAI) multiplies each question token's term by ``log(N / N_t)``. To keep
sums exact it is rounded to a dyadic rational ``m / 2**p``: clause scores become the
integers ``level * count * m`` and the final score is ``raw * scale / 2**p``. ``p`` is the
largest precision (at most ``IDF_BITS``) for which the worst possible raw sum stays below
2**24, so exactness never depends on the data.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.model.sparse import SparseVector, stack_weights

#: Highest quantisation level; levels are 1..MAX_LEVEL, 0 means "absent".
MAX_LEVEL = 255
#: float32 represents every integer up to this exactly; raw scores must stay below it.
FLOAT32_EXACT = 2**24
#: Finest IDF resolution (1/256); coarser only for very long questions.
IDF_BITS = 8


@dataclass(frozen=True)
class Quantizer:
    """Linear 8-bit quantiser with one global scale: ``level = clamp(round(w / scale), 1, 255)``.

    Linear (not log) levels because a question score is a plain sum: the absolute error
    per token (at most ``scale / 2``) is what can reorder two sentences, and a linear grid
    minimises the worst absolute error for the large weights that decide rankings. Weights
    below ``scale / 2`` still get level 1 (not 0) so no non-zero entry of the model's top-K
    disappears from the index.
    """

    scale: float
    max_level: int = MAX_LEVEL

    def __post_init__(self) -> None:
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"quantisation scale must be finite and > 0, got {self.scale}")
        if not 1 <= self.max_level <= MAX_LEVEL:
            raise ValueError(f"max_level must be in 1..{MAX_LEVEL}")

    @classmethod
    def fit(cls, weights: np.ndarray, quantile: float = 1.0, headroom: float = 1.0) -> Quantizer:
        """Choose the scale from a sample of weights: ``headroom * quantile(w) / max_level``.

        The default maps the largest weight seen to level 255 (top-10 recall against float
        scores 0.99 on synthetic SPARC-shaped vectors, 0.994 on the sparc-tiny bundle's).
        Clamping the largest weights is what hurts: fitting to the 99.9th percentile
        instead dropped top-10 recall to 0.91, since the few big weights decide rankings.
        A new index fits on its first batch; later weights above that range are clamped to
        255 (count them with :meth:`clamped`); ``headroom > 1`` buys range for resolution.
        """
        w = np.asarray(weights, dtype=np.float64)
        w = w[w > 0]
        if w.size == 0:
            raise ValueError("cannot fit a quantiser on no positive weights")
        top = float(np.quantile(w, quantile)) if quantile < 1.0 else float(w.max())
        return cls(scale=headroom * top / MAX_LEVEL)

    def levels(self, weights: np.ndarray) -> np.ndarray:
        """uint8 levels of ``weights``: 0 where ``w <= 0``, else ``clamp(round(w/scale), 1, max)``."""
        w = np.asarray(weights, dtype=np.float64)
        lv = np.clip(np.rint(w / self.scale), 1, self.max_level).astype(np.uint8)
        lv[~(w > 0)] = 0
        return lv

    def dequantize(self, levels: np.ndarray) -> np.ndarray:
        """float32 weights the index actually scores with (``level * scale``)."""
        return (np.asarray(levels, dtype=np.float64) * self.scale).astype(np.float32)

    def clamped(self, weights: np.ndarray) -> int:
        """How many weights exceed the top level's range (they are clamped to ``max_level``)."""
        w = np.asarray(weights, dtype=np.float64)
        return int(np.count_nonzero(w > (self.max_level + 0.5) * self.scale))

    def to_dict(self) -> dict[str, float | int]:
        """JSON-able form for the index metadata file."""
        return {"scale": self.scale, "max_level": self.max_level}

    @classmethod
    def from_dict(cls, d: Mapping[str, float | int]) -> Quantizer:
        """Inverse of :meth:`to_dict`."""
        return cls(scale=float(d["scale"]), max_level=int(d.get("max_level", MAX_LEVEL)))


def idf_weight(df: int, n: int) -> float:
    """CAI IDF ``log(N / N_t)``; 1.0 for a token no sentence contains (CAI's convention).

    Clamped at 0: the column store's document frequency still counts deleted sentences
    until their segment is merged, so ``N_t`` can briefly exceed ``N``.
    """
    if df <= 0 or n <= 0:
        return 1.0
    return max(0.0, math.log(n / df))


@dataclass(frozen=True)
class QueryWeights:
    """Integer per-token multipliers of a question and the factor that turns raw sums into scores.

    ``score = raw * factor`` where ``raw = sum_t multipliers[t] * level(t, s)`` is an exact
    integer (< 2**24) in both the column store (int32) and the oracle (float64).
    """

    tokens: np.ndarray  # int64, unique, ascending
    multipliers: np.ndarray  # int64, > 0
    denominator: int  # 2**p (1 without IDF)
    factor: float  # scale / denominator

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def scores(self, raw: np.ndarray | float) -> np.ndarray | float:
        """Convert raw integer sums to scores, the same way everywhere (float64 multiply)."""
        return raw * self.factor


def query_weights(
    query_ids: Iterable[int],
    scale: float,
    idf: Mapping[int, float] | None = None,
    max_level: int = MAX_LEVEL,
) -> QueryWeights:
    """Integer weights of a bag of question token ids.

    A repeated id counts once per occurrence (pass a set to count it once; SPARC.md leaves
    this open). With ``idf`` each token's count is multiplied by its IDF rounded to
    ``1/2**p``; a token missing from ``idf`` gets weight 1 and a token whose rounded IDF is
    0 is dropped (it cannot change any ranking). ``p`` is chosen so that
    ``sum(count * max_level * m) < 2**24``: the bound uses ``max_level`` rather than the
    levels present, so index and oracle derive the same ``p`` from the question alone.
    """
    counts = Counter(int(t) for t in query_ids)
    if not counts:
        return QueryWeights(np.zeros(0, np.int64), np.zeros(0, np.int64), 1, scale)
    tokens = np.array(sorted(counts), dtype=np.int64)
    c = np.array([counts[int(t)] for t in tokens], dtype=np.int64)
    if idf is None:
        if int(c.sum()) * max_level >= FLOAT32_EXACT:
            raise ValueError("question too long for exact scoring")
        return QueryWeights(tokens, c, 1, scale)
    idf_values = np.array([float(idf.get(int(t), 1.0)) for t in tokens], dtype=np.float64)
    if np.any(~np.isfinite(idf_values)) or np.any(idf_values < 0):
        raise ValueError("idf weights must be finite and >= 0")
    for p in range(IDF_BITS, -1, -1):
        m = np.rint(idf_values * (1 << p)).astype(np.int64)
        if int((c * m).sum()) * max_level < FLOAT32_EXACT:
            keep = m > 0
            return QueryWeights(tokens[keep], (c * m)[keep], 1 << p, scale / (1 << p))
    raise ValueError("question too long for exact IDF-weighted scoring")


#: The quantiser is fitted on the first encoded batch; weights above its top level are
#: clamped, so leave some room for later batches with larger weights.
QUANT_HEADROOM = 1.25


def fit_quantizer(vectors: Sequence[SparseVector]) -> Quantizer:
    """The quantiser a new index gets from its first encoded batch (the first
    ``FLUSH_SENTENCES`` sentences of a run): the batch's largest weight x ``QUANT_HEADROOM``
    maps to the top level. Public so that the evaluation builds its index the same way."""
    weights = stack_weights(vectors)
    return Quantizer.fit(weights, headroom=QUANT_HEADROOM) if weights.size else Quantizer(0.05)
