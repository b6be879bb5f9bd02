"""On-device adaptation: the embedding swap reaches both uses of the matrix, vocabulary
expansion, cancel/resume, and the generation switch and restore through the engine, on the
shipped bundle and real sample documents (few training steps: behaviour, not quality)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from engine.api.facade import Engine
from engine.common.progress import Cancelled
from engine.model.adapt import EmbeddingAdam, adapt_bundle
from engine.model.bundle_edit import (
    PROJECTION_INT8,
    copy_bundle,
    onnx_files,
    projection_weights,
    read_embedding_matrix,
    replace_embedding_matrix,
)
from engine.model.encoder import SparseEncoder, default_bundle_dir
from engine.model.features import load_tokenizer
from engine.model.vocab import expand_vocabulary

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "documents"
BUNDLE = default_bundle_dir()
DOCS = ("kenya.txt", "super-bowl-50.txt", "steam-engine.md")


def corpus() -> list[str]:
    from engine.ingest.segment import split_passages

    out: list[str] = []
    for name in DOCS:
        text = (SAMPLES / name).read_text(encoding="utf-8")
        for passage in split_passages(text):
            out.extend(s.text for s in passage)
    return out


def matrix_of(bundle: Path) -> np.ndarray:
    cfg = json.loads((bundle / "config.json").read_text())
    return read_embedding_matrix(bundle / cfg["onnx"], cfg["embedding_initializer"]).astype(np.float32)


def test_one_initializer_feeds_input_embeddings_and_scorer() -> None:
    """The graph reads the matrix once: the input Gather and the vocabulary projection both
    consume the cast of ``word_embeddings_fp16`` (so a swap changes both)."""
    for bundle in (BUNDLE, BUNDLE.parent / "sparc-tiny-0.3.0"):  # int8 projection (0.4.0), fp32 (0.3.0)
        cfg = json.loads((bundle / "config.json").read_text())
        graph = onnx.load(str(bundle / cfg["onnx"])).graph
        cast = next(n for n in graph.node if n.input and n.input[0] == "word_embeddings_fp16")
        users = {n.op_type for n in graph.node if cast.output[0] in n.input}
        if cfg.get("projection") == "int8":
            # the projection reads the int8 copy derived from the matrix (re-derived on a swap)
            assert users == {"Gather"}
            assert any(n.op_type == "MatMulInteger" and PROJECTION_INT8 in n.input for n in graph.node)
            continue
        assert {"Gather", "Transpose"} <= users
        transposed = next(n for n in graph.node if n.op_type == "Transpose" and cast.output[0] in n.input)
        assert any(transposed.output[0] in n.input and n.op_type in ("MatMul", "Gemm") for n in graph.node)


def test_swapped_row_changes_scorer_and_input(tmp_path: Path) -> None:
    """Zeroing one token's row removes it from every sentence vector (its e_v is zero) and
    changes the vectors of sentences that contain it (its input embedding changed)."""
    enc = SparseEncoder(BUNDLE, threads=1)
    sentence, context = "The steam engine drove the pumps of the mine.", "Water flooded the mine."
    tok = enc.tokenizer.token_to_id("steam")
    before = enc.encode([sentence], [context])[0]
    assert tok in set(before.ids.tolist())
    out = tmp_path / "b"
    copy_bundle(BUNDLE, out)
    m = matrix_of(BUNDLE)
    m[tok] = 0.0
    for name in onnx_files(BUNDLE):
        replace_embedding_matrix(BUNDLE / name, out / name, m.astype(np.float16))
    after = SparseEncoder(out, threads=1).encode([sentence], [context])[0]
    assert tok not in set(after.ids.tolist())
    other = enc.tokenizer.token_to_id("mine")
    w_before = dict(zip(before.ids.tolist(), before.weights.tolist(), strict=True))[other]
    w_after = dict(zip(after.ids.tolist(), after.weights.tolist(), strict=True))[other]
    assert w_before != pytest.approx(w_after, abs=1e-6)


def test_adapt_bundle_moves_only_corpus_rows(tmp_path: Path) -> None:
    sentences = corpus()
    out = adapt_bundle(BUNDLE, sentences, tmp_path / "adapted", steps=3, lr=1e-2, threads=1)
    old, new = matrix_of(BUNDLE), matrix_of(out)
    changed = np.flatnonzero(np.any(old != new, axis=1))
    tok = load_tokenizer(str(BUNDLE / "tokenizer.json"))
    seen = {i for e in tok.encode_batch(sentences, add_special_tokens=False) for i in e.ids}
    specials = {tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")}
    assert changed.size > 100
    assert set(changed.tolist()) <= seen | specials  # a word the user never wrote keeps its row
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["name"].endswith("+adapted") and cfg["adaptation"]["steps"] == 3
    assert cfg["adapted_from"]["path"] == str(BUNDLE)
    # every graph of the bundle carries the new matrix, and an int8 projection its new copy
    graphs = onnx_files(out)
    assert graphs and sorted(graphs) == sorted(onnx_files(BUNDLE))
    for name in graphs:
        assert np.array_equal(read_embedding_matrix(out / name).astype(np.float32), new)
        inits = {i.name: i for i in onnx.load(str(out / name)).graph.initializer}
        if PROJECTION_INT8 in inits:
            q, _ = projection_weights(read_embedding_matrix(out / name))
            assert np.array_equal(onnx.numpy_helper.to_array(inits[PROJECTION_INT8]), q)


def test_cancel_then_resume(tmp_path: Path) -> None:
    sentences = corpus()
    state = tmp_path / "state"
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 2

    with pytest.raises(Cancelled):
        adapt_bundle(BUNDLE, sentences, tmp_path / "a", steps=4, threads=1, should_stop=stop, state_dir=state)
    assert (state / "adapt-state.pt").is_file()
    out = adapt_bundle(BUNDLE, sentences, tmp_path / "a", steps=4, threads=1, state_dir=state)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["adaptation"]["resumed_from_step"] == 2
    assert not (state / "adapt-state.pt").exists()


def test_embedding_adam_is_torch_adam_and_their_states_resume_in_each_other() -> None:
    """The adaptation's own Adam (no ``torch.optim``: it imports the compiler) takes
    ``torch.optim.Adam``'s steps exactly, with sparse rows of zero gradient as an MLM batch
    leaves them, and a state saved by either resumes in the other."""
    import torch

    torch.manual_seed(0)
    start = torch.randn(64, 8)
    ours, theirs = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    mine, ref = EmbeddingAdam(ours, lr=5e-3), torch.optim.Adam([theirs], lr=5e-3)

    def steps(n: int) -> None:
        for _ in range(n):
            grad = torch.randn(64, 8)
            grad[torch.rand(64) < 0.7] = 0.0  # rows the batch did not touch
            ours.grad, theirs.grad = grad.clone(), grad.clone()
            mine.step()
            ref.step()

    steps(15)
    assert torch.equal(ours, theirs) and not torch.equal(ours, start)
    resumed_ref = torch.optim.Adam([theirs], lr=5e-3)
    resumed_ref.load_state_dict(mine.state_dict())
    resumed_mine = EmbeddingAdam(ours, lr=5e-3)
    resumed_mine.load_state_dict(ref.state_dict())
    mine, ref = resumed_mine, resumed_ref
    steps(5)
    assert mine.step_count == 20 and torch.equal(ours, theirs)


def test_vocabulary_expansion_adds_corpus_words(tmp_path: Path) -> None:
    sentences = corpus() + [f"The quorblatt reactor number {i} hums over the quorblatt valley." for i in range(6)]
    tok_json = (BUNDLE / "tokenizer.json").read_text()
    exp = expand_vocabulary(tok_json, sentences, step=50, max_rounds=1)
    assert "quorblatt" in exp.tokens and exp.tokens.index("quorblatt") < 10
    assert all(len(p) > 1 for p in exp.pieces)
    # The mechanism on 0.3.0, whose dense vectors carry any word of the sentence: with the
    # sparse 0.4.0, a new word's row (its pieces' mean) two steps old gets no positive logit
    # (checked: 30522 absent from the whole top K), so the check that it reaches the sentence's
    # vector needs the model that keeps every word.
    dense = BUNDLE.parent / "sparc-tiny-0.3.0"
    out = adapt_bundle(dense, sentences, tmp_path / "v", steps=2, threads=1, vocab_expansion=True)
    enc = SparseEncoder(out, threads=1)
    new_id = enc.tokenizer.token_to_id("quorblatt")
    assert new_id is not None and new_id >= 30522
    assert enc.question_ids("quorblatt") == [new_id]  # one word piece now, in questions too
    assert enc.config.vocab_size == 30522 + len(exp.tokens)
    vec = enc.encode(["The quorblatt reactor hums."], [""])[0]
    assert new_id in set(vec.ids.tolist())


def test_engine_adapt_switches_generation_and_restores(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in DOCS:
        shutil.copy(SAMPLES / name, docs / name)
    question = "Who won Super Bowl 50?"
    with Engine(home=tmp_path / "home", threads=1) as engine:
        engine.index([docs])
        first = engine.status()["generation"]
        before = [(a.path, a.best.sentence) for a in engine.ask(question)]
        assert before and any("kenya" in p for p, _ in before)
        seen_during: list[tuple[str, int]] = []

        def during(p) -> None:  # runs while the new generation is being filled
            if p.phase != "done" and not seen_during:
                seen_during.append((engine.status()["generation"]["model"], len(engine.ask(question))))

        bundle = engine.adapt(steps=3, progress=during, always=True)  # (the switch's mechanics; its gate: test_selfcheck_report)
        assert seen_during and seen_during[0][0] == first["model"] and seen_during[0][1] > 0
        after = engine.status()["generation"]
        assert after["id"] != first["id"] and "+adapted" in after["model"]
        assert Path(bundle).parent == tmp_path / "home" / "models"
        assert engine.ask(question)  # the adapted generation answers
        (docs / "kenya.txt").unlink()  # a deletion after the switch...
        engine.index(None)
    with Engine(home=tmp_path / "home", threads=1) as engine:  # the choice survives a restart
        assert engine.bundle_dir == bundle
        done = engine.restore_model()
        assert done["generation"] == first["id"] and done["removed_documents"] == 1
        st = engine.status()["generation"]
        assert st["id"] == first["id"] and st["model"] == first["model"]
        # the old generation's answers, less the document deleted after the switch
        assert [(a.path, a.best.sentence) for a in engine.ask(question)] == [
            (p, t) for p, t in before if "kenya" not in p
        ]
        assert not any("kenya" in a.path for a in engine.ask("What is the capital of Kenya?"))
        assert engine.bundle_dir == BUNDLE


def test_engine_adapt_cancel_keeps_old_generation(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "kenya.txt", docs / "kenya.txt")
    with Engine(home=tmp_path / "home", threads=1) as engine:
        engine.index([docs])
        first = engine.status()["generation"]
        cancel = threading.Event()

        def on_adapt(p) -> None:
            if p.step >= 1:
                cancel.set()

        with pytest.raises(Cancelled):
            engine.adapt(steps=5, on_adapt=on_adapt, cancel=cancel)
        assert engine.status()["generation"] == first
        assert engine.bundle_dir == BUNDLE


def test_engine_adapt_resumes_an_unfinished_reencode(tmp_path: Path) -> None:
    """A run that stopped after training (crash, cancel, --no-reencode) is picked up by the
    next ``adapt``: no second training, the re-encode completes and goes live."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "super-bowl-50.txt", docs / "sb.txt")
    with Engine(home=tmp_path / "home", threads=1) as engine:
        engine.index([docs])
        first = engine.status()["generation"]
        bundle = engine.adapt(steps=2, reencode=False)
        assert engine.status()["generation"] == first and engine.status()["rebuilding"]
    with Engine(home=tmp_path / "home", threads=1) as engine:
        calls: list[object] = []
        again = engine.adapt(steps=2, on_adapt=calls.append, always=True)
        assert again == bundle and calls == []  # resumed: nothing retrained
        st = engine.status()
        assert st["generation"]["id"] != first["id"] and not st["rebuilding"]
        assert engine.ask("Who won Super Bowl 50?")


