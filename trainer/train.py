"""Provider-side SPARC training: in-batch cross-entropy over 3B candidates (SPARC.md §2).

One step takes B questions, their positives and two hard negatives each; every question is
scored against all 3B sentences. Only the scores of the batch's question tokens are computed
(``SparcModel.token_scores``), never the 30k-vocabulary projection. The word-embedding matrix
is frozen; ``w`` has its own learning rate (``--sparta`` keeps exp(w) = 1).

Runs on CPU (bf16 autocast) or CUDA (AMP), and on several processes with ``torchrun``: the
pooled token scores of every process are gathered so the in-batch negatives span all of them
(gradient caching: a no-grad pass gives the global loss and its gradient with respect to each
process's scores, then a second pass with grad back-propagates that gradient locally).
Checkpoints (model, optimiser, schedule, data position) are written every ``--save-every``
steps and the run resumes from the latest one.

Learned sparsity (issue 13): ``--flops-weight`` adds a FLOPS penalty on the documents only
(questions are bags of ids, there is no query encoder), over the full-vocabulary vectors
f(., s) of the batch's sentences (``--flops-docs`` of them, a fresh random subset each step):

    lambda_t * sum_v c_v * (1/n * sum_i m_i * f(v, s_i))^2

- ``lambda_t = flops_weight * min(1, (t / flops_warmup)^2)``: SPLADE's quadratic warm-up.
- ``m_i = 1[L0(s_i) > flops_threshold]`` (the L0 mask of arXiv 2504.14839, sentence-transformers'
  ``FlopsLoss(threshold=...)``, OpenSearch's ``flops_threshold``): a sentence already at or below
  the threshold is left alone; it still counts in the mean's denominator n. 0 = every sentence.
- ``c_v = 1`` or, with ``--flops-idf``, ``c_v = idf_max / idf_v`` (BM25 IDF over the training
  sentences): frequent tokens cost more than rare ones, whose weight is what a question's rare
  words match (OpenSearch's IDF-aware penalty shifts the trade-off the same way).
- ``exp(w)`` is detached inside the penalty: scaling every weight down would lower it without
  zeroing any token, and sparsity is decided by the sign of the pooled dot products.

With several processes each process penalises its own documents and the penalties are averaged.

Passage encoding (issue 13): ``--passage`` encodes each candidate's passage once
(``[CLS] passage [SEP]``, windows of ``--max-length`` cut at sentence boundaries; candidates of
the same window share one pass) and pools each sentence over its own span of that encoding;
``--passage-vector`` adds the window's vector (max over all its positions) to each sentence's
score. The loss, the FLOPS penalty (on the sentence's full vector, the window's added when it
is on) and the gradient cache are those of the sentence mode. The bundle records
``encoding: "passage"``.

Distillation (issue 13 item 4): ``--distill DIR`` (a folder from ``sparcdesk-train teacher``)
adds ``--distill-weight`` x KL(teacher || student) over each step's candidates, the teacher's
logits being ``--distill-scale`` x the sum of its members' z-scores (``trainer.teacher``).
``--question-weights TABLE.npy`` weighs each question id as the app's IDF option does at query
time. ``--init-bundle B`` starts from a sentence bundle's weights (``load_bundle_weights``):
a shipped model can be trained further without its run's checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from engine.model.features import (
    DEFAULT_POOLING,
    POOLINGS,
    build_features,
    load_tokenizer,
    passage_windows,
    question_tokens,
    window_features,
)
from trainer.data import Example, Sentence, load_training_data
from trainer.model import SparcModel, default_base_path, load_bundle_weights, load_encoder
from trainer.pools import contexts_of


def _dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class Batcher:
    """Turns examples into encoder inputs and question bags, deterministically per (seed, epoch)."""

    def __init__(
        self,
        tokenizer_path: str,
        sentences: list[Sentence],
        max_length: int,
        pooling: str = DEFAULT_POOLING,
        passage: bool = False,
        passage_vector: bool = False,
    ) -> None:
        self.tokenizer = load_tokenizer(tokenizer_path)
        self.sentences = sentences
        # sentence ids are positions in ``sentences``; the same context rule as the evaluation pools
        self.contexts = contexts_of(sentences)
        self.max_length = max_length
        self.pooling = pooling
        self.passage = passage
        self.passage_vector = passage_vector
        # passage id -> its sentences' ids in reading order (the order of ``sentences``)
        self.members: dict[object, list[int]] = {}
        for i, s in enumerate(sentences):
            self.members.setdefault(s.passage_id, []).append(i)

    def context(self, sid: int) -> str:
        return self.contexts[sid]

    @staticmethod
    def candidates(examples: list[Example]) -> list[int]:
        """The step's candidate sentence ids: positives, first negatives, second negatives."""
        return [e.pos for e in examples] + [e.negs[0] for e in examples] + [e.negs[1] for e in examples]

    def encode(self, examples: list[Example]) -> tuple[dict[str, torch.Tensor], list[list[int]]]:
        sids = self.candidates(examples)
        if self.passage:
            batch = self.passage_batch(sids)
        else:
            feats = build_features(
                self.tokenizer,
                [self.sentences[i].text for i in sids],
                [self.context(i) for i in sids],
                self.max_length,
                self.pooling,
            )
            batch = {k: torch.from_numpy(v) for k, v in feats.items()}
        bags = [question_tokens(self.tokenizer, e.question) for e in examples]
        return batch, bags

    def passage_batch(self, sids: list[int]) -> dict[str, torch.Tensor]:
        """The windows holding the candidates, each encoded once, and per candidate its
        window's row (``window_index``) and span (``sentence_mask`` [n, L])."""
        pids = list(dict.fromkeys(self.sentences[i].passage_id for i in sids))
        passages = [[self.sentences[j].text for j in self.members[p]] for p in pids]
        where: dict[int, tuple[int, int]] = {}  # sentence id -> (window, slot)
        windows = passage_windows(self.tokenizer, passages, self.max_length)
        for w_i, w in enumerate(windows):
            for slot in range(len(w.spans)):
                where[self.members[pids[w.passage]][w.first + slot]] = (w_i, slot)
        used = sorted({where[i][0] for i in sids})
        row = {w_i: r for r, w_i in enumerate(used)}
        feats = window_features(self.tokenizer, [windows[w_i] for w_i in used])
        rows = np.array([row[where[i][0]] for i in sids])
        slots = np.array([where[i][1] for i in sids])
        span = feats.pop("span_mask")
        batch = {k: torch.from_numpy(v) for k, v in feats.items()}
        batch["sentence_mask"] = torch.from_numpy(span[rows, slots])
        batch["window_index"] = torch.from_numpy(rows)
        if self.passage_vector:
            batch["passage_mask"] = torch.from_numpy(span.max(axis=1)[rows])
        return batch


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    order = list(range(n))
    random.Random(seed * 1000 + epoch).shuffle(order)
    return order


