"""One ``Bundle`` type (issue 14): the shipped bundle opens with the graph it ships, a bad
folder is refused naming it and the reason, and a key's default is the same everywhere."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.api.facade import bundle_problem
from engine.model.bundle import DEFAULT_GRAPH, Bundle, BundleError, model_identity
from engine.model.bundle_edit import onnx_files
from engine.model.encoder import SparseEncoder, default_bundle_dir
from engine.search.answers import QueryEncoder

#: sparc-tiny 0.3.0 (int8 graph with its fp32 one beside it), kept for comparison; the
#: default (0.4.0) is checked in test_the_default_bundle_is_the_sparse_040
SHIPPED = default_bundle_dir().parent / "sparc-tiny-0.3.0"


def _copy(tmp_path: Path, edit=None, graphs: bool = True) -> Path:
    """The shipped bundle copied (without ``mlm/``), its config changed by ``edit``."""
    ignore = ["mlm"] + ([] if graphs else ["*.onnx"])
    folder = tmp_path / "bundle"
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns(*ignore))
    if edit is not None:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        edit(cfg)
        (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


def test_the_default_bundle_is_the_sparse_040() -> None:
    """Issue 34: the default is the sparse model, its projection in int8, its own no-answer
    threshold; 0.3.0 stays beside it for --bundle."""
    b = Bundle.open(default_bundle_dir())
    assert (b.name, b.version, b.projection, b.prune_ratio) == ("sparc-tiny", "0.4.0", "int8", 0.1)
    assert b.graph_path == default_bundle_dir() / "model.onnx" and b.answer_match is not None
    assert b.identity != Bundle.open(SHIPPED).identity


def test_the_shipped_bundle_opens_with_its_int8_graph() -> None:
    b = Bundle.open(SHIPPED)
    assert b.graph_path == SHIPPED / "model.int8.onnx" and b.graph_path.is_file()
    assert b.fp32_graph_path == SHIPPED / "model.fp32.onnx" and b.fp32_graph_path.is_file()
    assert b.graph_files == ["model.int8.onnx", "model.fp32.onnx"] == onnx_files(SHIPPED)
    assert (b.name, b.top_k, b.max_length, b.pooling, b.encoding) == ("sparc-tiny", 2000, 128, "all", "sentence")
    assert b.vocab_size == b.tokenizer().get_vocab_size() == 30522
    assert b.tokenizer() is b.tokenizer()  # read once
    assert b.identity == model_identity(SHIPPED) and b.identity.version.startswith("0.3.0+")
    assert b.identity.version.endswith("+" + b.fingerprint) and len(b.fingerprint) == 16
    # what the encoder runs and what a question becomes come from this one object
    enc = SparseEncoder(SHIPPED, threads=1)
    assert enc.config == b and Path(enc.session._model_path) == b.graph_path
    question = "Who signed the treaty of Westphalia, and where was the treaty signed?"
    assert enc.question_ids(question) == QueryEncoder(SHIPPED).question_ids(question) == b.question_ids(question)
    assert len(b.question_ids(question)) == len(set(b.question_ids(question)))  # query_tokens: unique


def test_a_config_without_onnx_resolves_to_the_shipped_graph_everywhere(tmp_path: Path) -> None:
    """The old readers disagreed (``model.onnx`` in some, ``cfg["onnx"]`` in others); now every
    reader asks the Bundle: the encoder, the identity, the damage check, adaptation's graphs."""
    folder = _copy(tmp_path, lambda cfg: cfg.pop("onnx"))
    b = Bundle.open(folder)
    assert b.onnx == DEFAULT_GRAPH == "model.int8.onnx" and b.graph_path == folder / DEFAULT_GRAPH
    assert bundle_problem(folder) is None
    assert onnx_files(folder)[0] == DEFAULT_GRAPH
    assert Path(SparseEncoder(folder, threads=1).session._model_path) == folder / DEFAULT_GRAPH
    # the identity digests the same graph: it differs from the shipped one by config.json only
    assert model_identity(folder).version != Bundle.open(SHIPPED).identity.version
    (folder / DEFAULT_GRAPH).unlink()
    with pytest.raises(BundleError, match="model.int8.onnx is missing"):
        Bundle.open(folder)
    assert bundle_problem(folder) == "model.int8.onnx is missing"


def test_optional_keys_take_their_one_default(tmp_path: Path) -> None:
    keys = ("name", "version", "pooling", "query_tokens", "encoding", "passage_vector", "embedding_initializer")
    folder = _copy(tmp_path, lambda cfg: [cfg.pop(k, None) for k in keys])
    b = Bundle.open(folder)
    assert (b.name, b.version, b.pooling, b.query_tokens, b.encoding, b.passage_vector) == (
        "bundle", "0", "sentence", "unique", "sentence", False
    )
    assert (b.prune_ratio, b.embedding_initializer, b.adaptation, b.adapted_from) == (
        0.0, "word_embeddings_fp16", None, None
    )
    assert SparseEncoder(folder, threads=1).config.pooling == "sentence"


def test_answer_match_is_the_bundles_own_or_none(tmp_path: Path) -> None:
    assert Bundle.open(SHIPPED).answer_match is None  # the engine's ANSWER_MATCH, set on 0.3.0
    assert Bundle.open(_copy(tmp_path / "a", lambda cfg: cfg.update(answer_match=0.21))).answer_match == 0.21
    for bad in (1.5, -0.1, "high", True):
        folder = _copy(tmp_path / str(bad), lambda cfg, bad=bad: cfg.update(answer_match=bad))
        with pytest.raises(BundleError, match=r"'answer_match' is .*, not a number from 0 to 1"):
            Bundle.open(folder)


