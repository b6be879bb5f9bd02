"""MultiReQA evaluation pools in the generic evaluation format (SPARC.md §4).

Generic format (one directory per pool, see docs/evaluation.md):

- ``sentences.jsonl``: ``{"id", "passage_id", "text"}``, passages in order and the sentences
  of a passage in reading order. The context of a sentence is the other sentences of the same
  ``passage_id``, in order, joined with single spaces.
- ``questions.jsonl``: ``{"id", "question", "gold": [sentence ids]}``.
- Document-level sets (CISI, TIME) give a question ``"gold_passages": {unit id: grade}`` (or
  a list, grade 1) instead of ``gold``; the unit of a sentence is its optional ``doc_id``,
  else its ``passage_id``. The evaluator ranks units by their best sentence.

How a MultiReQA pool is rebuilt (the rules of MultiReQA / ReQA's ``squad_eval.py``):

- The pool is exactly the MultiReQA candidate sentences: ``candidates.json.gz`` gives, per
  MRQA context, character offsets ``[response_start, response_end)`` (end exclusive: the last
  sentence of a context ends at ``len(context)``); a sentence's text is that slice, trimmed.
  ``candidate_id`` is ``<Dataset>_<qid>/<qid>/.../_<k>``: the MRQA qids sharing the context,
  then the sentence index.
- A question's gold sentence for one answer is the sentence holding the answer's first
  character (MRQA ``detected_answers[].char_spans``, inclusive ends); every span of every
  detected answer contributes. A span that runs past its sentence still counts for the
  sentence it starts in (counted in ``stats["spans_crossing_boundary"]``).
- Identical questions are merged: same string after whitespace normalisation
  (``" ".join(q.split())``); the merged question's gold is the union of all its golds, so every
  answer sentence counts. ReQA keys ranks by the raw question string; normalising whitespace
  merges a few more (SQuAD dev: 10,478 raw-distinct, 10,471 normalised).
- A pool sentence whose text is identical to a gold sentence's text is gold too (ReQA looks
  answers up by sentence text). This matters for RelationExtraction, whose MRQA file repeats
  contexts, so MultiReQA holds several copies of the same sentence.

``python -m trainer.pools --out runs/pools`` writes ``squad-dev/`` and ``relation-extraction/``
and prints how well ``engine.ingest.segment.split_sentences`` reproduces the MultiReQA boundaries.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

DATA_DIR = Path(os.environ.get("SPARCDESK_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_OUT = Path("runs/pools")

# name -> (MRQA file, MultiReQA candidates file), relative to DATA_DIR
POOLS: dict[str, tuple[str, str]] = {
    "squad-dev": ("squad/dev-v1.1.mrqa.jsonl.gz", "multireqa/data/dev/SQuAD/candidates.json.gz"),
    "relation-extraction": (
        "mrqa/RelationExtraction.jsonl.gz",
        "multireqa/data/test/RelationExtraction/candidates.json.gz",
    ),
}


class PassageSentence(Protocol):
    """Anything with a passage id and a text: pool sentences and the trainer's sentences."""

    @property
    def passage_id(self) -> Any: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class PoolSentence:
    """``doc_id`` (optional) groups passages into the unit a document-level set judges."""

    id: str
    passage_id: str
    text: str
    doc_id: str | None = None

    @property
    def unit(self) -> str:
        """What ``gold_passages`` refers to: the document when known, else the passage."""
        return self.doc_id if self.doc_id is not None else self.passage_id


@dataclass(frozen=True)
class PoolQuestion:
    """``gold`` lists sentence ids; ``gold_passages`` (document-level) maps unit ids to grades."""

    id: str
    question: str
    gold: list[str]
    gold_passages: dict[str, float] | None = None


@dataclass
class Pool:
    sentences: list[PoolSentence]
    questions: list[PoolQuestion]
    stats: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# generic format I/O


def _open_text(path: Path):
    path = Path(path)
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def read_jsonl(path: str | Path) -> list[dict]:
    with _open_text(Path(path)) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_sentences(path: str | Path) -> list[PoolSentence]:
    """``sentences.jsonl``; ids are kept as strings (ints in the file are accepted)."""
    return [
        PoolSentence(
            str(r["id"]),
            str(r["passage_id"]),
            r["text"],
            str(r["doc_id"]) if r.get("doc_id") is not None else None,
        )
        for r in read_jsonl(path)
    ]


