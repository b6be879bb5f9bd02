"""Adapt the model to the user's own documents, on the user's CPU (SPARC.md §3).

Masked-LM training of the word-embedding matrix only — every other weight frozen — on the
sentences of the user's index, then the new matrix goes into the bundle's ONNX graph
(:mod:`engine.model.bundle_edit`), where it is both the encoder's input embeddings and every
``e_v`` of the scorer. No question, no GPU, nothing leaves the machine.

How masked positions are predicted (``mlm``), since neither packaged checkpoint can do it
as shipped (docs/adaptation.md has the measured comparison):

* ``head``: the original pretrained body and a small MLM head (dense + GELU + LayerNorm +
  bias, decoder tied to the matrix) that the provider trained once with body and matrix
  frozen (``sparcdesk-train mlm-head``), shipped in the bundle's ``mlm/`` folder;
* ``direct``: the retrieval model's own body, each masked position scored against the
  word embeddings directly (``H_i . e_v``, the scorer's own product);
* ``direct-base``: the original body scored directly (for the comparison).

The softmax runs over the tokens of the user's corpus only (``softmax="corpus"``): with a
tied softmax over the whole vocabulary every row gets a gradient, and 500 Adam steps would
move the embeddings of tokens the user never wrote. Rows outside the corpus stay
bit-identical.

Long runs checkpoint to ``state_dir`` every ``save_every`` steps, stop cleanly when
``should_stop()`` says so, and resume from the last checkpoint with the same arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.common.progress import AdaptProgress, Cancelled
from engine.model.bundle import Bundle
from engine.model.bundle_edit import copy_bundle, read_embedding_matrix, replace_embedding_matrix

MLM_DIR = "mlm"
MODES = ("head", "direct", "direct-base")
#: Measured best (docs/adaptation.md): scoring masked positions with the retrieval body.
DEFAULT_MLM = "direct"
SOFTMAX = ("corpus", "vocab")
BODY_FOR_MODE = {"head": "base_body.safetensors", "direct": "sparc_body.safetensors", "direct-base": "base_body.safetensors"}
MLM_MAX_LENGTH = 128


@dataclass(frozen=True)
class AdaptSettings:
    steps: int = 500
    batch_size: int = 32
    lr: float = 5e-5
    mask_prob: float = 0.15
    mlm: str = DEFAULT_MLM
    softmax: str = "corpus"
    vocab_expansion: bool = False
    max_length: int = MLM_MAX_LENGTH
    seed: int = 13

    def __post_init__(self) -> None:
        if self.mlm not in MODES:
            raise ValueError(f"mlm must be one of {MODES}, not {self.mlm!r}")
        if self.softmax not in SOFTMAX:
            raise ValueError(f"softmax must be one of {SOFTMAX}, not {self.softmax!r}")


# --------------------------------------------------------------------------- corpus


def pack_chunks(token_lists: Sequence[Sequence[int]], max_length: int) -> list[list[int]]:
    """Consecutive sentences' word pieces packed into chunks of at most ``max_length - 2``
    (room for [CLS] and [SEP]): a step sees whole stretches of text, as in pretraining,
    instead of one short sentence padded to the batch's width."""
    room = max_length - 2
    chunks: list[list[int]] = []
    cur: list[int] = []
    for ids in token_lists:
        ids = list(ids)[:room]
        if not ids:
            continue
        if cur and len(cur) + len(ids) > room:
            chunks.append(cur)
            cur = []
        cur = cur + ids
    if cur:
        chunks.append(cur)
    return chunks


def mask_batch(
    chunks: Sequence[Sequence[int]],
    rng: np.random.Generator,
    mask_prob: float,
    mask_id: int,
    cls_id: int,
    sep_id: int,
    pad_id: int,
    random_ids: np.ndarray,
) -> dict[str, np.ndarray]:
    """BERT masking (of the chosen 15%: 80% [MASK], 10% a random corpus token, 10% kept).
    Returns padded inputs and the (row, position, label) of each prediction."""
    width = 2 + max(len(c) for c in chunks)
    n = len(chunks)
    input_ids = np.full((n, width), pad_id, dtype=np.int64)
    attention = np.zeros((n, width), dtype=np.int64)
    rows, cols, labels = [], [], []
    for i, c in enumerate(chunks):
        ids = np.asarray(c, dtype=np.int64)
        chosen = np.flatnonzero(rng.random(len(ids)) < mask_prob)
        if chosen.size == 0:
            chosen = np.asarray([rng.integers(len(ids))])
        labels.append(ids[chosen].copy())
        roll = rng.random(chosen.size)
        corrupted = ids.copy()
        corrupted[chosen[roll < 0.8]] = mask_id
        swap = chosen[(roll >= 0.8) & (roll < 0.9)]
        corrupted[swap] = rng.choice(random_ids, size=swap.size)
        input_ids[i, 0] = cls_id
        input_ids[i, 1 : 1 + len(ids)] = corrupted
        input_ids[i, 1 + len(ids)] = sep_id
        attention[i, : 2 + len(ids)] = 1
        rows.append(np.full(chosen.size, i))
        cols.append(chosen + 1)
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "rows": np.concatenate(rows),
        "cols": np.concatenate(cols),
        "labels": np.concatenate(labels),
    }


