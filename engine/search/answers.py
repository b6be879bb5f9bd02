"""Questions in, answers grouped per document out: the short wiring of search/'s steps.

The steps, each a module: :mod:`engine.search.intent` (the question read once),
:mod:`engine.search.retrieve` (sentence retrieval and fusion), :mod:`engine.search.documents`
(grouping, evidence, ranking, copies), :mod:`engine.search.choice` (the answer within a
document), :mod:`engine.search.decision` (the no-answer decision), :mod:`engine.search.results`
(what is returned). Names other code imports from here are re-exported.

A question becomes a bag of WordPiece ids (no network runs on it, SPARC.md §1) and the
index returns the exact top-1000 sentences by SPARC score, optionally with each question
token weighted by its IDF over the indexed sentences (CAI: ``log(N / N_t)``, 1 for a token
no sentence has) and by the bundle's learned question weight table when it ships one
(``term_weights``), and optionally fused with BM25 (CAI: raw BM25 plus raw SPARC over each system's top-100; a
sentence missing from one list gets that list's minimum; ``fuse`` also has min-max and
reciprocal-rank fusion, measured worse).

Sentences are then grouped by document: a document's best sentence is its answer, shown
inside its passage (with the sentence's offsets there, for bold) and with the document's
other matching sentences. Filters are constant-score restrictions in the index, so they
never change a score, only which sentences compete.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any, cast

from engine.index.hidden import HiddenIndex
from engine.index.sentences import IndexFilters, SentenceIndex
from engine.search.choice import (  # noqa: F401 (re-exported)
    _address_words,
    _pick,
    address_shown,
    build_answers,
    date_hit,
    in_own_header,
    order_answers,
)
from engine.search.decision import ANSWER_MATCH, answer_match, decide  # noqa: F401 (re-exported)
from engine.search.defaults import DEFAULT_FUSION
from engine.search.documents import (  # noqa: F401 (re-exported)
    _copies,
    _quotes_subject,
    _unranked_lines,
    by_direction,
    by_words_held,
    fetch_best_sentences,
    group_sentences,
    is_heading,
    is_heading_record,
    quoted_score,
    rank_documents,
    sentence_evidence,
    weigh_quoted,
)
from engine.search.intent import FRAME_WORDS as QUESTION_FRAME  # noqa: F401 (re-exported)
from engine.search.intent import (  # noqa: F401 (re-exported)
    STOPWORDS,
    QuestionIntent,
    typed_name,
    wanted_address,
    wanted_field,
    without_frame,
)
from engine.search.intent import parse as parse_intent
from engine.search.results import (  # noqa: F401 (re-exported)
    Answer,
    Answers,
    Hit,
    SearchFilters,
    _CatalogLike,
    document_fields,
    highlight_spans,
    make_hit,
    question_terms,
    stored_passage,
)
from engine.search.retrieve import (  # noqa: F401 (re-exported)
    RRF_K,
    BoxQuery,
    QueryEncoder,
    _rank_sentences,
    box_query,
    fuse,
    rank_sentences,
    restrict,
    term_weights,
    to_index_filters,
)
from engine.search.settings import DEFAULT, SearchSettings

#: The shipped values, for readers (benchmarks' reports, docs): a search reads its
#: ``SearchSettings``; writing these changes nothing (tests/test_architecture.py forbids it).
RANK_DEPTH, HYBRID_DEPTH, LOAD_CHUNK, MAX_OTHERS = DEFAULT.rank_depth, DEFAULT.hybrid_depth, DEFAULT.load_chunk, DEFAULT.max_others
DOC_DEPTH, DOC_WEIGHT, DOC_SENTENCES, DOC_DECAY = DEFAULT.doc_depth, DEFAULT.doc_weight, DEFAULT.doc_sentences, DEFAULT.doc_decay
HEADING_WEIGHT, QUOTED_WEIGHT = DEFAULT.heading_weight, DEFAULT.quoted_weight
ANSWER_COVERAGE, ANSWER_TOKENS = DEFAULT.answer_coverage, DEFAULT.answer_tokens


@dataclass
class _Search:
    """One question's search in progress: what each step reads."""

    index: SentenceIndex
    query: QueryEncoder
    intent: QuestionIntent
    filters: SearchFilters | None
    index_filters: IndexFilters | None
    settings: SearchSettings
    hybrid: bool
    top: int
    qids: list[int]
    weights: dict[int, float] | bool | None
    #: the question's content words no sentence holds
    absent: list[str]


