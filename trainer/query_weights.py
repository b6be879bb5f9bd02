"""A learned per-token question weight table (issue 13 item 3), the document encoder frozen.

A question is a bag of WordPiece ids with no network; the app scores a sentence as
``sum over the question's ids t of weight[t] x d_s[t]`` with ``weight`` 1 (plain) or the
index's IDF. This command learns one more factor per vocabulary id, shipped in the bundle
(``query_weights.npy``, named by ``config.json``'s ``query_weights``) and multiplied in by the
engine's query path (``engine.search.answers.term_weights``)::

    weight[t] = base[t] * exp(a[t])      table[t] = exp(a[t])

- ``--variant learned``: ``base = 1``; the table replaces nothing and is used with IDF off.
- ``--variant product``: ``base`` = IDF over the training sentences' vectors (the app's
  ``idf_weight``); on the user's machine the index's own IDF takes its place (IDF on).

``a`` starts at 0 (the table starts at plain or at today's IDF weighting) and an L2 penalty
``--reg x sum(a^2)`` holds it near there; ids no training question holds keep ``a = 0``.

Data: a contiguous block of whole passages of the training sentences (``--sentences`` of
them from ``--start-passage``; SQuAD's passages are in article order, so the block is a
few whole articles, the shape of a MultiReQA pool), encoded through the engine's encoder
(``SparseEncoder``, the bundle's graph and pruning; cached under ``runs/cache`` as the
evaluation caches pools). Each question whose positive lies in the block is scored against
every sentence of the block (a softmax over the block: the in-batch positives, the
same-passage negative ``prepare`` drew and every other hard negative the block holds), with
the float vectors (the index's 8-bit levels round them; the ranking it changes is tiny).
The last ``--val-share`` of the block's passages keep their questions out of training and
report a held-out loss and MRR. Never train on the evaluation pools.

    sparcdesk-train query-weights --model BUNDLE --data runs/train-data --variant product \\
        --out runs/qw/product [--bundle-out NEW_BUNDLE]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from engine.model.bundle import CONFIG, QUERY_WEIGHTS_FILE, Bundle, read_query_weights
from trainer.data import Example, Sentence, load_training_data
from trainer.pools import contexts_of

VARIANTS = ("learned", "product")
META_FILE = "query_weights.json"


@dataclass
class Block:
    """The training sentences a table is learned on, with the questions whose positive is
    among them; ids are positions in ``sentences``."""

    sentences: list[Sentence]
    questions: list[str]
    positives: list[int]
    passages: list[int]  # the passage of each question's positive (for the held-out split)
    first_sentence: int  # id of the block's first sentence in the training data


def select_block(
    sentences: Sequence[Sentence], examples: Sequence[Example], max_sentences: int, start_passage: int = 0
) -> Block:
    """Whole passages from ``start_passage`` on, in order, while they fit in ``max_sentences``."""
    if max_sentences <= 0:
        raise ValueError("the block needs at least one sentence")
    first = next((i for i, s in enumerate(sentences) if s.passage_id >= start_passage), None)
    if first is None:
        raise ValueError(f"no passage {start_passage} or later in the training sentences")
    end = first
    while end < len(sentences):
        pid = sentences[end].passage_id
        stop = end
        while stop < len(sentences) and sentences[stop].passage_id == pid:
            stop += 1
        if stop - first > max_sentences and end > first:
            break
        end = stop
    block = [Sentence(i - first, s.passage_id, s.text) for i, s in enumerate(sentences[first:end], start=first)]
    questions, positives, passages = [], [], []
    for e in examples:
        if first <= e.pos < end:
            questions.append(e.question)
            positives.append(e.pos - first)
            passages.append(sentences[e.pos].passage_id)
    if not questions:
        raise ValueError(f"no training question has its positive among sentences {first}..{end - 1}")
    return Block(block, questions, positives, passages, first)


def encode_block(
    bundle_dir: Path, sentences: Sequence[Sentence], cache_dir: Path | None, threads: int | None = None
) -> sp.csr_matrix:
    """The block's vectors through the engine's encoder, as the evaluation encodes a pool
    (same contexts, same cache: ``trainer.evaluate.SparcRetriever``)."""
    from trainer.evaluate import SparcRetriever, load_sparse_encoder

    encoder = load_sparse_encoder(bundle_dir, threads=threads)
    texts = [s.text for s in sentences]
    retriever = SparcRetriever(
        encoder,
        texts,
        contexts_of(sentences),
        bundle_dir=bundle_dir,
        cache_dir=cache_dir,
        groups=[s.passage_id for s in sentences],
    )
    return retriever.matrix.tocsr()


@dataclass
class TrainResult:
    """The learned table (``exp(a)``) and how training went."""

    table: np.ndarray
    log: list[dict] = field(default_factory=list)
    before: dict = field(default_factory=dict)  # held-out (and training) loss/MRR at the start
    after: dict = field(default_factory=dict)
    seconds: float = 0.0


class BlockScorer:
    """Scores of questions against every sentence of the block, ``D[:, U] @ (Q * w[U])^T``
    over the union ``U`` of the batch's ids (the block's columns, dense for those ids)."""

    def __init__(self, matrix: sp.csr_matrix, bags: Sequence[Sequence[int]]) -> None:
        self.csc = matrix.tocsc()
        self.bags = [np.asarray(sorted(set(int(t) for t in b if 0 <= int(t) < matrix.shape[1])), np.int64) for b in bags]

    def batch(self, rows: Sequence[int]):  # -> (U, columns [N, |U|], question mask [B, |U|])
        import torch

        union = np.unique(np.concatenate([self.bags[r] for r in rows] + [np.zeros(0, np.int64)]))
        cols = torch.from_numpy(self.csc[:, union].toarray().astype(np.float32))
        mask = torch.zeros((len(rows), len(union)), dtype=torch.float32)
        for i, r in enumerate(rows):
            mask[i, torch.from_numpy(np.searchsorted(union, self.bags[r]))] = 1.0
        return torch.from_numpy(union), cols, mask


def _evaluate(scorer: BlockScorer, rows: Sequence[int], positives: Sequence[int], weights, chunk: int = 256) -> dict:
    """Mean cross-entropy and MRR of ``rows`` with the per-id ``weights`` (a torch vector)."""
    import torch
    import torch.nn.functional as F

    if not rows:
        return {"loss": float("nan"), "mrr": float("nan"), "n": 0}
    total, rr = 0.0, 0.0
    with torch.no_grad():
        for lo in range(0, len(rows), chunk):
            part = list(rows[lo : lo + chunk])
            union, cols, mask = scorer.batch(part)
            logits = (cols @ (mask * weights[union]).T).T  # [B, N]
            target = torch.tensor([positives[r] for r in part])
            total += float(F.cross_entropy(logits, target, reduction="sum"))
            pos = logits.gather(1, target[:, None])
            # rank: sentences scoring higher, ties counted against (the index breaks ties by id)
            rank = (logits > pos).sum(1) + 1
            rr += float((1.0 / rank.float()).sum())
    return {"loss": total / len(rows), "mrr": 100 * rr / len(rows), "n": len(rows)}


def train_table(
    matrix: sp.csr_matrix,
    bags: Sequence[Sequence[int]],
    positives: Sequence[int],
    base: np.ndarray,
    train_rows: Sequence[int],
    val_rows: Sequence[int] = (),
    epochs: int = 4,
    batch: int = 64,
    lr: float = 1e-2,
    reg: float = 1e-4,
    seed: int = 13,
    log_every: int = 20,
    progress=None,
) -> TrainResult:
    """Learn ``a`` (``weight = base * exp(a)``) by cross-entropy of each question's positive
    against every sentence of ``matrix``, plus ``reg * sum(a^2)`` toward the start (Adam)."""
    import torch
    import torch.nn.functional as F

    if not train_rows:
        raise ValueError("no training question")
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    scorer = BlockScorer(matrix, bags)
    base_t = torch.from_numpy(np.asarray(base, dtype=np.float32))
    a = torch.zeros(base_t.shape[0], dtype=torch.float32, requires_grad=True)
    opt = torch.optim.Adam([a], lr=lr)
    result = TrainResult(table=np.ones(base_t.shape[0], np.float32))
    sample = list(train_rows[: min(len(train_rows), 1024)])
    result.before = {
        "train": _evaluate(scorer, sample, positives, base_t),
        "val": _evaluate(scorer, list(val_rows), positives, base_t),
    }
    rng = random.Random(seed)
    step = 0
    for epoch in range(epochs):
        order = list(train_rows)
        rng.shuffle(order)
        for lo in range(0, len(order), batch):
            rows = order[lo : lo + batch]
            union, cols, mask = scorer.batch(rows)
            w = base_t[union] * torch.exp(a[union])
            logits = (cols @ (mask * w).T).T
            target = torch.tensor([positives[r] for r in rows])
            ce = F.cross_entropy(logits, target)
            loss = ce + reg * (a * a).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % log_every == 0 or step == 1:
                row = {
                    "step": step,
                    "epoch": epoch,
                    "ce": float(ce.detach()),
                    "loss": float(loss.detach()),
                    "a_abs_max": float(a.detach().abs().max()),
                }
                result.log.append(row)
                if progress is not None:
                    progress(row)
    with torch.no_grad():
        weights = base_t * torch.exp(a)
        result.after = {
            "train": _evaluate(scorer, sample, positives, weights),
            "val": _evaluate(scorer, list(val_rows), positives, weights),
        }
        result.table = torch.exp(a).numpy().astype(np.float32)
    result.seconds = time.perf_counter() - t0
    return result


def split_rows(passages: Sequence[int], val_share: float) -> tuple[list[int], list[int]]:
    """Questions of the block's last ``val_share`` of passages held out (whole passages)."""
    order = list(dict.fromkeys(passages))
    n_val = int(round(len(order) * val_share))
    held = set(order[len(order) - n_val :]) if n_val else set()
    train = [i for i, p in enumerate(passages) if p not in held]
    val = [i for i, p in enumerate(passages) if p in held]
    return train, val


