"""Metrics on a small hand-made pool whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainer.metrics import (
    evaluate_rankings,
    first_relevant_rank,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)

# Six sentences s1..s6, three questions, and three rankings written out by hand.
#   q1: gold {s2}       ranking s2 s1 s3 s4 s5 s6 -> first gold at 1
#   q2: gold {s4, s6}   ranking s1 s3 s6 s2 s4 s5 -> first gold at 3, second at 5
#   q3: gold {s5}       ranking s1 s2 s3 s4 s6    -> s5 not retrieved at all
RANKINGS = [
    ["s2", "s1", "s3", "s4", "s5", "s6"],
    ["s1", "s3", "s6", "s2", "s4", "s5"],
    ["s1", "s2", "s3", "s4", "s6"],
]
GOLD = [{"s2"}, {"s4", "s6"}, {"s5"}]


def test_per_question_values():
    assert [first_relevant_rank(r, g) for r, g in zip(RANKINGS, GOLD, strict=True)] == [1, 3, None]
    assert [reciprocal_rank(r, g) for r, g in zip(RANKINGS, GOLD, strict=True)] == [1.0, 1 / 3, 0.0]
    assert [recall_at_k(r, g, 1) for r, g in zip(RANKINGS, GOLD, strict=True)] == [1.0, 0.0, 0.0]
    assert [recall_at_k(r, g, 2) for r, g in zip(RANKINGS, GOLD, strict=True)] == [1.0, 0.0, 0.0]
    assert [recall_at_k(r, g, 3) for r, g in zip(RANKINGS, GOLD, strict=True)] == [1.0, 1.0, 0.0]


def test_pool_means_hand_computed():
    m = evaluate_rankings(RANKINGS, GOLD, ks=(1, 3, 10), ndcg_k=10)
    assert m["questions"] == 3
    assert m["mrr@1000"] == pytest.approx((1 + 1 / 3 + 0) / 3)  # 0.4444
    assert m["r@1"] == pytest.approx(1 / 3)
    assert m["r@3"] == pytest.approx(2 / 3)
    assert m["r@10"] == pytest.approx(2 / 3)
    # q1: 1/log2(2) / 1 = 1
    # q2: (1/log2(4) + 1/log2(6)) / (1/log2(2) + 1/log2(3)) = (0.5 + 0.386853) / 1.630930 = 0.543771
    # q3: 0
    q2 = (0.5 + 1 / math.log2(6)) / (1 + 1 / math.log2(3))
    assert q2 == pytest.approx(0.543771, abs=1e-6)
    assert m["ndcg@10"] == pytest.approx((1 + q2 + 0) / 3)


def test_mrr_cutoff_gives_zero_beyond_1000():
    ranking = list(range(2000))
    assert reciprocal_rank(ranking, {999}) == pytest.approx(1 / 1000)
    assert reciprocal_rank(ranking, {1000}) == 0.0  # rank 1001
    assert evaluate_rankings([ranking], [{1500}])["mrr@1000"] == 0.0


def test_graded_ndcg():
    # gains: a=3, b=1; ranking b, x, a -> DCG = 1/1 + 3/log2(4) = 2.5; ideal a, b = 3 + 1/log2(3)
    got = ndcg_at_k(["b", "x", "a"], {"a": 3, "b": 1}, k=10)
    assert got == pytest.approx(2.5 / (3 + 1 / math.log2(3)))
    # cut at k=2: only b counts
    assert ndcg_at_k(["b", "x", "a"], {"a": 3, "b": 1}, k=2) == pytest.approx(1 / (3 + 1 / math.log2(3)))
    # binary relevance via a mapping with gain 0 means not relevant
    assert ndcg_at_k(["x"], {"x": 0, "y": 1}) == 0.0
    assert ndcg_at_k(["y"], {"y": 1}) == 1.0
    assert ndcg_at_k(["y"], set()) == 0.0


def test_numpy_rankings_and_int_ids():
    rankings = [np.array([5, 2, 7]), np.array([1, 0])]
    m = evaluate_rankings(rankings, [{2}, {3}])
    assert m["mrr@1000"] == pytest.approx(0.25)
    assert m["r@1"] == 0.0
    assert m["r@10"] == pytest.approx(0.5)


def test_length_mismatch_raises():
    with pytest.raises(ValueError):
        evaluate_rankings([["a"]], [])