def ask(
    index: SentenceIndex,
    query: QueryEncoder,
    question: str,
    top: int = 10,
    filters: SearchFilters | None = None,
    idf: bool = False,
    hybrid: bool = False,
    catalog: _CatalogLike | None = None,
    text_of: Any = None,
    max_others: int | None = None,
    fusion: str = DEFAULT_FUSION,
    settings: SearchSettings = DEFAULT,
) -> Answers:
    """Answers to ``question`` from ``index``, best document first.

    Hybrid (the default search): sentences ranked by SPARC and BM25 (fused), documents
    ranked by their best sentences (``sentence_evidence``) plus the BM25 of the whole
    document with its header lines (:mod:`engine.index.docindex`), so evidence spread over a
    document and the names in an e-mail's headers count; the answer shown is still the
    document's best sentence.
    SPARC alone ranks documents by their best sentence.

    ``text_of(doc_key)`` (optional) returns a document's text: an index from 0.4 on stores a
    sentence's passage as offsets into it (without it an answer shows the sentence alone), and
    it places a sentence that occurs twice in its own passage. ``settings``: every tunable and
    rule switch (``max_others``, when given, overrides its field).
    """
    if max_others is not None:
        settings = replace(settings, max_others=max_others)
    if text_of is not None:
        text_of = functools.lru_cache(maxsize=64)(text_of)  # an answer's hits share a document
    if settings.hidden is not None:  # the self-check's pseudo-question: its label unseen
        index = cast(SentenceIndex, HiddenIndex(index, settings.hidden))
    if top <= 0 or not any(c.isalnum() for c in question):
        return Answers()  # no word: "?!" would rank whatever sentences weigh "!" and "?"
    box = box_query(index, question, filters)
    if box.nothing:
        return Answers(relaxed=box.relaxed)
    intent = parse_intent(box.text)  # the one reading of the question's words (issue 37)
    content = list(intent.content)
    # (an empty index holds no word: "nothing indexed yet" is the caller's to say)
    absent = index.absent_words(content) if content and index.num_sentences > 0 else []
    if content and len(absent) == len(content):
        return Answers(relaxed=box.relaxed, absent=absent)  # nothing holds any of its words
    ranking = _ranking(intent, catalog, settings)
    qids = query.question_ids(ranking)
    weights = term_weights(index, qids, idf, query.table)
    run = _Search(index, query, intent, box.filters, box.index_filters, settings, hybrid, top, qids, weights, absent)
    ranked, sparc_top = _rank_sentences(
        index, qids, ranking, weights, hybrid, fusion, box.index_filters, settings.rank_depth, settings.hybrid_depth
    )
    # Content words only (the stopword list is longer than the index analyzer's): a long
    # question's "how", "would", "about" would otherwise rank whole documents.
    doc_scores = dict(index.bm25_documents(intent.document_query(), settings.doc_depth, filters=box.index_filters)) if hybrid else {}
    if not ranked and not doc_scores:
        return Answers(relaxed=box.relaxed, absent=absent)
    groups = group_sentences(index, ranked, hybrid, top, settings.load_chunk)
    own = weigh_quoted(groups, settings.quoted_weight)
    if hybrid:
        doc_rank = rank_documents(groups, doc_scores, top * 2, settings.doc_depth, settings)
    else:  # SPARC alone: a document is as good as its best sentence
        doc_rank = {k: max(sc for sc, _ in groups[k]) for k in list(groups)[:top]}
    keys = _documents(run, groups, doc_rank, catalog, own)
    answers = Answers(relaxed=box.relaxed, absent=absent)
    # one more than asked when only one is: the no-answer decision weighs the first against
    # the next (``decision.stands_out``), whatever the caller shows
    answers.extend(build_answers(index, intent, keys, groups, doc_rank, catalog, text_of, max(top, 2), settings))
    order_answers(answers, intent, settings)
    if answers:
        decide(answers, index, query, intent, qids, weights, sparc_top, box.index_filters, settings)
    del answers[top:]
    return answers