# --------------------------------------------------------------------------- model


def _load_mlm(bundle_dir: Path, mode: str) -> tuple[Any, Any]:
    """The frozen body (:class:`engine.model.bert.BertBody`, transformers' BertModel in plain
    torch) and, for ``head``, the head's tensors."""
    from safetensors.torch import load_file

    from engine.model.bert import BertBody, BertSettings

    mlm = Path(bundle_dir) / MLM_DIR
    if not (mlm / "config.json").is_file():
        raise FileNotFoundError(
            f"{bundle_dir}: the bundle has no {MLM_DIR}/ folder, so it cannot be adapted "
            "(export it with `sparcdesk-train mlm-head`)"
        )
    body = BertBody(BertSettings.from_json_file(mlm / "config.json"))
    state = load_file(str(mlm / BODY_FOR_MODE[mode]))
    missing, unexpected = body.load_state_dict(state, strict=False)
    if unexpected or any("word_embeddings" not in m for m in missing):
        raise ValueError(f"{mlm / BODY_FOR_MODE[mode]}: weights do not fit the body ({missing[:3]}, {unexpected[:3]})")
    body.eval()
    for p in body.parameters():
        p.requires_grad_(False)
    head = None
    if mode == "head":
        head = {k: v.float() for k, v in load_file(str(mlm / "head.safetensors")).items()}
    return body, head


def masked_logits(
    body: Any, head: dict[str, Any] | None, emb: Any, batch: dict[str, Any], candidates: Any
) -> Any:
    """Scores of the masked positions against the candidate rows: [n_masked, n_candidates]."""
    import torch
    import torch.nn.functional as F

    inputs = F.embedding(batch["input_ids"], emb)
    states = body(
        inputs_embeds=inputs,
        attention_mask=batch["attention_mask"],
        token_type_ids=torch.zeros_like(batch["input_ids"]),
    ).last_hidden_state
    h = states[batch["rows"], batch["cols"]]
    rows = emb[candidates]
    if head is None:
        return h @ rows.t()
    h = F.linear(h, head["dense.weight"], head["dense.bias"])
    h = F.layer_norm(F.gelu(h), (h.shape[-1],), head["ln.weight"], head["ln.bias"], eps=1e-12)
    return h @ rows.t() + head["bias"][candidates]


# --------------------------------------------------------------------------- training


