"""A pool read for evaluation: its sentences, questions and what is relevant to each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainer.metrics import Relevance
from trainer.pools import PoolSentence, contexts_of, read_questions, read_sentences


@dataclass
class EvalSet:
    """A pool read for evaluation: questions with sentence-index or unit-level relevance."""

    pool: list[PoolSentence]
    questions: list[str]
    relevants: list[Relevance]  # sentence indices, or {unit id: grade} when doc_level
    doc_level: list[bool]
    units: list[str]  # unit (doc_id, else passage_id) of every sentence
    skipped: int = 0

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.pool]

    def contexts(self) -> list[str]:
        return contexts_of(self.pool)


def load_eval_set(
    sentences_path: str | Path, questions_path: str | Path, limit: int | None = None
) -> EvalSet:
    """Read and check a pool; a question with neither gold is skipped (and counted)."""
    pool = read_sentences(sentences_path)
    index = {s.id: i for i, s in enumerate(pool)}
    if len(index) != len(pool):
        raise ValueError(f"{sentences_path}: sentence ids are not unique")
    units = [s.unit for s in pool]
    unit_set = set(units)
    questions: list[str] = []
    relevants: list[Relevance] = []
    doc_level: list[bool] = []
    skipped = 0
    for q in read_questions(questions_path):
        if q.gold_passages:
            missing = [u for u in q.gold_passages if u not in unit_set]
            if missing:
                raise ValueError(f"question {q.id}: gold passages {missing[:3]} are not in {sentences_path}")
            questions.append(q.question)
            relevants.append(dict(q.gold_passages))
            doc_level.append(True)
            continue
        missing = [g for g in q.gold if g not in index]
        if missing:
            raise ValueError(f"question {q.id}: gold ids {missing[:3]} are not in {sentences_path}")
        if not q.gold:
            skipped += 1
            continue
        questions.append(q.question)
        relevants.append({index[g] for g in q.gold})
        doc_level.append(False)
    if limit is not None:
        questions, relevants, doc_level = questions[:limit], relevants[:limit], doc_level[:limit]
    return EvalSet(pool, questions, relevants, doc_level, units, skipped)
