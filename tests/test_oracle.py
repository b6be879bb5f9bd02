"""Quantiser, exact question weights and the brute-force oracle."""

from __future__ import annotations

import numpy as np
import pytest

from bench.synthetic import VectorModel, sample_questions
from engine.index.oracle import BruteForceOracle, rank_top_k
from engine.index.quantize import FLOAT32_EXACT, IDF_BITS, MAX_LEVEL, Quantizer, idf_weight, query_weights
from engine.model.sparse import SparseVector

# ----------------------------------------------------------------------------- SparseVector


def test_sparse_vector_coerces_and_validates() -> None:
    v = SparseVector([3, 1], [0.5, 2.0])
    assert v.ids.dtype == np.int32 and v.weights.dtype == np.float32 and len(v) == 2
    assert SparseVector.from_dict({5: 1.0, 6: 0.0, 7: 3.0}).ids.tolist() == [7, 5]
    dense = np.zeros(10, np.float32)
    dense[[2, 4, 9]] = [0.1, 0.7, 0.3]
    assert SparseVector.from_dense(dense, top_k=2).ids.tolist() == [4, 9]
    v.validate()
    with pytest.raises(ValueError):
        SparseVector([1, 1], [1.0, 1.0]).validate()
    with pytest.raises(ValueError):
        SparseVector([1], [0.0]).validate()
    with pytest.raises(ValueError):
        SparseVector([40000], [1.0]).validate()
    with pytest.raises(ValueError):
        SparseVector([1, 2], [1.0])


# ----------------------------------------------------------------------------- quantiser


def test_quantizer_levels_and_dequantize() -> None:
    q = Quantizer(scale=0.04)
    w = np.array([-1.0, 0.0, 0.001, 0.02, 0.07, 1.0, 10.2, 50.0], np.float32)
    lv = q.levels(w)
    assert lv.dtype == np.uint8
    assert lv.tolist() == [0, 0, 1, 1, 2, 25, 255, 255]  # tiny weights keep level 1; big ones clamp
    assert q.clamped(w) == 1
    np.testing.assert_allclose(q.dequantize(lv), lv * 0.04, rtol=1e-6)
    assert Quantizer.from_dict(q.to_dict()) == q
    fit = Quantizer.fit(np.array([0.5, 3.0, 7.65]))
    assert fit.scale == pytest.approx(7.65 / MAX_LEVEL) and fit.levels(np.array([7.65]))[0] == 255
    with pytest.raises(ValueError):
        Quantizer(scale=0.0)


def test_quantisation_error_is_at_most_half_a_step() -> None:
    rng = np.random.default_rng(0)
    w = rng.uniform(0.03, 9.0, 10_000)
    q = Quantizer.fit(w)
    err = np.abs(q.dequantize(q.levels(w)) - w)
    assert err.max() <= q.scale / 2 + 1e-6


def test_query_weights_counts_idf_and_exactness_bound() -> None:
    qw = query_weights([5, 3, 5, 9], scale=0.5)
    assert qw.tokens.tolist() == [3, 5, 9] and qw.multipliers.tolist() == [1, 2, 1]
    assert qw.denominator == 1 and qw.factor == 0.5
    qw = query_weights([5, 3, 9], scale=0.5, idf={3: 2.0, 5: 0.001, 9: 1.5})
    assert qw.denominator == 1 << IDF_BITS
    # 0.001 rounds to 0 at 1/256 resolution: the token cannot change rankings and is dropped.
    assert qw.tokens.tolist() == [3, 9] and qw.multipliers.tolist() == [512, 384]
    assert qw.factor == 0.5 / 256
    # Long, high-IDF questions lower the IDF precision to keep raw sums below 2**24.
    long_q = list(range(1000, 1300))
    qw = query_weights(long_q, scale=1.0, idf={t: 13.0 for t in long_q})
    assert int(qw.multipliers.sum()) * MAX_LEVEL < FLOAT32_EXACT
    assert qw.denominator < 1 << IDF_BITS
    assert len(query_weights([], 1.0)) == 0


def test_idf_weight() -> None:
    assert idf_weight(10, 1000) == pytest.approx(np.log(100))
    assert idf_weight(0, 1000) == 1.0  # CAI: weight 1 for an unseen token
    assert idf_weight(1200, 1000) == 0.0  # deleted-but-unmerged docs: never negative


# ----------------------------------------------------------------------------- ranking and oracle


def test_rank_top_k_breaks_ties_by_id_and_drops_zero() -> None:
    scores = np.array([1.0, 3.0, 3.0, 0.0, 3.0, 2.0])
    ids = np.array([50, 40, 30, 10, 35, 20])
    assert ids[rank_top_k(scores, ids, 2)].tolist() == [30, 35]
    assert ids[rank_top_k(scores, ids, 10)].tolist() == [30, 35, 40, 20, 50]
    assert rank_top_k(np.zeros(3), np.arange(3), 2).size == 0


@pytest.fixture(scope="module")
def small():
    vectors = VectorModel.zipf(seed=2, median_nnz=400).sample(1500, seed=2)
    q = Quantizer.fit(np.concatenate([v.weights for v in vectors]))
    ids = np.arange(1500) * 3 + 7
    return vectors, q, BruteForceOracle.from_vectors(ids, vectors, q, keep_float=True), ids


def test_oracle_equals_dense_computation(small) -> None:
    vectors, q, oracle, ids = small
    dense = oracle.levels.toarray().astype(np.float64)
    for query in sample_questions(vectors, 10, seed=1):
        idf = oracle.idf(query)
        qw = query_weights(query, q.scale, idf)
        raw = dense[:, qw.tokens] @ qw.multipliers.astype(np.float64)
        np.testing.assert_array_equal(oracle.raw_scores(qw), raw)
        got_ids, got_scores = oracle.score(query, idf, top_k=10)
        order = np.lexsort((ids, -raw))[:10]
        assert got_ids.tolist() == ids[order].tolist()
        np.testing.assert_array_equal(got_scores, raw[order] * qw.factor)
    m = oracle.matrix
    assert m.shape == (1500, 30522) and m.dtype == np.float32
    np.testing.assert_allclose(
        m[0].toarray().ravel()[vectors[0].ids], q.dequantize(q.levels(vectors[0].weights))
    )
    assert oracle.doc_freq(int(vectors[0].ids[0])) == sum(
        int(vectors[0].ids[0]) in set(v.ids) for v in vectors
    )


def test_quantised_top10_recall_vs_float(small) -> None:
    """8-bit levels with scale = max/255 keep >= 0.98 of the float top-10 (synthetic shape;
    the bench reports the same on larger corpora and on real vectors)."""
    vectors, _, oracle, _ = small
    recalls = []
    for query in sample_questions(vectors, 100, seed=5):
        for idf in (None, oracle.idf(query)):
            f_ids, _ = oracle.float_score(query, idf, top_k=10)
            q_ids, _ = oracle.score(query, idf, top_k=10)
            recalls.append(len(set(f_ids) & set(q_ids)) / max(1, len(f_ids)))
    assert float(np.mean(recalls)) >= 0.98
