"""Learned question weights (issue 13 item 3): ``sparcdesk-train query-weights`` learns a table
on real SQuAD training data with the shipped encoder frozen; the bundle ships it; the engine's
ranking multiplies it in (and ranks exactly as before without one); the evaluation's rows go
through that same path."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.model.bundle import QUERY_WEIGHTS_FILE, Bundle, read_query_weights
from engine.model.encoder import default_bundle_dir
from engine.search.answers import QueryEncoder, ask, rank_sentences, term_weights
from trainer import evaluate as ev
from trainer.cli import main as train_main

SHIPPED = default_bundle_dir()


@pytest.fixture(scope="module")
def trained(squad_handful, tmp_path_factory):
    """Both variants trained on the handful of SQuAD articles (one encoding, cached)."""
    folder, _sentences, _examples = squad_handful
    root = tmp_path_factory.mktemp("qw")
    out = {}
    for variant in ("product", "learned"):
        args = [
            "query-weights", "--model", str(SHIPPED), "--data", str(folder), "--out", str(root / variant),
            "--variant", variant, "--sentences", "80", "--epochs", "25", "--batch", "16", "--lr", "0.05",
            "--val-share", "0.2", "--cache", str(root / "cache"), "--bundle-out", str(root / f"bundle-{variant}"),
        ]  # fmt: skip
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            assert train_main(args) == 0
        meta = json.loads((root / variant / "query_weights.json").read_text())
        out[variant] = (root / variant, root / f"bundle-{variant}", meta, text.getvalue())
    return out


@pytest.mark.parametrize("variant", ["product", "learned"])
def test_training_moves_the_question_ids_and_lowers_the_loss(trained, variant):
    folder, _bundle, meta, printed = trained[variant]
    table = np.load(folder / QUERY_WEIGHTS_FILE)
    assert table.shape == (Bundle.open(SHIPPED).vocab_size,) and table.dtype == np.float32
    assert meta["variant"] == variant and meta["idf"] == (variant == "product")
    assert meta["block"]["train_questions"] > 20 and meta["block"]["held_out_questions"] > 0
    assert meta["after"]["train"]["loss"] < meta["before"]["train"]["loss"] - 0.05
    assert "held-out loss" in printed
    # only ids of training questions move; every other id keeps the starting factor 1
    moved = np.flatnonzero(table != 1.0)
    assert meta["moved_ids"] == moved.size > 30
    assert np.all(table > 0) and np.all(np.isfinite(table))
    bundle = Bundle.open(SHIPPED)
    from trainer.data import load_training_data
    from trainer.query_weights import select_block, split_rows

    data_folder = Path(meta["data"])
    block = select_block(*load_training_data(data_folder), 80)
    train_rows, _val = split_rows(block.passages, 0.2)
    seen = {t for r in train_rows for t in bundle.question_ids(block.questions[r])}
    assert set(moved.tolist()) <= seen


@pytest.mark.parametrize("variant", ["product", "learned"])
def test_the_table_round_trips_through_the_bundle(trained, variant):
    folder, bundle_dir, meta, _ = trained[variant]
    saved = np.load(folder / QUERY_WEIGHTS_FILE)
    b = Bundle.open(bundle_dir)
    assert b.config["query_weights"] == QUERY_WEIGHTS_FILE
    assert b.config["query_weights_training"]["variant"] == variant
    assert np.array_equal(b.query_weights, saved)
    assert np.array_equal(read_query_weights(bundle_dir / QUERY_WEIGHTS_FILE, b.vocab_size), saved)
    assert np.array_equal(QueryEncoder(bundle_dir).table, saved)
    assert Bundle.open(SHIPPED).query_weights is None and QueryEncoder(SHIPPED).table is None
    # the copy encodes as the bundle it was made from (only the question side changed)
    graph = Bundle.open(SHIPPED).onnx
    assert (bundle_dir / graph).read_bytes() == (SHIPPED / graph).read_bytes()
    assert ev.load_table(bundle_dir)[0].tobytes() == saved.tobytes()


# ------------------------------------------------------------------- the engine's ranking


@pytest.fixture(scope="module")
def pool(squad_dev_head):
    """The first ~60 sentences (whole passages) of the SQuAD-dev MultiReQA pool in a real
    index of the shipped bundle's vectors, and the questions whose gold lies among them."""
    out, data, _sparc, index_r = squad_dev_head(60, 40, SHIPPED)
    return out, data, index_r


