"""End-to-end indexing benchmark on real documents.

SQuAD v1.1 dev paragraphs (../shared/data) are written as text files, one per paragraph,
until about ``--sentences`` sentences, and indexed from scratch with the engine
(:meth:`engine.api.facade.Engine.index`: walk, extraction, segmentation, ONNX encoding with the bundle's graph (int8 or fp32 encoder, as its config names),
tantivy, catalog). Reported, in one run:

* end-to-end sentences/s, and the ONNX encoder alone on the same (sentence, context)
  pairs, so the pipeline's overhead is visible;
* torch fp32 sentences/s of the trainer's ``SparcModel.sparse_topk`` on the same pairs,
  same batches and thread count (the speed-up the ONNX bundle buys);
* peak RSS of the process while indexing (psutil, sampled every 20 ms in a thread,
  measured before torch is imported);
* index size on disk per sentence (tantivy generation folder), and the catalog's size;
  the whole index by part (column store, document index, sentence tantivy index, catalog
  with the document texts), per sentence.

Prints a summary and writes JSON to bench/results/indexing-<timestamp>.json. State what
else was running on the machine next to any number you quote.

    .venv/bin/python bench/indexing.py --sentences 2000 --threads 2

``--corpus pdf`` writes the same paragraphs as text PDFs (one a file, ``bench/pdfs.py``): the
same sentences, read by the PDF reader instead of the text reader.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from bench import harness  # noqa: E402
from bench.pdfs import text_pdf  # noqa: E402
from engine.api.facade import Engine  # noqa: E402
from engine.index.columns import COLUMNS_DIR  # noqa: E402
from engine.index.docindex import FOLDER as DOCS_FOLDER  # noqa: E402
from engine.indexer.run import BATCH_SIZE  # noqa: E402
from engine.ingest.segment import split_passages  # noqa: E402
from engine.model.encoder import SparseEncoder, default_bundle_dir  # noqa: E402
from engine.model.features import build_features  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
#: what the result records of the bundle's config
BUNDLE_KEYS = ("name", "version", "onnx", "top_k", "training_steps", "hidden_size", "encoding", "max_length")
SQUAD = DATA / "squad" / "dev-v1.1.json.gz"
#: Paragraphs in SQuAD v1.1 dev (the corpus's first files).
DEV_PARAGRAPHS = 2067
#: Paragraphs past dev's ~10.5k sentences (a 100k-sentence index) come from SQuAD train.
SQUAD_TRAIN = DATA / "squad" / "train-v1.1.reconstructed.json.gz"


class PeakRSS:
    """Peak resident set size of this process, sampled in a background thread."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.proc = psutil.Process()
        self.peak = self.proc.memory_info().rss
        self.start_rss = self.peak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, f))
    return total


def column_files(root: Path) -> dict:
    """The column store's bytes by file kind over its segments (``rows``/``levels``: sparse
    postings, 5 bytes each; ``ptr``/``df``: 8 bytes per vocabulary entry per segment), its
    deletion files and its segment count."""
    by_file: dict[str, int] = {}
    segments = [d for d in root.iterdir() if d.is_dir() and d.name.startswith("seg-")]
    for d in segments:
        for f in d.iterdir():
            by_file[f.stem] = by_file.get(f.stem, 0) + f.stat().st_size
    deletions = sum(f.stat().st_size for f in root.glob("del-*"))
    return {"segments": len(segments), "bytes_by_file": by_file, "deletion_files": deletions}


def tantivy_files(folder: Path) -> dict[str, int]:
    """Bytes of a tantivy index's segment files by extension (``store``: stored fields,
    ``idx``/``pos``/``term``: postings, positions, term dictionary; ``fast``, ``fieldnorm``)."""
    out: dict[str, int] = {}
    for f in folder.iterdir():
        if f.is_file():
            ext = f.suffix.lstrip(".") or f.name
            out[ext] = out.get(ext, 0) + f.stat().st_size
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def catalog_tables(path: Path) -> dict[str, int]:
    """Bytes of each table and index of the catalog (SQLite's dbstat), largest first."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    return {str(name): int(size) for name, size in rows}


def squad_paragraphs() -> Iterator[dict[str, Any]]:
    """SQuAD dev's paragraphs, then (for more than dev's ~10.5k sentences) train's."""
    with gzip.open(SQUAD) as f:
        yield from json.load(f)["data"][0]["paragraphs"]
    with gzip.open(SQUAD_TRAIN) as f:  # read only when dev ran out before ``target``
        for article in json.load(f)["data"]:
            yield from article["paragraphs"]