def _ranking(intent: QuestionIntent, catalog: _CatalogLike | None, settings: SearchSettings) -> str:
    """What the sentence ranking reads: the question's topic when it asks for the mail of a
    person some indexed message is from or to (``SearchSettings.direction_topic``; the header
    preference weighs the person), else its ranking text ("what did the tariff say about ...":
    no one called "tariff" wrote, and its words stay)."""
    if not (intent.direction and settings.direction_topic and catalog is not None):
        return intent.ranking
    if intent.topic == intent.ranking or not catalog.names_correspondent(intent.person, intent.direction):
        return intent.ranking
    return intent.topic


def _documents(
    run: _Search,
    groups: dict[str, list[tuple[float, dict[str, Any]]]],
    doc_rank: dict[str, float],
    catalog: _CatalogLike | None,
    own: set[str],
) -> list[str]:
    """The ranked documents in the order they are shown, their sentences completed in
    ``groups``: messages named by their subject added from the catalog, documents whose
    matching sentences are missing or only headings given their best ones, then the rules'
    orders (a subject named whole, a keyword search, a person's mail)."""
    settings, intent, top = run.settings, run.intent, run.top
    keys = list(doc_rank)
    named: list[str] = []
    if catalog is not None and settings.subject_lookup:
        # messages the question names by a subject no index term reaches ("where are you"):
        # from the catalog, their sentences fetched below under the question's restrictions
        named = [k for k in catalog.messages_with_subject(intent.subject_candidates()) if k not in doc_rank][:top]
        for k in named:
            doc_rank[k] = 0.0
            keys.append(k)
    need = [k for k in keys if k not in groups or all(is_heading_record(m) for _, m in groups[k])]
    if not run.hybrid and settings.max_others > 0:
        need = keys
    if need and run.qids:
        fetch_best_sentences(
            run.index, need, groups, run.qids, run.weights, to_index_filters(run.filters, doc_keys=need), own, settings
        )
    if settings.subject_lookup:
        # a message the question names by its whole subject comes first, in the ranking's
        # order (how a mail reader's user names one: "the e-mail about where are you", a
        # subject of stopwords that ranks nothing)
        quoted = [k for k in keys if groups.get(k) and _quotes_subject(intent, groups[k][0][1])]
        keys = quoted + [k for k in keys if k not in quoted and k not in named]  # (a run it does not name)
    if intent.keyword and settings.keyword_order:
        keys = by_words_held(run.index, keys, intent.content, run.absent)
    elif intent.direction and settings.direction_order:
        keys = by_direction(keys, catalog, intent)
    return keys


def content_words(question: str) -> str:
    """What ``question`` is about (``engine.search.intent.QuestionIntent.content``)."""
    return " ".join(parse_intent(question).content)


def ranking_text(question: str) -> str:
    """The question as the sentence ranking reads it (``QuestionIntent.ranking``)."""
    return parse_intent(question).ranking


def document_query(question: str) -> str:
    """The question as the whole-document BM25 reads it (``QuestionIntent.document_query``).
    Public, as are ``restrict`` and ``rank_documents``, because bench.doc_ranking replays
    ``ask``'s steps."""
    return parse_intent(question).document_query()


def subject_candidates(question: str) -> list[str]:
    """The subjects ``question`` may name a message by (``QuestionIntent.subject_candidates``)."""
    return parse_intent(question).subject_candidates()


def quotes_subject(question: str, subject: str) -> bool:
    """Whether ``question`` names a message by its whole ``subject`` (``QuestionIntent.quotes_subject``)."""
    return parse_intent(question).quotes_subject(subject)
