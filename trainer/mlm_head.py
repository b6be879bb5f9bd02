"""Give a bundle what on-device adaptation needs to run masked-LM: the ``mlm/`` folder.

Neither packaged base can fill in masked words as shipped (MiniLM has no MLM head;
SPLADE-tiny's head was repurposed by SPLADE training), so the provider trains a small head
once — dense + GELU + LayerNorm + per-token bias, decoder tied to the word embeddings — on
generic text with the original body and the embeddings frozen, and ships it with both bodies:

  mlm/config.json           the encoder architecture (transformers BertConfig)
  mlm/base_body.safetensors the original pretrained body (no word embeddings: those are the
                            bundle's ``word_embeddings_fp16`` initializer)
  mlm/sparc_body.safetensors the retrieval-trained body (for ``mlm="direct"``)
  mlm/head.safetensors      the head (dense.weight/bias, ln.weight/bias, bias)
  mlm/head.json             how the head was trained and its masked-word accuracy

``engine.model.adapt`` reads these; the comparison of the MLM modes is in docs/adaptation.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engine.model.adapt import MLM_DIR, mask_batch, masked_logits, pack_chunks
from engine.model.bundle import Bundle
from engine.model.bundle_edit import read_embedding_matrix
from trainer.model import load_encoder
from trainer.pools import read_jsonl
from trainer.train import load_model_from_checkpoint


def _body_state(encoder, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """The body's tensors without the word embeddings; fp16 halves a larger base's bundle
    (the adaptation loads them into an fp32 body either way)."""
    return {
        k: v.detach().to(dtype).contiguous()
        for k, v in encoder.state_dict().items()
        if "word_embeddings" not in k
    }


def _initial_head(base: Path, hidden: int, vocab: int) -> dict[str, torch.Tensor]:
    """The base's own MLM head where it has one (a better start than random), else fresh."""
    from safetensors.torch import load_file

    names = {
        "dense.weight": ("cls.predictions.transform.dense.weight",),
        "dense.bias": ("cls.predictions.transform.dense.bias",),
        "ln.weight": (
            "cls.predictions.transform.LayerNorm.weight",
            "cls.predictions.transform.LayerNorm.gamma",
        ),
        "ln.bias": ("cls.predictions.transform.LayerNorm.bias", "cls.predictions.transform.LayerNorm.beta"),
        "bias": ("cls.predictions.bias",),
    }
    state: dict[str, torch.Tensor] = {}
    f = base / "model.safetensors"
    if f.is_file():
        state = load_file(str(f))
    head: dict[str, torch.Tensor] = {}
    for key, options in names.items():
        found = next((state[o] for o in options if o in state), None)
        head[key] = found.float().clone() if found is not None else torch.empty(0)
    if head["dense.weight"].numel() == 0:
        head["dense.weight"] = torch.randn(hidden, hidden) * 0.02
        head["dense.bias"] = torch.zeros(hidden)
        head["ln.weight"] = torch.ones(hidden)
        head["ln.bias"] = torch.zeros(hidden)
    if head["bias"].numel() != vocab:
        head["bias"] = torch.zeros(vocab)
    return head


def masked_accuracy(
    body, head, emb, tokenizer, texts: list[str], n_batches: int = 20, seed: int = 99
) -> dict:
    """Top-1 / top-10 accuracy over the whole vocabulary of predicting masked word pieces."""
    chunks = pack_chunks([e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)], 128)
    ids = np.arange(1000, emb.shape[0])
    hit1 = hit10 = total = 0
    specials = [tokenizer.token_to_id(t) for t in ("[MASK]", "[CLS]", "[SEP]", "[PAD]")]
    with torch.no_grad():
        for b in range(n_batches):
            rng = np.random.default_rng([seed, b])
            pick = rng.choice(len(chunks), size=min(32, len(chunks)), replace=False)
            m = mask_batch([chunks[i] for i in pick], rng, 0.15, *specials, random_ids=ids)
            batch = {k: torch.from_numpy(v) for k, v in m.items() if k != "labels"}
            logits = masked_logits(body, head, emb, batch, torch.arange(emb.shape[0]))
            top = logits.topk(10, dim=-1).indices.numpy()
            labels = m["labels"]
            hit1 += int((top[:, 0] == labels).sum())
            hit10 += int((top == labels[:, None]).any(axis=1).sum())
            total += labels.size
    return {"top1": hit1 / max(total, 1), "top10": hit10 / max(total, 1), "masked": total}


