"""Trainer: a tiny real training run lowers the loss, export agrees with torch, two processes work."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_base

from trainer.data import split_corpus

REPO = Path(__file__).resolve().parents[1]


def test_examples_have_answer_sentence_and_clean_negatives(squad_articles, squad_handful):
    """The positive holds the answer's start; both negatives are clean (without the answer
    string); the first comes from the positive's own passage whenever one of its sentences
    is clean, else both come from BM25's pool."""
    _folder, sentences, examples = squad_handful
    _sentences, paragraphs = split_corpus(squad_articles)
    qas = {qa["id"]: (qa["answers"][0], spans) for _pid, para, spans in paragraphs for qa in para["qas"]}
    assert len(examples) > 20
    from_own_passage = 0
    for e in examples:
        answer, spans = qas[e.qid]
        text = answer["text"].lower()
        own = [sid for _s, _e, sid in spans]
        assert e.pos in own
        start, end = next((s, t) for s, t, sid in spans if sid == e.pos)
        assert start <= answer["answer_start"] < end or answer["answer_start"] < start  # or the next one
        assert len(e.negs) == 2 and e.pos not in e.negs
        assert all(text not in sentences[n].text.lower() for n in e.negs), (e.qid, text)
        clean_own = [sid for sid in own if sid != e.pos and text not in sentences[sid].text.lower()]
        if clean_own:
            assert e.negs[0] in clean_own, e.qid
            from_own_passage += 1
        else:
            assert e.negs[0] not in own, e.qid
    assert from_own_passage > len(examples) // 2  # the rule above is exercised, not vacuous


def test_training_lowers_loss_on_real_questions(squad_handful):
    import torch

    from trainer.model import SparcModel, load_encoder
    from trainer.train import Batcher, in_batch_loss, make_optimizer, query_matrix

    _folder, sentences, examples = squad_handful
    torch.manual_seed(0)
    base = tiny_base()
    model = SparcModel(load_encoder(base))
    batcher = Batcher(str(base / "tokenizer.json"), sentences, max_length=96)
    batch, bags = batcher.encode(examples[:8])
    vocab = sorted({v for bag in bags for v in bag})
    q = query_matrix(bags, vocab)
    vocab_t = torch.tensor(vocab)

    def loss() -> torch.Tensor:
        return in_batch_loss(q, model.token_scores(batch, vocab_t), 0)

    model.eval()
    with torch.no_grad():
        before = float(loss())
    emb_before = model.word_embeddings.weight.detach().clone()
    opt = make_optimizer(model, lr=3e-4, w_lr=1e-2)
    model.train()
    for _ in range(12):
        opt.zero_grad()
        loss().backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = float(loss())
    assert after < before * 0.8, (before, after)
    assert torch.equal(model.word_embeddings.weight, emb_before), "word embeddings must stay frozen"
    assert float(model.w) != 0.0, "the scale w must learn"


