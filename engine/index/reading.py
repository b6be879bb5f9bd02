"""Reading the sentence index: exact SPARC top-k from the column store, BM25 over sentences
and whole documents, filters as sets of sentence ids (cached per filter and commit), stored
fields by id. :class:`IndexReader` is the reading half of
:class:`engine.index.sentences.SentenceIndex`; every call reads one :class:`_View` (a searcher
and the column state of the same commit), which ``reload`` swaps whole.

Ranking: score descending, then sentence id ascending, the same rule as the oracle."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tantivy

from engine.home.paths import from_store, to_store
from engine.index.columns import ColumnView
from engine.index.docindex import DocumentIndex
from engine.index.filters import IndexFilters, filter_query
from engine.index.quantize import Quantizer, QueryWeights, idf_weight, query_weights
from engine.index.records import IndexHit, stored_fields

#: Sentence-id sets of this many recent filters are kept per commit.
FILTER_CACHE_SIZE = 32


@dataclass
class _View:
    """A searcher, the column view of the same commit and the filter cache built from them.
    ``reload`` swaps the whole view in one assignment, so a search running in another thread
    keeps a consistent pair and never caches one commit's filter under another."""

    searcher: tantivy.Searcher
    columns: ColumnView
    filters: dict[str, list[np.ndarray]] = field(default_factory=dict)


def _live_ids(schema: tantivy.Schema, searcher: tantivy.Searcher) -> Callable[[Sequence[int]], set[int]]:
    """Which of some sentence ids the searcher's commit holds (probes of a pending column state)."""

    def live(ids: Sequence[int]) -> set[int]:
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return set()
        q = tantivy.Query.term_set_query(schema, "sentence_id", wanted)
        hits = searcher.search(q, len(wanted), count=False).hits
        return {int(i) for i in searcher.fast_field_values("sentence_id", [a for _, a in hits])}

    return live


def fetch_top(
    searcher: tantivy.Searcher, query: tantivy.Query, top_k: int
) -> tuple[list[tuple[float, Any]], np.ndarray, np.ndarray]:
    """The hits of ``query`` that rank its top ``top_k`` exactly: tantivy's order among tied
    scores is not sentence-id order, so a hit tied with the k-th may have been cut; more are
    fetched until the last one scores below the k-th. Returns the hits, their sentence ids and
    their scores, in tantivy's order (the caller sorts by score desc, sentence id asc)."""
    limit = top_k + 16
    while True:
        hits = searcher.search(query, limit, count=False).hits
        if len(hits) < limit or hits[-1][0] < hits[top_k - 1][0]:
            break
        limit *= 4
    ids = np.asarray(searcher.fast_field_values("sentence_id", [a for _, a in hits]), dtype=np.int64)
    scores = np.fromiter((h[0] for h in hits), dtype=np.float64, count=len(hits))
    return hits, ids, scores


