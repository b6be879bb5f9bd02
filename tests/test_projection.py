"""The vocabulary projection in int8 (``engine.model.bundle_edit.int8_projection``,
``sparcdesk-train int8-projection``): the quantised weights are the matrix's, a converted
bundle encodes real sentences as the fp32 projection does to within int8's rounding, and a
swapped matrix (adaptation, vocabulary expansion) carries the projection with it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from engine.model.bundle import Bundle
from engine.model.bundle_edit import (
    PROJECTION_INT8,
    PROJECTION_SCALE,
    int8_projection,
    projection_weights,
    read_embedding_matrix,
    replace_embedding_matrix,
)
from engine.model.encoder import SparseEncoder, default_bundle_dir
from trainer.projection import convert

#: sparc-tiny 0.3.0, kept beside the default: its fp32 graph is the reference converted here
BUNDLE = default_bundle_dir().parent / "sparc-tiny-0.3.0"
SENTENCES = [
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
    "Kenya's capital and largest city is Nairobi, on the Athi River.",
    "The steam engine drove the pumps that kept the mine from flooding.",
    "Denver beat Carolina 24 to 10 to win Super Bowl 50 at Levi's Stadium.",
]


def _inits(path: Path) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}


def _fp32_bundle(tmp_path: Path) -> Path:
    """The shipped bundle running its fp32 graph (fp32 encoder and projection): the reference."""
    out = tmp_path / "fp32"
    out.mkdir()
    for item in BUNDLE.iterdir():
        if item.is_file() and item.suffix != ".onnx" and item.name != "config.json":
            (out / item.name).symlink_to(item)
    (out / "model.fp32.onnx").symlink_to(BUNDLE / "model.fp32.onnx")
    cfg = json.loads((BUNDLE / "config.json").read_text(encoding="utf-8"))
    for key in ("onnx_fp32", "projection", "quantization"):
        cfg.pop(key, None)
    cfg.update(onnx="model.fp32.onnx", version="0.3.0-fp32")
    (out / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return out


def _converted(tmp_path: Path) -> tuple[Path, Path]:
    """(the fp32 reference, the same graph with its projection in int8)."""
    src = _fp32_bundle(tmp_path)
    out = tmp_path / "q"
    convert(src, out, "0.3.0-q")
    return src, out


def test_projection_weights_reconstruct_the_matrix() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(0, 0.05, (50, 16)).astype(np.float16)
    m[7] = 0  # a row of zeros (a removed token) stays zero, with a finite scale
    q, scale = projection_weights(m)
    assert q.dtype == np.int8 and q.shape == (16, 50) and scale.shape == (50,)
    assert np.abs(q).max() == 127 and np.all(np.isfinite(scale)) and not q[:, 7].any()
    back = (q.astype(np.float32) * scale).T
    assert np.all(np.abs(back - m.astype(np.float32)) <= scale[:, None] / 2 + 1e-7)


def test_converted_bundle_encodes_like_the_fp32_projection(tmp_path: Path) -> None:
    src, out = _converted(tmp_path)
    b = Bundle.open(out)
    assert b.projection == "int8" and b.version == "0.3.0-q" and Bundle.open(src).projection == "fp32"
    assert b.identity != Bundle.open(src).identity  # a new model to the index: re-encoded once
    inits = _inits(b.graph_path)
    q, scale = projection_weights(inits[b.embedding_initializer])
    assert np.array_equal(inits[PROJECTION_INT8], q) and np.array_equal(inits[PROJECTION_SCALE], scale)
    graph = onnx.load(str(b.graph_path)).graph
    assert not [n for n in graph.node if n.op_type == "Transpose" and n.name == "EmbeddingTranspose"]
    assert any(n.op_type == "MatMulInteger" and PROJECTION_INT8 in n.input for n in graph.node)
    before = SparseEncoder(src, threads=1).encode(SENTENCES, SENTENCES)
    after = SparseEncoder(out, threads=1).encode(SENTENCES, SENTENCES)
    for x, y in zip(before, after, strict=True):
        top_x, top_y = set(x.ids[:50].tolist()), set(y.ids[:50].tolist())
        assert len(top_x & top_y) >= 45  # 47-49 of 50 measured
        assert y.weights.max() == pytest.approx(x.weights.max(), rel=0.02)
    with pytest.raises(SystemExit, match="already int8"):
        convert(out, tmp_path / "again")
    model = onnx.load(str(b.graph_path))
    with pytest.raises(ValueError, match="already int8"):
        int8_projection(model)


def test_a_swapped_matrix_carries_the_int8_projection(tmp_path: Path) -> None:
    """What adaptation does: a new matrix (here one token's row zeroed and two rows added, as
    vocabulary expansion adds) re-derives the int8 weights, so the zeroed token leaves every
    vector and the graph runs with the longer vocabulary."""
    _, src = _converted(tmp_path)
    b = Bundle.open(src)
    enc = SparseEncoder(src, threads=1)
    sentence = SENTENCES[2]
    tok = enc.tokenizer.token_to_id("steam")
    assert tok in set(enc.encode([sentence], [sentence])[0].ids.tolist())
    m = read_embedding_matrix(b.graph_path).astype(np.float32)
    m[tok] = 0.0
    m = np.concatenate([m, m[[tok + 1, tok + 2]]])
    out = tmp_path / "swapped"
    out.mkdir()
    for item in src.iterdir():
        if item.name != b.onnx:
            (out / item.name).symlink_to(item.resolve())
    replace_embedding_matrix(b.graph_path, out / b.onnx, m.astype(np.float16))
    inits = _inits(out / b.onnx)
    q, scale = projection_weights(m.astype(np.float16))
    assert inits[PROJECTION_INT8].shape == (m.shape[1], m.shape[0])
    assert np.array_equal(inits[PROJECTION_INT8], q) and np.array_equal(inits[PROJECTION_SCALE], scale)
    assert inits["projection_zero_point"].shape == (m.shape[0],)
    vec = SparseEncoder(out, threads=1).encode([sentence], [sentence])[0]
    assert tok not in set(vec.ids.tolist()) and len(vec.ids) > 100
    assert json.loads((out / "config.json").read_text())["projection"] == "int8"
