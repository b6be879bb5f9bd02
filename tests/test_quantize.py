"""Selective int8: the chosen MatMuls stay fp32, the rest become int8, and the bundle still works."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from engine.model.encoder import SparseEncoder

#: sparc-tiny 0.3.0: it ships its fp32 graph, which selective int8 starts from
SHIPPED = Path(__file__).resolve().parents[1] / "assets" / "sparc-tiny-0.3.0"
FP32 = json.loads((SHIPPED / "config.json").read_text())["onnx_fp32"]  # the graph int8 starts from

SENTENCES = [
    "The Treaty of Westphalia was signed in 1648 in Osnabrück and Münster.",
    "It ended the Thirty Years' War in the Holy Roman Empire.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Chlorophyll absorbs mostly blue and red light.",
    "The invoice of $4,200 was paid to Enron Capital on March 3.",
    "Please find the revised agreement attached.",
]
CONTEXTS = [" ".join(s for s in SENTENCES if s != t) for t in SENTENCES]


def test_sensitivity_ranks_every_encoder_matmul():
    from trainer.quantize import sensitivity, weight_matmuls  # torch: imported by the test, not at collection

    report = sensitivity(SHIPPED, FP32, SENTENCES, CONTEXTS, threads=1)
    encoder = [n for n in weight_matmuls(SHIPPED / FP32) if n not in report["always_fp32"]]
    assert sorted(report["ranked"]) == sorted(encoder) and len(encoder) == 12
    assert all(0.5 < v <= 1.0 for v in report["fp32_one"].values())
    assert 0.5 < report["all_int8"] <= 1.0
    # the vocabulary projection is never quantized
    assert report["always_fp32"] and not set(report["always_fp32"]) & set(report["ranked"])


def test_selective_bundle_keeps_named_matmuls_fp32(tmp_path):
    from trainer.quantize import SELECTIVE_NAME, write_bundle

    keep = ["/encoder/encoder/layer.1/output/dense/MatMul"]
    out = tmp_path / "bundle"
    cfg = write_bundle(SHIPPED, FP32, out, keep)
    assert cfg["onnx"] == SELECTIVE_NAME
    assert keep[0] in cfg["quantization"]["fp32_nodes"]
    nodes = {n.name: n.op_type for n in onnx.load(str(out / SELECTIVE_NAME)).graph.node}
    assert nodes[keep[0]] == "MatMul"
    # the other encoder MatMuls are gone, replaced by integer ones
    assert "/encoder/encoder/layer.0/output/dense/MatMul" not in nodes
    assert any("Integer" in op or op == "DynamicQuantizeMatMul" for op in nodes.values())
    assert (out / "mlm" / "head.safetensors").is_file()  # what on-device adaptation needs
    assert json.loads((out / "config.json").read_text())["onnx_fp32"] == "model.fp32.onnx"
    vectors = SparseEncoder(out, threads=1).encode(SENTENCES[:2], CONTEXTS[:2])
    assert all(len(v.ids) == cfg["top_k"] for v in vectors)