class IndexReader:
    """Searches and look-ups over the current view (see :class:`engine.index.sentences.SentenceIndex`)."""

    _view: _View
    _schema: tantivy.Schema
    _analyzer: tantivy.TextAnalyzer
    _docs: DocumentIndex | None
    quantizer: Quantizer

    @property
    def num_sentences(self) -> int:
        """Live (not deleted) sentences in the current searcher."""
        return int(self._view.searcher.num_docs)

    @property
    def num_segments(self) -> int:
        """tantivy segments in the current searcher (each adds per-clause lookup cost)."""
        return int(self._view.searcher.num_segments)

    def max_sentence_id(self) -> int:
        """Largest live sentence id, -1 when empty."""
        res = self._view.searcher.search(
            tantivy.Query.all_query(), 1, count=False, order_by_field="sentence_id", order=tantivy.Order.Desc
        )
        return int(res.hits[0][0]) if res.hits else -1

    def doc_freq(self, token: int) -> int:
        """Live sentences whose vector contains ``token``."""
        return self._view.columns.doc_freq(int(token))

    def idf(self, tokens: Iterable[int]) -> dict[int, float]:
        """CAI IDF ``log(N / N_t)`` of ``tokens`` over the live sentences."""
        n = self.num_sentences
        return {int(t): idf_weight(self.doc_freq(int(t)), n) for t in tokens}

    def query_weights(
        self, query_ids: Iterable[int], idf: Mapping[int, float] | bool | None = None
    ) -> QueryWeights:
        """Integer question weights; ``idf=True`` computes IDF from this index."""
        ids = list(query_ids)
        if idf is True:
            idf = self.idf(ids)
        elif idf is False:
            idf = None
        return query_weights(ids, self.quantizer.scale, idf, self.quantizer.max_level)

    def max_score(
        self, query_ids: Iterable[int], idf: Mapping[int, float] | bool | None = None, tokens: int | None = None
    ) -> float:
        """The highest score the question could reach: every token at the top level (only its
        ``tokens`` weightiest ones, when given: a sentence cannot hold a long query's every word)."""
        qw = self.query_weights(query_ids, idf)
        if not len(qw):
            return 0.0
        weights = np.sort(qw.multipliers)[::-1]
        total = float(weights[:tokens].sum() if tokens else weights.sum())
        return float(qw.scores(total * self.quantizer.max_level))

    def _filter_query(
        self, filters: IndexFilters | None, schema: tantivy.Schema | None = None
    ) -> tantivy.Query | None:
        """The constant-score query of ``filters`` against ``schema`` (the sentence schema,
        or the document index's, whose filter fields have the same names)."""
        return filter_query(schema or self._schema, filters)

    @staticmethod
    def _ranked(searcher: tantivy.Searcher, query: tantivy.Query, top_k: int) -> list[tuple[int, float, Any]]:
        """Top-k (sentence_id, raw score, address) by score desc, id asc, ties at the cut exact."""
        hits, ids, scores = fetch_top(searcher, query, top_k)
        order = np.lexsort((ids, -scores))[:top_k].tolist()
        return [(int(ids[i]), float(scores[i]), hits[i][1]) for i in order]

    @staticmethod
    def _with_fields(
        searcher: tantivy.Searcher, rows: list[tuple[int, float, Any]], load: int
    ) -> list[IndexHit]:
        return [
            IndexHit(sid, sc, stored_fields(searcher, addr) if i < load else None)
            for i, (sid, sc, addr) in enumerate(rows)
        ]

    def search(
        self,
        query_ids: Iterable[int],
        top_k: int = 1000,
        idf: Mapping[int, float] | bool | None = None,
        filters: IndexFilters | None = None,
        load_fields: int = 0,
    ) -> list[IndexHit]:
        """Exact SPARC top-k for a bag of question token ids.

        ``score = scale * sum_t count_t * level(t, s)`` (times the rounded IDF of t when
        ``idf`` is a mapping, or ``True`` for this index's IDF). Stored fields are loaded for
        the first ``load_fields`` hits only: reading 1,000 stored documents would cost more
        than the search itself.
        """
        if top_k <= 0:
            return []
        view = self._view  # one searcher and column state for the whole call
        qw = self.query_weights(query_ids, idf)
        allowed = self._allowed(view, filters)
        sids, raw = view.columns.top_k(qw.tokens.tolist(), qw.multipliers.tolist(), top_k, allowed)
        # One float64 multiply per hit, as the oracle's (QueryWeights.scores), vectorised.
        scores = np.asarray(qw.scores(raw.astype(np.float64)), dtype=np.float64)
        hits = [IndexHit(i, s) for i, s in zip(sids.tolist(), scores.tolist(), strict=True)]
        if load_fields > 0 and hits:
            self.load_fields(hits[:load_fields])
        return hits

    def _allowed(self, view: _View, filters: IndexFilters | None) -> list[np.ndarray] | None:
        """Per column segment, the rows a filter lets through (tantivy finds the sentence
        ids once per filter and commit)."""
        fq = self._filter_query(filters)
        if fq is None:
            return None
        key = repr(filters)
        hit = view.filters.get(key)
        if hit is None:
            searcher = view.searcher
            n = int(searcher.search(fq, 1, count=True).count or 0)
            ids = np.zeros(0, np.int64)
            if n:
                addrs = [a for _, a in searcher.search(fq, n, count=False).hits]
                ids = np.sort(np.asarray(searcher.fast_field_values("sentence_id", addrs), dtype=np.int64))
            hit = view.columns.allowed_rows(ids)
            if len(view.filters) >= FILTER_CACHE_SIZE:
                view.filters.pop(next(iter(view.filters)))
            view.filters[key] = hit
        return hit

    def bm25(
        self, text: str, top_k: int = 1000, filters: IndexFilters | None = None, load_fields: int = 0
    ) -> list[IndexHit]:
        """BM25 over sentence text (stemmed, English stopwords removed); same tie rule."""
        if top_k <= 0:
            return []
        terms = list(dict.fromkeys(self._analyzer.analyze(text)))
        if not terms:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t)) for t in terms]
        )
        fq = self._filter_query(filters)
        if fq is not None:
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, fq), (tantivy.Occur.Must, query)])
        searcher = self._view.searcher
        rows = self._ranked(searcher, query, top_k)
        return self._with_fields(searcher, rows, load_fields)

    def absent_words(self, words: Sequence[str]) -> list[str]:
        """The ``words`` no indexed sentence holds (each analysed as the text is: stemmed, in
        lower case; a stopword, which the analyser drops, is never absent). Any sentence
        counts: a header line, a file name, a reply's quoted history."""
        searcher = self._view.searcher
        out: list[str] = []
        for word in words:
            terms = [t for t in self._analyzer.analyze(word) if t]
            if terms and all(int(searcher.doc_freq("text", t)) == 0 for t in terms):
                out.append(word)
        return out

    def bm25_documents(
        self, text: str, top_k: int = 100, filters: IndexFilters | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over whole documents with their header lines: ``(doc_key, score)``, best
        first; empty when this generation has no document index."""
        docs = self._docs
        if docs is None:
            return []
        return docs.bm25(text, top_k, self._filter_query(filters, docs.schema))

    def matching_documents(
        self,
        required: Sequence[Sequence[tuple[str, str]]],
        excluded: Sequence[tuple[str, str]],
        filters: IndexFilters | None = None,
    ) -> list[str] | None:
        """Documents that hold every required phrase or field value (any of each group) and
        none of the excluded ones (the query syntax, :mod:`engine.search.query`); None when this
        generation has no document index to tell."""
        docs = self._docs
        if docs is None:
            return None
        return docs.matching(required, excluded, self._filter_query(filters, docs.schema))

    @property
    def document_index(self) -> DocumentIndex | None:
        """This generation's whole-document BM25 index (None for an older generation)."""
        return self._docs

    def coverage(self, text: str, doc_key: str) -> tuple[float, int]:
        """IDF-weighted share of the question's terms that ``doc_key`` holds (see
        :meth:`engine.index.docindex.DocumentIndex.coverage`); ``(0.0, 0)`` without a document index."""
        return self._docs.coverage(text, doc_key) if self._docs is not None else (0.0, 0)

    def rarest_held(self, text: str, doc_key: str) -> float:
        """:meth:`engine.index.docindex.DocumentIndex.rarest_held` (1.0 without a document index)."""
        return self._docs.rarest_held(text, doc_key) if self._docs is not None else 1.0

    def load_fields(self, hits: Iterable[IndexHit]) -> list[IndexHit]:
        """Fill ``fields`` of hits that lack them (by sentence id); returns the same hits."""
        hits = list(hits)
        missing = [h.sentence_id for h in hits if h.fields is None]
        if missing:
            found = self.get(missing)
            for h in hits:
                if h.fields is None:
                    h.fields = found.get(h.sentence_id)
        return hits

    def get(self, sentence_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Stored fields of live sentences by id (missing ids are absent from the result)."""
        ids = sorted({int(i) for i in sentence_ids})
        if not ids:
            return {}
        q = tantivy.Query.term_set_query(self._schema, "sentence_id", ids)
        searcher = self._view.searcher
        hits = searcher.search(q, len(ids), count=False).hits
        out: dict[int, dict[str, Any]] = {}
        for _, addr in hits:
            f = stored_fields(searcher, addr)
            out[int(f["sentence_id"])] = f
        return out

    def document_sentence_ids(self, doc_key: str) -> list[int]:
        """Ids of the live sentences of a document, ascending."""
        q = tantivy.Query.term_query(self._schema, "doc_key", to_store(doc_key))
        searcher = self._view.searcher
        n = int(searcher.search(q, 1, count=True).count or 0)
        if n == 0:
            return []
        hits = searcher.search(q, n, count=False).hits
        return sorted(int(i) for i in searcher.fast_field_values("sentence_id", [a for _, a in hits]))

    def doc_keys(self) -> set[str]:
        """Keys of every document with a live sentence (a full scan: for rare maintenance,
        such as restoring a previous generation)."""
        searcher = self._view.searcher
        n = int(searcher.num_docs)
        if n == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), n, count=False).hits
        return {from_store(str(searcher.doc(a).get_first("doc_key"))) for _, a in hits}
