"""Export a trained SPARC checkpoint to the on-device model bundle.

The bundle (docs/ARCHITECTURE.md) holds an ONNX graph from ``ExportWrapper`` — encoder inputs
in, each sentence's top-K (token id, weight) out — the tokenizer, and ``config.json``. The
encoder's MatMuls are quantized to int8 (dynamic, per-channel); the vocabulary projection and
the word-embedding matrix stay in floating point (fp16 storage), because the projection
decides which tokens survive in the top-K and because on-device adaptation replaces that
single matrix (initializer ``word_embeddings_fp16``) without re-exporting from torch.
optimum traces the graph (``trainer.onnx_config``) and quantizes it (``ORTQuantizer``); the
tied fp16 matrix is this module's own rewrite (docs/ARCHITECTURE.md, ``optimum``).
:func:`check_agreement` (and :func:`check_passage_agreement` for a passage bundle) compares the
ONNX outputs with the torch model on real sentences; ``tests/test_trainer.py`` runs it.

A checkpoint trained with ``--passage`` exports the passage graph instead
(``PassageExportWrapper``: windows and ``span_mask`` in, [b, S, K] out) and its config says ``encoding: "passage"`` (and ``passage_vector``); bundles
without the key are sentence bundles, read as before.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import torch

from engine.model.bundle import Bundle
from engine.model.features import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_POOLING,
    build_features,
    passage_windows,
    window_features,
)
from trainer.model import ExportWrapper, PassageExportWrapper, SparcModel, default_base_path, load_encoder
from trainer.train import load_model_from_checkpoint

FORMAT = "sparcdesk-bundle/1"
FP32_NAME = "model.fp32.onnx"
INT8_NAME = "model.onnx"
EMBEDDING_INITIALIZER = "word_embeddings_fp16"


def export_onnx(model: SparcModel, tokenizer_path: Path, out_file: Path, top_k: int) -> None:
    """The sentence graph (``ExportWrapper``) through optimum's exporter, embedding matrix tied."""
    from trainer.onnx_config import SentenceOnnxConfig, export_wrapper, sentence_examples

    config = SentenceOnnxConfig(model.encoder.config, sentence_examples(tokenizer_path))
    export_wrapper(ExportWrapper(model, top_k), config, out_file)
    tie_embedding_matrix(out_file)


def export_passage_onnx(model: SparcModel, tokenizer_path: Path, out_file: Path, top_k: int) -> None:
    """The passage graph (``PassageExportWrapper``), embedding matrix tied as in ``export_onnx``."""
    from trainer.onnx_config import PassageOnnxConfig, export_wrapper, passage_examples

    config = PassageOnnxConfig(model.encoder.config, passage_examples(tokenizer_path))
    export_wrapper(PassageExportWrapper(model, top_k), config, out_file)
    tie_embedding_matrix(out_file)


