"""The column store behind SentenceIndex.search: exact against the oracle across commits,
segments, merges, deletes and filters; crash consistency with tantivy's commit.

Small segments and a low merge threshold are forced with monkeypatch so that a few hundred
sentences exercise dense columns, sparse postings, deletion files and merges.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from bench.synthetic import VectorModel, sample_questions
from engine.index import columns
from engine.index.oracle import BruteForceOracle
from engine.index.quantize import Quantizer
from engine.index.sentences import IndexFilters, SentenceIndex, SentenceRecord
from engine.model.sparse import SparseVector

REPO = Path(__file__).resolve().parents[1]


def _batch(i: int, n: int = 40) -> list[SparseVector]:
    return VectorModel.zipf(seed=3, median_nnz=300).sample(n, seed=100 + i)


def _records(i: int, n: int = 40) -> list[SentenceRecord]:
    return [
        SentenceRecord(doc_key=f"b{i}-d{j // 10}", text=f"s{j}", kind=("pdf", "mail")[j % 2])
        for j in range(n)
    ]


QUANT = Quantizer.fit(np.concatenate([v.weights for v in _batch(0)]))


def _check(idx: SentenceIndex, live: dict[int, SparseVector], queries, mask_of=None, filters=None) -> None:
    ids = sorted(live)
    oracle = BruteForceOracle.from_vectors(ids, [live[i] for i in ids], QUANT)
    assert idx.num_sentences == len(ids)
    mask = None if mask_of is None else np.array([mask_of(i) for i in ids])
    for q in queries:
        idf = idx.idf(q)
        assert idf == oracle.idf(q)  # live document frequencies, deleted rows excluded
        for w in (None, idf):
            hits = idx.search(q, 25, idf=w, filters=filters)
            o_ids, o_sc = oracle.score(q, w, 25, mask=mask)
            assert [h.sentence_id for h in hits] == o_ids.tolist()
            assert [h.score for h in hits] == o_sc.tolist()


def test_commits_deletes_and_merges_match_oracle(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(columns, "MAX_SEGMENTS", 3)
    monkeypatch.setattr(columns, "MERGE_WIDTH", 3)
    idx = SentenceIndex.create(tmp_path / "ix", QUANT)
    reader = SentenceIndex.open(tmp_path / "ix")
    live: dict[int, SparseVector] = {}
    queries = sample_questions(_batch(0), 6, seed=1)
    for i in range(9):
        vecs = _batch(i)
        ids = idx.add(_records(i), vecs)
        live.update(zip(ids, vecs, strict=True))
        if i % 3 == 2:  # a committed document, a sentence, and one added in this batch
            for sid in idx.document_sentence_ids(f"b{i - 1}-d1"):
                live.pop(sid)
            idx.delete_document(f"b{i - 1}-d1")
            idx.delete_sentence(ids[0])
            live.pop(ids[0])
            idx.delete_document(f"b{i}-d3")
            for sid in ids[30:40]:
                live.pop(sid)
        idx.commit()
        assert len(idx._view.columns.segments) <= 3
        reader.reload()
        _check(reader, live, queries)
    assert any(s.deleted.size for s in idx._view.columns.segments)  # deletions kept as deletion files
    # Rows of a document deleted down to more than half are compacted away.
    for j in range(4):
        for sid in idx.document_sentence_ids(f"b8-d{j}"):
            live.pop(sid)
        idx.delete_document(f"b8-d{j}")
    idx.commit()
    assert all(s.deleted.size <= 0.5 * s.n for s in idx._view.columns.segments)
    _check(idx, live, queries)
    idx.close()
    _check(SentenceIndex.open(tmp_path / "ix"), live, queries)


def test_filters_across_segments_keep_scores(tmp_path: Path) -> None:
    idx = SentenceIndex.create(tmp_path / "ix", QUANT)
    live: dict[int, SparseVector] = {}
    kind: dict[int, str] = {}
    for i in range(3):
        recs, vecs = _records(i), _batch(i)
        ids = idx.add(recs, vecs)
        live.update(zip(ids, vecs, strict=True))
        kind.update({sid: r.kind for sid, r in zip(ids, recs, strict=True)})
        idx.commit()
    idx.delete_document("b1-d0")
    for sid in idx.document_sentence_ids("b1-d0"):
        live.pop(sid)
    idx.commit()
    queries = sample_questions(_batch(0), 5, seed=2)
    _check(idx, live, queries, lambda s: kind[s] == "mail", IndexFilters(kinds=["mail"]))
    _check(idx, live, queries, lambda s: False, IndexFilters(kinds=["nothing"]))
    keys = ["b0-d1", "b2-d3"]
    allowed = {s for k in keys for s in idx.document_sentence_ids(k)}
    _check(idx, live, queries, lambda s: s in allowed, IndexFilters(doc_keys=keys))
    idx.close()


def _sparse_batch(i: int, n: int = 60) -> list[SparseVector]:
    """FLOPS-like vectors: 2-8 non-zeros from 40 tokens and 4 weights, so a question leaves
    most rows at score 0 and many rows tied (what the top-k selection must get right)."""
    rng = np.random.default_rng(500 + i)
    out = []
    for _ in range(n):
        ids = rng.choice(np.arange(2000, 2040, dtype=np.int32), size=int(rng.integers(2, 9)), replace=False)
        out.append(SparseVector(ids, rng.choice(np.float32([0.5, 1.0, 1.5, 2.0]), size=ids.size)))
    return out


def test_top_rows_keeps_every_tie_of_the_kth_positive_score() -> None:
    """Small arrays, and large ones with few distinct scores or a long tail, where the k-th
    score is first guessed from a sample of the rows."""
    rng = np.random.default_rng(7)
    cases = [(rng.choice([0, 0, 0, 0, 1, 2, 3, 5], size=int(rng.integers(0, 60))), int(rng.integers(0, 30))) for _ in range(200)]
    for _ in range(60):
        n = int(rng.integers(2000, 20000))
        tail = np.minimum(rng.zipf(1.5, n), 10**6) * (rng.random(n) < 0.3)
        few = rng.choice([0, 0, 0, 7, 8, 9], size=n)
        for scores in (tail, few, np.sort(tail)[::-1]):
            cases.append((scores, int(rng.choice([1, 2, 10, 100, 250]))))
    # Every sampled row scores high but fewer than k rows do: the guess is too high and
    # every positive row is partitioned instead.
    fooled = np.ones(20000, np.int32)
    fooled[:: columns.SAMPLE_STEP] = 100
    cases.append((fooled, 1000))
    for scores, k in cases:
        scores = np.asarray(scores).astype(np.int32)
        positive = scores[scores > 0]
        if k == 0:
            want = np.zeros(0, np.int64)
        elif positive.size <= k:
            want = np.flatnonzero(scores > 0)
        else:
            kth = np.sort(positive)[::-1][k - 1]
            want = np.flatnonzero(scores >= kth)
        assert columns.top_rows(scores, k).tolist() == want.tolist()


def test_sparse_vectors_with_filters_and_deletes_match_oracle(tmp_path: Path) -> None:
    """Mostly-zero scores, ties at the cut, top k above the number of positive rows, filters
    over several segments with deleted rows: ids and scores equal the oracle's."""
    idx = SentenceIndex.create(tmp_path / "ix", Quantizer(scale=2.0 / 255))
    live: dict[int, SparseVector] = {}
    kind: dict[int, str] = {}
    key: dict[int, str] = {}
    for i in range(4):
        recs, vecs = _records(i, 60), _sparse_batch(i)
        ids = idx.add(recs, vecs)
        live.update(zip(ids, vecs, strict=True))
        kind.update({s: r.kind for s, r in zip(ids, recs, strict=True)})
        key.update({s: r.doc_key for s, r in zip(ids, recs, strict=True)})
        idx.commit()
    for doc in ("b1-d2", "b3-d0"):
        for sid in idx.document_sentence_ids(doc):
            live.pop(sid)
        idx.delete_document(doc)
    idx.commit()
    assert len(idx._view.columns.segments) == 4 and any(s.deleted.size for s in idx._view.columns.segments)
    ids = sorted(live)
    oracle = BruteForceOracle.from_vectors(ids, [live[i] for i in ids], idx.quantizer)
    cases = [
        (None, None),
        (IndexFilters(kinds=["mail"]), np.array([kind[s] == "mail" for s in ids])),
        (IndexFilters(doc_keys=["b1-d2", "b2-d1"]), np.array([key[s] in ("b1-d2", "b2-d1") for s in ids])),
        (IndexFilters(kinds=["nothing"]), np.zeros(len(ids), bool)),
    ]
    tied = 0
    for q in ([2000], [2001, 2002], [2003, 2004, 2005, 2003], [2039, 2100]):
        for filters, mask in cases:
            for k in (1, 3, 25, 500):
                for w in (None, idx.idf(q)):
                    hits = idx.search(q, k, idf=w, filters=filters)
                    o_ids, o_sc = oracle.score(q, w, k, mask=mask)
                    assert [h.sentence_id for h in hits] == o_ids.tolist()
                    assert [h.score for h in hits] == o_sc.tolist()
                    tied += len(o_sc) > 1 and o_sc[-1] == o_sc[-2]
    assert tied > 20  # the cases do cut through ties
    idx.close()