def write_corpus(
    folder: Path, target: int, kind: str = "text"
) -> tuple[list[str], list[str], list[tuple[int, int]], int]:
    """Paragraph files with about ``target`` sentences, text files or (``kind`` "pdf") text
    PDFs of the same paragraphs (``bench.pdfs``); returns the (sentence, context) pairs the
    pipeline will encode, each sentence's passage (what a passage bundle encodes in one pass)
    and the number of files."""
    paragraphs = squad_paragraphs()
    sentences: list[str] = []
    contexts: list[str] = []
    groups: list[tuple[int, int]] = []
    n = 0
    for i, p in enumerate(paragraphs):
        if len(sentences) >= target:
            break
        text = p["context"].strip()
        if kind == "pdf":
            (folder / f"paragraph-{i:05d}.pdf").write_bytes(text_pdf([text]))
        else:
            (folder / f"paragraph-{i:05d}.txt").write_text(text + "\n", encoding="utf-8")
        n += 1
        for k, passage in enumerate(split_passages(text)):
            for j, s in enumerate(passage):
                groups.append((i, k))
                sentences.append(s.text)
                contexts.append(" ".join(x.text for k, x in enumerate(passage) if k != j))
    return sentences, contexts, groups, n


def resolve_base(bundle_dir: Path, base: Path | None) -> Path:
    """The torch weights folder matching the bundle's architecture (config ``base``)."""
    if base is not None:
        return base
    name = json.loads((bundle_dir / "config.json").read_text())["base"]
    pkg, _, rest = name.partition("/")
    spec = importlib.util.find_spec(pkg)
    if spec is not None and spec.origin and rest:
        path = Path(spec.origin).parent / rest
        if path.is_dir():
            return path
    from trainer.model import default_base_path

    return default_base_path()


def torch_rate(
    sentences: list[str],
    contexts: list[str],
    bundle_dir: Path,
    threads: int,
    base: Path | None,
    checkpoint: Path | None,
    batch_size: int,
) -> dict:
    import torch

    from trainer.model import SparcModel, load_encoder

    torch.set_num_threads(threads)
    cfg = json.loads((bundle_dir / "config.json").read_text())
    if checkpoint is not None:
        from trainer.train import load_model_from_checkpoint

        model, _ = load_model_from_checkpoint(checkpoint, base)
        where = str(checkpoint)
    else:
        base_path = resolve_base(bundle_dir, base)
        model = SparcModel(load_encoder(base_path), w_init=float(cfg.get("w", 0.0)))
        where = str(base_path)
    model.eval()
    enc = SparseEncoder(bundle_dir, threads=threads)  # for the tokenizer and the same layout
    order = sorted(range(len(sentences)), key=lambda i: -(len(sentences[i]) + len(contexts[i])))
    t0 = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            feats = build_features(
                enc.tokenizer,
                [sentences[i] for i in idx],
                [contexts[i] for i in idx],
                cfg["max_length"],
                cfg.get("pooling", "sentence"),
            )
            batch = {k: torch.from_numpy(v) for k, v in feats.items()}
            model.sparse_topk(batch, cfg["top_k"])
    seconds = time.perf_counter() - t0
    return {"weights": where, "seconds": seconds, "sentences_per_s": len(sentences) / seconds}