def _grades(value: Any) -> dict[str, float] | None:
    """``gold_passages`` as a mapping: a list means grade 1 for each listed unit."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {str(k): float(v) for k, v in value.items()}
    return {str(k): 1.0 for k in value}


def read_questions(path: str | Path) -> list[PoolQuestion]:
    return [
        PoolQuestion(
            str(r["id"]),
            r["question"],
            [str(g) for g in r.get("gold") or []],
            _grades(r.get("gold_passages")),
        )
        for r in read_jsonl(path)
    ]


def _sentence_row(s: PoolSentence) -> dict:
    row = {"id": s.id, "passage_id": s.passage_id, "text": s.text}
    if s.doc_id is not None:
        row["doc_id"] = s.doc_id
    return row


def _question_row(q: PoolQuestion) -> dict:
    row: dict[str, Any] = {"id": q.id, "question": q.question, "gold": q.gold}
    if q.gold_passages is not None:
        row["gold_passages"] = q.gold_passages
    return row


def write_pool(pool: Pool, out_dir: str | Path) -> None:
    out_dir = Path(out_dir)
    write_jsonl(out_dir / "sentences.jsonl", (_sentence_row(s) for s in pool.sentences))
    write_jsonl(out_dir / "questions.jsonl", (_question_row(q) for q in pool.questions))


def contexts_of(sentences: Sequence[PassageSentence]) -> list[str]:
    """For every sentence, the other sentences of its passage in order, joined with spaces."""
    by_passage: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sentences):
        by_passage[s.passage_id].append(i)
    contexts = [""] * len(sentences)
    for members in by_passage.values():
        for i in members:
            contexts[i] = " ".join(sentences[j].text for j in members if j != i)
    return contexts


def normalize_question(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# MultiReQA


def read_mrqa(path: str | Path) -> list[dict]:
    """MRQA examples (one context with its questions each), without the header line."""
    rows = read_jsonl(path)
    return [r for r in rows if "header" not in r]


def read_candidates(path: str | Path) -> dict[tuple[str, ...], list[tuple[int, int, int]]]:
    """MultiReQA candidates grouped by context: qids -> [(k, start, end_exclusive)] sorted by k."""
    groups: dict[tuple[str, ...], list[tuple[int, int, int]]] = defaultdict(list)
    for row in read_jsonl(path):
        head, k = row["candidate_id"].rsplit("/_", 1)
        qids = tuple(head.split("_", 1)[1].split("/"))
        groups[qids].append((int(k), int(row["response_start"]), int(row["response_end"])))
    for spans in groups.values():
        spans.sort()
        if [k for k, _, _ in spans] != list(range(len(spans))):
            raise ValueError(f"MultiReQA sentence indices are not 0..n-1 for context {spans}")
    return dict(groups)


def _groups_in_file_order(candidates: dict, qid_to_example: dict[str, int]) -> list:
    return sorted(candidates.items(), key=lambda kv: min(qid_to_example[q] for q in kv[0]))


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _place_sentences(
    examples: list[dict], candidates: dict, qid_to_example: dict[str, int]
) -> tuple[list[PoolSentence], dict[int, list[tuple[int, int, str]]]]:
    """The pool's sentences (the trimmed MultiReQA spans, contexts in file order) and per MRQA
    example the ``(start, end_exclusive, sentence id)`` of its passage's sentences."""
    sentences: list[PoolSentence] = []
    passage_of_example: dict[int, list[tuple[int, int, str]]] = {}
    for qids, spans in _groups_in_file_order(candidates, qid_to_example):
        idx = {qid_to_example[q] for q in qids}
        if len({examples[i]["context"] for i in idx}) != 1:
            raise ValueError(f"MultiReQA context group {qids[:3]} maps to different MRQA contexts")
        context = examples[min(idx)]["context"]
        passage_id = qids[0]
        placed: list[tuple[int, int, str]] = []
        for k, start, end in spans:
            if not (0 <= start <= end <= len(context)):
                raise ValueError(f"span {start}:{end} outside context of {passage_id}")
            s, e = _trim(context, start, end)
            sid = f"{passage_id}_{k}"
            sentences.append(PoolSentence(sid, passage_id, context[s:e]))
            placed.append((start, end, sid))
        for i in idx:
            passage_of_example[i] = placed
    return sentences, passage_of_example