def test_without_a_table_the_weights_are_todays(pool):
    _out, data, r = pool
    index = r.pool_index.index
    qids = r.encoder.question_ids(data.questions[0])
    assert term_weights(index, qids, idf=False) is None
    assert term_weights(index, qids, idf=True) is True
    table = np.full(30522, 2.0, np.float32)
    table[qids[0]] = 0.5
    idf = index.idf(qids)
    weighted = term_weights(index, qids, idf=True, table=table)
    assert weighted == {t: (0.5 if t == qids[0] else 2.0) * idf[t] for t in qids}
    assert term_weights(index, qids, idf=False, table=table) == {t: 0.5 if t == qids[0] else 2.0 for t in qids}


@pytest.mark.parametrize("idf", [False, True])
def test_a_table_of_ones_ranks_exactly_as_no_table(pool, idf):
    _out, data, r = pool
    index = r.pool_index.index
    ones = np.ones(30522, np.float32)
    for question in data.questions:
        qids = r.encoder.question_ids(question)
        for hybrid in (False, True):
            plain = rank_sentences(index, qids, question, idf=idf, hybrid=hybrid)
            assert plain and rank_sentences(index, qids, question, idf=idf, hybrid=hybrid, table=ones) == plain


def _rarest_present(index, qids: list[int]) -> int:
    """The question id fewest sentences of the index hold, among those some sentence holds."""
    return min((t for t in qids if index.doc_freq(t) > 0), key=index.doc_freq)


def test_the_table_decides_which_question_ids_count(pool):
    """A table that keeps one id of the question ranks as that id alone; scaled by 3 it
    multiplies every score by 3 (weights are whole numbers: no rounding)."""
    _out, data, r = pool
    index = r.pool_index.index
    for question in data.questions[:10]:
        qids = r.encoder.question_ids(question)
        rare = _rarest_present(index, qids)
        table = np.zeros(30522, np.float32)
        table[rare] = 3.0
        alone = index.search([rare], 1000)
        assert alone
        ranked = rank_sentences(index, qids, question, idf=False, table=table)
        assert [s for s, _ in ranked] == [h.sentence_id for h in alone]
        assert [sc for _, sc in ranked] == pytest.approx([3 * h.score for h in alone], rel=1e-12)


def test_ask_uses_the_bundles_table_and_keeps_the_no_answer_match(pool, tmp_path):
    """``ask`` with a QueryEncoder of a bundle shipping a table ranks by it; the no-answer
    decision's match is still the IDF-weighted one (its thresholds were set on that)."""
    _out, data, r = pool
    index = r.pool_index.index
    bundle_dir = tmp_path / "bundle"
    shutil.copytree(SHIPPED, bundle_dir, ignore=shutil.ignore_patterns("mlm", "model.fp32.onnx"))
    question = data.questions[0]
    qids = r.encoder.question_ids(question)
    table = np.ones(30522, np.float32)
    table[_rarest_present(index, qids)] = 50.0  # one id dominates the ranking
    np.save(bundle_dir / QUERY_WEIGHTS_FILE, table)
    cfg = json.loads((bundle_dir / "config.json").read_text())
    cfg["query_weights"] = QUERY_WEIGHTS_FILE
    (bundle_dir / "config.json").write_text(json.dumps(cfg))
    with_table = QueryEncoder(bundle_dir)
    assert with_table.table is not None and with_table.table[qids[0]] == table[qids[0]]
    for idf in (False, True):
        before = ask(index, QueryEncoder(SHIPPED), question, idf=idf)
        after = ask(index, with_table, question, idf=idf)
        expect = rank_sentences(index, qids, question, idf=idf, table=table)
        assert after[0].best.score == pytest.approx(expect[0][1]) != pytest.approx(before[0].best.score)
        assert before.match > 0 and after.match == pytest.approx(before.match)