def test_a_passage_config_reads_as_one(tmp_path: Path) -> None:
    folder = _copy(tmp_path, lambda cfg: cfg.update(encoding="passage", passage_vector=True))
    b = Bundle.open(folder)
    assert b.encoding == "passage" and b.passage_vector


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda f: (f / "config.json").unlink(), "config.json is missing"),
        (lambda f: (f / "config.json").write_bytes(b"\x89PNG\r\n"), "config.json is not valid JSON"),
        (lambda f: (f / "config.json").write_text('{"name": "x",', encoding="utf-8"), "config.json is not valid JSON"),
        (lambda f: (f / "config.json").write_text("[1, 2]", encoding="utf-8"), "config.json is not an object"),
        (lambda f: (f / "config.json").write_text('{"top_k": 10}', encoding="utf-8"), "config.json has no 'max_length'"),
        (
            lambda f: (f / "config.json").write_text(
                '{"top_k": "many", "max_length": 128, "vocab_size": 30522}', encoding="utf-8"
            ),
            "'top_k' is 'many', not an int",
        ),
        (lambda f: (f / "model.int8.onnx").unlink(), "model.int8.onnx is missing"),
    ],
)
def test_a_bad_bundle_is_refused_naming_the_folder_and_the_reason(tmp_path: Path, damage, reason: str) -> None:
    folder = _copy(tmp_path)
    damage(folder)
    with pytest.raises(BundleError) as info:
        Bundle.open(folder)
    assert str(folder) in str(info.value) and reason in str(info.value)
    assert reason in (bundle_problem(folder) or "")
    with pytest.raises(FileNotFoundError, match=re.escape(reason)):
        SparseEncoder(folder, threads=1)  # what callers caught before the type existed


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"nowhere: config\.json is missing"):
        Bundle.open(tmp_path / "nowhere")


def _with_table(folder: Path, table: object, name: str = "query_weights.npy") -> None:
    """``folder``'s config names ``name`` as its question weight table, saved from ``table``."""
    if table is not None:
        np.save(folder / name, table)
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    cfg["query_weights"] = name
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")


def test_a_bundle_ships_its_question_weight_table(tmp_path: Path) -> None:
    folder = _copy(tmp_path, graphs=True)
    table = np.linspace(0.5, 2.0, 30522).astype(np.float32)
    _with_table(folder, table)
    b = Bundle.open(folder)
    assert np.array_equal(b.query_weights, table) and not b.query_weights.flags.writeable
    assert np.array_equal(QueryEncoder(folder).table, table)
    assert Bundle.open(SHIPPED).query_weights is None  # no table: questions weigh as before


@pytest.mark.parametrize(
    ("table", "name", "reason"),
    [
        (None, "query_weights.npy", "query_weights.npy: the query weight table is missing"),
        (np.ones(100, np.float32), "query_weights.npy", "shape (100,), expected (30522,)"),
        (np.ones((2, 30522), np.float32), "query_weights.npy", "shape (2, 30522), expected (30522,)"),
        (np.full(30522, -1.0, np.float32), "query_weights.npy", "weights must be finite and >= 0"),
        (np.full(30522, np.nan, np.float32), "query_weights.npy", "weights must be finite and >= 0"),
        (np.array(["a"] * 30522), "query_weights.npy", "expected floats"),
        (np.ones(30522, np.float32), "../query_weights.npy", "not a file name of the folder"),
    ],
)
def test_a_bad_question_weight_table_is_refused(tmp_path: Path, table, name: str, reason: str) -> None:
    folder = _copy(tmp_path, graphs=True)
    _with_table(folder, table if not name.startswith("..") else None, name)
    with pytest.raises(BundleError) as info:
        Bundle.open(folder)
    assert str(folder) in str(info.value) and reason in str(info.value)
    assert reason in (bundle_problem(folder) or "")


def test_a_table_that_is_not_an_array_is_refused(tmp_path: Path) -> None:
    folder = _copy(tmp_path, graphs=True)
    _with_table(folder, None)
    (folder / "query_weights.npy").write_bytes(b"not numpy")
    with pytest.raises(BundleError, match="query_weights.npy: not a .npy array"):
        Bundle.open(folder)


def test_encoder_threads_follow_sparcdesk_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SPARCDESK_THREADS`` sets the encoder's default threads; a bad value is refused, named."""
    from engine.model.encoder import SparseEncoder, default_threads

    monkeypatch.setenv("SPARCDESK_THREADS", "3")
    assert default_threads() == 3
    assert SparseEncoder().session.get_session_options().intra_op_num_threads == 3
    assert SparseEncoder(threads=1).session.get_session_options().intra_op_num_threads == 1
    monkeypatch.delenv("SPARCDESK_THREADS")
    assert 1 <= default_threads() <= 4
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("SPARCDESK_THREADS", bad)
        with pytest.raises(ValueError, match=f"SPARCDESK_THREADS must be a whole number .* not '{bad}'"):
            default_threads()


def test_bundles_of_an_unchanged_file_share_its_tokenizer(tmp_path: Path) -> None:
    """Every Bundle of one folder reads its tokenizer.json once per process while the file is
    unchanged; a rewritten file is read again, so damage is found, not served from memory."""
    folder = _copy(tmp_path)
    first = Bundle.open(folder).tokenizer()
    assert Bundle.open(folder).tokenizer() is first
    assert Bundle.open(SHIPPED).tokenizer() is not first  # another file
    tokenizer_json = folder / "tokenizer.json"
    tokenizer_json.write_text(tokenizer_json.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    again = Bundle.open(folder).tokenizer()
    assert again is not first and again.get_vocab_size() == first.get_vocab_size()
    tokenizer_json.write_bytes(b"\xff\x00 garbage")
    with pytest.raises(Exception, match="valid UTF-8"):
        Bundle.open(folder).tokenizer()