def save_table(out: Path, table: np.ndarray, meta: dict) -> Path:
    """``out/query_weights.npy`` (float32, one per id) and ``out/query_weights.json``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / QUERY_WEIGHTS_FILE
    np.save(path, np.asarray(table, dtype=np.float32), allow_pickle=False)
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return path


def bundle_with_table(bundle_dir: Path, table_path: Path, out: Path, meta: dict) -> Path:
    """A copy of ``bundle_dir`` at ``out`` shipping the table: ``query_weights.npy`` beside the
    graph, named by ``config.json``'s ``query_weights`` (``query_weights_training`` records how
    it was made). The table must fit the bundle's vocabulary."""
    bundle = Bundle.open(bundle_dir)
    read_query_weights(table_path, bundle.vocab_size)  # refuse a table that does not fit
    if out.exists():
        raise SystemExit(f"--bundle-out {out}: already exists")
    shutil.copytree(bundle_dir, out)
    shutil.copyfile(table_path, out / QUERY_WEIGHTS_FILE)
    cfg = json.loads((out / CONFIG).read_text(encoding="utf-8"))
    cfg["query_weights"] = QUERY_WEIGHTS_FILE
    cfg["query_weights_training"] = meta
    (out / CONFIG).write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    Bundle.open(out)  # what the engine will read
    return out


