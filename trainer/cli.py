"""``sparcdesk-train``: the provider-side command line.

Each subcommand lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this file only wires them up. To add one (``prepare``, ``train``,
``export``, ...), add a line to ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# name -> (module with add_arguments/run, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "prepare": ("trainer.data", "build SQuAD-train retrieval examples with hard negatives"),
    "train": ("trainer.train", "train a SPARC model (CPU, CUDA, or torchrun for several processes)"),
    "export": ("trainer.export", "export a checkpoint to an ONNX model bundle (int8)"),
    "curve": ("trainer.curve", "learning curve: evaluate every kept checkpoint of a run"),
    "card": ("trainer.modelcard", "write a bundle's model card from its measurements"),
    "pools": ("trainer.pools", "build the MultiReQA evaluation pools in the generic format"),
    "evaluate": ("trainer.evaluate", "evaluate a model bundle and the baselines on a pool"),
    "ood": ("trainer.ood", "out-of-domain table: pools, baselines, SPARC and its adaptations"),
    "quantize": ("trainer.quantize", "selective int8: keep the MatMuls int8 hurts most in fp32"),
    "int8-projection": ("trainer.projection", "copy a bundle with its vocabulary projection in int8"),
    "query-weights": ("trainer.query_weights", "learn a per-token question weight table for a bundle (encoder frozen)"),
    "teacher": ("trainer.teacher", "encode the distillation teacher (dense MiniLM + a SPARC bundle) over the training data"),
    "mlm-head": ("trainer.mlm_head", "add the masked-LM head and bodies that on-device adaptation needs"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparcdesk-train", description="Train and evaluate SPARC models.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(
            name,
            help=help_text,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