def _answer_sentences(qa: dict, placed: list[tuple[int, int, str]], counts: dict[str, int]) -> set[str]:
    """The sentences holding the starts of a question's answer spans; ``counts`` the spans, those
    crossing a sentence boundary and those outside every sentence."""
    spans = {tuple(sp) for ans in qa.get("detected_answers", []) for sp in ans["char_spans"]}
    gold: set[str] = set()
    for a_start, a_end_incl in sorted(spans):
        counts["answer_spans"] += 1
        hit = next(((s, e, sid) for s, e, sid in placed if s <= a_start < e), None)
        if hit is None:
            counts["spans_outside_sentences"] += 1
            continue
        if a_end_incl >= hit[1]:
            counts["spans_crossing_boundary"] += 1
        gold.add(hit[2])
    return gold


def _merged_questions(
    examples: list[dict], passage_of_example: dict[int, list[tuple[int, int, str]]], counts: dict[str, int]
) -> dict[str, dict]:
    """Questions by normalised text (the first one's id, the union of their gold sentences, how
    many were merged); ``counts`` the MRQA questions and those whose context has no passage."""
    merged: dict[str, dict] = {}
    for i, ex in enumerate(examples):
        placed = passage_of_example.get(i)
        for qa in ex["qas"]:
            counts["mrqa_questions"] += 1
            if placed is None:
                counts["questions_without_passage"] += 1
                continue
            gold = _answer_sentences(qa, placed, counts)
            key = normalize_question(qa["question"])
            entry = merged.setdefault(key, {"id": qa["qid"], "gold": set(), "n": 0})
            entry["gold"] |= gold
            entry["n"] += 1
    return merged


def _pool_questions(
    merged: dict[str, dict],
    sentences: list[PoolSentence],
    identical_text_is_gold: bool,
    counts: dict[str, int],
) -> list[PoolQuestion]:
    """The merged questions with gold, their gold in pool order (with every sentence of identical
    text when ``identical_text_is_gold``); ``counts`` the golds so added and the questions left out."""
    by_text: dict[str, list[str]] = defaultdict(list)
    for s in sentences:
        by_text[s.text].append(s.id)
    order = {s.id: i for i, s in enumerate(sentences)}
    questions: list[PoolQuestion] = []
    for text, entry in merged.items():
        gold = set(entry["gold"])
        if identical_text_is_gold:
            for sid in list(gold):
                gold.update(by_text[sentences[order[sid]].text])
        counts["gold_added_by_identical_text"] += len(gold) - len(entry["gold"])
        if not gold:
            counts["questions_without_gold"] += 1
            continue
        questions.append(PoolQuestion(entry["id"], text, sorted(gold, key=order.__getitem__)))
    return questions


def build_pool(
    mrqa_path: str | Path, candidates_path: str | Path, identical_text_is_gold: bool = True
) -> Pool:
    """Rebuild a MultiReQA pool from the MRQA file and the MultiReQA sentence boundaries.

    ``identical_text_is_gold=False`` keeps only the sentences the answer spans point at
    (for measuring what the ReQA text-lookup rule changes).
    """
    examples = read_mrqa(mrqa_path)
    candidates = read_candidates(candidates_path)
    qid_to_example: dict[str, int] = {}
    for i, ex in enumerate(examples):
        for qa in ex["qas"]:
            qid_to_example[qa["qid"]] = i
    sentences, passage_of_example = _place_sentences(examples, candidates, qid_to_example)
    counts: dict[str, int] = defaultdict(int)
    merged = _merged_questions(examples, passage_of_example, counts)
    questions = _pool_questions(merged, sentences, identical_text_is_gold, counts)
    stats = {
        "passages": len(candidates),
        "sentences": len(sentences),
        "mrqa_questions": counts["mrqa_questions"],
        "questions": len(questions),
        "merged_away": counts["mrqa_questions"] - counts["questions_without_passage"] - len(merged),
        "merged_questions": sum(1 for e in merged.values() if e["n"] > 1),
        "answer_spans": counts["answer_spans"],
        "spans_crossing_boundary": counts["spans_crossing_boundary"],
        "spans_outside_sentences": counts["spans_outside_sentences"],
        "questions_without_passage": counts["questions_without_passage"],
        "questions_without_gold": counts["questions_without_gold"],
        "gold_added_by_identical_text": counts["gold_added_by_identical_text"],
        "questions_with_several_golds": sum(1 for q in questions if len(q.gold) > 1),
    }
    return Pool(sentences, questions, stats)


