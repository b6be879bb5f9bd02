"""Selective int8: find the encoder MatMuls that int8 hurts most and keep them in fp32.

Dynamic int8 of every encoder MatMul (per-channel weights) cost the shipped SPLADE-tiny 0.77
MRR on SQuAD dev, above the 0.5 the model issue allows. This command measures, on real
sentences of a pool, how far each MatMul's quantization moves the sparse vectors (top-100
token overlap with the fp32 graph, when that one MatMul alone is left in fp32), then writes a
bundle whose int8 graph keeps the N most sensitive MatMuls in fp32 (the vocabulary projection
always stays in floating point). Evaluate the result with ``sparcdesk-train evaluate --model``.

    sparcdesk-train quantize --bundle assets/sparc-tiny --sentences runs/pools/squad-dev/sentences.jsonl \\
        --out runs/quant/sparc-tiny-int8s --keep-fp32 2 --json runs/quant/sensitivity.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.model.bundle import Bundle
from trainer.export import FP32_NAME, projection_nodes, quantize, weight_matmuls

SELECTIVE_NAME = "model.int8.onnx"


def top_ids(bundle: Path, graph: str, sentences: Sequence[str], contexts: Sequence[str], threads: int) -> np.ndarray:
    from engine.model.encoder import SparseEncoder
    from engine.model.features import build_features

    enc = SparseEncoder(bundle, threads=threads, onnx_file=graph)
    rows = []
    for start in range(0, len(sentences), 8):
        feats = build_features(
            enc.tokenizer,
            sentences[start : start + 8],
            contexts[start : start + 8],
            enc.config.max_length,
            enc.config.pooling,
        )
        ids, _w = enc.session.run(["top_ids", "top_weights"], feats)
        rows.append(ids[:, :100])
    return np.concatenate(rows)


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of the top-100 tokens two graphs agree on."""
    return float(np.mean([len(set(x.tolist()) & set(y.tolist())) / 100 for x, y in zip(a, b, strict=True)]))


def sensitivity(
    bundle: Path, fp32_graph: str, sentences: Sequence[str], contexts: Sequence[str], threads: int
) -> dict:
    """Top-100 overlap with fp32 for full int8, and for int8 with each MatMul left in fp32."""
    fp32 = bundle / fp32_graph
    always = projection_nodes(fp32)
    ref = top_ids(bundle, fp32_graph, sentences, contexts, threads)
    with tempfile.TemporaryDirectory(prefix="sparcdesk-quant-") as tmp:
        view = Path(tmp)
        for item in bundle.iterdir():
            if item.is_file() and item.suffix != ".onnx":
                (view / item.name).symlink_to(item.resolve())
        (view / fp32_graph).symlink_to(fp32.resolve())

        def measure(exclude: list[str]) -> float:
            quantize(fp32, view / "trial.onnx", [*always, *exclude])
            return overlap(ref, top_ids(view, "trial.onnx", sentences, contexts, threads))

        full = measure([])
        per_node = {name: measure([name]) for name in weight_matmuls(fp32) if name not in always}
    ranked = sorted(per_node, key=lambda n: -per_node[n])
    return {"all_int8": full, "fp32_one": per_node, "ranked": ranked, "always_fp32": always}


def write_bundle(bundle: Path, fp32_graph: str, out: Path, keep_fp32: list[str]) -> dict:
    """A copy of ``bundle`` whose default graph is int8 with ``keep_fp32`` MatMuls left in fp32."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for item in bundle.iterdir():  # everything but the top-level graphs (mlm/ is kept whole)
        if item.is_dir():
            shutil.copytree(item, out / item.name)
        elif item.suffix != ".onnx":
            shutil.copy(item, out / item.name)
    shutil.copy(bundle / fp32_graph, out / FP32_NAME)
    exclude = [*projection_nodes(out / FP32_NAME), *keep_fp32]
    quantize(out / FP32_NAME, out / SELECTIVE_NAME, exclude)
    cfg = json.loads((out / "config.json").read_text(encoding="utf-8"))
    cfg.update(
        onnx=SELECTIVE_NAME,
        onnx_fp32=FP32_NAME,
        quantization={"method": "dynamic int8, per-channel weights", "fp32_nodes": exclude},
    )
    cfg.pop("onnx_int8", None)
    cfg.pop("note", None)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bundle", type=Path, required=True, help="bundle holding an fp32 graph")
    p.add_argument(
        "--fp32-graph",
        default=None,
        help=f"the fp32 graph in the bundle (default: its config's onnx_fp32, else {FP32_NAME}, else its graph)",
    )
    p.add_argument("--sentences", type=Path, required=True, help="sentences.jsonl of a pool (real text)")
    p.add_argument("--sample", type=int, default=400, help="sentences used for the sensitivity (default 400)")
    p.add_argument("--keep-fp32", type=int, default=2, help="most sensitive MatMuls kept in fp32")
    p.add_argument("--out", type=Path, default=None, help="write the selective int8 bundle here")
    p.add_argument("--json", type=Path, default=None, help="write the sensitivity table here")
    p.add_argument("--threads", type=int, default=None)


def run(args: argparse.Namespace) -> int:
    from trainer.pools import contexts_of, read_sentences

    bundle = args.bundle
    bun = Bundle.open(bundle)
    if bun.encoding != "sentence":
        raise SystemExit(
            f"{bundle / 'config.json'}: a {bun.encoding} bundle; the sensitivity measure runs the sentence "
            "layout only (export passage bundles with their default int8 graph)"
        )
    fp32_graph = args.fp32_graph or (
        bun.fp32_graph_path.name
        if bun.fp32_graph_path
        else FP32_NAME
        if (bundle / FP32_NAME).is_file()
        else bun.onnx
    )
    pool = read_sentences(args.sentences)
    contexts = contexts_of(pool)
    step = max(1, len(pool) // args.sample)
    pick = list(range(0, len(pool), step))[: args.sample]
    sentences = [pool[i].text for i in pick]
    ctx = [contexts[i] for i in pick]
    t0 = time.perf_counter()
    report = sensitivity(bundle, fp32_graph, sentences, ctx, args.threads or 1)
    report.update(
        bundle=str(bundle),
        fp32_graph=fp32_graph,
        sentences=len(sentences),
        pool=str(args.sentences),
        seconds=round(time.perf_counter() - t0, 1),
    )
    print(f"all MatMuls int8: top-100 overlap with fp32 {report['all_int8']:.3f}")
    for name in report["ranked"]:
        print(f"  {report['fp32_one'][name]:.3f}  with {name} in fp32")
    if args.out is not None:
        keep = report["ranked"][: args.keep_fp32]
        out_cfg = write_bundle(bundle, fp32_graph, args.out, keep)
        kept = top_ids(args.out, SELECTIVE_NAME, sentences, ctx, args.threads or 1)
        ref = top_ids(bundle, fp32_graph, sentences, ctx, args.threads or 1)
        report["selective"] = {"out": str(args.out), "fp32_nodes": out_cfg["quantization"]["fp32_nodes"]}
        report["selective"]["overlap"] = overlap(ref, kept)
        print(f"{args.out}: {len(keep)} MatMuls in fp32, top-100 overlap {report['selective']['overlap']:.3f}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
