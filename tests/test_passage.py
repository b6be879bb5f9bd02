"""Passage encoding (issue 13 item 2): one encoder pass per passage window.

The layout keeps sentences whole and their spans exact; a tiny real run trained with
``--passage --passage-vector`` exports a passage graph that agrees with the torch model; the
engine indexes real files with that bundle (one graph run per window, not per sentence) and
answers real questions from it; the shipped 0.3.0 sentence bundle encodes exactly as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import SQUAD_SUBSET
from test_pipeline import census, expected_sentences
from test_trainer import tiny_base

from engine.api.facade import Engine
from engine.model.encoder import SparseEncoder, default_bundle_dir
from engine.model.features import build_features, load_tokenizer, passage_windows, window_features


def _tokenizer():
    return load_tokenizer(str(tiny_base() / "tokenizer.json"))


def test_windows_keep_sentences_whole_and_spans_exact(squad_handful):
    """Real SQuAD passages at a small max_length: every window fits, every sentence lies in
    exactly one window, its span holds exactly its own word pieces, and a window breaks only
    where the next sentence would not fit."""
    _folder, sentences, _examples = squad_handful
    tok = _tokenizer()
    by_passage: dict[int, list[str]] = {}
    for s in sentences:
        by_passage.setdefault(s.passage_id, []).append(s.text)
    passages = list(by_passage.values())
    max_length = 64
    windows = passage_windows(tok, passages, max_length)
    assert len(windows) > len(passages), "some passage must need several windows at 64 tokens"
    seen: dict[tuple[int, int], int] = {}
    for w in windows:
        assert len(w.ids) <= max_length
        assert w.ids[0] == tok.token_to_id("[CLS]") and w.ids[-1] == tok.token_to_id("[SEP]")
        assert [b for _a, b in w.spans[:-1]] == [a for a, _b in w.spans[1:]], "spans are contiguous"
        for j, (a, b) in enumerate(w.spans):
            text = passages[w.passage][w.first + j]
            own = tok.encode(text, add_special_tokens=False).ids[: max_length - 2]
            assert list(w.ids[a:b]) == own
            seen[(w.passage, w.first + j)] = seen.get((w.passage, w.first + j), 0) + 1
    assert seen == {(p, i): 1 for p, texts in enumerate(passages) for i in range(len(texts))}
    for prev, nxt in zip(windows, windows[1:], strict=False):
        if nxt.passage == prev.passage:  # broken inside a passage: the next sentence did not fit
            a, b = nxt.spans[0]
            assert len(prev.ids) + (b - a) > max_length
    # a sentence longer than a whole window is cut to it, in a window of its own
    long_sentence = " ".join(["treaty"] * 100)
    cut = passage_windows(tok, [["Short one.", long_sentence, "Another short one."]], 32)
    assert [len(w.spans) for w in cut] == [1, 1, 1]
    assert cut[1].spans == ((1, 31),) and len(cut[1].ids) == 32
    feats = window_features(tok, cut)
    assert feats["span_mask"].shape == (3, 1, 32)
    assert feats["span_mask"].sum(axis=(1, 2)).tolist() == [b - a for w in cut for a, b in w.spans]


@pytest.fixture(scope="module")
def passage_run(squad_handful, tmp_path_factory):
    """A 3-step --passage --passage-vector run on real SQuAD questions, exported (fp32 kept)."""
    from trainer.cli import main as train_main
    from trainer.export import export_bundle
    from trainer.train import load_model_from_checkpoint

    folder, _sentences, _examples = squad_handful
    work = tmp_path_factory.mktemp("passage")
    out = work / "run"
    train_main(
        ["train", "--base", str(tiny_base()), "--data", str(folder), "--out", str(out), "--batch", "4",
         "--steps", "3", "--max-length", "64", "--cpu", "--no-bf16", "--threads", "1",
         "--save-every", "3", "--warmup", "1", "--log-every", "1", "--passage", "--passage-vector",
         "--flops-weight", "0.01"]
    )  # fmt: skip
    bundle = work / "bundle"
    cfg = export_bundle(out / "step-3.pt", bundle, top_k=300, max_length=64, keep_fp32=True)
    model, _state = load_model_from_checkpoint(out / "step-3.pt", None)
    log = [json.loads(line) for line in (out / "train-log.jsonl").read_text().splitlines()]
    return model, bundle, cfg, log


def test_passage_training_runs_and_records_its_encoding(passage_run):
    model, bundle, cfg, log = passage_run
    assert [r["step"] for r in log] == [1, 2, 3]
    assert all(np.isfinite(r["loss"]) and "flops" in r for r in log)
    assert cfg["encoding"] == "passage" and cfg["passage_vector"] is True
    assert model.passage_vector
    enc = SparseEncoder(bundle)
    assert enc.config.encoding == "passage" and enc.config.passage_vector
    assert [i.name for i in enc.session.get_inputs()] == [
        "input_ids", "attention_mask", "token_type_ids", "span_mask"
    ]  # fmt: skip


def test_passage_onnx_agrees_with_torch(passage_run, squad_handful):
    """The fp32 passage graph gives the torch model's top ids in the same order and its weights
    (torch with the graph's fp16-stored embedding matrix); int8 stays close."""
    from trainer.export import check_passage_agreement

    model, bundle, _cfg, _log = passage_run
    _folder, sentences, _examples = squad_handful
    by_passage: dict[int, list[str]] = {}
    for s in sentences:
        by_passage.setdefault(s.passage_id, []).append(s.text)
    passages = list(by_passage.values())[:3]  # 24 sentences in 11 windows; torch: [24, positions, vocabulary]
    fp32 = check_passage_agreement(model, bundle, "model.fp32.onnx", passages, top=50)
    print(fp32)
    assert fp32["windows"] < fp32["sentences"]
    assert fp32["top50_overlap_min"] == 1.0
    assert fp32["top50_same_order_share"] >= 0.95
    assert fp32["max_weight_abs_err_top50"] < 1e-4
    int8 = check_passage_agreement(model, bundle, "model.onnx", passages, top=50)
    print(int8)
    # a 4-step model's int8 graph: more than half of every sentence's top 50 shared with the
    # fp32 one (the bound was > 0.6, and a fresh install with the same code gave exactly 0.6:
    # dynamic quantisation's rounding differs between builds; issue 40)
    assert int8["top50_overlap_min"] > 0.5
    assert int8["max_weight_abs_err_top50"] < 0.2


class _CountingSession:
    """The real ONNX session, counting its runs."""

    def __init__(self, session) -> None:
        self.session, self.runs = session, 0

    def run(self, *args, **kwargs):
        self.runs += 1
        return self.session.run(*args, **kwargs)


def test_passage_encoder_runs_once_per_window(passage_run, squad_handful):
    """encode() with groups equals encode_passages(), from one graph run per window, and a
    sentence's vector depends on its passage: alone it differs."""
    _model, bundle, _cfg, _log = passage_run
    _folder, sentences, _examples = squad_handful
    chosen = [s for s in sentences if s.passage_id < 4]
    texts = [s.text for s in chosen]
    groups = [s.passage_id for s in chosen]
    enc = SparseEncoder(bundle, threads=1)
    counter = _CountingSession(enc.session)
    enc.session = counter
    flat = enc.encode(texts, [""] * len(texts), groups=groups)
    passages = [[s.text for s in chosen if s.passage_id == p] for p in range(4)]
    windows = passage_windows(enc.tokenizer, passages, 64)
    assert counter.runs == len(windows) < len(texts)
    # batch 1 both ways: dynamic int8 scales activations per batch, so batch-mates matter
    nested = enc.encode_passages(passages, batch_size=1)
    again = [v for p in nested for v in p]
    assert len(flat) == len(again) == len(texts)
    for a, b in zip(flat, again, strict=True):
        assert np.array_equal(a.ids, b.ids) and np.allclose(a.weights, b.weights, atol=1e-5)
        assert len(a.ids) > 0
    alone = enc.encode([texts[1]], [""], groups=[0])[0]
    assert not np.array_equal(alone.ids, flat[1].ids)
    with pytest.raises(ValueError, match="passage bundle"):
        enc.encode(texts, [""] * len(texts))


def test_engine_indexes_and_answers_with_a_passage_bundle(passage_run, tmp_path):
    """Real SQuAD paragraphs as files, indexed by the engine with the passage bundle: the index
    holds each file's sentences (and name line), and SPARC alone (no BM25) puts the paragraph
    of a real SQuAD question among the top 3 for most questions (chance: 3 in 12)."""
    from trainer.data import read_squad

    _model, bundle, _cfg, _log = passage_run
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    questions: list[tuple[str, str]] = []
    for ai, article in enumerate(read_squad(SQUAD_SUBSET)[:2]):
        for pi, para in enumerate(article["paragraphs"][:6]):
            name = f"a{ai}-p{pi}.txt"
            (corpus / name).write_text(para["context"], encoding="utf-8")
            questions += [(qa["question"], name) for qa in para["qas"][:3]]
    engine = Engine(home=tmp_path / "home", bundle_dir=bundle, threads=1)
    try:
        engine.index([corpus])
        held = census(engine)
        want = {k: n for f in sorted(corpus.iterdir()) for k, n in expected_sentences(f).items()}
        assert {k: len(v) for k, v in held.items()} == want
        top3 = 0
        for question, name in questions:
            answers = engine.ask(question, top=3, hybrid=False, idf=False)
            top3 += name in [Path(a.path).name for a in answers]
        print(f"passage bundle, 3 training steps: {top3} of {len(questions)} questions in the top 3")
        assert top3 >= len(questions) // 2
    finally:
        engine.close()


def test_sentence_bundle_is_unaffected():
    """The shipped 0.3.0 bundle has no encoding key: it reads as a sentence bundle, ignores
    groups, and encodes exactly what its graph gives for the sentence layout."""
    bundle = default_bundle_dir().parent / "sparc-tiny-0.3.0"
    raw = json.loads((bundle / "config.json").read_text(encoding="utf-8"))
    assert "encoding" not in raw
    enc = SparseEncoder(bundle, threads=1)
    assert enc.config.encoding == "sentence" and not enc.config.passage_vector
    texts = [
        "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
        "They were descended from Norse raiders and pirates.",
        "Their identity emerged initially in the first half of the 10th century.",
    ]
    contexts = [" ".join(t for j, t in enumerate(texts) if j != i) for i in range(len(texts))]
    plain = enc.encode(texts, contexts)
    grouped = enc.encode(texts, contexts, groups=[0, 0, 0])
    feats = build_features(enc.tokenizer, texts, contexts, enc.config.max_length, enc.config.pooling)
    ids, weights = enc.session.run(["top_ids", "top_weights"], feats)
    for a, b, row_ids, row_w in zip(plain, grouped, ids, weights, strict=True):
        n = int((row_w > 0).sum())
        assert n > 0
        assert np.array_equal(a.ids, row_ids[:n]) and np.array_equal(a.weights, row_w[:n])
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.weights, b.weights)
    with pytest.raises(ValueError, match="sentence bundle"):
        enc.encode_passages([texts])


