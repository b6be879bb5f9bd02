"""Sentence retrieval and fusion: the question as WordPiece ids, its term weights, SPARC's and
BM25's sentence rankings and their fusion, and the box syntax's restrictions (the first step
of a search after :mod:`engine.search.intent`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from email.utils import parseaddr
from pathlib import Path

import numpy as np

from engine.index.sentences import IndexFilters, IndexHit, SentenceIndex
from engine.model.bundle import Bundle
from engine.model.encoder import default_bundle_dir
from engine.search.defaults import DEFAULT_FUSION, FUSIONS
from engine.search.query import ParsedQuery
from engine.search.query import parse as parse_query
from engine.search.results import SearchFilters
from engine.search.settings import DEFAULT

# --------------------------------------------------------------------------- question side


class QueryEncoder:
    """A question as WordPiece ids, from the bundle's tokenizer only (no ONNX session):
    cheap enough for the window process, which never encodes sentences."""

    def __init__(self, bundle_dir: Path | None = None) -> None:
        self.bundle_dir = Path(bundle_dir) if bundle_dir else default_bundle_dir()
        self.config = Bundle.open(self.bundle_dir)
        self.tokenizer = self.config.tokenizer()
        #: the bundle's learned weight per vocabulary id, or None (``term_weights``)
        self.table: np.ndarray | None = self.config.query_weights

    def question_ids(self, text: str) -> list[int]:
        return self.config.question_ids(text)


def term_weights(
    index: SentenceIndex, qids: Sequence[int], idf: bool, table: np.ndarray | None = None
) -> dict[int, float] | bool | None:
    """How each question id is weighted, in ``SentenceIndex.search``'s terms: None (plain)
    or True (the index's IDF) without a table, as before tables existed; with the bundle's
    learned ``table`` (issue 13), ``table[t]`` times the index's IDF of ``t`` when ``idf``
    (an id past the table's end weighs 1). The index rounds the product to its integer grid."""
    if table is None:
        return True if idf else None
    ids = list(dict.fromkeys(int(t) for t in qids))
    base = index.idf(ids) if idf else {}
    n = table.shape[0]
    return {t: (float(table[t]) if 0 <= t < n else 1.0) * base.get(t, 1.0) for t in ids}


def to_index_filters(
    filters: SearchFilters | None,
    doc_keys: Sequence[str] | None = None,
    exclude_keys: Sequence[str] | None = None,
) -> IndexFilters | None:
    """The index's filter object for ``filters`` (folders made absolute, sender reduced to its address)."""
    if filters is None and doc_keys is None and not exclude_keys:
        return None
    f = filters or SearchFilters()
    folder = str(Path(f.folder).expanduser().absolute()) if f.folder else None
    sender: list[str] | None = None
    if f.sender:
        given = [f.sender] if isinstance(f.sender, str) else list(f.sender)
        sender = [(parseaddr(s)[1] or s).strip().lower() for s in given]
    out = IndexFilters(
        folder=folder,
        kinds=list(f.kinds) if f.kinds else None,
        date_from=f.date_from,
        date_to=f.date_to,
        sender=sender,
        mailbox=f.mailbox or None,
        doc_keys=list(doc_keys) if doc_keys is not None else None,
        exclude_keys=list(exclude_keys) if exclude_keys else None,
    )
    return None if out.is_empty() else out


# --------------------------------------------------------------------------- ranking


#: The constant of reciprocal-rank fusion (Cormack et al. 2009).
RRF_K = 60


def _normalised(scores: dict[int, float], method: str) -> dict[int, float]:
    if method == "sum" or not scores:
        return scores
    if method == "minmax":
        lo, hi = min(scores.values()), max(scores.values())
        span = hi - lo
        return {sid: (v - lo) / span if span > 0 else 1.0 for sid, v in scores.items()}
    if method == "rrf":
        order = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return {sid: 1.0 / (RRF_K + rank) for rank, (sid, _) in enumerate(order, start=1)}
    raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")


def _floor(scores: dict[int, float], n: int, depth: int | None) -> float:
    """What an item missing from a ranked list of ``n`` items (asked for ``depth``) scores
    there: the list's minimum if it was cut, else 0 (it did not match)."""
    if not scores or (depth is not None and n < depth):
        return 0.0
    return min(scores.values())


def fuse(
    sparc: Sequence[IndexHit],
    bm25: Sequence[IndexHit],
    method: str = DEFAULT_FUSION,
    depth: int | None = None,
) -> list[tuple[int, float]]:
    """CAI hybrid over the union of both lists; a sentence missing from one list gets that
    list's minimum: the list was cut at ``depth``, so it scored at most that there. A list
    shorter than ``depth`` (when given) was not cut: it holds every sentence that matches
    at all, and one missing from it scores 0 there. (With the minimum, the one sentence
    that holds a rare name got no more from BM25 than every sentence that does not.)
    ``sum`` adds raw scores (CAI); ``minmax`` first maps each list onto [0, 1] by its own
    minimum and maximum, so neither system's scale decides; ``rrf`` adds reciprocal ranks.
    Ranked by fused score, then sentence id."""
    if not sparc and not bm25:
        return []
    a = _normalised({h.sentence_id: h.score for h in sparc}, method)
    b = _normalised({h.sentence_id: h.score for h in bm25}, method)
    a_min = _floor(a, len(sparc), depth)
    b_min = _floor(b, len(bm25), depth)
    fused = {sid: a.get(sid, a_min) + b.get(sid, b_min) for sid in a.keys() | b.keys()}
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def rank_sentences(
    index: SentenceIndex,
    qids: Sequence[int],
    question: str,
    idf: bool = False,
    hybrid: bool = False,
    fusion: str = DEFAULT_FUSION,
    filters: IndexFilters | None = None,
    depth: int = DEFAULT.rank_depth,
    table: np.ndarray | None = None,
    hybrid_depth: int = DEFAULT.hybrid_depth,
) -> list[tuple[int, float]]:
    """The sentence ranking ``ask`` groups into documents: ``(sentence_id, score)``, best
    first. SPARC alone: the top ``depth`` by SPARC score (``idf``: question tokens weighted by
    their IDF over the index; ``table``: by the bundle's learned weights too, ``term_weights``).
    Hybrid: SPARC's and BM25's top ``hybrid_depth`` fused (``fuse``), at most 2 x
    ``hybrid_depth`` sentences. The evaluation ranks pools with it."""
    weights = term_weights(index, qids, idf, table)
    return _rank_sentences(index, qids, question, weights, hybrid, fusion, filters, depth, hybrid_depth)[0]


def _rank_sentences(
    index: SentenceIndex,
    qids: Sequence[int],
    question: str,
    weights: dict[int, float] | bool | None,
    hybrid: bool,
    fusion: str,
    filters: IndexFilters | None,
    depth: int,
    hybrid_depth: int = DEFAULT.hybrid_depth,
) -> tuple[list[tuple[int, float]], float | None]:
    """``rank_sentences`` with the question's ``term_weights``, and the best sentence's SPARC
    score (None when nothing matched): with plain IDF (``weights`` True) it is the no-answer
    decision's match, which ``ask`` need not search again."""
    if not qids:
        return (fuse([], index.bm25(question, hybrid_depth, filters=filters), fusion, hybrid_depth) if hybrid else []), None
    sparc = index.search(qids, hybrid_depth if hybrid else depth, idf=weights, filters=filters)
    top = sparc[0].score if sparc else None
    if hybrid:
        return fuse(sparc, index.bm25(question, hybrid_depth, filters=filters), fusion, hybrid_depth), top
    return [(h.sentence_id, h.score) for h in sparc], top


@dataclass(frozen=True)
class BoxQuery:
    """A search box's text applied to an index: what ``ask`` ranks and within what."""

    #: the words that rank (a phrase's words among them; with only restrictions typed, the
    #: values they name)
    text: str
    #: the filter panel's restrictions with the box's ``dir:`` and dates on top
    filters: SearchFilters | None
    #: those, with the box's phrases, exclusions and fields as document restrictions
    index_filters: IndexFilters | None
    #: the quoted phrases no document holds, dropped (``Answers.relaxed``)
    relaxed: tuple[str, ...] = ()
    #: no document satisfies the restrictions: nothing to rank
    nothing: bool = False


def box_query(index: SentenceIndex, question: str, filters: SearchFilters | None = None) -> BoxQuery:
    """``question`` as typed in the search box, applied to ``index`` (``engine.search.query``).

    When no document holds the required phrases they are dropped and the rest is searched,
    saying so (web search does; a question pasted with a quoted word in it would otherwise
    find nothing at all). Fields, exclusions, folder and dates always restrict."""
    parsed = parse_query(question)
    filters = _with_box_filters(filters, parsed)
    f = to_index_filters(filters)
    relaxed: tuple[str, ...] = ()
    text = parsed.text or " ".join(c.text for g in parsed.required for c in g) or question
    if parsed.restricts:
        kept = restrict(index, parsed, filters, f)
        if kept is None and parsed.phrases:
            relaxed = tuple(parsed.phrases)
            kept = restrict(index, parsed.without_phrases(), filters, f)
        if kept is None:
            return BoxQuery(text, filters, None, relaxed, nothing=True)
        f = kept
    return BoxQuery(text, filters, f, relaxed)


def _with_box_filters(filters: SearchFilters | None, parsed: ParsedQuery) -> SearchFilters | None:
    """The filter panel's restrictions with those typed in the box (``dir:``, dates) on top."""
    if parsed.folder is None and parsed.date_from is None and parsed.date_to is None:
        return filters
    base = filters or SearchFilters()
    return replace(
        base,
        folder=parsed.folder or base.folder,
        date_from=parsed.date_from or base.date_from,
        date_to=parsed.date_to or base.date_to,
    )


def restrict(
    index: SentenceIndex, parsed: ParsedQuery, filters: SearchFilters | None, f: IndexFilters | None
) -> IndexFilters | None:
    """The index filter with the box's phrases, exclusions and fields applied as document
    restrictions (an empty ``IndexFilters`` when nothing restricts); None only when no
    document satisfies them. (An exclusion no document holds excludes nothing: until
    2026-11-24 "religion -xyzzyq" found nothing, the unfiltered ``f`` being None too.)"""
    required = [[(c.field, c.text) for c in g] for g in parsed.required]
    excluded = [(c.field, c.text) for c in parsed.excluded]
    unrestricted = f if f is not None else IndexFilters()
    if required:
        keys = index.matching_documents(required, excluded, f)
        if keys is None:  # a generation without a document index: restrictions cannot apply
            return unrestricted
        return to_index_filters(filters, doc_keys=keys) if keys else None
    out = index.matching_documents([excluded], [], f) if excluded else []
    return to_index_filters(filters, exclude_keys=out) if out else unrestricted