def query_matrix(bags: list[list[int]], vocab: list[int], weights: np.ndarray | None = None) -> torch.Tensor:
    """[B, U] question bags over the step's vocabulary; each id weighs 1, or ``weights[id]``
    (``--question-weights``: the IDF the app multiplies in at query time)."""
    col = {v: j for j, v in enumerate(vocab)}
    q = torch.zeros(len(bags), len(vocab))
    for i, bag in enumerate(bags):
        for v in bag:
            q[i, col[v]] += 1.0 if weights is None else float(weights[v])
    return q


def in_batch_loss(
    q: torch.Tensor,
    scores: torch.Tensor,
    offset: int,
    teacher: torch.Tensor | None = None,
    distill_weight: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy of each question against all candidates; positive of question i is i.

    With ``teacher`` ([B, 3B_total] logits over the same candidates), ``distill_weight`` times
    KL(teacher || student) of the two softmax distributions is added (soft labels)."""
    logits = q @ scores.t()  # [B, 3B_total]
    target = torch.arange(q.shape[0], device=q.device) + offset
    loss = F.cross_entropy(logits, target)
    if teacher is not None and distill_weight > 0:
        kl = F.kl_div(
            F.log_softmax(logits, dim=1),
            F.log_softmax(teacher.to(logits.device, logits.dtype), dim=1),
            log_target=True,
            reduction="batchmean",
        )
        loss = loss + distill_weight * kl
    return loss


def make_optimizer(model: SparcModel, lr: float, w_lr: float) -> torch.optim.Optimizer:
    body = [p for n, p in model.named_parameters() if p.requires_grad and n != "w"]
    groups = [{"params": body, "lr": lr}]
    if model.w.requires_grad:
        groups.append({"params": [model.w], "lr": w_lr})
    return torch.optim.AdamW(groups, weight_decay=0.0)


def lr_lambda(warmup: int, total: int):
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return f


class RandContext:
    """Record the RNG state at creation; replay it inside ``with`` (GradCache's RandContext).

    The gradient cache runs the encoder twice; without this the second, differentiable pass
    draws new dropout masks and the cached gradients belong to different representations.
    The RNG state after the ``with`` block is the one before it (``torch.random.fork_rng``).
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cpu_state = torch.get_rng_state()
        self.cuda_state = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    def __enter__(self) -> None:
        devices = [self.device] if self.cuda_state is not None else []
        self._fork = torch.random.fork_rng(devices=devices)
        self._fork.__enter__()
        torch.set_rng_state(self.cpu_state)
        if self.cuda_state is not None:
            torch.cuda.set_rng_state(self.cuda_state, self.device)

    def __exit__(self, *exc) -> None:
        self._fork.__exit__(*exc)


@dataclass
class Flops:
    """The document-side FLOPS penalty's settings (module docstring)."""

    weight: float = 0.0
    warmup: int = 0
    threshold: int = 0
    docs: int = 0
    column_weights: torch.Tensor | None = None  # c_v, [V]; None = 1 everywhere
    seed: int = 0

    def lam(self, step: int) -> float:
        """lambda for the step that follows ``step`` completed steps."""
        if self.weight <= 0:
            return 0.0
        if self.warmup <= 0:
            return self.weight
        return self.weight * min(1.0, ((step + 1) / self.warmup) ** 2)

    def subset(self, n: int, step: int) -> torch.Tensor | None:
        """Which of the n documents are penalised at this step (None: all)."""
        if not self.docs or self.docs >= n:
            return None
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        return torch.randperm(n, generator=g)[: self.docs].sort().values


def flops_penalty(
    f: torch.Tensor, threshold: int = 0, column_weights: torch.Tensor | None = None
) -> torch.Tensor:
    """sum_v c_v (mean_i m_i f_iv)^2 over full-vocabulary document vectors f [n, V]."""
    if threshold:
        keep = ((f > 0).sum(dim=1) > threshold).to(f.dtype)
        f = f * keep.unsqueeze(1)
    sq = f.mean(dim=0) ** 2
    if column_weights is not None:
        sq = sq * column_weights.to(sq.device)
    return sq.sum()


def full_vectors(
    model: SparcModel, states: torch.Tensor, mask: torch.Tensor, passage_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """f(v, s) over the whole vocabulary with exp(w) detached (the penalty's input): [n, V];
    with ``passage_mask`` the window's f(v, window) is added (the sentence's indexed vector)."""
    scale = torch.exp(model.w.detach())
    f = torch.log1p(scale * model.full_pooled(states, mask))
    if passage_mask is not None:
        f = f + torch.log1p(scale * model.full_pooled(states, passage_mask))
    return f


def doc_nnz_stats(f: torch.Tensor, prune_ratio: float) -> dict:
    """Median non-zeros of the documents' full vectors, and after threshold pruning."""
    with torch.no_grad():
        nnz = (f > 0).sum(dim=1).float()
        cut = f.amax(dim=1, keepdim=True) * prune_ratio
        kept = ((f > 0) & (f >= cut)).sum(dim=1).float()
    return {"nnz_docs_median": float(nnz.median()), "nnz_docs_pruned_median": float(kept.median())}


def idf_column_weights(tokenizer, sentences: list[Sentence], vocab_size: int) -> torch.Tensor:
    """c_v = idf_max / idf_v with BM25's idf = log(1 + (N - n_v + 0.5) / (n_v + 0.5)) over the
    training sentences (unseen tokens: idf_max, weight 1)."""
    df = np.zeros(vocab_size, dtype=np.float64)
    texts = [s.text for s in sentences]
    for start in range(0, len(texts), 4096):
        for enc in tokenizer.encode_batch(texts[start : start + 4096], add_special_tokens=False):
            df[np.unique(np.asarray(enc.ids, dtype=np.int64))] += 1
    n = len(texts)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    return torch.tensor(idf.max() / idf, dtype=torch.float32)


def _penalty_and_stats(
    model: SparcModel,
    states: torch.Tensor,
    batch: dict[str, torch.Tensor],
    flops: Flops,
    step: int,
    lam: float,
    prune_ratio: float,
    stats: bool,
    out: dict,
) -> torch.Tensor | None:
    """The FLOPS penalty of this process's documents (None when it is off). When it is on, or
    ``stats`` is asked (then over a few documents, without grad), ``out`` gets the penalty's value
    and the documents' non-zero counts."""
    mask = batch["sentence_mask"]
    pmask = batch.get("passage_mask")
    idx = flops.subset(states.shape[0], step)
    st, mk = (states, mask) if idx is None else (states[idx], mask[idx])
    pm = pmask if pmask is None or idx is None else pmask[idx]
    if lam > 0:
        f = full_vectors(model, st, mk, pm)
        pen = flops_penalty(f, flops.threshold, flops.column_weights)
        out["flops"] = float(pen.detach())
        out.update(doc_nnz_stats(f, prune_ratio))
        return pen
    if stats:
        with torch.no_grad():
            few = 16 if idx is None else len(idx)
            f = full_vectors(model, st[:few].detach(), mk[:few], None if pm is None else pm[:few])
            out["flops"] = float(flops_penalty(f, flops.threshold, flops.column_weights))
            out.update(doc_nnz_stats(f, prune_ratio))
    return None


def _gathered_loss(
    model: SparcModel,
    pooled: torch.Tensor,
    q_local: torch.Tensor,
    teacher: torch.Tensor | None,
    distill_weight: float,
    rank: int,
    world: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The loss of every process's questions against every process's candidates (the pooled
    scores and the question bags gathered from all processes).

    Returns the loss, the scores of all candidates and this process's pooled scores as a leaf
    tensor: after ``loss.backward()`` its ``.grad`` is the gradient cache of the second pass."""
    b = q_local.shape[0]
    pooled_all = [torch.zeros_like(pooled) for _ in range(world)]
    dist.all_gather(pooled_all, pooled)
    pooled_all[rank] = pooled.detach().requires_grad_(True)
    q_all = [torch.zeros_like(q_local) for _ in range(world)]
    dist.all_gather(q_all, q_local)
    # candidates: for each process its positives, negs1, negs2 in process order
    cand = torch.cat(pooled_all)  # [3B*world, U]
    scores = model.scores(cand)
    loss = torch.stack(
        [
            in_batch_loss(
                q_all[r], scores, 3 * b * r, None if teacher is None else teacher[b * r : b * (r + 1)], distill_weight
            )
            for r in range(world)
        ]
    ).mean()
    return loss, scores, pooled_all[rank]


def _all_reduce_encoder_grads(model: SparcModel) -> None:
    for p in model.encoder.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)  # sum: each process holds its share of the global loss's gradient


def step_gradients(
    model: SparcModel,
    batch: dict[str, torch.Tensor],
    q_local: torch.Tensor,
    vocab_t: torch.Tensor,
    autocast,
    flops: Flops,
    step: int,
    prune_ratio: float = 0.1,
    stats: bool = False,
    teacher: torch.Tensor | None = None,
    distill_weight: float = 0.0,
) -> dict:
    """Forward and backward of one step; leaves the (all-reduced) gradients in ``.grad``.

    ``teacher``: soft-label logits of every process's questions (process order) against every
    process's candidates ([B * world, 3B * world]), added to the loss with ``distill_weight``.

    Returns the loss, the question-vocabulary scores of this process's documents, and, when the
    penalty is on or ``stats`` is asked, the penalty and the documents' non-zero counts.
    """
    rank, world = _dist_info()
    lam = flops.lam(step)
    emb_q = model.word_embeddings.weight[vocab_t]
    out: dict = {"lam": lam}

    def penalty_and_stats(states: torch.Tensor) -> torch.Tensor | None:
        return _penalty_and_stats(model, states, batch, flops, step, lam, prune_ratio, stats, out)

    if world == 1:
        with autocast:
            states = model.sentence_states(**batch)
            scores = model.scores(model.pool(states, batch, emb_q)).float()
        loss = in_batch_loss(q_local, scores, 0, teacher, distill_weight)
        pen = penalty_and_stats(states)
        (loss if pen is None else loss + lam * pen).backward()
        out.update(loss=loss, scores=scores)
        return out

    b = q_local.shape[0]
    rng = RandContext(q_local.device)
    with torch.no_grad(), autocast:
        pooled = model.pool(model.sentence_states(**batch), batch, emb_q).float()
    loss, scores, mine = _gathered_loss(model, pooled, q_local, teacher, distill_weight, rank, world)
    loss.backward()  # grads for w (identical on every process) and for this process's pooled scores
    cached = mine.grad
    with rng, autocast:  # the first pass's dropout masks
        states = model.sentence_states(**batch)
        pooled_again = model.pool(states, batch, emb_q).float()
    surrogate = (pooled_again * cached).sum()
    pen = penalty_and_stats(states)
    if pen is not None:
        surrogate = surrogate + lam * pen / world
    surrogate.backward()
    _all_reduce_encoder_grads(model)
    out.update(loss=loss, scores=scores[3 * b * rank : 3 * b * (rank + 1)].detach())
    return out


def save_checkpoint(path: Path, model: SparcModel, opt, sched, step: int, args: argparse.Namespace) -> None:
    """Everything but the frozen word embeddings (they are the base model's)."""
    state = {k: v for k, v in model.state_dict().items() if "word_embeddings" not in k}
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": state,
            "opt": opt.state_dict(),
            "sched": sched.state_dict(),
            "step": step,
            "args": {k: v for k, v in vars(args).items() if not callable(v)},
        },
        tmp,
    )
    os.replace(tmp, path)


def latest_checkpoint(out: Path) -> Path | None:
    found = sorted(out.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))
    return found[-1] if found else None


def load_model_from_checkpoint(ckpt: Path, base: Path | None = None) -> tuple[SparcModel, dict]:
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    args = state["args"]
    encoder = load_encoder(base or args["base"])
    model = SparcModel(
        encoder, learn_w=not args.get("sparta", False), passage_vector=bool(args.get("passage_vector"))
    )
    missing, unexpected = model.load_state_dict(state["model"], strict=False)
    assert not unexpected and all("word_embeddings" in m for m in missing), (missing, unexpected)
    return model, state


def _device(args: argparse.Namespace) -> torch.device:
    if torch.cuda.is_available() and not args.cpu:
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device("cpu")


def _make_batcher(args: argparse.Namespace, base: Path, sentences: list[Sentence]) -> Batcher:
    return Batcher(
        str(base / "tokenizer.json"),
        sentences,
        args.max_length,
        args.pooling,
        passage=args.passage,
        passage_vector=args.passage_vector,
    )


def _build_model(args: argparse.Namespace, base: Path, device: torch.device) -> SparcModel:
    model = SparcModel(load_encoder(base), learn_w=not args.sparta, passage_vector=args.passage_vector)
    if args.init_bundle is not None:  # a resumed checkpoint overrides it
        load_bundle_weights(model, args.init_bundle)
    return model.to(device)


def _make_flops(args: argparse.Namespace, tokenizer, sentences: list[Sentence], vocab_size: int) -> Flops:
    return Flops(
        weight=args.flops_weight,
        warmup=args.flops_warmup,
        threshold=args.flops_threshold,
        docs=args.flops_docs,
        seed=args.seed,
        column_weights=idf_column_weights(tokenizer, sentences, vocab_size) if args.flops_idf else None,
    )


def _load_question_weights(path: Path | None, vocab_size: int) -> np.ndarray | None:
    """``--question-weights``: one weight per vocabulary id."""
    if path is None:
        return None
    weights = np.load(path).astype(np.float32)
    if weights.shape != (vocab_size,):
        raise SystemExit(f"{path}: {weights.shape} weights for a vocabulary of {vocab_size}")
    return weights


def _load_teacher(args: argparse.Namespace, n_examples: int, n_sentences: int):
    """``--distill``'s teacher (``trainer.teacher.Teacher``), or None."""
    if args.distill is None:
        return None
    from trainer.teacher import Teacher

    return Teacher(args.distill, n_examples, n_sentences, args.distill_scale)


def _resume(out: Path, model: SparcModel, opt, sched, rank: int) -> int:
    """Load the latest checkpoint in ``out`` (if any) into the model, optimiser and schedule;
    the step it was written at (0 without one)."""
    ckpt = latest_checkpoint(out)
    if ckpt is None:
        return 0
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"], strict=False)
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    step = state["step"]
    if rank == 0:
        print(f"resumed from {ckpt} at step {step}", flush=True)
    return step


def _autocast(device: torch.device, bf16: bool):
    if bf16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def _chunk_ids(
    n: int, args: argparse.Namespace, step: int, per_epoch: int, rank: int, world: int
) -> list[int]:
    """This process's share of the step's examples (positions in the example list)."""
    global_batch = args.batch * world
    epoch, within = divmod(step, per_epoch)
    order = epoch_order(n, args.seed, epoch)
    start = within * global_batch + rank * args.batch
    return order[start : start + args.batch]


def _encode(
    batcher: Batcher, chunk: list[Example], device: torch.device
) -> tuple[dict[str, torch.Tensor], list[list[int]]]:
    """The chunk's encoder inputs on ``device`` and its question bags."""
    batch, bags = batcher.encode(chunk)
    return {k: v.to(device) for k, v in batch.items()}, bags


def _step_vocab(bags: list[list[int]], world: int) -> list[int]:
    """The batch's question vocabulary, the same on every process."""
    local_vocab = sorted({v for bag in bags for v in bag})
    if world == 1:
        return local_vocab
    gathered: list[list[int]] = [None] * world  # type: ignore[list-item]
    dist.all_gather_object(gathered, local_vocab)
    return sorted({v for part in gathered for v in part})


def _teacher_logits(
    teacher,
    chunk_ids: list[int],
    chunk: list[Example],
    bags: list[list[int]],
    world: int,
    device: torch.device,
) -> torch.Tensor:
    """The teacher's logits of every process's questions against every process's candidates,
    in process order."""
    mine = (chunk_ids, Batcher.candidates(chunk), bags)
    parts = [mine]
    if world > 1:
        parts = [None] * world  # type: ignore[list-item]
        dist.all_gather_object(parts, mine)
    all_sids = [sid for part in parts for sid in part[1]]
    logits = teacher.logits(
        [i for part in parts for i in part[0]], all_sids, [bag for part in parts for bag in part[2]]
    )
    return torch.from_numpy(logits).to(device)


def _log_record(
    model: SparcModel,
    res: dict,
    batch: dict[str, torch.Tensor],
    step: int,
    per_epoch: int,
    vocab_size: int,
    sched,
    t0: float,
    log_every: int,
) -> dict:
    """The train-log.jsonl line of a logged step (``t0``: when the run's steps began)."""
    with torch.no_grad():
        nnz = float((res["scores"] > 0).float().sum(1).median())
    rec = {
        "step": step,
        "epoch": round(step / per_epoch, 4),
        "loss": round(float(res["loss"].detach()), 5),
        "exp_w": round(float(torch.exp(model.w.detach())), 4),
        "nnz_question_vocab_median": nnz,
        "question_vocab": vocab_size,
        "lr": sched.get_last_lr()[0],
        "elapsed_s": round(time.time() - t0, 1),
    }
    if "flops" in res:
        rec.update(
            flops=round(res["flops"], 4),
            flops_lambda=res["lam"],
            nnz_docs_median=res["nnz_docs_median"],
            nnz_docs_pruned_median=res["nnz_docs_pruned_median"],
        )
    if step % (log_every * 10) == 0 or step == 1:
        rec["nnz_full_median"] = full_vocab_nnz(model, batch)
    return rec


def _save_and_prune(out: Path, model: SparcModel, opt, sched, step: int, args: argparse.Namespace) -> None:
    """Write step-N.pt; keep the latest ``--keep`` checkpoints and every ``--keep-every``th."""
    save_checkpoint(out / f"step-{step}.pt", model, opt, sched, step, args)
    for old in sorted(out.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))[: -args.keep]:
        if int(old.stem.split("-")[1]) % args.keep_every != 0:
            old.unlink()


def train(args: argparse.Namespace) -> Path:
    rank, world = _dist_info()
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = _device(args)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    sentences, examples = load_training_data(args.data)
    all_examples = len(examples)  # the teacher is indexed by position in the whole file
    if args.limit:
        examples = examples[: args.limit]
    base = Path(args.base)
    batcher = _make_batcher(args, base, sentences)
    model = _build_model(args, base, device)
    opt = make_optimizer(model, args.lr, args.w_lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(args.warmup, args.steps))
    vocab_size = model.word_embeddings.weight.shape[0]
    flops = _make_flops(args, batcher.tokenizer, sentences, vocab_size)
    question_weights = _load_question_weights(args.question_weights, vocab_size)
    teacher = _load_teacher(args, all_examples, len(sentences))
    step = _resume(out, model, opt, sched, rank) if args.resume else 0

    per_epoch = len(examples) // (args.batch * world)
    autocast = _autocast(device, args.bf16)
    # kept open for the whole run and closed at its end; only rank 0 logs
    log = open(out / "train-log.jsonl", "a", encoding="utf-8") if rank == 0 else None  # noqa: SIM115
    bar = tqdm(total=args.steps, initial=step, disable=rank != 0, desc="train", mininterval=10)
    model.train()
    t0 = time.time()
    while step < args.steps:
        chunk_ids = _chunk_ids(len(examples), args, step, per_epoch, rank, world)
        chunk = [examples[i] for i in chunk_ids]
        batch, bags = _encode(batcher, chunk, device)
        vocab = _step_vocab(bags, world)
        vocab_t = torch.tensor(vocab, device=device)
        q_local = query_matrix(bags, vocab, question_weights).to(device)
        teacher_logits = None
        if teacher is not None:
            teacher_logits = _teacher_logits(teacher, chunk_ids, chunk, bags, world, device)

        opt.zero_grad(set_to_none=True)
        logging_step = rank == 0 and ((step + 1) % args.log_every == 0 or step == 0)
        res = step_gradients(
            model,
            batch,
            q_local,
            vocab_t,
            autocast,
            flops,
            step,
            args.prune_ratio,
            stats=logging_step,
            teacher=teacher_logits,
            distill_weight=args.distill_weight,
        )
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        opt.step()
        sched.step()
        step += 1
        bar.update(1)

        if rank == 0 and (step % args.log_every == 0 or step == 1):
            rec = _log_record(model, res, batch, step, per_epoch, len(vocab), sched, t0, args.log_every)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            bar.set_postfix(loss=rec["loss"], exp_w=rec["exp_w"])
        if rank == 0 and (step % args.save_every == 0 or step == args.steps):
            _save_and_prune(out, model, opt, sched, step, args)
    bar.close()
    if log:
        log.close()
    return out


@torch.no_grad()
def full_vocab_nnz(model: SparcModel, batch: dict[str, torch.Tensor], n: int = 8) -> float:
    """Median non-zero entries of the full-vocabulary vector of a few sentences."""
    per_sentence = ("sentence_mask", "window_index", "passage_mask")
    # a passage batch keeps every window: the first n sentences may sit in any of them
    whole = "window_index" in batch
    small = {k: v[:n] if k in per_sentence or not whole else v for k, v in batch.items()}
    _ids, weights = model.sparse_topk(small, k=model.word_embeddings.weight.shape[0])
    return float(np.median((weights > 0).sum(-1).cpu().numpy()))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data", type=Path, default=Path("runs/train-data"), help="output of `sparcdesk-train prepare`"
    )
    p.add_argument("--base", type=Path, default=None, help="local folder of a BERT-family checkpoint")
    p.add_argument("--out", type=Path, default=Path("runs/train"))
    p.add_argument(
        "--init-bundle",
        type=Path,
        default=None,
        help="start from a sentence bundle's weights (its fp32 graph; the base must be the bundle's)",
    )
    p.add_argument("--batch", type=int, default=32, help="questions per process per step")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument(
        "--pooling",
        choices=POOLINGS,
        default=DEFAULT_POOLING,
        help="max-pool over the sentence's own word pieces (default) or every word piece of the input",
    )
    p.add_argument(
        "--passage",
        action="store_true",
        help="one encoder pass per passage window; each sentence pooled over its own span (issue 13)",
    )
    p.add_argument(
        "--passage-vector",
        action="store_true",
        help="with --passage: add the window's vector (max over all its positions) to each sentence's score",
    )
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--w-lr", type=float, default=5e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--sparta", action="store_true", help="keep exp(w) = 1 (the SPARTA ablation)")
    p.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bf16 autocast (default: on where it is fast: CUDA with bf16, CPUs with AMX or AVX512-BF16)",
    )
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--limit", type=int, default=0, help="use only the first N examples")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=250)
    p.add_argument("--keep", type=int, default=2, help="latest checkpoints kept")
    p.add_argument("--keep-every", type=int, default=500, help="also keep every Nth step (learning curve)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--question-weights",
        type=Path,
        default=None,
        help="a .npy of one weight per vocabulary id multiplied into every question id (e.g. a "
        "teacher folder's sparc-idf.npy: the app's IDF over the training sentences' vectors), so "
        "that questions are scored in training as the app's IDF option scores them",
    )
    _add_distill_arguments(p)
    _add_flops_arguments(p)


