"""Synthetic SPARC-shaped sentence vectors and questions for tests and benchmarks.

Until the trained model has encoded a real corpus we need vectors with the shape that
matters for an inverted index: which tokens occur how often (posting-list lengths), how
many non-zeros a sentence has (~1,000, SPARC.md §1) and how weights fall off within a
sentence (a few large ``log1p`` weights for the sentence's own words, a long tail of small
ones for expansions). :class:`VectorModel` draws such vectors; :meth:`VectorModel.from_npz`
fits the same three distributions to real encoder output, so the benchmark can be re-run
on the real shape without storing a million real vectors.

``.npz`` layout of real vectors (CSR): ``indptr`` int64 [n+1], ``ids`` int32 [nnz],
``weights`` float32 [nnz]; or a ``scipy.sparse.save_npz`` CSR matrix (``indices``, ``data``),
as the evaluation cache stores encoder output (``runs/cache/sparc-*.npz``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.model.sparse import VOCAB_SIZE, SparseVector

#: WordPiece ids below this are [PAD], [unused*], [CLS], [SEP], [MASK] and single characters.
FIRST_WORD_ID = 999


@dataclass
class VectorModel:
    """Token popularity, non-zero count and weight-profile distributions of sentence vectors.

    ``token_p``: probability that a random non-zero entry is token v (length VOCAB_SIZE).
    ``nnz``: empirical non-zero counts to resample from. ``profiles``: optional real sorted
    weight profiles (one array per sentence) to resample from; without them weights follow
    ``log1p(A * rank**-b * noise)``, which reaches ~9 at rank 1 and ~0.3 at rank 1,000.
    """

    token_p: np.ndarray
    nnz: np.ndarray
    profiles: list[np.ndarray] | None = None
    amplitude: float = 1500.0
    decay: float = 1.2
    noise: float = 0.5

    @classmethod
    def zipf(
        cls, exponent: float = 0.9, median_nnz: int = 1000, seed: int = 0, max_nnz: int = 2000
    ) -> VectorModel:
        """Zipf-like popularity over word-piece ids (random rank order), log-normal nnz."""
        rng = np.random.default_rng(seed)
        ids = np.arange(FIRST_WORD_ID, VOCAB_SIZE)
        rng.shuffle(ids)
        p = np.zeros(VOCAB_SIZE, dtype=np.float64)
        p[ids] = 1.0 / np.arange(1, ids.size + 1, dtype=np.float64) ** exponent
        nnz = np.clip(rng.lognormal(np.log(median_nnz), 0.35, 100_000), 50, max_nnz).astype(np.int64)
        return cls(token_p=p / p.sum(), nnz=nnz)

    @classmethod
    def from_npz(cls, path: str, max_profiles: int = 20_000, seed: int = 0) -> VectorModel:
        """Fit popularity, nnz and weight profiles to real vectors stored as CSR in ``path``."""
        data = np.load(path)
        if "indices" in data.files:  # scipy.sparse.save_npz CSR (runs/cache/sparc-*.npz)
            indptr, ids, weights = data["indptr"].astype(np.int64), data["indices"], data["data"]
        else:
            indptr, ids, weights = data["indptr"], data["ids"], data["weights"]
        df = np.bincount(ids, minlength=VOCAB_SIZE).astype(np.float64)[:VOCAB_SIZE]
        df += 1e-3  # tokens unseen in the sample stay possible, just rare
        nnz = np.diff(indptr).astype(np.int64)
        rng = np.random.default_rng(seed)
        pick = rng.choice(nnz.size, size=min(max_profiles, nnz.size), replace=False)
        profiles = [np.sort(weights[indptr[i] : indptr[i + 1]])[::-1].astype(np.float32) for i in pick]
        return cls(token_p=df / df.sum(), nnz=nnz[nnz > 0], profiles=profiles)

    def sample(
        self,
        n: int,
        seed: int = 0,
        own_tokens: Sequence[Sequence[int]] | None = None,
    ) -> list[SparseVector]:
        """``n`` vectors; ``own_tokens[i]`` (e.g. the WordPiece ids of a real sentence) get the
        largest weights of vector i, as a trained encoder gives a sentence's own words."""
        rng = np.random.default_rng(seed)
        cdf = np.cumsum(self.token_p)
        cdf /= cdf[-1]
        out: list[SparseVector] = []
        for i in range(n):
            if self.profiles is not None:
                prof = self.profiles[int(rng.integers(len(self.profiles)))]
                k = prof.size
            else:
                k = int(self.nnz[int(rng.integers(self.nnz.size))])
                prof = None
            own = np.unique(np.asarray(own_tokens[i], dtype=np.int64)) if own_tokens is not None else None
            draw = np.searchsorted(cdf, rng.random(int(k * 1.6) + 32), side="right")
            draw = np.minimum(draw, VOCAB_SIZE - 1)
            cand = np.unique(draw)
            rng.shuffle(cand)
            if own is not None and own.size:
                own = own[(own >= 0) & (own < VOCAB_SIZE)]
                rng.shuffle(own)
                cand = np.concatenate([own, cand[~np.isin(cand, own)]])
            ids = cand[:k]
            if prof is None:
                rank = np.arange(1, ids.size + 1, dtype=np.float64)
                w = np.log1p(self.amplitude * rank**-self.decay * rng.lognormal(0.0, self.noise, ids.size))
                w = np.sort(w)[::-1]
            else:
                w = prof[: ids.size].astype(np.float64)
            w = np.maximum(w, 1e-4).astype(np.float32)
            out.append(SparseVector(ids.astype(np.int32), w))
        return out

    def sample_batch(
        self, n: int, seed: int = 0, block: int = 1000
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` vectors as CSR ``(indptr, ids, weights)``, drawn like :meth:`sample` without
        ``own_tokens`` (distinct tokens by popularity, in random order, weights from the
        same profiles), but vectorised per block of rows: the 1M-sentence benchmark would
        spend 15 minutes in :meth:`sample`'s per-vector loop."""
        rng = np.random.default_rng(seed)
        cdf = np.cumsum(self.token_p)
        cdf /= cdf[-1]
        vocab = self.token_p.shape[0]
        # Inverse-CDF lookup table (resolution 2**-22): a gather instead of a binary search.
        table = np.minimum(
            np.searchsorted(cdf, (np.arange(1 << 22) + 0.5) / (1 << 22), side="right"), vocab - 1
        )
        ids_out: list[np.ndarray] = []
        w_out: list[np.ndarray] = []
        lengths = np.zeros(n, dtype=np.int64)
        for b0 in range(0, n, block):
            m = min(block, n - b0)
            if self.profiles is not None:
                picks = rng.integers(len(self.profiles), size=m)
                ks = np.array([self.profiles[int(p)].size for p in picks], dtype=np.int64)
            else:
                ks = self.nnz[rng.integers(self.nnz.size, size=m)]
            draws = int(ks.max() * 2.5) + 32  # enough distinct tokens for 2,000 non-zeros
            cand = table[rng.integers(1 << 22, size=(m, draws))]
            cand.sort(axis=1)
            dup = np.zeros_like(cand, dtype=bool)
            dup[:, 1:] = cand[:, 1:] == cand[:, :-1]
            key = rng.random((m, draws))
            key[dup] = 2.0  # duplicates sort last and are never taken
            order = np.argsort(key, axis=1)
            shuffled = np.take_along_axis(cand, order, axis=1)
            distinct = draws - dup.sum(axis=1)
            for r in range(m):
                k = int(min(ks[r], distinct[r]))
                ids = shuffled[r, :k]
                if self.profiles is None:
                    rank = np.arange(1, k + 1, dtype=np.float64)
                    w = np.log1p(self.amplitude * rank**-self.decay * rng.lognormal(0.0, self.noise, k))
                    w = np.sort(w)[::-1]
                else:
                    w = self.profiles[int(picks[r])][:k].astype(np.float64)
                ids_out.append(ids.astype(np.int32))
                w_out.append(np.maximum(w, 1e-4).astype(np.float32))
                lengths[b0 + r] = k
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return indptr, np.concatenate(ids_out), np.concatenate(w_out)


def sample_questions(
    vectors: Sequence[SparseVector],
    n: int,
    seed: int = 0,
    length: tuple[int, int] = (10, 15),
    own_share: float = 0.5,
) -> list[list[int]]:
    """Bags of 10-15 token ids: about half from one sentence's heaviest tokens (the answer
    sentence's words), the rest drawn like corpus tokens (question words and stopwords,
    which are the long posting lists that make a question slow)."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([v.ids for v in vectors[: min(len(vectors), 2000)]])
    out: list[list[int]] = []
    for _ in range(n):
        size = int(rng.integers(length[0], length[1] + 1))
        target = vectors[int(rng.integers(len(vectors)))]
        n_own = min(int(round(size * own_share)), len(target))
        head = target.ids[: max(n_own, min(30, len(target)))]
        own = rng.choice(head, size=n_own, replace=False) if n_own else np.zeros(0, np.int32)
        rest = pool[rng.integers(pool.size, size=size - n_own)]
        out.append([int(t) for t in np.concatenate([own, rest])])
    return out