def test_export_agrees_with_torch(tmp_path, squad_handful):
    from trainer.export import check_agreement, export_bundle
    from trainer.model import SparcModel, load_encoder

    _folder, sentences, _examples = squad_handful
    base = tiny_base()
    bundle = tmp_path / "bundle"
    cfg = export_bundle(None, bundle, base=base, top_k=500, keep_fp32=True)
    assert cfg["top_k"] == 500 and (bundle / "model.onnx").is_file()
    model = SparcModel(load_encoder(base))
    texts = [s.text for s in sentences[:24]]
    contexts = [
        " ".join(t for j, t in enumerate(texts) if j != i and abs(j - i) <= 2) for i in range(len(texts))
    ]
    fp32 = check_agreement(model, bundle, "model.fp32.onnx", texts, contexts)
    assert fp32["top100_overlap_mean"] > 0.97
    assert fp32["max_weight_abs_err_top1"] < 1e-2
    int8 = check_agreement(model, bundle, "model.onnx", texts, contexts)
    assert int8["top100_overlap_mean"] > 0.6
    # the embedding matrix is stored once, in fp16, under the name adaptation will replace
    import onnx

    names = [i.name for i in onnx.load(str(bundle / "model.onnx")).graph.initializer]
    assert names.count(cfg["embedding_initializer"]) == 1
    assert not any(
        np.prod(i.dims) == cfg["vocab_size"] * cfg["hidden_size"] and i.name != cfg["embedding_initializer"]
        for i in onnx.load(str(bundle / "model.onnx")).graph.initializer
    )
    # int8 (optimum's ORTQuantizer) takes the weight MatMuls only, as ONNX Runtime's
    # quantize_dynamic did: the attention's activation products and the projection stay float
    from trainer.export import projection_nodes, weight_matmuls

    fp32_graph = bundle / "model.fp32.onnx"
    taken = set(weight_matmuls(fp32_graph)) - set(projection_nodes(fp32_graph))
    int8_ops = {n.name: n.op_type for n in onnx.load(str(bundle / "model.onnx")).graph.node}
    fp32_matmuls = [n.name for n in onnx.load(str(fp32_graph)).graph.node if n.op_type == "MatMul"]
    assert taken and not taken & set(int8_ops)
    assert all(int8_ops.get(name) == "MatMul" for name in fp32_matmuls if name not in taken)