def multireqa_spans(
    mrqa_path: str | Path, candidates_path: str | Path
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Every MultiReQA context with its trimmed sentence spans ``(start, end_exclusive)``."""
    examples = read_mrqa(mrqa_path)
    qid_to_example = {qa["qid"]: i for i, ex in enumerate(examples) for qa in ex["qas"]}
    out = []
    for qids, spans in _groups_in_file_order(read_candidates(candidates_path), qid_to_example):
        context = examples[qid_to_example[qids[0]]]["context"]
        out.append((context, [_trim(context, s, e) for _, s, e in spans]))
    return out


def splitter_agreement(contexts: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> dict:
    """How well ``engine.ingest.segment.split_sentences`` reproduces reference sentence spans.

    ``exact_sentences``: share of reference sentences that the splitter produces with the same
    (whitespace-trimmed) start and end. Boundaries are the start offsets of every sentence but
    the first of a context; precision/recall compare the splitter's boundaries with the
    reference's. ``identical_passages``: share of contexts split exactly alike.
    """
    from engine.ingest.segment import split_sentences

    ref_total = ours_total = exact = 0
    ref_b = ours_b = common_b = 0
    identical = 0
    for context, ref_spans in contexts:
        ref = {(s, e) for s, e in ref_spans if e > s}
        ours = {(sp.start, sp.end) for sp in split_sentences(context)}
        ref_total += len(ref)
        ours_total += len(ours)
        exact += len(ref & ours)
        rb = {s for s, _ in ref} - {min((s for s, _ in ref), default=0)}
        ob = {s for s, _ in ours} - {min((s for s, _ in ours), default=0)}
        ref_b += len(rb)
        ours_b += len(ob)
        common_b += len(rb & ob)
        identical += ref == ours
    precision = common_b / ours_b if ours_b else 1.0
    recall = common_b / ref_b if ref_b else 1.0
    return {
        "contexts": len(contexts),
        "reference_sentences": ref_total,
        "splitter_sentences": ours_total,
        "exact_sentences": exact / ref_total if ref_total else 1.0,
        "boundary_precision": precision,
        "boundary_recall": recall,
        "boundary_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "identical_passages": identical / len(contexts) if contexts else 1.0,
    }


def format_agreement(name: str, a: dict) -> str:
    return (
        f"{name}: split_sentences vs MultiReQA over {a['contexts']} contexts: "
        f"{a['exact_sentences']:.1%} of {a['reference_sentences']} MultiReQA sentences reproduced exactly "
        f"({a['splitter_sentences']} splitter sentences); boundary precision {a['boundary_precision']:.1%}, "
        f"recall {a['boundary_recall']:.1%}, F1 {a['boundary_f1']:.1%}; "
        f"{a['identical_passages']:.1%} of contexts split identically"
    )


# ---------------------------------------------------------------------------------------------
# command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default runs/pools)")
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="shared data directory")
    parser.add_argument(
        "--pools", default=",".join(POOLS), help=f"comma-separated subset of {','.join(POOLS)}"
    )


def run(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.pools.split(",") if n.strip()]
    report: dict[str, dict] = {}
    for name in names:
        if name not in POOLS:
            raise SystemExit(f"unknown pool {name!r}; choose from {', '.join(POOLS)}")
        mrqa, cands = (args.data / p for p in POOLS[name])
        for p in (mrqa, cands):
            if not p.exists():
                raise SystemExit(f"missing data file {p} (see ../shared/data/README.md)")
        pool = build_pool(mrqa, cands)
        write_pool(pool, args.out / name)
        agreement = splitter_agreement(multireqa_spans(mrqa, cands))
        report[name] = {"stats": pool.stats, "splitter_agreement": agreement}
        s = pool.stats
        print(
            f"{name}: {s['sentences']} sentences in {s['passages']} passages, {s['questions']} questions "
            f"({s['mrqa_questions']} MRQA questions, {s['merged_away']} merged away), "
            f"{s['questions_with_several_golds']} with several gold sentences "
            f"({s['gold_added_by_identical_text']} golds added as identical text), "
            f"{s['spans_crossing_boundary']} of {s['answer_spans']} answer spans cross a sentence end "
            f"-> {args.out / name}"
        )
        print(format_agreement(name, agreement))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pools.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer.pools", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