def test_evaluation_rows_go_through_the_table(pool, tmp_path):
    """``--query-weights`` / ``--query-weights-idf`` rows (and their hybrids) go through the
    table: one of ones scores as the rows without it, and each row names its file."""
    out, data, r = pool
    ones = tmp_path / "ones" / QUERY_WEIGHTS_FILE
    ones.parent.mkdir()
    np.save(ones, np.ones(30522, np.float32))
    report = ev.run_evaluation(
        out / "sentences.jsonl",
        out / "questions.jsonl",
        model_dir=SHIPPED,
        baselines=[],
        cache_dir=out,
        latency_sample=2,
        log=lambda _m: None,
        idf=True,
        hybrid=True,
        query_weights=[ones],
        query_weights_idf=[ones.parent],  # a --out folder reads as its table
    )
    rows = {row["system"]: row for row in report["results"]}
    assert set(rows) == {
        "SPARC", "SPARC +IDF", "SPARC +QW(ones)", "SPARC +IDF +QW(ones)",
        "SPARC +hybrid", "SPARC +IDF +hybrid", "SPARC +QW(ones) +hybrid", "SPARC +IDF +QW(ones) +hybrid",
    }  # fmt: skip
    same = {
        "SPARC +QW(ones)": "SPARC",
        "SPARC +IDF +QW(ones)": "SPARC +IDF",
        "SPARC +QW(ones) +hybrid": "SPARC +hybrid",
        "SPARC +IDF +QW(ones) +hybrid": "SPARC +IDF +hybrid",
    }
    metrics = ("mrr@1000", "r@1", "r@10")
    for with_table, without in same.items():
        assert rows[with_table]["query_weights"] == str(ones) and "query_weights" not in rows[without]
        assert [rows[with_table][k] for k in metrics] == [rows[without][k] for k in metrics]
    with pytest.raises(SystemExit, match="shape"):
        bad = tmp_path / "bad.npy"
        np.save(bad, np.ones(7, np.float32))
        ev.load_table(bad, 30522)


def test_bench_describes_what_a_table_moved(trained):
    """``bench.query_weights`` counts the moved ids and their reach over questions."""
    from bench.query_weights import describe

    folder, _bundle, meta, _ = trained["learned"]
    table, _ = ev.load_table(folder)
    bundle = Bundle.open(SHIPPED)
    d = describe(bundle, table, ["Which team won Super Bowl 50?", "zzqx"], show=3)
    assert d["moved_ids"] == meta["moved_ids"] == int((table != 1.0).sum())
    assert 0 <= d["question_ids_moved_pct"] <= 100 and d["questions"] == 2
    assert [w for _t, w in d["lowest"]] == sorted(w for _t, w in d["lowest"]) and d["lowest"][0][1] == round(float(table.min()), 2)


def _bundle_weighing(folder: Path, word: str, weight: float) -> Path:
    """A copy of the shipped bundle whose table weighs ``word``'s id ``weight`` (others 1)."""
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("mlm", "model.fp32.onnx"))
    b = Bundle.open(folder)
    (wid,) = b.tokenizer().encode(word, add_special_tokens=False).ids
    table = np.ones(b.vocab_size, np.float32)
    table[wid] = weight
    np.save(folder / QUERY_WEIGHTS_FILE, table)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["query_weights"] = QUERY_WEIGHTS_FILE
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_the_engine_answers_with_the_table_of_the_bundle_it_indexed_with(tmp_path):
    """A home indexed with a bundle shipping a table: ``Engine.ask`` (the CLI's and the
    window's path, default search) ranks by it, whichever word the table favours."""
    from engine.api.facade import Engine

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "orchard.txt").write_text("The apple orchard grows red apples every autumn.\n")
    (docs / "mill.txt").write_text("The river flows past the old stone mill.\n")
    for word, expected in (("apple", "orchard.txt"), ("river", "mill.txt")):
        bundle = _bundle_weighing(tmp_path / f"bundle-{word}", word, 40.0)
        with Engine(home=tmp_path / f"home-{word}", bundle_dir=bundle, threads=1) as e:
            e.add_source(docs)
            assert e.index().phase == "done"
            for idf, hybrid in ((True, True), (False, False)):
                answers = e.ask("river apple", idf=idf, hybrid=hybrid)
                assert Path(answers[0].path).name == expected, (word, idf, hybrid)