# ---------------------------------------------------------------------------------------------
# command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, type=Path, help="model bundle whose sentence vectors are scored (frozen)")
    parser.add_argument("--data", type=Path, default=Path("runs/train-data"), help="folder with sentences.jsonl and examples.jsonl")
    parser.add_argument("--out", required=True, type=Path, help="folder for query_weights.npy and query_weights.json")
    parser.add_argument("--variant", choices=VARIANTS, default="product", help="product: x the IDF (IDF on); learned: alone (IDF off)")
    parser.add_argument("--sentences", type=int, default=10000, help="training sentences in the block (whole passages)")
    parser.add_argument("--start-passage", type=int, default=0, help="the block's first passage")
    parser.add_argument("--val-share", type=float, default=0.1, help="share of the block's passages whose questions are held out")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--reg", type=float, default=1e-4, help="L2 penalty on a = log(table), toward the start")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=1, help="encoder and torch threads")
    parser.add_argument("--cache", type=Path, default=Path("runs/cache"), help="encoded vectors cache ('' for none)")
    parser.add_argument("--bundle-out", type=Path, default=None, help="also write a copy of --model shipping the table here")


def run(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(max(1, args.threads))
    bundle = Bundle.open(args.model)
    if not 0 <= args.val_share < 1:
        raise SystemExit("--val-share must be in [0, 1)")
    sentences, examples = load_training_data(args.data)
    block = select_block(sentences, examples, args.sentences, args.start_passage)
    t0 = time.perf_counter()
    cache = args.cache if str(args.cache) else None
    matrix = encode_block(args.model, block.sentences, cache, threads=args.threads)
    encode_s = time.perf_counter() - t0
    vocab = bundle.vocab_size
    from trainer.evaluate import idf_vector

    base = idf_vector(matrix, vocab) if args.variant == "product" else np.ones(vocab, np.float32)
    bags = [bundle.question_ids(q) for q in block.questions]
    train_rows, val_rows = split_rows(block.passages, args.val_share)
    print(
        f"block: {len(block.sentences)} sentences from {block.first_sentence}, {len(block.questions)} questions "
        f"({len(train_rows)} train, {len(val_rows)} held out); encoded in {encode_s:.0f} s"
    )

    def show(row: dict) -> None:
        print(f"step {row['step']} epoch {row['epoch']}: ce {row['ce']:.4f} |a|max {row['a_abs_max']:.3f}", flush=True)

    result = train_table(
        matrix, bags, block.positives, base, train_rows, val_rows,
        epochs=args.epochs, batch=args.batch, lr=args.lr, reg=args.reg, seed=args.seed, progress=show,
    )
    a = np.log(result.table)
    meta = {
        "variant": args.variant,
        "idf": args.variant == "product",
        "bundle": {"path": str(args.model), "name": bundle.name, "version": bundle.identity.version},
        "data": str(args.data),
        "block": {
            "first_sentence": block.first_sentence,
            "sentences": len(block.sentences),
            "questions": len(block.questions),
            "train_questions": len(train_rows),
            "held_out_questions": len(val_rows),
        },
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if not k.startswith("_")},
        "before": result.before,
        "after": result.after,
        "moved_ids": int(np.count_nonzero(result.table != 1.0)),
        "a_range": [float(a.min()), float(a.max())],
        "train_seconds": round(result.seconds, 1),
        "encode_seconds": round(encode_s, 1),
        "log": result.log,
    }
    path = save_table(args.out, result.table, meta)
    b, f = result.before, result.after
    print(
        f"held-out loss {b['val']['loss']:.4f} -> {f['val']['loss']:.4f}, MRR {b['val']['mrr']:.2f} -> {f['val']['mrr']:.2f}; "
        f"train loss {b['train']['loss']:.4f} -> {f['train']['loss']:.4f}; {meta['moved_ids']} ids moved; wrote {path}"
    )
    if args.bundle_out is not None:
        print(f"wrote {bundle_with_table(args.model, path, args.bundle_out, {k: meta[k] for k in ('variant', 'idf', 'block', 'before', 'after')})}")
    return 0
