"""Retrieval metrics on rankings (SPARC.md §4). Pure functions, no I/O.

A ranking is a sequence of item ids, best first (any hashable ids; numpy arrays work).
Relevance is either a collection of relevant ids (binary) or a mapping id -> gain (graded).

- MRR@1000: 1 / rank of the first relevant item within the top 1000, 0 when there is none
  (as in ReQA / MultiReQA / SPARC).
- Recall@k: 1 when at least one relevant item is in the top k (the ReQA definition, also
  called success@k or hit@k), else 0.
- nDCG@k: sum over the top k of gain / log2(rank + 1), divided by the same sum for the ideal
  ordering of the judged gains (linear gains, as trec_eval / pytrec_eval ``ndcg_cut``).

Every per-question value is in [0, 1]; ``evaluate_rankings`` averages them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence

MRR_CUTOFF = 1000

Relevance = Collection[Hashable] | Mapping[Hashable, float]


def _gains(relevant: Relevance) -> dict[Hashable, float]:
    if isinstance(relevant, Mapping):
        return {k: float(v) for k, v in relevant.items() if v > 0}
    return {k: 1.0 for k in relevant}


def first_relevant_rank(
    ranking: Iterable[Hashable], relevant: Relevance, cutoff: int | None = None
) -> int | None:
    """1-based rank of the first relevant item within the top ``cutoff`` (None when absent)."""
    gains = _gains(relevant)
    for rank, item in enumerate(ranking, start=1):
        if cutoff is not None and rank > cutoff:
            break
        if _key(item) in gains:
            return rank
    return None


def reciprocal_rank(ranking: Iterable[Hashable], relevant: Relevance, cutoff: int = MRR_CUTOFF) -> float:
    rank = first_relevant_rank(ranking, relevant, cutoff)
    return 0.0 if rank is None else 1.0 / rank


def recall_at_k(ranking: Iterable[Hashable], relevant: Relevance, k: int) -> float:
    """1.0 when at least one relevant item is among the top ``k``, else 0.0."""
    return 0.0 if first_relevant_rank(ranking, relevant, k) is None else 1.0


def ndcg_at_k(ranking: Iterable[Hashable], relevant: Relevance, k: int = 10) -> float:
    """nDCG@k with binary (collection) or graded (mapping id -> gain) relevance."""
    gains = _gains(relevant)
    if not gains:
        return 0.0
    dcg = 0.0
    seen: set[Hashable] = set()
    for rank, item in enumerate(ranking, start=1):
        if rank > k:
            break
        key = _key(item)
        if key in gains and key not in seen:  # a duplicated id earns its gain once
            dcg += gains[key] / math.log2(rank + 1)
            seen.add(key)
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))
    return dcg / idcg


def evaluate_rankings(
    rankings: Sequence[Sequence[Hashable]],
    relevants: Sequence[Relevance],
    cutoff: int = MRR_CUTOFF,
    ks: Sequence[int] = (1, 10),
    ndcg_k: int = 10,
) -> dict[str, float]:
    """Mean MRR@cutoff, Recall@k for each k, and nDCG@ndcg_k over all questions (fractions)."""
    if len(rankings) != len(relevants):
        raise ValueError(f"{len(rankings)} rankings for {len(relevants)} questions")
    n = len(rankings)
    out: dict[str, float] = {"questions": n}
    if n == 0:
        return out
    ranks = [first_relevant_rank(r, rel, cutoff) for r, rel in zip(rankings, relevants, strict=True)]
    out[f"mrr@{cutoff}"] = sum(0.0 if r is None else 1.0 / r for r in ranks) / n
    for k in ks:
        out[f"r@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n
    out[f"ndcg@{ndcg_k}"] = (
        sum(ndcg_at_k(r, rel, ndcg_k) for r, rel in zip(rankings, relevants, strict=True)) / n
    )
    return out


def _key(item: Hashable) -> Hashable:
    # numpy scalars hash like Python ints but make ids from arrays explicit
    return item.item() if hasattr(item, "item") else item


def unit_ranking(ranking: Sequence[int], units: Sequence[str]) -> list[str]:
    """Units (documents, passages) ranked by their best item: the unit of each item of
    ``ranking`` (an index into ``units``) at its first occurrence."""
    seen: dict[str, None] = {}
    for i in ranking:
        seen.setdefault(units[int(i)], None)
    return list(seen)