def test_training_in_two_cpu_processes(two_process_grads):
    """``trainer.train.run`` in two gloo processes started by torch's elastic launcher, what
    ``torchrun`` runs (conftest ``two_process_grads``, the launch the gradient-cache tests
    share): three logged steps with finite losses and the checkpoint."""
    out = two_process_grads.run
    log = [json.loads(line) for line in (out / "train-log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3]
    assert all(np.isfinite(r["loss"]) for r in log)
    # an epoch is the examples over the global batch: 2 processes x --batch 4
    examples = len((two_process_grads.data / "examples.jsonl").read_text().splitlines())
    assert log[0]["epoch"] == round(1 / (examples // (2 * 4)), 4)
    assert (out / "step-3.pt").is_file()


def test_pooling_all_marks_every_word_piece_of_sentence_and_context():
    from engine.model.features import build_features, load_tokenizer

    tok = load_tokenizer(str(tiny_base() / "tokenizer.json"))
    sentences = ["The treaty was signed in 1648.", "Peace followed."]
    contexts = ["It ended the Thirty Years' War.", ""]
    own = build_features(tok, sentences, contexts, 64, "sentence")
    every = build_features(tok, sentences, contexts, 64, "all")
    n_sent = [len(tok.encode(s, add_special_tokens=False).ids) for s in sentences]
    n_ctx = [len(tok.encode(c, add_special_tokens=False).ids) for c in contexts]
    assert own["sentence_mask"].shape[1] == 1 + max(n_sent)
    assert own["sentence_mask"].sum(1).tolist() == n_sent
    assert every["sentence_mask"].shape == every["input_ids"].shape
    assert every["sentence_mask"].sum(1).tolist() == [s + c for s, c in zip(n_sent, n_ctx, strict=True)]
    specials = {tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), tok.token_to_id("[PAD]")}
    masked = every["input_ids"][every["sentence_mask"] == 1]
    assert not specials & set(masked.tolist())
    with pytest.raises(ValueError, match="unknown pooling"):
        build_features(tok, sentences, contexts, 64, "passage")


def test_all_positions_pooling_trains_exports_and_encodes(tmp_path, squad_handful):
    """A run trained with --pooling all records it; the bundle pools the same way as torch, and
    its weights read back into a fresh model (``--init-bundle``)."""

    import torch

    from engine.model.encoder import SparseEncoder
    from trainer.cli import main as train_main
    from trainer.export import check_agreement, export_bundle

    folder, sentences, _examples = squad_handful
    out = tmp_path / "run"
    train_main(
        ["train", "--base", str(tiny_base()), "--data", str(folder), "--out", str(out), "--batch", "4",
         "--steps", "2", "--max-length", "64", "--cpu", "--no-bf16", "--threads", "1",
         "--save-every", "2", "--warmup", "1", "--pooling", "all"]
    )  # fmt: skip
    bundle = tmp_path / "bundle"
    cfg = export_bundle(out / "step-2.pt", bundle, top_k=300, max_length=64, keep_fp32=True, answer_match=0.2)
    assert cfg["pooling"] == "all"
    assert SparseEncoder(bundle).config.pooling == "all"
    assert SparseEncoder(bundle).config.answer_match == 0.2  # the bundle's own no-answer threshold
    with pytest.raises(SystemExit):  # refused before anything is written
        train_main(["export", "--checkpoint", str(out / "step-2.pt"), "--out", str(tmp_path / "no"),
                    "--answer-match", "1.5"])  # fmt: skip
    assert not (tmp_path / "no").exists()
    from trainer.train import load_model_from_checkpoint

    model, _state = load_model_from_checkpoint(out / "step-2.pt", None)
    # the bundle reads back into a fresh model (--init-bundle): every trained parameter
    from trainer.model import SparcModel, load_bundle_weights, load_encoder

    again = SparcModel(load_encoder(tiny_base()))
    names = load_bundle_weights(again, bundle)
    trained = dict(model.named_parameters())
    assert len(names) > 30
    for name, p in again.named_parameters():
        assert torch.allclose(p, trained[name], atol=1e-6), name
    texts = [s.text for s in sentences[:12]]
    contexts = [" ".join(texts[max(0, i - 2) : i] + texts[i + 1 : i + 3]) for i in range(len(texts))]
    agree = check_agreement(model, bundle, "model.fp32.onnx", texts, contexts)
    assert agree["top100_overlap_mean"] > 0.97
    assert agree["max_weight_abs_err_top1"] < 1e-2
    # same input, a superset of positions: every token's pooled score can only grow
    from engine.model.features import build_features

    tok = SparseEncoder(bundle).tokenizer
    vocab = cfg["vocab_size"]

    def full(pooling: str) -> torch.Tensor:
        feats = build_features(tok, texts, contexts, 64, pooling)
        with torch.no_grad():
            ids, w = model.sparse_topk({k: torch.from_numpy(v) for k, v in feats.items()}, k=vocab)
        return torch.zeros_like(w).scatter(1, ids, w)

    own, every = full("sentence"), full("all")
    assert bool((every >= own - 1e-5).all()) and bool((every > own + 1e-3).any())


@pytest.mark.parametrize("mode", ["sentence", "distill"])
def test_gradient_cache_two_processes_match_one(two_process_grads, mode):
    """Two gloo processes (gradient cache, dropout on) give the gradients of one process that
    computes the same loss with full autograd, each process's share of the batch under the same
    dropout randomness (the RNG state that process starts the step with). The FLOPS penalty is on;
    ``distill`` adds the KL term against teacher logits over every process's candidates.
    Fails when the cache's second pass draws new dropout masks (GradCache's RandContext)."""
    import torch

    from trainer.train import in_batch_loss, query_matrix
    sys.path.insert(0, str(REPO / "tests"))
    import gradcache_worker as worker

    from trainer.train import flops_penalty, full_vectors

    folder = two_process_grads.data
    base, world, batch, lam = tiny_base(), worker.WORLD, worker.BATCH, worker.LAMBDA
    got = two_process_grads.grads[mode]
    teacher = worker.teacher_logits(batch, world) if mode == "distill" else None
    weight = worker.DISTILL_WEIGHT if mode == "distill" else 0.0

    torch.set_num_threads(1)
    model, parts, vocab = worker.setup(base, folder, batch, 0, world)
    assert model.training and model.encoder.config.hidden_dropout_prob > 0
    vocab_t = torch.tensor(vocab)
    pooled, penalties = [], []
    for feats, _bags in parts:
        torch.manual_seed(worker.SEED)
        states = model.sentence_states(**feats)
        emb = model.word_embeddings.weight[vocab_t]
        pooled.append(model.pooled_logits(states, feats["sentence_mask"], emb))
        penalties.append(flops_penalty(full_vectors(model, states, feats["sentence_mask"])))
    scores = model.activate(torch.cat(pooled))
    losses = [
        in_batch_loss(
            query_matrix(bags, vocab),
            scores,
            3 * batch * r,
            None if teacher is None else teacher[batch * r : batch * (r + 1)],
            weight,
        )
        for r, (_f, bags) in enumerate(parts)
    ]
    loss = torch.stack(losses).mean()
    (loss + lam * torch.stack(penalties).mean()).backward()
    worker.assert_same_grads(got, worker.grads(model))


def test_flops_penalty_lowers_nonzeros_on_a_tiny_real_run(tmp_path, squad_handful):
    """Same data, seed and schedule; only --flops-weight differs: the penalised run's sentences
    keep fewer non-zero tokens (full vocabulary), and the log records the penalty."""

    import torch

    from trainer.cli import main as train_main
    from trainer.train import Batcher, load_model_from_checkpoint

    folder, sentences, _examples = squad_handful
    base = tiny_base()

    def train(weight: float) -> tuple[float, list[dict]]:
        out = tmp_path / f"run-{weight}"
        train_main(
            ["train", "--base", str(base), "--data", str(folder), "--out", str(out), "--batch", "4",
             "--steps", "4", "--max-length", "48", "--cpu", "--no-bf16", "--threads", "1",
             "--save-every", "4", "--warmup", "1", "--lr", "1e-3", "--log-every", "1", "--pooling", "all",
             "--flops-weight", str(weight), "--flops-warmup", "2", "--flops-threshold", "10"]
        )  # fmt: skip
        model, _state = load_model_from_checkpoint(out / "step-4.pt", base)
        batcher = Batcher(str(base / "tokenizer.json"), sentences, 48, "all")
        from engine.model.features import build_features

        texts = [s.text for s in sentences[:16]]
        feats = build_features(batcher.tokenizer, texts, [batcher.context(i) for i in range(16)], 48, "all")
        with torch.no_grad():
            _ids, w = model.eval().sparse_topk({k: torch.from_numpy(v) for k, v in feats.items()}, k=30522)
        log = [json.loads(line) for line in (out / "train-log.jsonl").read_text().splitlines()]
        return float(np.median((w > 0).sum(-1).numpy())), log

    nnz_off, log_off = train(0.0)
    nnz_on, log_on = train(1.0)
    print("median non-zeros, flops weight 0 vs 1:", nnz_off, nnz_on)
    assert nnz_on < 0.8 * nnz_off, (nnz_on, nnz_off)
    assert all("flops" in r and "nnz_docs_median" in r for r in log_on)
    assert log_on[-1]["flops_lambda"] == 1.0 and log_on[0]["flops_lambda"] == 0.25
    assert "flops" in log_off[0] and log_off[0]["flops_lambda"] == 0.0


def test_distillation_pulls_the_student_toward_the_ensemble_teacher(tmp_path, squad_handful):
    """`sparcdesk-train teacher` over real SQuAD data (dense MiniLM + the shipped SPARC bundle)
    ranks most positives first among a step's candidates; a run with --distill ends closer to
    the teacher's distribution over its training questions than the same run without it (same
    16 questions, seed and schedule)."""

    import torch
    import torch.nn.functional as F

    from trainer.cli import main as train_main
    from trainer.teacher import Teacher, build
    from trainer.train import Batcher, load_model_from_checkpoint, query_matrix

    folder, sentences, examples = squad_handful
    base = tiny_base()
    teacher_dir = build(folder, tmp_path / "teacher", REPO / "assets" / "sparc-tiny", threads=1, batch=32)
    teacher = Teacher(teacher_dir, len(examples), len(sentences))
    # one IDF per vocabulary id, usable as --question-weights even for ids no sentence has
    assert np.load(teacher_dir / "sparc-idf.npy").shape == (30522,)
    batcher = Batcher(str(base / "tokenizer.json"), sentences, 48, "all")
    chunk = examples[:16]
    _batch, bags = batcher.encode(chunk)
    logits = teacher.logits(list(range(16)), Batcher.candidates(chunk), bags)
    assert logits.shape == (16, 48)
    first = (logits.argmax(axis=1) == np.arange(16)).mean()
    assert first >= 0.6, first  # the positive of question i is candidate i

    def kl_to_teacher(distill_weight: float) -> float:
        out = tmp_path / f"run-{distill_weight}"
        train_main(
            ["train", "--base", str(base), "--data", str(folder), "--out", str(out), "--batch", "8",
             "--steps", "8", "--limit", "16", "--max-length", "48", "--cpu", "--no-bf16",
             "--threads", "1", "--save-every", "8", "--warmup", "1", "--lr", "1e-3", "--pooling", "all",
             "--distill", str(teacher_dir), "--distill-weight", str(distill_weight)]
        )  # fmt: skip
        model, _state = load_model_from_checkpoint(out / "step-8.pt", base)
        batch, bags = batcher.encode(chunk)
        vocab = sorted({v for bag in bags for v in bag})
        with torch.no_grad():
            student = query_matrix(bags, vocab) @ model.eval().token_scores(batch, torch.tensor(vocab)).t()
            return float(
                F.kl_div(
                    F.log_softmax(student, 1),
                    F.log_softmax(torch.from_numpy(logits), 1),
                    log_target=True,
                    reduction="batchmean",
                )
            )

    plain, distilled = kl_to_teacher(0.0), kl_to_teacher(5.0)
    print("KL(teacher || student) after 8 steps, distill weight 0 vs 5:", plain, distilled)
    assert distilled < 0.8 * plain, (plain, distilled)


def test_question_weights_weigh_each_question_id(tmp_path, squad_handful):
    """--question-weights: each id of a real question's bag weighs its table entry in the
    training scores (the app's IDF option scores questions so); a table of the wrong size is
    refused naming the file."""

    import torch

    from trainer.cli import main as train_main
    from trainer.train import Batcher, query_matrix

    folder, sentences, examples = squad_handful
    base = tiny_base()
    batcher = Batcher(str(base / "tokenizer.json"), sentences, 48, "all")
    _batch, bags = batcher.encode(examples[:6])
    vocab = sorted({v for bag in bags for v in bag})
    weights = np.random.default_rng(0).uniform(0.5, 3.0, 30522).astype(np.float32)
    plain, weighted = query_matrix(bags, vocab), query_matrix(bags, vocab, weights)
    assert torch.allclose(weighted, plain * torch.from_numpy(weights[vocab]))
    assert int((plain > 0).sum()) == sum(len(set(b)) for b in bags)

    bad = tmp_path / "short.npy"
    np.save(bad, weights[:100])
    with pytest.raises(SystemExit, match="short.npy"):
        train_main(
            ["train", "--base", str(base), "--data", str(folder), "--out", str(tmp_path / "run"), "--batch", "4",
             "--steps", "1", "--max-length", "48", "--cpu", "--no-bf16", "--threads", "1",
             "--question-weights", str(bad)]
        )  # fmt: skip


def test_gpu_script_runs_three_steps_on_the_cpu(tmp_path, squad_handful):
    """scripts/gpu-train.sh, the job prepared for a lent accelerator, on the CPU: the probe,
    the plan sized from it, three steps with their checkpoint and log in OUT."""
    import subprocess

    folder, _sentences, _examples = squad_handful
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PROBE": "1",
        "STEPS": "3",
        "DATA": str(folder),
        "BASE": str(tiny_base()),
        "EXTRA": "--batch 4 --max-length 48 --cpu --no-bf16 --threads 1 --warmup 1 --flops-docs 2 --save-every 3",
    }
    r = subprocess.run(
        ["bash", "scripts/gpu-train.sh", "train", "0", str(out)],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    plan = json.loads((out / "plan.json").read_text())
    assert plan["steps"] == 3 and plan["probe_steps"] == 1 and plan["seconds_per_step"] > 0
    assert (out / "step-3.pt").is_file()
    log = [json.loads(line) for line in (out / "train-log.jsonl").read_text().splitlines()]
    assert log and "flops" in log[-1]