def test_unknown_encoding_is_a_clear_error(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(default_bundle_dir().parent / "sparc-tiny-0.3.0", bundle, ignore=shutil.ignore_patterns("*.onnx", "mlm"))
    cfg = json.loads((bundle / "config.json").read_text(encoding="utf-8"))
    cfg["encoding"] = "document"
    (bundle / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    from engine.model.bundle import Bundle

    with pytest.raises(ValueError, match=r"config\.json: unknown encoding 'document'"):
        Bundle.open(bundle)


def test_evaluation_encodes_a_passage_bundle_by_whole_passages(
    passage_run, squad_handful, tmp_path, monkeypatch
):
    """``sparcdesk-train evaluate`` on a small real pool with the passage bundle: chunks of the
    pool never cut a passage (chunk size 16 here), and the SPARC row ranks real questions well
    above chance."""
    import trainer.evaluate as ev

    _model, bundle, _cfg, _log = passage_run
    _folder, sentences, examples = squad_handful
    pool, questions = tmp_path / "sentences.jsonl", tmp_path / "questions.jsonl"
    pool.write_text(
        "".join(
            json.dumps({"id": s.id, "passage_id": s.passage_id, "text": s.text}) + "\n" for s in sentences
        ),
        encoding="utf-8",
    )
    questions.write_text(
        "".join(json.dumps({"id": e.qid, "question": e.question, "gold": [e.pos]}) + "\n" for e in examples),
        encoding="utf-8",
    )
    calls: list[list] = []
    real = SparseEncoder.encode

    def spy(self, sentences, contexts, batch_size=4, groups=None):
        calls.append(list(groups))
        return real(self, sentences, contexts, batch_size, groups)

    monkeypatch.setattr(ev.sparc, "ENCODE_CHUNK", 16)  # where encode_matrix reads it
    monkeypatch.setattr(SparseEncoder, "encode", spy)
    report = ev.run_evaluation(pool, questions, model_dir=bundle, baselines=[], cache_dir=None, threads=1)
    assert len(calls) > 2
    assert sum(len(c) for c in calls) == len(sentences)
    for a, b in zip(calls, calls[1:], strict=False):
        assert not set(a) & set(b), "a passage was cut between two chunks"
    (row,) = report["results"]
    print(row)
    chance = 100 * sum(1 / r for r in range(1, len(sentences) + 1)) / len(sentences)
    assert row["mrr@1000"] > 3 * chance, (row["mrr@1000"], chance)


def test_gradient_cache_with_passage_batches_matches_one_process(two_process_grads):
    """The gradient cache on passage batches (--passage --passage-vector, FLOPS on, dropout
    on): two gloo processes give the gradients of one process computing the same loss by
    plain autograd (as tests/test_trainer.py checks for sentence batches)."""
    import sys

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gradcache_worker as worker

    from trainer.train import flops_penalty, full_vectors, in_batch_loss, query_matrix

    folder = two_process_grads.data
    base, world, batch, lam = tiny_base(), worker.WORLD, worker.BATCH, worker.LAMBDA
    got = two_process_grads.grads["passage"]

    torch.set_num_threads(1)
    model, parts, vocab = worker.setup(base, folder, batch, 0, world, passage=True)
    assert model.passage_vector and all("window_index" in feats for feats, _b in parts)
    vocab_t = torch.tensor(vocab)
    pooled, penalties = [], []
    for feats, _bags in parts:
        torch.manual_seed(worker.SEED)
        states = model.sentence_states(**feats)
        pooled.append(model.pool(states, feats, model.word_embeddings.weight[vocab_t]))
        f = full_vectors(model, states, feats["sentence_mask"], feats["passage_mask"])
        penalties.append(flops_penalty(f))
    scores = model.scores(torch.cat(pooled))
    losses = [
        in_batch_loss(query_matrix(bags, vocab), scores, 3 * batch * r) for r, (_f, bags) in enumerate(parts)
    ]
    (torch.stack(losses).mean() + lam * torch.stack(penalties).mean()).backward()
    worker.assert_same_grads(got, worker.grads(model))
