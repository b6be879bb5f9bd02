"""Make a bundle's on-device graph project onto the vocabulary in int8.

The vocabulary projection (token states times the 30,522 x 128 embedding matrix) was the
largest cost of encoding, about half of it (docs/training.md, "Where the passage graph's time
goes"); the encoder's own MatMuls were already int8. This command copies a bundle and rewrites
its on-device graph (``config.json``'s ``onnx``) with ``engine.model.bundle_edit.int8_projection``:
the states are quantised per graph run, the weights are an int8 copy of the fp16 matrix with one
scale per vocabulary id, derived from it (adaptation re-derives it when it swaps the matrix).
The fp32 graph shipped beside it, if any, is left as it is. Measure the result with
``sparcdesk-train evaluate --model OUT`` and ``python -m bench.indexing --bundle OUT``.

    sparcdesk-train int8-projection --bundle assets/sparc-tiny --out runs/sparc-tiny-q --version 0.3.1
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.model.bundle import Bundle
from engine.model.bundle_edit import copy_bundle, int8_projection_file


def convert(bundle: Path, out: Path, version: str | None = None) -> dict:
    """Write the converted copy of ``bundle`` to ``out``; returns its config."""
    src = Bundle.open(bundle)
    if src.projection == "int8":
        raise SystemExit(f"{bundle}: the projection is already int8")
    copy_bundle(bundle, out, skip=(src.onnx,))
    replaced = int8_projection_file(bundle / src.onnx, out / src.onnx, src.embedding_initializer)
    cfg = dict(src.config)
    cfg["projection"] = "int8"
    quant = cfg.get("quantization")
    if isinstance(quant, dict) and replaced in quant.get("fp32_nodes", []):  # no longer fp32
        cfg["quantization"] = {
            **quant,
            "fp32_nodes": [n for n in quant["fp32_nodes"] if n != replaced],
            "projection": "int8 (sparcdesk-train int8-projection)",
        }
    if version:
        cfg["version"] = version
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    Bundle.open(out)  # refuses a broken result
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bundle", type=Path, required=True, help="the bundle to convert")
    p.add_argument("--out", type=Path, required=True, help="folder of the converted bundle")
    p.add_argument("--version", default=None, help="version of the new bundle (default: the same)")


def run(args: argparse.Namespace) -> int:
    cfg = convert(args.bundle, args.out, args.version)
    print(f"wrote {args.out}: {cfg['name']} {cfg['version']}, int8 projection in {cfg['onnx']}")
    return 0