def test_vocabulary_larger_than_wordpiece(tmp_path: Path) -> None:
    """Token ids past 30,522 (added vocabulary) are stored and scored like any other."""
    vecs = _batch(0, 80)
    extra = SparseVector(np.array([30600, 2000], np.int32), np.array([3.0, 1.0], np.float32))
    with SentenceIndex.create(tmp_path / "ix", QUANT) as idx:
        ids = idx.add(_records(0, 80) + [SentenceRecord(doc_key="new", text="x")], vecs + [extra])
        idx.commit()
        hits = idx.search([30600], 5)
        assert [h.sentence_id for h in hits] == [ids[-1]]
        oracle = BruteForceOracle.from_vectors(ids, vecs + [extra], QUANT, vocab_size=30601)
        for q in [[30600, 2000], *sample_questions(vecs, 3, seed=4)]:
            assert [h.sentence_id for h in idx.search(q, 20)] == oracle.score(q, top_k=20)[0].tolist()


# A writer that adds batch 1 and deletes document b0-d2 over a committed batch 0, then kills
# itself (SIGKILL) at one step of its commit: after the pending column state is written but
# before tantivy commits ("prepared"), or after tantivy committed, before the column
# manifest ("tantivy-committed").
KILLED_IN_COMMIT = textwrap.dedent(
    """
    import os, signal, sys
    from engine.index import columns
    from engine.index.sentences import SentenceIndex
    from tests.test_columns import _batch, _records
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    idx = SentenceIndex.open(sys.argv[1], writable=True)
    idx.add(_records(1), _batch(1))
    idx.delete_document("b0-d2")
    if sys.argv[2] == "prepared":
        idx._columns.prepare(idx._view.columns)  # what commit() does before tantivy commits
        die()
    columns.ColumnStore.finish = die  # the step right after tantivy's commit
    idx.commit()
    print("not killed", flush=True)
    """
)


