"""Out-of-domain evaluation: pool builders on the real data, document-level metrics on a
hand-made pool, and the evaluator's --idf/--hybrid rows on a small real pool with the
shipped bundle (encoding ~60 sentences takes about a second)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest

import trainer.evaluate as ev
from trainer import ood
from trainer.pools import Pool, PoolQuestion, PoolSentence, read_questions, read_sentences, write_pool

DATA = ood.DATA_DIR
needs_data = pytest.mark.skipif(
    not (DATA / "ir_classic").is_dir(),
    reason=f"shared data not found at {DATA} (see ../shared/data/README.md)",
)
needs_bundle = pytest.mark.skipif(
    not (ood.SHIPPED / "config.json").exists(), reason="the shipped bundle assets/sparc-tiny is absent"
)


# ---------------------------------------------------------------------------------------------
# pool builders on the real data


@needs_data
def test_email_pool_mixes_bipia_into_enron() -> None:
    pool = ood.build_email_pool(DATA, enron_messages=40, seed=13)
    st = pool.stats
    assert st["answerable"] == 41 and st["enron_messages"] == 40 and st["bipia_messages"] == 40
    assert st["dropped_answer_not_found"] <= 2  # one BIPIA answer is not in its e-mail at all
    assert len(pool.questions) >= 25
    by_id = {s.id: s for s in pool.sentences}
    for q in pool.questions:
        assert not q.question.startswith("Q:") and "record all" not in q.question
        assert q.gold and all(by_id[g].doc_id.startswith("bipia-") for g in q.gold)
        assert any("$" in by_id[g].text or any(c.isdigit() for c in by_id[g].text) for g in q.gold)
    # the sample is seeded: same messages twice
    again = ood.build_email_pool(DATA, enron_messages=40, seed=13)
    assert [s.id for s in again.sentences] == [s.id for s in pool.sentences]


def test_bipia_parsing_and_answer_fallback() -> None:
    f = ood.parse_bipia("SUBJECT: Paid|EMAIL_FROM: A <a@b>|CONTENT: \n\nYou paid $2,099.00 today.")
    assert f["subject"] == "Paid" and "2,099.00" in f["content"]
    assert ood.parse_bipia("Hi David, no headers.")["content"] == "Hi David, no headers."
    sents = ood.document_sentences("m", "Hello there.\n\nYou paid $2,099.00 today. Thanks.")
    gold, rule = ood.answer_sentences(sents, "$2099.00")
    assert rule == "amount" and [s.text for s in sents if s.id in gold] == ["You paid $2,099.00 today."]
    assert ood.bipia_question("Q: Find the $ value paid to X? If multiple, record all $ values paid.") == (
        "Find the $ value paid to X?"
    )


@needs_data
def test_cisi_and_time_pools_are_document_level() -> None:
    cisi = ood.build_cisi_pool(DATA)
    assert cisi.stats["documents"] == 1460 and len(cisi.questions) == 76
    assert all(q.gold == [] and q.gold_passages for q in cisi.questions)
    time_pool = ood.build_time_pool(DATA)
    assert time_pool.stats["documents"] == 423 and len(time_pool.questions) == 83
    assert time_pool.stats["judged_documents_missing"] == 0
    # query 1 (Diem and the Buddhists): its judged documents are about Diem
    text_of: dict[str, str] = {}
    for s in time_pool.sentences:
        text_of[s.doc_id] = text_of.get(s.doc_id, "") + " " + s.text
    q1 = next(q for q in time_pool.questions if q.id == "1")
    assert all("DIEM" in text_of[d] for d in q1.gold_passages)
    # passages are the engine's windows: several per long TIME article, doc_id groups them
    assert time_pool.stats["passages"] > time_pool.stats["documents"]


@needs_data
def test_faquad_pool_gold_holds_the_answer() -> None:
    pool = ood.build_faquad_pool(DATA)
    assert pool.stats["faquad_questions"] == 900 and len(pool.questions) >= 890
    by_id = {s.id: s.text for s in pool.sentences}
    data = json.loads((DATA / ood.FAQUAD_FILE).read_text(encoding="utf-8"))["data"]
    first_answer = {
        qa["id"]: qa["answers"][0]["text"] for a in data for p in a["paragraphs"] for qa in p["qas"]
    }
    hits = sum(
        any(" ".join(first_answer[q.id].split()[:3]) in by_id[g] for g in q.gold) for q in pool.questions
    )
    assert hits / len(pool.questions) > 0.9  # answers longer than a sentence start in the gold


# ---------------------------------------------------------------------------------------------
# document-level evaluation on a hand-made pool


def _doc_pool(tmp: Path) -> tuple[Path, Path]:
    sentences = [
        PoolSentence("a0", "A#0", "alpha one", "A"),
        PoolSentence("a1", "A#1", "alpha two", "A"),
        PoolSentence("b0", "B#0", "beta one", "B"),
        PoolSentence("c0", "C#0", "gamma one", "C"),
        PoolSentence("c1", "C#0", "gamma two", "C"),
    ]
    questions = [
        PoolQuestion("q0", "first", [], {"B": 1.0}),
        PoolQuestion("q1", "second", [], {"A": 2.0, "C": 1.0}),
        PoolQuestion("q2", "third", ["c1"]),  # sentence-level question in the same pool
    ]
    write_pool(Pool(sentences, questions), tmp)
    return tmp / "sentences.jsonl", tmp / "questions.jsonl"


class FixedRetriever:
    """Returns a fixed sentence ranking per question."""

    name = "fixed"
    median_nnz = 1.0

    def __init__(self, rankings: dict[str, list[int]]):
        self.rankings = rankings

    def search(self, question: str, k: int = 1000) -> np.ndarray:
        return np.asarray(self.rankings[question][:k])

    def search_batch(self, questions, k: int = 1000):
        return [self.search(q, k) for q in questions]


def test_generic_format_round_trips_gold_passages(tmp_path: Path) -> None:
    s_path, q_path = _doc_pool(tmp_path)
    assert read_sentences(s_path)[0].unit == "A"
    qs = read_questions(q_path)
    assert qs[1].gold_passages == {"A": 2.0, "C": 1.0} and qs[2].gold_passages is None
    (tmp_path / "list.jsonl").write_text('{"id": 1, "question": "x", "gold_passages": ["A", "B"]}\n')
    assert read_questions(tmp_path / "list.jsonl")[0].gold_passages == {"A": 1.0, "B": 1.0}


def test_document_level_metrics_rank_units_by_best_sentence(tmp_path: Path) -> None:
    data = ev.load_eval_set(*_doc_pool(tmp_path))
    assert data.doc_level == [True, True, False]
    assert ev.unit_ranking([3, 4, 0, 2, 1], data.units) == ["C", "A", "B"]
    retriever = FixedRetriever(
        {
            "first": [3, 4, 0, 2, 1],  # units C, A, B: B at rank 3
            "second": [4, 1, 0, 2, 3],  # units C, A, B: C (gain 1) then A (gain 2)
            "third": [4, 3, 0, 1, 2],  # sentence c1 at rank 1
        }
    )
    row = ev.measure(retriever, data.questions, data.relevants, units=data.units, doc_level=data.doc_level)
    assert row["mrr@1000"] == pytest.approx(100 * (1 / 3 + 1 + 1) / 3)
    assert row["r@1"] == pytest.approx(100 * 2 / 3)
    ndcg_first = 1 / math.log2(4)
    ndcg_second = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert row["ndcg@10"] == pytest.approx(100 * (ndcg_first + ndcg_second + 1) / 3)


def test_best_combination_leaves_the_set_out() -> None:
    results = {
        "a": {"x": {"mrr@1000": 90.0}, "y": {"mrr@1000": 10.0}},
        "b": {"x": {"mrr@1000": 10.0}, "y": {"mrr@1000": 50.0}},
        "cisi": {"x": {"ndcg@10": 10.0}, "y": {"ndcg@10": 20.0}},
        "squad-dev": {"x": {"mrr@1000": 1.0}, "y": {"mrr@1000": 99.0}},
    }
    best = ood.choose_best(results, ["a", "b", "cisi"], ["x", "y"])
    # a: chosen on b and cisi (y wins); b: chosen on a and cisi (x 50 vs y 15); squad-dev: all OOD sets
    assert best == {"a": "y", "b": "x", "cisi": "x", "squad-dev": "x"}


# ---------------------------------------------------------------------------------------------
# --idf and --hybrid with the shipped bundle on a small real pool


@pytest.fixture(scope="module")
def small_pool(tmp_path_factory) -> tuple[Path, Path]:
    if not (DATA / ood.FAQUAD_FILE).exists():
        pytest.skip(f"shared data not found at {DATA}")
    pool = ood.build_faquad_pool(DATA)
    keep = {s.doc_id for s in pool.sentences[:40]}
    sentences = [s for s in pool.sentences if s.doc_id in keep]
    ids = {s.id for s in sentences}
    questions = [q for q in pool.questions if set(q.gold) <= ids][:20]
    out = tmp_path_factory.mktemp("faquad-small")
    write_pool(Pool(sentences, questions), out)
    return out / "sentences.jsonl", out / "questions.jsonl"


@needs_bundle
def test_idf_weights_question_tokens_like_the_app(small_pool, tmp_path: Path) -> None:
    from engine.index.quantize import idf_weight

    data = ev.load_eval_set(*small_pool)
    encoder = ev.load_sparse_encoder(ood.SHIPPED, threads=1)
    plain = ev.SparcRetriever(
        encoder, data.texts, data.contexts(), bundle_dir=ood.SHIPPED, cache_dir=tmp_path
    )
    with_idf = plain.with_idf()
    assert with_idf.name == "SPARC +IDF" and plain.idf is None
    q = data.questions[0]
    ids = sorted(set(encoder.question_ids(q)))
    m = plain.matrix.tocsc()
    expected = np.zeros(plain.n)
    for t in ids:
        col = m[:, t].toarray().ravel()
        expected += idf_weight(int(np.count_nonzero(col)), plain.n) * col
    assert np.allclose(with_idf.scores(q), expected, rtol=1e-5, atol=1e-5)
    assert np.allclose(plain.scores(q), m[:, ids].toarray().sum(1), rtol=1e-5, atol=1e-5)


@needs_bundle
def test_hybrid_fuses_top_lists_like_the_app(small_pool, tmp_path: Path) -> None:
    data = ev.load_eval_set(*small_pool)
    encoder = ev.load_sparse_encoder(ood.SHIPPED, threads=1)
    sparc = ev.SparcRetriever(
        encoder, data.texts, data.contexts(), bundle_dir=ood.SHIPPED, cache_dir=tmp_path
    )
    bm25 = ev.AppBM25Retriever(data.texts)
    hybrid = ev.HybridRetriever(sparc, bm25, depth=10)
    for q in data.questions[:5]:
        s_idx, s_sc = sparc.top(q, 10)
        s_idx, s_sc = s_idx[s_sc > 0], s_sc[s_sc > 0]  # the app's index returns matching sentences only
        b_idx, b_sc = bm25.top(q, 10)
        ranked = hybrid.search(q)
        assert set(ranked.tolist()) == set(s_idx.tolist()) | set(b_idx.tolist())
        a, b = dict(zip(s_idx.tolist(), s_sc, strict=True)), dict(zip(b_idx.tolist(), b_sc, strict=True))
        fused = {
            i: a.get(i, s_sc.min()) + b.get(i, b_sc.min() if len(b_sc) else 0.0) for i in ranked.tolist()
        }
        values = [fused[i] for i in ranked.tolist()]
        assert values == sorted(values, reverse=True)


@needs_bundle
def test_evaluate_command_adds_idf_and_hybrid_rows(small_pool, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    s_path, q_path = small_pool
    out = tmp_path / "report.json"
    parser = argparse.ArgumentParser()
    ev.add_arguments(parser)  # the evaluate subcommand alone: building the whole CLI imports torch
    rc = ev.run(parser.parse_args(
        [
            "--sentences", str(s_path), "--questions", str(q_path), "--model", str(ood.SHIPPED),
            "--baselines", "bm25", "--idf", "--hybrid", "--threads", "1", "--json", str(out),
        ]
    ))  # fmt: skip
    assert rc == 0
    systems = [r["system"] for r in json.loads(out.read_text())["results"]]
    assert systems == ["BM25", "SPARC", "SPARC +IDF", "SPARC +hybrid", "SPARC +IDF +hybrid"]
