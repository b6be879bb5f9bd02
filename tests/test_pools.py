"""MultiReQA pools: synthetic files for the rules, the real data (skipped when absent) for counts."""

from __future__ import annotations

import functools
import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from trainer.pools import (
    DATA_DIR,
    POOLS,
    build_pool,
    contexts_of,
    main,
    multireqa_spans,
    read_mrqa,
    read_questions,
    read_sentences,
    splitter_agreement,
)


def _write_gz(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def _qa(qid: str, question: str, spans: list[tuple[int, int]]) -> dict:
    return {
        "qid": qid,
        "question": question,
        "detected_answers": [{"text": "", "char_spans": [list(s) for s in spans]}],
    }


@pytest.fixture()
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    ctx1 = "Alpha is first. Beta is second. Gamma is third."
    ctx2 = "Delta lives here. Beta is second."
    #       0123456789012345678901234567890123456789012345
    mrqa = [
        {"header": {"dataset": "Tiny"}},
        {
            "context": ctx1,
            "qas": [
                _qa("q1", "What is first?", [(0, 4)]),  # Alpha -> sentence 0
                _qa("q2", "What is  second?", [(16, 19), (16, 19)]),  # Beta -> sentence 1
                _qa("q3", "Where is gamma?", [(32, 36)]),
            ],
        },
        {
            "context": ctx2,
            "qas": [
                _qa("q4", "What is second? ", [(23, 26)]),  # same question as q2 after whitespace
                _qa("q5", "Who lives here?", [(0, 4), (6, 10)]),
            ],
        },
    ]
    cands = [
        {"candidate_id": "Tiny_q1/q2/q3/_0", "response_start": 0, "response_end": 15},
        {"candidate_id": "Tiny_q1/q2/q3/_1", "response_start": 16, "response_end": 31},
        {"candidate_id": "Tiny_q1/q2/q3/_2", "response_start": 32, "response_end": 47},
        {"candidate_id": "Tiny_q4/q5/_0", "response_start": 0, "response_end": 17},
        {"candidate_id": "Tiny_q4/q5/_1", "response_start": 18, "response_end": 33},
    ]
    assert ctx1[16:31] == "Beta is second." and ctx2[18:33] == "Beta is second."
    return _write_gz(tmp_path / "mrqa.jsonl.gz", mrqa), _write_gz(tmp_path / "cands.json.gz", cands)


def test_rules_on_synthetic_pool(tiny):
    pool = build_pool(*tiny)
    assert [s.text for s in pool.sentences] == [
        "Alpha is first.",
        "Beta is second.",
        "Gamma is third.",
        "Delta lives here.",
        "Beta is second.",
    ]
    assert [s.id for s in pool.sentences] == ["q1_0", "q1_1", "q1_2", "q4_0", "q4_1"]
    assert [s.passage_id for s in pool.sentences] == ["q1"] * 3 + ["q4"] * 2
    qs = {q.question: q for q in pool.questions}
    # q2 and q4 merge (whitespace-normalised), keep the first qid, and have both golds
    assert len(pool.questions) == 4
    assert qs["What is second?"].id == "q2"
    assert qs["What is second?"].gold == ["q1_1", "q4_1"]
    assert qs["What is first?"].gold == ["q1_0"]
    assert qs["Who lives here?"].gold == ["q4_0"]
    assert pool.stats["merged_away"] == 1
    assert contexts_of(pool.sentences)[1] == "Alpha is first. Gamma is third."
    assert contexts_of(pool.sentences)[3] == "Beta is second."


def test_identical_text_counts_as_gold(tmp_path):
    ctx = "Same words here."
    mrqa = [
        {"context": ctx, "qas": [_qa("a", "Which words?", [(0, 3)])]},
        {"context": ctx, "qas": [_qa("b", "What is here?", [(11, 14)])]},
    ]
    cands = [
        {"candidate_id": "X_a/_0", "response_start": 0, "response_end": 16},
        {"candidate_id": "X_b/_0", "response_start": 0, "response_end": 16},
    ]
    pool = build_pool(_write_gz(tmp_path / "m.gz", mrqa), _write_gz(tmp_path / "c.gz", cands))
    assert len(pool.sentences) == 2
    assert all(q.gold == ["a_0", "b_0"] for q in pool.questions)


def test_command_writes_generic_format(tiny, tmp_path):
    data = tmp_path / "data"
    for m, c in POOLS.values():
        for src, rel in ((tiny[0], m), (tiny[1], c)):
            (data / rel).parent.mkdir(parents=True, exist_ok=True)
            (data / rel).write_bytes(src.read_bytes())
    out = tmp_path / "out"
    assert main(["--out", str(out), "--data", str(data)]) == 0
    for name in POOLS:
        sents = read_sentences(out / name / "sentences.jsonl")
        qs = read_questions(out / name / "questions.jsonl")
        assert len(sents) == 5 and len(qs) == 4
        row = json.loads((out / name / "questions.jsonl").read_text().splitlines()[0])
        assert set(row) == {"id", "question", "gold"}
    assert "splitter_agreement" in json.loads((out / "pools.json").read_text())["squad-dev"]


def test_splitter_agreement_counts():
    text = "One two. Three four. Five."
    a = splitter_agreement([(text, [(0, 8), (9, 20), (21, 26)])])
    assert a["exact_sentences"] == 1.0 and a["boundary_precision"] == 1.0 and a["boundary_recall"] == 1.0
    b = splitter_agreement([(text, [(0, 20), (21, 26)])])  # reference misses one boundary
    assert b["exact_sentences"] == 0.5
    assert b["boundary_recall"] == 1.0 and b["boundary_precision"] == 0.5


# ---------------------------------------------------------------------------------------------
# real data


def _paths(name: str) -> tuple[Path, Path]:
    mrqa, cands = (DATA_DIR / p for p in POOLS[name])
    if not (mrqa.exists() and cands.exists()):
        pytest.skip(f"MultiReQA/MRQA data not found under {DATA_DIR} (see ../shared/data/README.md)")
    return mrqa, cands


# several checks walk the same files: each is read once per run
_examples = functools.cache(read_mrqa)
_spans = functools.cache(multireqa_spans)


@pytest.fixture(scope="module")
def squad_pool():
    return build_pool(*_paths("squad-dev"))


@pytest.fixture(scope="module")
def re_pool():
    return build_pool(*_paths("relation-extraction"))


def _check_pool(pool, mrqa_path, cands_path):
    """Every answer span: the sentence it starts in is gold for its (merged) question, and that
    sentence's text contains the answer text unless the span runs past the sentence's end."""
    by_id = {s.id: s for s in pool.sentences}
    assert len(by_id) == len(pool.sentences)
    passages: dict[str, list] = defaultdict(list)
    for s in pool.sentences:
        passages[s.passage_id].append(s)
    # MultiReQA contexts come in the same order as the pool's passages
    spans_of_context = {}
    for (context, spans), pid in zip(_spans(mrqa_path, cands_path), passages, strict=True):
        assert [context[a:b] for a, b in spans] == [s.text for s in passages[pid]]
        spans_of_context[context] = [(a, b, s.id) for (a, b), s in zip(spans, passages[pid], strict=True)]
    gold_of = {q.question: set(q.gold) for q in pool.questions}
    contained = crossing = 0
    for ex in _examples(mrqa_path):
        spans = spans_of_context[ex["context"]]
        for qa in ex["qas"]:
            gold = gold_of[" ".join(qa["question"].split())]
            for ans in qa["detected_answers"]:
                for a, b in ans["char_spans"]:
                    start, end, sid = next((s, e, i) for s, e, i in spans if s <= a < e + 1)
                    answer = ex["context"][a : b + 1]
                    gold_texts = {by_id[g].text for g in gold}
                    assert sid in gold or by_id[sid].text in gold_texts, (qa["qid"], answer)
                    if b < end:
                        assert answer in by_id[sid].text
                        contained += 1
                    else:
                        crossing += 1
    return contained, crossing


@pytest.mark.needs_data
def test_squad_dev_pool(squad_pool):
    pool = squad_pool
    assert len(pool.sentences) == 10642
    assert len({s.passage_id for s in pool.sentences}) == 2067
    assert pool.stats["mrqa_questions"] == 10507
    assert len(pool.questions) == 10471
    assert pool.stats["questions_without_gold"] == 0
    assert pool.stats["spans_outside_sentences"] == 0
    contained, crossing = _check_pool(pool, *_paths("squad-dev"))
    assert crossing <= 150 and contained > 17000  # counts every annotator's span (75 distinct cross)


def _check_merged(pool, mrqa_path) -> int:
    """Every occurrence of a merged question contributes a gold sentence from its own passage
    that holds its answer."""
    by_id = {s.id: s for s in pool.sentences}
    by_question = {q.question: q for q in pool.questions}
    occurrences: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for ex in _examples(mrqa_path):
        for qa in ex["qas"]:
            occurrences[" ".join(qa["question"].split())].append((ex, qa))
    merged = {k: v for k, v in occurrences.items() if len(v) > 1}
    for question, occ in merged.items():
        golds = [by_id[g] for g in by_question[question].gold]
        for ex, qa in occ:
            qids = {x["qid"] for x in ex["qas"]}  # a passage id is the first qid of its context
            a, b = qa["detected_answers"][0]["char_spans"][0]
            answer = ex["context"][a : b + 1]
            # (a span that runs past its sentence: the sentence ends with the answer's head)
            assert any(
                g.passage_id in qids
                and (answer in g.text or any(g.text.endswith(answer[:j]) for j in range(3, len(answer))))
                for g in golds
            ), (question, answer)
    return len(merged)


@pytest.mark.needs_data
def test_squad_merged_questions_have_all_golds(squad_pool):
    assert _check_merged(squad_pool, _paths("squad-dev")[0]) == 36


@pytest.mark.needs_data
def test_relation_extraction_merged_questions_have_all_golds(re_pool):
    assert _check_merged(re_pool, _paths("relation-extraction")[0]) == 806


@pytest.mark.needs_data
def test_relation_extraction_pool(re_pool):
    pool = re_pool
    assert len(pool.sentences) == 3301
    assert pool.stats["mrqa_questions"] == 2948
    assert len(pool.questions) == 2122
    assert pool.stats["questions_without_gold"] == 0
    contained, crossing = _check_pool(pool, *_paths("relation-extraction"))
    assert crossing <= 10 and contained > 3000


@pytest.mark.needs_data
def test_multireqa_offsets_are_end_exclusive():
    contexts = _spans(*_paths("squad-dev"))
    for context, spans in contexts[:200]:
        last_end = spans[-1][1]
        assert context[:last_end].rstrip() == context.rstrip()
        for s, e in spans:
            assert not context[s].isspace() and not context[e - 1].isspace()