def _fingerprint(bundle_dir: Path, settings: AdaptSettings, corpus: Sequence[str], extra: str) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(json.dumps(asdict(settings), sort_keys=True).encode())
    h.update(json.dumps(dict(Bundle.open(bundle_dir).config), sort_keys=True).encode())
    h.update(str(len(corpus)).encode())
    for s in corpus[:: max(1, len(corpus) // 200)]:
        h.update(s.encode("utf-8", "replace"))
    h.update(extra.encode())
    return h.hexdigest()


class EmbeddingAdam:
    """Adam (Kingma & Ba; ``torch.optim.Adam``'s arithmetic, betas 0.9/0.999, eps 1e-8, no
    weight decay) for the one tensor adaptation trains. ``torch.optim`` imports
    ``torch._dynamo`` when an optimizer is made and steps through it: ~2 s of CPU on every
    adaptation's start for a tensor update of three lines (the app compiles nothing). Its
    state dict has ``torch.optim.Adam``'s layout, so a state saved by either resumes in the other."""

    def __init__(
        self, param: Any, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        import torch

        self.param, self.lr, self.betas, self.eps = param, lr, betas, eps
        self.step_count = 0
        self.exp_avg = torch.zeros_like(param, memory_format=torch.preserve_format)
        self.exp_avg_sq = torch.zeros_like(param, memory_format=torch.preserve_format)

    def zero_grad(self) -> None:
        self.param.grad = None

    def step(self) -> None:
        import torch

        grad = self.param.grad
        if grad is None:
            return
        b1, b2 = self.betas
        self.step_count += 1
        with torch.no_grad():
            self.exp_avg.lerp_(grad, 1 - b1)
            self.exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            bias1 = 1 - b1**self.step_count
            bias2_sqrt = (1 - b2**self.step_count) ** 0.5
            denom = (self.exp_avg_sq.sqrt() / bias2_sqrt).add_(self.eps)
            self.param.addcdiv_(self.exp_avg, denom, value=-self.lr / bias1)

    def state_dict(self) -> dict[str, Any]:
        import torch

        state = {
            "step": torch.tensor(float(self.step_count)),
            "exp_avg": self.exp_avg,
            "exp_avg_sq": self.exp_avg_sq,
        }
        group = {
            "lr": self.lr,
            "betas": self.betas,
            "eps": self.eps,
            "weight_decay": 0,
            "amsgrad": False,
            "params": [0],
        }
        return {"state": {0: state} if self.step_count else {}, "param_groups": [group]}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        state = saved.get("state", {}).get(0)
        if not state:
            return
        self.step_count = int(float(state["step"]))
        self.exp_avg = state["exp_avg"].to(self.param.dtype).clone()
        self.exp_avg_sq = state["exp_avg_sq"].to(self.param.dtype).clone()


def _vocabulary(tokenizer: Any, chunks: list, vocab_size: int, settings: AdaptSettings) -> tuple[np.ndarray, Any, np.ndarray]:
    """The corpus's token ids (specials out), the ids the softmax ranges over (the corpus's
    or the whole vocabulary's, ``settings.softmax``) and each id's label index."""
    import torch

    special = {tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")}
    seen = np.unique(np.concatenate([np.asarray(c) for c in chunks]))
    corpus_ids = np.asarray([t for t in seen.tolist() if t not in special], dtype=np.int64)
    if settings.softmax == "corpus":
        label_map = np.full(vocab_size, -100, dtype=np.int64)
        label_map[corpus_ids] = np.arange(corpus_ids.size)
        return corpus_ids, torch.from_numpy(corpus_ids), label_map
    return corpus_ids, torch.arange(vocab_size), np.arange(vocab_size, dtype=np.int64)


class _Checkpoint:
    """The training state in ``HOME/.../adapt-state.pt``: loaded when its fingerprint (the
    corpus and settings) matches, written atomically (a step, a pause, a cancel)."""

    def __init__(self, path: Path | None, fingerprint: str, emb: Any, opt: Any, losses: list[float]) -> None:
        self.path, self.fingerprint, self.emb, self.opt, self.losses = path, fingerprint, emb, opt, losses

    def load(self) -> int:
        """The step to resume from (0 without a matching checkpoint)."""
        import torch

        if self.path is None or not self.path.is_file():
            return 0
        saved = torch.load(self.path, map_location="cpu", weights_only=False)
        if saved.get("fingerprint") != self.fingerprint:
            return 0
        with torch.no_grad():
            self.emb.copy_(saved["emb"])
        self.opt.load_state_dict(saved["opt"])
        self.losses[:] = list(saved["losses"])
        return int(saved["step"])

    def save(self, step: int) -> None:
        import torch

        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        state = {"fingerprint": self.fingerprint, "emb": self.emb.detach(), "opt": self.opt.state_dict()}
        torch.save({**state, "step": step, "losses": self.losses}, tmp)
        os.replace(tmp, self.path)


def _wait_or_stop(
    step: int,
    steps: int,
    save: Callable[[int], None],
    paused: Callable[[], bool] | None,
    should_stop: Callable[[], bool] | None,
) -> None:
    """Between steps: wait while ``paused()`` (checkpointed first: a long pause must not hold
    the only copy of the work); on ``should_stop()`` checkpoint and raise ``Cancelled``."""
    stopping = should_stop if should_stop is not None else (lambda: False)
    if paused is not None and paused() and not stopping():
        save(step)
        while paused() and not stopping():
            time.sleep(0.05)
    if stopping():
        save(step)
        raise Cancelled(f"adaptation stopped at step {step} of {steps}; it resumes from there")


def train_embeddings(
    bundle_dir: Path,
    tokenizer: Any,
    sentences: Sequence[str],
    matrix: np.ndarray,
    settings: AdaptSettings,
    head_bias: np.ndarray | None = None,
    threads: int | None = None,
    progress: Callable[[AdaptProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    state_dir: Path | None = None,
    save_every: int = 50,
    fingerprint: str = "",
    paused: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """MLM on ``sentences`` updating only ``matrix`` (fp32 [V, d]); returns it and a log.
    While ``paused()`` is true it waits between steps (checkpointed first), as indexing does."""
    import torch
    import torch.nn.functional as F

    if threads:
        torch.set_num_threads(threads)
    t0 = time.monotonic()
    body, head = _load_mlm(bundle_dir, settings.mlm)
    if head is not None and head_bias is not None:
        head["bias"] = torch.from_numpy(head_bias.astype(np.float32))
    token_lists = [e.ids for e in tokenizer.encode_batch(list(sentences), add_special_tokens=False)]
    chunks = pack_chunks(token_lists, settings.max_length)
    if not chunks:
        raise ValueError("no text to adapt on: the index holds no sentences")
    corpus_ids, candidates, label_map = _vocabulary(tokenizer, chunks, matrix.shape[0], settings)
    emb = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(matrix, dtype=np.float32)))
    opt = EmbeddingAdam(emb, lr=settings.lr)
    losses: list[float] = []
    checkpoint = _Checkpoint(Path(state_dir) / "adapt-state.pt" if state_dir else None, fingerprint, emb, opt, losses)
    start = checkpoint.load()
    save = checkpoint.save
    mask_id = tokenizer.token_to_id("[MASK]")
    cls_id = tokenizer.token_to_id("[CLS]")
    sep_id = tokenizer.token_to_id("[SEP]")
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    t_train = time.monotonic()
    for step in range(start, settings.steps):
        _wait_or_stop(step, settings.steps, save, paused, should_stop)
        rng = np.random.default_rng([settings.seed, step])
        pick = rng.choice(len(chunks), size=min(settings.batch_size, len(chunks)), replace=False)
        b = mask_batch([chunks[i] for i in pick], rng, settings.mask_prob, mask_id, cls_id, sep_id, pad_id, corpus_ids)
        batch = {k: torch.from_numpy(v) for k, v in b.items() if k != "labels"}
        labels = torch.from_numpy(label_map[b["labels"]])
        logits = masked_logits(body, head, emb, batch, candidates)
        loss = F.cross_entropy(logits, labels, ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(float(loss.detach()), 4))
        done = step + 1
        if progress is not None:
            per_step = (time.monotonic() - t_train) / max(done - start, 1)
            progress(
                AdaptProgress("training", done, settings.steps, losses[-1], time.monotonic() - t0, per_step * (settings.steps - done))
            )
        if done % save_every == 0 and done < settings.steps:
            save(done)
    log = {
        "chunks": len(chunks),
        "corpus_tokens": int(corpus_ids.size),
        "loss_first": float(np.mean(losses[:20])) if losses else None,
        "loss_last": float(np.mean(losses[-20:])) if losses else None,
        "train_seconds": round(time.monotonic() - t0, 1),
        "resumed_from_step": start,
    }
    return emb.detach().numpy(), log


def _expanded(
    bundle_dir: Path, tokenizer_json: str, matrix: np.ndarray, sentences: Sequence[str], mlm: str
) -> tuple[str, np.ndarray, np.ndarray | None, dict[str, Any]]:
    """Vocabulary expansion (CAI): the tokenizer with the corpus's frequent words added, the
    matrix with a row per new word (the mean of its pieces' rows), the MLM head's bias grown
    the same way (``mlm == "head"``), and what was added."""
    from engine.model.vocab import expand_vocabulary

    exp = expand_vocabulary(tokenizer_json, sentences)
    head_bias = None
    if exp.pieces:
        new_rows = np.stack([matrix[p].mean(axis=0) for p in exp.pieces])
        matrix = np.concatenate([matrix, new_rows])
        if mlm == "head":
            from safetensors.numpy import load_file

            bias = load_file(str(bundle_dir / MLM_DIR / "head.safetensors"))["bias"].astype(np.float32)
            head_bias = np.concatenate([bias, np.asarray([bias[p].mean() for p in exp.pieces], np.float32)])
    expansion = {"added": len(exp.tokens), "rounds": exp.rounds, "seconds": exp.seconds, "examples": exp.tokens[:20]}
    return exp.tokenizer_json, matrix, head_bias, expansion


def _write_config(
    out_dir: Path, bundle: Bundle, bundle_dir: Path, cfg: dict[str, Any], vocab_size: int, adaptation: dict[str, Any]
) -> None:
    """The adapted bundle's config.json (written last, atomically: a bundle is complete once
    it has one): its name, vocabulary size, where it came from and how it was adapted."""
    new_cfg = {
        **cfg,
        "name": f"{bundle.name}+adapted",
        "vocab_size": vocab_size,
        "adapted_from": {"name": cfg.get("name"), "version": cfg.get("version"), "path": str(bundle_dir)},
        "adaptation": adaptation,
    }
    tmp = out_dir / "config.json.tmp"
    tmp.write_text(json.dumps(new_cfg, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / "config.json")


def adapt_bundle(
    bundle_dir: Path,
    sentences: Sequence[str],
    out_dir: Path,
    *,
    steps: int = 500,
    batch_size: int = 32,
    lr: float = 5e-5,
    mask_prob: float = 0.15,
    mlm: str = DEFAULT_MLM,
    softmax: str = "corpus",
    vocab_expansion: bool = False,
    seed: int = 13,
    threads: int | None = None,
    progress: Callable[[AdaptProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    state_dir: Path | None = None,
    paused: Callable[[], bool] | None = None,
) -> Path:
    """Write to ``out_dir`` a complete bundle whose embedding matrix was adapted to
    ``sentences`` (the user's corpus, in document order). Returns ``out_dir``. While
    ``paused()`` says so, training waits between steps (``should_stop`` still ends it)."""
    from engine.model.features import load_tokenizer

    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    settings = AdaptSettings(steps, batch_size, lr, mask_prob, mlm, softmax, vocab_expansion, MLM_MAX_LENGTH, seed)
    bundle = Bundle.open(bundle_dir)
    cfg = dict(bundle.config)
    init_name = bundle.embedding_initializer
    graphs = bundle.graph_files
    t0 = time.monotonic()
    matrix16 = read_embedding_matrix(bundle_dir / graphs[0], init_name)
    matrix = matrix16.astype(np.float32)
    tokenizer_json = bundle.tokenizer_path.read_text(encoding="utf-8")
    if vocab_expansion and progress is not None:
        progress(AdaptProgress("vocabulary", 0, steps, None, 0.0, None))
    tokenizer_json, matrix, head_bias, expansion = (
        _expanded(bundle_dir, tokenizer_json, matrix, sentences, mlm) if vocab_expansion else (tokenizer_json, matrix, None, None)
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    tok_file = out_dir / "tokenizer.json"
    tok_file.write_text(tokenizer_json, encoding="utf-8")
    tokenizer = load_tokenizer(str(tok_file))
    fingerprint = _fingerprint(bundle_dir, settings, sentences, str(matrix.shape))
    new, log = train_embeddings(
        bundle_dir,
        tokenizer,
        sentences,
        matrix,
        settings,
        head_bias=head_bias,
        threads=threads,
        progress=progress,
        should_stop=should_stop,
        paused=paused,
        state_dir=state_dir,
        fingerprint=fingerprint,
    )
    if progress is not None:
        progress(AdaptProgress("writing", steps, steps, None, time.monotonic() - t0, None))
    copy_bundle(bundle_dir, out_dir, skip=("tokenizer.json", "config.json", "README.md", *graphs))
    for name in graphs:
        replace_embedding_matrix(bundle_dir / name, out_dir / name, new.astype(np.float16), init_name)
    changed = int(np.count_nonzero(np.any(new[: matrix16.shape[0]] != matrix16.astype(np.float32), axis=1)))
    adaptation = {
        **asdict(settings),
        "sentences": len(sentences),
        "rows_changed": changed,
        "vocabulary_expansion": expansion,
        "seconds": round(time.monotonic() - t0, 1),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **log,
    }
    _write_config(out_dir, bundle, bundle_dir, cfg, int(new.shape[0]), adaptation)
    if state_dir is not None:
        (Path(state_dir) / "adapt-state.pt").unlink(missing_ok=True)
    if progress is not None:
        progress(AdaptProgress("done", steps, steps, None, time.monotonic() - t0, 0.0))
    return out_dir
