"""Encode-time threshold pruning (issue 13): a bundle's ``prune_ratio`` keeps only the weights
>= ratio x the sentence's largest, after the graph's top-K; absent or 0 changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from engine.model.bundle import Bundle
from engine.model.encoder import SparseEncoder, kept_length
from trainer.evaluate import prune_rows

#: sparc-tiny 0.3.0 (no pruning; kept beside the 0.4.0 default for comparison)
BUNDLE = Path(__file__).resolve().parents[1] / "assets" / "sparc-tiny-0.3.0"

SENTENCES = [
    "The treaty was signed in 1648 in the city of Münster.",
    "Photosynthesis turns light, water and carbon dioxide into sugar.",
    "He scored twice in the final.",
]
CONTEXTS = ["It ended the Thirty Years' War.", "Plants and algae do it.", ""]


def test_kept_length_cuts_a_descending_row():
    row = np.array([4.0, 2.0, 0.5, 0.4, 0.0, 0.0], dtype=np.float32)
    assert kept_length(row) == 4
    assert kept_length(row, 0.0) == 4
    assert kept_length(row, 0.11) == 3
    assert kept_length(row, 0.5) == 2  # 2.0 is exactly 0.5 x 4: kept (>=)
    assert kept_length(np.zeros(3, dtype=np.float32), 0.1) == 0


def test_the_030_bundle_has_no_pruning_and_the_default_prunes():
    assert Bundle.open(BUNDLE).prune_ratio == 0.0
    assert Bundle.open(BUNDLE.parent / "sparc-tiny").prune_ratio == 0.1  # 0.4.0, the sparse default


def test_bundle_prune_ratio_is_honoured_by_the_encoder(tmp_path):
    if not (BUNDLE / "config.json").is_file():
        pytest.skip("no shipped bundle")
    pruned = tmp_path / "pruned"
    shutil.copytree(BUNDLE, pruned, ignore=shutil.ignore_patterns("*.fp32.onnx", "mlm*"))
    cfg = json.loads((pruned / "config.json").read_text())
    cfg["prune_ratio"] = 0.75  # the shipped weights are flat: 0.5 keeps all 2,000 of some sentences
    (pruned / "config.json").write_text(json.dumps(cfg))
    full = SparseEncoder(BUNDLE, threads=1).encode(SENTENCES, CONTEXTS)
    cut = SparseEncoder(pruned, threads=1).encode(SENTENCES, CONTEXTS)
    for a, b in zip(full, cut, strict=True):
        keep = a.weights >= 0.75 * a.weights.max()
        assert 0 < len(b.ids) == int(keep.sum()) < len(a.ids)
        np.testing.assert_array_equal(b.ids, a.ids[: len(b.ids)])
        np.testing.assert_array_equal(b.weights, a.weights[: len(b.ids)])
        assert b.weights.min() >= 0.75 * b.weights.max()


def test_prune_rows_matches_the_encoder_rule():
    m = sp.csr_matrix(np.array([[0, 4.0, 0.3, 2.0], [0, 0, 0, 0], [1.0, 0.05, 0.1, 0]], dtype=np.float32))
    out = prune_rows(m, 0.1).toarray()
    np.testing.assert_allclose(out, [[0, 4.0, 0, 2.0], [0, 0, 0, 0], [1.0, 0, 0.1, 0]])
    assert prune_rows(m, 0.0) is m