def _add_distill_arguments(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("distillation (soft labels from `sparcdesk-train teacher`)")
    d.add_argument("--distill", type=Path, default=None, help="teacher folder written by `sparcdesk-train teacher`")
    d.add_argument("--distill-weight", type=float, default=1.0, help="weight of KL(teacher || student) in the loss")
    d.add_argument(
        "--distill-scale", type=float, default=1.0, help="teacher logits = scale x (z(dense) + z(SPARC+IDF))"
    )


def _add_flops_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("learned sparsity (document-side FLOPS penalty; see the module help)")
    g.add_argument("--flops-weight", type=float, default=0.0, help="lambda of the FLOPS penalty (0 = off)")
    g.add_argument(
        "--flops-warmup", type=int, default=0, help="steps of quadratic ramp-up of lambda (SPLADE)"
    )
    g.add_argument(
        "--flops-idf", action="store_true", help="weight token v's penalty by idf_max / idf_v (training data)"
    )
    g.add_argument(
        "--flops-threshold",
        type=int,
        default=0,
        help="L0 mask: penalise only sentences with more non-zeros than this (0 = all)",
    )
    g.add_argument(
        "--flops-docs",
        type=int,
        default=0,
        help="penalise a random subset of this many of the step's sentences (0 = all 3B; CPU cost)",
    )
    g.add_argument(
        "--prune-ratio",
        type=float,
        default=0.1,
        help="the logged nnz_docs_pruned_median counts weights >= this x the sentence's max",
    )


def bf16_is_fast(cpu_only: bool = False) -> bool:
    """bf16 pays only with hardware support; on AVX2-only CPUs it is emulated (~10x slower, measured)."""
    if torch.cuda.is_available() and not cpu_only:
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def run(args: argparse.Namespace) -> None:
    if args.passage_vector and not args.passage:
        raise SystemExit("--passage-vector needs --passage")
    if args.passage and args.pooling != DEFAULT_POOLING:
        raise SystemExit("--passage pools each sentence over its own span; use --passage-vector, not --pooling all")
    if args.bf16 is None:
        args.bf16 = bf16_is_fast(cpu_only=args.cpu)
    if args.base is None:
        args.base = default_base_path()
    args.base = str(args.base)
    if "RANK" in os.environ and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() and not args.cpu else "gloo"
        dist.init_process_group(backend)
    try:
        train(args)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    run(parser.parse_args())