def bundle_with_graph(bundle_dir: Path, graph: str, view: Path) -> Path:
    """The bundle as the app would load it, but naming ``graph`` as its ONNX model (links, no copies)."""
    if not (bundle_dir / graph).is_file():
        raise SystemExit(f"{bundle_dir / graph}: no such graph in the bundle")
    view.mkdir(parents=True)
    for item in bundle_dir.iterdir():
        if item.name != "config.json":
            (view / item.name).symlink_to(item.resolve())
    cfg = json.loads((bundle_dir / "config.json").read_text(encoding="utf-8"))
    cfg["onnx"] = graph
    (view / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return view


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=2000, help="about this many sentences (default 2000)")
    ap.add_argument("--threads", type=int, default=None, help="encoder threads (default: engine default)")
    ap.add_argument("--bundle", type=Path, default=None, help="model bundle (default: the shipped one)")
    ap.add_argument("--base", type=Path, default=None, help="torch weights folder for the fp32 comparison")
    ap.add_argument(
        "--checkpoint", type=Path, default=None, help="trainer checkpoint for the fp32 comparison"
    )
    ap.add_argument(
        "--graph",
        default=None,
        help="ONNX file of the bundle to index with, e.g. model.int8.onnx (default: the one its config names)",
    )
    ap.add_argument("--no-torch", action="store_true", help="skip the torch fp32 comparison")
    ap.add_argument(
        "--no-encoder-rate",
        action="store_true",
        help="skip timing the ONNX encoder alone on every sentence (encode 1,000 for the non-zero counts)",
    )
    ap.add_argument(
        "--corpus",
        choices=("text", "pdf"),
        default="text",
        help="the paragraphs as text files (default) or as text PDFs, one a file (bench/pdfs.py)",
    )
    ap.add_argument("--note", default="", help="what else was running (recorded in the JSON)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    return ap.parse_args(argv)


def catalog_size(home: Path) -> int:
    """Bytes of the catalog's files (the database, its write-ahead log and shared memory)."""
    return sum(p.stat().st_size for p in home.glob("catalog.sqlite*") if p.is_file())


def index_and_measure(engine: Engine, corpus: Path) -> dict:
    """Index ``corpus`` from scratch under a peak-RSS sampler, time a first question and
    close the engine; the timings, the generation folder and its sizes while open."""
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        progress = engine.index([corpus])
        wall = time.perf_counter() - t0
    status = engine.status()
    gen_dir = Path(status["generation"]["index_dir"])
    index_bytes = folder_bytes(gen_dir)
    catalog_bytes = catalog_size(engine.layout.home)
    q0 = time.perf_counter()
    engine.ask("What is the capital city of the country?", top=10)
    ask_ms = (time.perf_counter() - q0) * 1000
    engine.close()
    return {
        "wall": wall,
        "progress": progress,
        "rss": rss,
        "gen_dir": gen_dir,
        "index_bytes": index_bytes,
        "catalog_bytes": catalog_bytes,
        "n_indexed": status["sentences"],
        "ask_ms": ask_ms,
    }


def index_parts(gen_dir: Path, engine: Engine) -> tuple[dict[str, int], dict]:
    """The whole index by part, measured closed (the catalog's write-ahead log folded in):
    SPARC levels (column store), whole-document BM25 index, the sentence tantivy index
    (text, BM25 postings, stored fields, filters: the rest of the generation folder)
    and the catalog (files, documents, their texts); the column store by file and the
    catalog by table, to tell per-sentence bytes from per-segment and per-file ones."""
    columns_bytes = folder_bytes(gen_dir / COLUMNS_DIR)
    docs_bytes = folder_bytes(gen_dir / DOCS_FOLDER)
    parts = {
        "columns": columns_bytes,
        "document_index": docs_bytes,
        "sentence_tantivy": folder_bytes(gen_dir) - columns_bytes - docs_bytes,
        "catalog": catalog_size(engine.layout.home),
    }
    breakdown = {
        "columns": column_files(gen_dir / COLUMNS_DIR),
        "sentence_tantivy_by_extension": tantivy_files(gen_dir),
        "catalog_tables": catalog_tables(engine.layout.catalog),
    }
    return parts, breakdown


def encoder_only(
    bundle: Path,
    threads: int,
    sentences: list[str],
    contexts: list[str],
    groups: list[tuple[int, int]],
    no_encoder_rate: bool,
) -> tuple[dict, list[int]]:
    """The ONNX encoder alone on the pipeline's pairs (``no_encoder_rate``: only the first
    1,000 sentences, for the non-zero counts); its rate and the sorted non-zero counts."""
    enc = SparseEncoder(bundle, threads=threads)
    enc.encode(sentences[:32], contexts[:32], BATCH_SIZE, groups[:32])  # warm-up
    m = 1000 if no_encoder_rate else len(sentences)
    e0 = time.perf_counter()
    vectors = enc.encode(sentences[:m], contexts[:m], BATCH_SIZE, groups[:m])
    enc_s = time.perf_counter() - e0
    rate = {"seconds": enc_s, "sentences": m, "sentences_per_s": m / enc_s, "batch_size": BATCH_SIZE}
    return rate, sorted(len(v) for v in vectors)


def index_section(measured: dict, parts: dict[str, int], breakdown: dict) -> dict:
    """The result's ``index`` entry: sizes in all and per indexed sentence."""
    n_indexed = measured["n_indexed"]
    return {
        "bytes": measured["index_bytes"],
        "bytes_per_sentence": measured["index_bytes"] / max(1, n_indexed),
        "catalog_bytes": measured["catalog_bytes"],
        "parts": parts,
        "parts_bytes_per_sentence": {k: v / max(1, n_indexed) for k, v in parts.items()},
        "whole_bytes_per_sentence": sum(parts.values()) / max(1, n_indexed),
        "breakdown": breakdown,
    }


def add_torch_runs(result: dict, args: argparse.Namespace, sentences: list[str], contexts: list[str], bundle: Path, threads: int) -> None:
    """Torch fp32 ``sparse_topk`` on the same pairs at each batch size, the fastest, and the
    ONNX encoder's speed-up over it."""
    runs = [
        {
            "batch_size": b,
            **torch_rate(sentences, contexts, bundle, threads, args.base, args.checkpoint, b),
        }
        for b in sorted({BATCH_SIZE, 32})
    ]
    result["torch_fp32_runs"] = runs
    result["torch_fp32"] = max(runs, key=lambda r: r["sentences_per_s"])
    result["speedup_onnx_vs_torch_fp32_encode"] = (
        result["onnx_encode_only"]["sentences_per_s"] / result["torch_fp32"]["sentences_per_s"]
    )


def print_summary(result: dict, out: Path, load: list[float]) -> None:
    corpus, threads = result["corpus"], result["threads"]
    e2e = result["end_to_end"]
    what = f"{corpus['files']} {corpus.get('kind', 'text')} files, {corpus['sentences']} sentences"
    print(f"corpus: {what}; threads {threads}; load {load[0]:.1f}")
    print(f"end to end (ONNX bundle):  {e2e['sentences_per_s']:.1f} sentences/s in {e2e['seconds']:.1f} s")
    print(f"encoder alone (ONNX):     {result['onnx_encode_only']['sentences_per_s']:.1f} sentences/s")
    if "torch_fp32" in result:
        t = result["torch_fp32"]
        print(
            f"torch fp32 sparse_topk:   {t['sentences_per_s']:.1f} sentences/s  (ONNX x{result['speedup_onnx_vs_torch_fp32_encode']:.2f})"
        )
    print(f"peak RSS while indexing:  {e2e['peak_rss_mb']:.0f} MB (before: {e2e['rss_before_mb']:.0f} MB)")
    ix = result["index"]
    print(
        f"index: {ix['bytes'] / 1e6:.1f} MB, {ix['bytes_per_sentence']:.0f} bytes/sentence "
        f"(median {result['nonzeros_per_sentence']['median']} non-zeros); catalog {ix['catalog_bytes'] / 1e6:.1f} MB"
    )
    print(
        f"whole index {ix['whole_bytes_per_sentence']:.0f} bytes/sentence: "
        + ", ".join(f"{k} {v:.0f}" for k, v in ix["parts_bytes_per_sentence"].items())
    )
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if not SQUAD.is_file():
        print(f"SQuAD dev not found at {SQUAD}: this benchmark needs ../shared/data", file=sys.stderr)
        raise SystemExit(2)
    recorder = harness.Run("indexing", argv)

    from engine.model.encoder import default_threads

    bundle = args.bundle or default_bundle_dir()
    threads = args.threads or default_threads()
    work = Path(tempfile.mkdtemp(prefix="sparcdesk-bench-"))
    try:
        corpus = work / "corpus"
        corpus.mkdir()
        sentences, contexts, groups, n_files = write_corpus(corpus, args.sentences, args.corpus)
        config = json.loads((bundle / "config.json").read_text(encoding="utf-8"))
        if config.get("encoding") == "passage" and not args.no_torch:
            raise SystemExit(
                f"{bundle}: a passage bundle; the torch comparison needs a sentence one (--no-torch)"
            )
        if args.graph:
            bundle = bundle_with_graph(bundle, args.graph, work / "bundle")
        load = harness.load()

        engine = Engine(home=work / "home", bundle_dir=bundle, threads=threads)
        measured = index_and_measure(engine, corpus)
        parts, breakdown = index_parts(measured["gen_dir"], engine)
        encode_rate, nnz = encoder_only(bundle, threads, sentences, contexts, groups, args.no_encoder_rate)
        n_indexed, wall, rss = measured["n_indexed"], measured["wall"], measured["rss"]

        result: dict = {
            "machine": {  # the harness adds the rest of the machine
                "cpus_logical": os.cpu_count(),
                "load_avg_before": [round(x, 2) for x in load],
            },
            "note": args.note,
            "bundle": {
                "dir": str(args.bundle or default_bundle_dir()),
                **{
                    k: v
                    for k, v in json.loads((bundle / "config.json").read_text()).items()
                    if k in BUNDLE_KEYS
                },
            },
            "threads": threads,
            "corpus": {
                "files": n_files,
                "kind": args.corpus,
                "sentences": len(sentences),
                "source": "SQuAD v1.1 dev paragraphs" + (", then train's" if n_files > DEV_PARAGRAPHS else ""),
            },
            "end_to_end": {
                "seconds": wall,
                "sentences_indexed": n_indexed,
                "sentences_per_s": n_indexed / wall,
                "phase": measured["progress"].phase,
                "peak_rss_mb": rss.peak / 2**20,
                "rss_before_mb": rss.start_rss / 2**20,
            },
            "onnx_encode_only": encode_rate,
            "nonzeros_per_sentence": {"median": nnz[len(nnz) // 2], "max": nnz[-1], "of": encode_rate["sentences"]},
            "index": index_section(measured, parts, breakdown),
            "first_ask_ms": measured["ask_ms"],
        }
        if not args.no_torch:
            add_torch_runs(result, args, sentences, contexts, bundle, threads)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result = harness.with_header(result, recorder)
    out = harness.write_json(harness.result_path("indexing", args.out), result)
    print_summary(result, out, load)
    return result


if __name__ == "__main__":
    main()