def _killed_in_commit(path: Path, step: str) -> tuple[list[int], list[int]]:
    """Batch 0 committed, then a real writer killed at ``step``; (batch 0's ids, b0-d2's ids)."""
    idx = SentenceIndex.create(path, QUANT)
    ids = idx.add(_records(0), _batch(0))
    idx.commit()
    gone = idx.document_sentence_ids("b0-d2")
    idx.close()
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_IN_COMMIT, str(path), step],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return ids, gone


def test_uncommitted_column_files_are_orphans(tmp_path: Path) -> None:
    """Column files written for a commit that tantivy never made are ignored and removed."""
    ids, _gone = _killed_in_commit(tmp_path / "ix", "prepared")
    root = tmp_path / "ix" / columns.COLUMNS_DIR
    assert (root / columns.PENDING).exists() and len(list(root.glob("seg-*"))) == 2
    live = dict(zip(ids, _batch(0), strict=True))
    queries = sample_questions(_batch(0), 4, seed=5)
    _check(SentenceIndex.open(tmp_path / "ix"), live, queries)  # readers ignore the orphans
    w = SentenceIndex.open(tmp_path / "ix", writable=True)
    assert not (root / columns.PENDING).exists()
    assert len(list(root.glob("seg-*"))) == 1 and not list(root.glob("del-*"))
    _check(w, live, queries)
    w.close()


def test_crash_after_tantivy_commit_before_manifest(tmp_path: Path) -> None:
    """tantivy committed, the process died before the manifest: the pending state is live."""
    ids, gone = _killed_in_commit(tmp_path / "ix", "tantivy-committed")
    assert (tmp_path / "ix" / columns.COLUMNS_DIR / columns.PENDING).exists()
    reader = SentenceIndex.open(tmp_path / "ix")
    new = sorted(sid for d in range(4) for sid in reader.document_sentence_ids(f"b1-d{d}"))  # in order
    assert len(new) == 40 and not set(new) & set(ids)
    live = dict(zip(ids + new, _batch(0) + _batch(1), strict=True))
    for sid in gone:
        live.pop(sid)
    queries = sample_questions(_batch(1), 4, seed=6)
    _check(reader, live, queries)
    w = SentenceIndex.open(tmp_path / "ix", writable=True)
    assert not (tmp_path / "ix" / columns.COLUMNS_DIR / columns.PENDING).exists()
    _check(w, live, queries)
    w.close()


def test_kill_9_while_committing_keeps_stores_consistent(tmp_path: Path) -> None:
    """A writer killed at random moments of a commit loop: after each kill, the column
    store holds exactly the sentences tantivy committed."""
    path = tmp_path / "ix"
    SentenceIndex.create(path, QUANT).close()
    writer = textwrap.dedent(
        f"""
        import sys
        from tests.test_columns import _batch, _records
        from engine.index.sentences import SentenceIndex
        idx = SentenceIndex.open({str(path)!r}, writable=True)
        start = int(sys.argv[1])
        for i in range(start, start + 1000):
            idx.add(_records(i), _batch(i))
            idx.delete_document(f"b{{i - 2}}-d0")
            idx.commit()
            print(i, flush=True)
        """
    )
    rng = np.random.default_rng(0)
    start = 0
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", writer, str(start)], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one commit made
        time.sleep(float(rng.uniform(0.0, 0.4)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        idx = SentenceIndex.open(path, writable=True)
        # Rebuild what tantivy says is live from the deterministic batches.
        live: dict[int, SparseVector] = {}
        last = -1
        for i in range(0, start + 1000):
            for j, vec in enumerate(_batch(i)):
                key = _records(i)[j].doc_key
                ids = idx.document_sentence_ids(key)
                if ids:
                    last = i
                    live[ids[j % 10]] = vec
            if i > last + 3:
                break
        _check(idx, live, sample_questions(_batch(last), 3, seed=last))
        idx.close()
        start = last + 1