def test_plain_torch_body_matches_transformers():
    """engine.model.bert.BertBody (the desktop app ships without transformers) computes what
    transformers' BertModel does, on both bodies of the shipped bundle, padding included."""
    pytest.importorskip("transformers")
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel

    from engine.model.bert import BertBody, BertSettings

    mlm = BUNDLE / "mlm"
    for name in ("sparc_body", "base_body"):
        state = load_file(str(mlm / f"{name}.safetensors"))
        ref = BertModel(BertConfig.from_json_file(str(mlm / "config.json")), add_pooling_layer=False).eval()
        ref.load_state_dict(state, strict=False)
        mine = BertBody(BertSettings.from_json_file(mlm / "config.json")).eval()
        missing, unexpected = mine.load_state_dict(state, strict=False)
        assert missing == ["embeddings.word_embeddings.weight"] and not unexpected
        g = torch.Generator().manual_seed(0)
        emb = torch.randn(3, 17, ref.config.hidden_size, generator=g)
        mask = torch.ones(3, 17, dtype=torch.long)
        mask[1, 9:] = 0
        types = torch.zeros(3, 17, dtype=torch.long)
        with torch.no_grad():
            a = ref(inputs_embeds=emb, attention_mask=mask, token_type_ids=types).last_hidden_state
            b = mine(inputs_embeds=emb, attention_mask=mask, token_type_ids=types).last_hidden_state
        assert torch.allclose(a, b, atol=1e-5), (name, (a - b).abs().max())


def test_adaptation_waits_while_paused(tmp_path: Path) -> None:
    """Issue 36, item 4: Pause turned to ▶ but training went on (steps 107 -> 118 in 20 s).
    Training now waits between steps while paused: no step is taken during the pause, and
    it goes on to the end after it. (The pause is a callable here: five polls say paused.)"""
    steps: list[int] = []
    polls: list[int] = []

    def on_progress(p) -> None:
        if p.phase == "training":
            steps.append(p.step)

    def paused() -> bool:
        if len(steps) >= 2 and len(polls) < 5:  # paused once two steps are done
            polls.append(len(steps))
            return True
        return False

    adapt_bundle(BUNDLE, corpus(), tmp_path / "a", steps=4, threads=1, progress=on_progress, paused=paused)
    assert polls == [2, 2, 2, 2, 2]  # asked five times while paused; no step in between
    assert steps == [1, 2, 3, 4]
