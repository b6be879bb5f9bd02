"""Passage encoding (issue 13): window sizes, and the passage graph's speed and memory per batch.

* ``windows``: how SQuAD v1.1 dev passages (../shared/data) pack into windows at each
  ``--max-length`` (sentences per window, share of passages that need more than one).
* ``speed``: ``SparseEncoder.encode_passages`` over the passages of the first paragraphs of
  SQuAD dev with a passage bundle, for each ``--batch`` (windows per graph run), each in a fresh
  process so its peak RSS is its own; with ``--profile``, ONNX Runtime's time per operator type.

    .venv/bin/python -m bench.passage windows --max-length 128 256
    .venv/bin/python -m bench.passage speed --bundle runs/passage/bench-bundle --batch 1 4 --profile

State the machine's load next to any figure (it is printed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from engine.ingest.segment import split_passages  # noqa: E402
from engine.model.encoder import SparseEncoder, default_bundle_dir  # noqa: E402
from engine.model.features import load_tokenizer, passage_windows  # noqa: E402

SQUAD = ROOT.parent / "shared" / "data" / "squad" / "dev-v1.1.json.gz"


def squad_passages(paragraphs: int | None = None) -> list[list[str]]:
    """Sentences of SQuAD dev passages as the engine cuts them (all, or the first paragraphs)."""
    if not SQUAD.is_file():
        raise SystemExit(f"SQuAD dev not found at {SQUAD}: this benchmark needs ../shared/data")
    with gzip.open(SQUAD) as f:
        data = json.load(f)["data"]
    paras = [p["context"] for a in data for p in a["paragraphs"]][:paragraphs]
    return [[s.text for s in p] for text in paras for p in split_passages(text)]


def windows(args: argparse.Namespace) -> None:
    tok = load_tokenizer(str((args.bundle or default_bundle_dir()) / "tokenizer.json"))
    passages = squad_passages()
    n = sum(map(len, passages))
    for length in args.max_length:
        ws = passage_windows(tok, passages, length)
        per_passage = Counter(w.passage for w in ws)
        split = sum(1 for c in per_passage.values() if c > 1)
        print(
            f"max_length {length}: {len(passages)} passages, {n} sentences, {len(ws)} windows, "
            f"{n / len(ws):.2f} sentences per window, {100 * split / len(passages):.1f}% of passages in more than one"
        )


def speed_one(bundle: Path, batch: int, paragraphs: int, threads: int, profile: bool) -> dict:
    passages = squad_passages(paragraphs)
    n = sum(map(len, passages))
    enc = SparseEncoder(bundle, threads=threads)
    if enc.config.encoding != "passage":
        raise SystemExit(f"{bundle}: not a passage bundle (config encoding {enc.config.encoding!r})")
    enc.encode_passages(passages[:5], batch)  # warm-up
    if profile:
        from engine.common.offline import load_onnxruntime

        ort = load_onnxruntime()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(tempfile.mkdtemp(prefix="sparcdesk-prof-")) / "ort")
        enc.session = ort.InferenceSession(
            str(bundle / enc.config.onnx), opts, providers=["CPUExecutionProvider"]
        )
    load = harness.load()[0]
    t0 = time.perf_counter()
    enc.encode_passages(passages, batch)
    seconds = time.perf_counter() - t0
    out = {
        "bundle": str(bundle),
        "batch_windows": batch,
        "sentences": n,
        "windows": len(passage_windows(enc.tokenizer, passages, enc.config.max_length)),
        "sentences_per_s": n / seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_1min_before": load,
    }
    if profile:
        trace = Path(enc.session.end_profiling())
        events = json.loads(trace.read_text())
        trace.unlink()
        trace.parent.rmdir()
        per_op: Counter = Counter()
        for e in events:
            if e.get("cat") == "Node":
                per_op[e["args"].get("op_name")] += e["dur"]
        total = sum(per_op.values()) or 1
        out["op_share_percent"] = {k: round(100 * v / total, 1) for k, v in per_op.most_common(8)}
        out["seconds_per_window"] = seconds / out["windows"]
    return out


def speed(args: argparse.Namespace) -> None:
    for batch in args.batch:
        cmd = [
            sys.executable, "-m", "bench.passage", "_one", "--bundle", str(args.bundle), "--batch", str(batch),
            "--paragraphs", str(args.paragraphs), "--threads", str(args.threads),
        ] + (["--profile"] if args.profile else [])  # fmt: skip
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        print(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("windows", help="window sizes of SQuAD dev passages")
    w.add_argument("--max-length", type=int, nargs="+", default=[128, 256])
    w.add_argument(
        "--bundle", type=Path, default=None, help="bundle whose tokenizer to use (default: shipped)"
    )
    for name in ("speed", "_one"):
        s = sub.add_parser(name, help="encode_passages speed and peak RSS per batch size")
        s.add_argument("--bundle", type=Path, required=True, help="a passage bundle")
        if name == "speed":
            s.add_argument("--batch", type=int, nargs="+", default=[1, 4], help="windows per graph run")
        else:
            s.add_argument("--batch", type=int, default=1)
        s.add_argument("--paragraphs", type=int, default=80, help="first SQuAD dev paragraphs")
        s.add_argument("--threads", type=int, default=2)
        s.add_argument("--profile", action="store_true", help="ONNX Runtime time per operator type")
    args = ap.parse_args(argv)
    if args.command == "windows":
        windows(args)
    elif args.command == "speed":
        speed(args)
    else:
        print(json.dumps(speed_one(args.bundle, args.batch, args.paragraphs, args.threads, args.profile)))


if __name__ == "__main__":
    main()