def tie_embedding_matrix(path: Path) -> None:
    """Replace the folded fp32 copies of the embedding matrix ([V, d] for the input Gather,
    [d, V] for the projection) with one fp16 initializer, a Cast and a Transpose.

    Constant folding is wanted for the encoder (its Linear weights become plain MatMul
    initializers that the quantizer can take) but leaves the matrix twice in fp32; after this
    rewrite the matrix is stored once, at half size, under a stable name.
    """
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    by_name = {init.name: init for init in graph.initializer}
    gather = next(n for n in graph.node if n.op_type == "Gather" and "input_ids" in n.input)
    emb_name = gather.input[0]
    emb = numpy_helper.to_array(by_name[emb_name])
    vocab, _dim = emb.shape
    proj = [
        n
        for n in graph.node
        if n.op_type == "MatMul"
        and any(i in by_name and tuple(by_name[i].dims) == (emb.shape[1], vocab) for i in n.input)
    ]
    if len(proj) != 1:
        raise RuntimeError(f"expected one projection MatMul onto the vocabulary, found {len(proj)}")
    proj_t = next(i for i in proj[0].input if i in by_name)
    if not np.allclose(numpy_helper.to_array(by_name[proj_t]).T, emb):
        raise RuntimeError("projection weight is not the transposed input embedding matrix")
    keep = [init for init in graph.initializer if init.name not in (emb_name, proj_t)]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    graph.initializer.append(numpy_helper.from_array(emb.astype(np.float16), EMBEDDING_INITIALIZER))
    cast = helper.make_node(
        "Cast", [EMBEDDING_INITIALIZER], ["word_embeddings"], name="EmbeddingCast", to=onnx.TensorProto.FLOAT
    )
    trans = helper.make_node(
        "Transpose", ["word_embeddings"], ["word_embeddings_t"], name="EmbeddingTranspose", perm=[1, 0]
    )
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name == emb_name:
                node.input[k] = "word_embeddings"
            elif name == proj_t:
                node.input[k] = "word_embeddings_t"
    nodes = [cast, trans, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def projection_nodes(path: Path) -> list[str]:
    """Nodes that read the word-embedding matrix: kept in floating point."""
    graph = onnx.load(str(path)).graph
    return [n.name for n in graph.node if n.op_type in ("Gemm", "MatMul") and "word_embeddings_t" in n.input]


def weight_matmuls(path: Path) -> list[str]:
    """MatMul/Gemm nodes with a constant weight: the ones dynamic quantization takes."""
    graph = onnx.load(str(path)).graph
    inits = {i.name for i in graph.initializer}
    return [n.name for n in graph.node if n.op_type in ("MatMul", "Gemm") and any(i in inits for i in n.input)]


def quantize(fp32: Path, int8: Path, exclude: list[str]) -> None:
    """Dynamic int8 of the weight MatMuls but ``exclude`` (per-channel, symmetric int8 weights,
    uint8 activations, full range), written to ``int8``: optimum's ``ORTQuantizer``.

    The preset is ``avx512``'s (u8/s8), the settings of every bundle so far; ``avx2``'s is
    u8/u8, and its graph moved the tiny model's top-100 tokens (overlap 0.72 with the u8/s8
    one). The nodes are named, not left to the operator types: unlike ONNX Runtime's
    ``quantize_dynamic`` (``MatMulConstBOnly``), ``ORTQuantizer`` would also quantize the
    attention's activation-by-activation MatMuls. The graph runs on any CPU."""
    from engine.common.offline import load_onnxruntime

    load_onnxruntime()  # telemetry off before optimum's quantizer imports it
    from optimum.onnxruntime import ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig
    from transformers import PretrainedConfig

    skip = set(exclude)
    config = AutoQuantizationConfig.avx512(
        is_static=False,
        per_channel=True,
        reduce_range=False,
        nodes_to_quantize=[n for n in weight_matmuls(fp32) if n not in skip],
        nodes_to_exclude=list(exclude),
        operators_to_quantize=["MatMul", "Gemm"],
    )
    # the quantizer writes its graph beside ort_config.json, config.json and any tokenizer it
    # finds next to the source: a folder of its own, then only the graph moves into place
    with tempfile.TemporaryDirectory(prefix="sparcdesk-int8-", dir=Path(int8).parent) as tmp:
        source = Path(tmp) / "in" / "model.onnx"
        source.parent.mkdir()
        source.symlink_to(Path(fp32).resolve())
        quantizer = ORTQuantizer(source, config=PretrainedConfig())
        quantizer.quantize(config, Path(tmp) / "out", file_suffix=None)
        os.replace(Path(tmp) / "out" / "model.onnx", int8)


def check_agreement(
    model: SparcModel, bundle: Path, onnx_name: str, sentences: list[str], contexts: list[str]
) -> dict:
    """Top-100 token overlap and weight error of ONNX against torch on the given sentences."""
    from engine.model.encoder import SparseEncoder

    if getattr(model, "passage_vector", False) or _is_passage_bundle(bundle):
        raise ValueError(f"{bundle}: a passage bundle; compare it with check_passage_agreement")

    enc = SparseEncoder(bundle, onnx_file=onnx_name)
    feats = build_features(
        enc.tokenizer, sentences, contexts, enc.config.max_length, enc.config.pooling
    )
    ids, weights = enc.session.run(["top_ids", "top_weights"], feats)
    with torch.no_grad():
        t_ids, t_w = model.eval().sparse_topk(
            {k: torch.from_numpy(v) for k, v in feats.items()}, k=enc.config.top_k
        )
    overlap = []
    for a, b in zip(ids[:, :100], t_ids[:, :100].numpy(), strict=True):
        overlap.append(len(set(a.tolist()) & set(b.tolist())) / 100)
    return {
        "onnx": onnx_name,
        "top100_overlap_mean": float(np.mean(overlap)),
        "max_weight_abs_err_top1": float(np.abs(weights[:, 0] - t_w[:, 0].numpy()).max()),
    }


def _is_passage_bundle(bundle: Path) -> bool:
    return Bundle.open(bundle).encoding == "passage"


def check_passage_agreement(
    model: SparcModel, bundle: Path, onnx_name: str, passages: list[list[str]], top: int = 100
) -> dict:
    """The passage graph against the torch model on the same windows: per sentence, the share
    of the torch top-``top`` ids the graph returns, whether the top-``top`` ids come out in the
    same order, and the largest weight difference over them. Torch runs with the embedding
    matrix rounded to fp16 as the graph holds it, so only float arithmetic differs."""
    from engine.model.encoder import SparseEncoder

    enc = SparseEncoder(bundle, onnx_file=onnx_name)
    windows = passage_windows(enc.tokenizer, passages, enc.config.max_length)
    feats = window_features(enc.tokenizer, windows)
    ids, weights = enc.session.run(["top_ids", "top_weights"], feats)
    rows = np.array([r for r, w in enumerate(windows) for _ in w.spans])
    slots = np.array([j for w in windows for j in range(len(w.spans))])
    span = feats["span_mask"]
    batch = {k: torch.from_numpy(feats[k]) for k in ("input_ids", "attention_mask", "token_type_ids")}
    batch["sentence_mask"] = torch.from_numpy(span[rows, slots])
    batch["window_index"] = torch.from_numpy(rows)
    if model.passage_vector:
        batch["passage_mask"] = torch.from_numpy(span.max(axis=1)[rows])
    emb = model.word_embeddings.weight
    saved = emb.detach().clone()
    try:
        with torch.no_grad():
            emb.copy_(saved.half().float())
            t_ids, t_w = model.eval().sparse_topk(batch, k=enc.config.top_k)
    finally:
        with torch.no_grad():
            emb.copy_(saved)
    o_ids, o_w = ids[rows, slots], weights[rows, slots]
    t_ids, t_w = t_ids.numpy(), t_w.numpy()
    pairs = list(zip(o_ids[:, :top], t_ids[:, :top], strict=True))
    overlap = [len(set(a.tolist()) & set(b.tolist())) / top for a, b in pairs]
    return {
        "onnx": onnx_name,
        "sentences": len(rows),
        "windows": len(windows),
        f"top{top}_overlap_min": float(min(overlap)),
        f"top{top}_same_order_share": float(np.mean([(a == b).all() for a, b in pairs])),
        f"max_weight_abs_err_top{top}": float(np.abs(o_w[:, :top] - t_w[:, :top]).max()),
    }


def export_bundle(
    checkpoint: Path | None,
    out: Path,
    base: Path | None = None,
    top_k: int = 2000,
    max_length: int = DEFAULT_MAX_LENGTH,
    name: str = "sparc-tiny",
    version: str = "0.1.0",
    keep_fp32: bool = False,
    prune_ratio: float = 0.0,
    answer_match: float | None = None,
) -> dict:
    """Write the bundle; returns its config. ``checkpoint=None`` exports the untrained base.
    ``prune_ratio`` > 0: the engine keeps only weights >= that x the sentence's max.
    ``answer_match``: the bundle's own no-answer match threshold (``bench.product --bundle``
    suggests it from this bundle's scores); None leaves the engine's."""
    if answer_match is not None and not 0 <= answer_match <= 1:
        raise ValueError(f"answer_match is {answer_match}, not a number from 0 to 1")
    t0 = time.time()
    if checkpoint is not None:
        model, state = load_model_from_checkpoint(checkpoint, base)
        base = Path(state["args"]["base"]) if base is None else base
        steps = state["step"]
        pooling = state["args"].get("pooling", DEFAULT_POOLING)  # runs before the option: sentence
        passage = bool(state["args"].get("passage", False))
        # the command line as trained (a CLI-launched run also saved argparse's ``func``)
        training_args = {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in state["args"].items()
            if k != "base" and not callable(v)
        }
    else:
        base = base or default_base_path()
        model, steps = SparcModel(load_encoder(base)), 0
        training_args = None
        pooling = DEFAULT_POOLING
        passage = False
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(base) / "tokenizer.json", out / "tokenizer.json")
    (export_passage_onnx if passage else export_onnx)(model, out / "tokenizer.json", out / FP32_NAME, top_k)
    quantize(out / FP32_NAME, out / INT8_NAME, projection_nodes(out / FP32_NAME))
    config = {
        "format": FORMAT,
        "name": name,
        "version": version,
        "base": Path(base).name
        if checkpoint is None
        else str(Path(base).parent.name + "/" + Path(base).name),
        "w": float(model.w.detach()),
        "exp_w": float(torch.exp(model.w.detach())),
        "top_k": top_k,
        "prune_ratio": prune_ratio,
        "max_length": max_length,
        "pooling": pooling,
        **({"encoding": "passage", "passage_vector": model.passage_vector} if passage else {}),
        "query_tokens": "unique",
        "vocab_size": int(model.word_embeddings.weight.shape[0]),
        "hidden_size": int(model.word_embeddings.weight.shape[1]),
        "onnx": INT8_NAME,
        "embedding_initializer": EMBEDDING_INITIALIZER,
        "training_steps": steps,
        "training_args": training_args,
        **({"answer_match": answer_match} if answer_match is not None else {}),
        "export_seconds": round(time.time() - t0, 1),
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if not keep_fp32:
        (out / FP32_NAME).unlink()
    return config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoint", type=Path, default=None, help="step-N.pt of a training run (default: untrained base)"
    )
    p.add_argument("--base", type=Path, default=None, help="base weights folder (default: the checkpoint's)")
    p.add_argument("--out", type=Path, required=True, help="bundle folder to write")
    p.add_argument("--top-k", type=int, default=2000)
    p.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH)
    p.add_argument("--name", default="sparc-tiny")
    p.add_argument("--version", default="0.1.0")
    p.add_argument("--keep-fp32", action="store_true", help="also keep model.fp32.onnx in the bundle")
    p.add_argument(
        "--prune-ratio",
        type=float,
        default=0.0,
        help="encode-time pruning: keep weights >= this x the sentence's max (then top-k); 0 = off",
    )
    p.add_argument(
        "--answer-match",
        type=_unit_interval,
        default=None,
        help="the bundle's no-answer match threshold, 0..1 (bench.product --bundle suggests it); "
        "default: the engine's",
    )


def _unit_interval(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a number from 0 to 1")
    return value


def run(args: argparse.Namespace) -> None:
    cfg = export_bundle(
        args.checkpoint,
        args.out,
        args.base,
        args.top_k,
        args.max_length,
        args.name,
        args.version,
        args.keep_fp32,
        args.prune_ratio,
        args.answer_match,
    )
    print(json.dumps(cfg, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    run(parser.parse_args())
