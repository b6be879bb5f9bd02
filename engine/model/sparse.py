"""The sparse sentence vector shared by the encoder, the index and the brute-force oracle.

A SPARC sentence vector (SPARC.md §1) is the top-K of ``f(v, s)`` over the 30,522-token
WordPiece vocabulary: a few hundred to 2,000 non-zero weights. Everything downstream only
needs ``(ids, weights)`` pairs, so the vector is two parallel numpy arrays rather than a dict
(cheap to slice, to concatenate into a CSR matrix and to ship between processes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

#: Size of the bert-base-uncased / MiniLM WordPiece vocabulary the model scores over.
VOCAB_SIZE = 30522


@dataclass(frozen=True, eq=False)
class SparseVector:
    """Non-zero token weights of one sentence.

    ``ids`` are int32 WordPiece ids, ``weights`` float32 and strictly positive. The encoder
    returns them sorted by weight descending (ARCHITECTURE.md); nothing here relies on the
    order, but ids must be unique, because the index stores one term per (token, level).
    """

    ids: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        ids = np.ascontiguousarray(self.ids, dtype=np.int32).reshape(-1)
        weights = np.ascontiguousarray(self.weights, dtype=np.float32).reshape(-1)
        if ids.shape != weights.shape:
            raise ValueError(f"ids and weights differ in length: {ids.shape[0]} != {weights.shape[0]}")
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "weights", weights)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @classmethod
    def from_dict(cls, weights: Mapping[int, float]) -> SparseVector:
        """Build from ``{token_id: weight}``, dropping non-positive weights, heaviest first."""
        items = sorted(((int(k), float(v)) for k, v in weights.items() if v > 0), key=lambda kv: -kv[1])
        return cls(
            np.array([k for k, _ in items], dtype=np.int32),
            np.array([v for _, v in items], dtype=np.float32),
        )

    @classmethod
    def from_dense(cls, dense: np.ndarray, top_k: int | None = None) -> SparseVector:
        """Keep the positive entries of a dense ``[vocab]`` row, at most ``top_k`` of them."""
        dense = np.asarray(dense, dtype=np.float32).reshape(-1)
        nz = np.flatnonzero(dense > 0)
        order = nz[np.argsort(-dense[nz], kind="stable")]
        if top_k is not None:
            order = order[:top_k]
        return cls(order.astype(np.int32), dense[order])

    def to_dict(self) -> dict[int, float]:
        """``{token_id: weight}``; handy in tests and for debugging output."""
        return dict(zip(self.ids.tolist(), self.weights.tolist(), strict=True))

    def validate(self, vocab_size: int = VOCAB_SIZE) -> None:
        """Raise ``ValueError`` if ids are out of range or repeated or a weight is not positive.

        The index trusts its input (validation per sentence would cost more than encoding it
        in Python), so callers that build vectors by hand can check them here.
        """
        if len(self) == 0:
            return
        if int(self.ids.min()) < 0 or int(self.ids.max()) >= vocab_size:
            raise ValueError("token id out of vocabulary range")
        if np.unique(self.ids).shape[0] != self.ids.shape[0]:
            raise ValueError("repeated token id in sparse vector")
        if not np.all(np.isfinite(self.weights)) or float(self.weights.min()) <= 0.0:
            raise ValueError("sparse weights must be finite and > 0")


def stack_weights(vectors: Iterable[SparseVector]) -> np.ndarray:
    """All weights of ``vectors`` in one float32 array (for fitting a quantiser)."""
    parts = [v.weights for v in vectors]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