def _train_head(
    body,
    head: dict,
    emb: torch.Tensor,
    tokenizer,
    texts: list[str],
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
) -> list[float]:
    """Adam on the head alone over masked chunks of ``texts``; the loss of every step."""
    chunks = pack_chunks([e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)], 128)
    opt = torch.optim.Adam(head.values(), lr=lr)
    rand_ids = np.arange(1000, emb.shape[0])
    specials = [tokenizer.token_to_id(t) for t in ("[MASK]", "[CLS]", "[SEP]", "[PAD]")]
    losses = []
    for step in range(steps):
        rng = np.random.default_rng([seed, step])
        pick = rng.choice(len(chunks), size=batch_size, replace=False)
        m = mask_batch([chunks[i] for i in pick], rng, 0.15, *specials, random_ids=rand_ids)
        batch = {k: torch.from_numpy(v) for k, v in m.items() if k != "labels"}
        logits = masked_logits(body, head, emb, batch, torch.arange(emb.shape[0]))
        loss = F.cross_entropy(logits, torch.from_numpy(m["labels"]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if step % 100 == 0:
            print(f"head step {step}: loss {np.mean(losses[-100:]):.3f}", flush=True)
    return losses


def _write_mlm_files(out: Path, base_body, sparc_body, head: dict, body_dtype: str) -> None:
    """config.json, the two bodies and the head (the folder's files but head.json)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    base_body.config.to_json_file(str(out / "config.json"))
    dtype = torch.float16 if body_dtype == "fp16" else torch.float32
    save_file(_body_state(base_body, dtype), str(out / "base_body.safetensors"))
    save_file(_body_state(sparc_body, dtype), str(out / "sparc_body.safetensors"))
    save_file({k: v.detach().contiguous() for k, v in head.items()}, str(out / "head.safetensors"))


def build_mlm_folder(
    bundle: Path,
    checkpoint: Path,
    data: Path,
    base: Path | None = None,
    steps: int = 1000,
    batch_size: int = 32,
    lr: float = 1e-3,
    threads: int | None = None,
    seed: int = 13,
    body_dtype: str = "fp32",
) -> dict:
    """Train the head (body and embeddings frozen) and write ``bundle/mlm/``."""
    if threads:
        torch.set_num_threads(threads)
    t0 = time.time()
    model, state = load_model_from_checkpoint(checkpoint, base)
    base = Path(base or state["args"]["base"])
    base_body = load_encoder(base).eval()
    sparc_body = model.encoder.eval()
    bun = Bundle.open(bundle)
    emb = torch.from_numpy(read_embedding_matrix(bun.graph_path, bun.embedding_initializer).astype(np.float32))
    for p in base_body.parameters():
        p.requires_grad_(False)
    tokenizer = bun.tokenizer()
    texts = [r["text"] for r in read_jsonl(data / "sentences.jsonl")]
    held_out, train_texts = texts[:2000], texts[2000:]
    head = {k: torch.nn.Parameter(v) for k, v in _initial_head(base, emb.shape[1], emb.shape[0]).items()}
    before = masked_accuracy(base_body, head, emb, tokenizer, held_out)
    direct_base = masked_accuracy(base_body, None, emb, tokenizer, held_out)
    direct_sparc = masked_accuracy(sparc_body, None, emb, tokenizer, held_out)
    losses = _train_head(base_body, head, emb, tokenizer, train_texts, steps, batch_size, lr, seed)
    after = masked_accuracy(base_body, head, emb, tokenizer, held_out)
    out = bundle / MLM_DIR
    _write_mlm_files(out, base_body, sparc_body, head, body_dtype)
    report = {
        "base": str(base),
        "checkpoint": str(checkpoint),
        "data": str(data),
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "seed": seed,
        "body_dtype": body_dtype,
        "loss_first100": float(np.mean(losses[:100])),
        "loss_last100": float(np.mean(losses[-100:])),
        "masked_accuracy_held_out": {
            "base_head_before": before,
            "head_trained": after,
            "direct_base_body": direct_base,
            "direct_sparc_body": direct_sparc,
        },
        "seconds": round(time.time() - t0, 1),
        "threads": torch.get_num_threads(),
    }
    (out / "head.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bundle", type=Path, required=True, help="bundle folder to add mlm/ to")
    p.add_argument(
        "--checkpoint", type=Path, required=True, help="the training checkpoint the bundle was exported from"
    )
    p.add_argument(
        "--data", type=Path, default=Path("runs/train-data"), help="prepared training data (sentences.jsonl)"
    )
    p.add_argument(
        "--base", type=Path, default=None, help="original base weights (default: the checkpoint's)"
    )
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument(
        "--body-dtype", choices=("fp32", "fp16"), default="fp32", help="storage of the two bodies in mlm/"
    )


def run(args: argparse.Namespace) -> None:
    report = build_mlm_folder(
        args.bundle,
        args.checkpoint,
        args.data,
        args.base,
        args.steps,
        args.batch,
        args.lr,
        args.threads or None,
        body_dtype=args.body_dtype,
    )
    print(json.dumps(report, indent=2))
