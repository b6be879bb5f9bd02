"""An index with some of its text hidden: how the self-check asks a pseudo-question whose
answer is labelled by text of the index itself (issue 38).

A message's subject names it; a heading names its section. Asked as a question, the label
would find its own line: the self-check must score retrieval *without* it. :class:`Hidden`
says which sentences are not there and what text each document's whole-document record
loses with them; :class:`HiddenIndex` is the sentence index seen that way — every reading the
search path makes (SPARC and BM25 over sentences, a document's sentences, the document-level
BM25 and coverage) behaves as if the hidden text had never been indexed, up to the corpus
statistics (a term's document frequency still counts the hidden lines: a few lines in a
corpus of thousands). ``engine.search.answers.ask`` wraps the index in it when its
``SearchSettings.hidden`` is set; nothing else changes, so the self-check measures the
search the app runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.index.records import IndexHit
from engine.index.sentences import IndexFilters, SentenceIndex


@dataclass(frozen=True)
class Hidden:
    """What a search must not see: sentences by id, and for each document whose
    whole-document record holds them, the text it loses (``(doc_key, text)``)."""

    sentence_ids: frozenset[int] = frozenset()
    removed: tuple[tuple[str, str], ...] = ()

    def removed_from(self, doc_key: str) -> str:
        return "\n".join(t for k, t in self.removed if k == doc_key)


class HiddenIndex:
    """``index`` read as if ``hidden`` were not in it (see the module); every other
    attribute is the index's own."""

    def __init__(self, index: SentenceIndex, hidden: Hidden) -> None:
        self._index = index
        self._hidden = hidden
        self._ids = hidden.sentence_ids
        self._docs = index.document_index
        self._removed: dict[str, Counter[str]] = (
            {k: self._docs.term_counts(hidden.removed_from(k)) for k, _ in hidden.removed} if self._docs else {}
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    # ---- sentences

    def search(self, qids: Sequence[int], top_k: int, **kw: Any) -> list[IndexHit]:
        hits = self._index.search(qids, top_k + len(self._ids), **kw)
        return [h for h in hits if h.sentence_id not in self._ids][:top_k]

    def bm25(self, text: str, top_k: int = 1000, **kw: Any) -> list[IndexHit]:
        hits = self._index.bm25(text, top_k + len(self._ids), **kw)
        return [h for h in hits if h.sentence_id not in self._ids][:top_k]

    def document_sentence_ids(self, doc_key: str) -> list[int]:
        return [i for i in self._index.document_sentence_ids(doc_key) if i not in self._ids]

    def get(self, sentence_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        return self._index.get(i for i in sentence_ids if i not in self._ids)

    # ---- whole documents

    def bm25_documents(self, text: str, top_k: int = 100, filters: IndexFilters | None = None) -> list[tuple[str, float]]:
        """The document BM25 with each affected document that matched scored on its record
        less the hidden text (its term counts and its length both reduced), re-ranked. (Less
        text never raises a document from below the list into it, up to the length norm.)"""
        ranked = self._index.bm25_documents(text, top_k, filters)
        docs = self._docs
        if docs is None or not any(k in self._removed for k, _ in ranked):
            return ranked
        scores = dict(ranked)
        query = docs.term_counts(text)
        for key in [k for k in scores if k in self._removed]:
            gone = self._removed[key]
            stats = docs.term_stats(key, query)
            dl = max(next(iter(stats.values())).dl - sum(gone.values()), 1.0) if stats else 0.0
            score = sum(n * stats[t].score(stats[t].freq - gone.get(t, 0), dl) for t, n in query.items() if t in stats)
            if score > 0:
                scores[key] = score
            else:
                del scores[key]
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))

    def coverage(self, text: str, doc_key: str) -> tuple[float, int]:
        """The IDF-weighted share of ``text``'s terms the document holds outside the hidden
        text (``DocumentIndex.coverage``'s measure)."""
        gone = self._removed.get(doc_key)
        docs = self._docs
        if gone is None or docs is None:
            return self._index.coverage(text, doc_key)
        terms = docs.terms(text)
        if not terms:
            return 0.0, 0
        stats = docs.term_stats(doc_key, terms)
        weights = docs.idf_weights(terms)
        held = sum(w for t, w in weights.items() if t in stats and stats[t].freq - gone.get(t, 0) > 0)
        total = sum(weights.values())
        return (held / total if total > 0 else 0.0), len(terms)
