"""Evaluate SPARC against BM25 and a dense baseline on a pool in the generic format.

    sparcdesk-train evaluate --sentences S --questions Q --model BUNDLE_DIR \\
        [--json OUT] [--baselines bm25,dense] [--limit N] [--idf] [--hybrid] [--scorer index|float]

``S``/``Q`` are ``sentences.jsonl``/``questions.jsonl`` (see ``trainer.pools`` and
docs/evaluation.md). Every system ranks the whole pool for every question and keeps the top
1000; the table gives MRR@1000, Recall@1 and Recall@10 (percent), the median number of index
entries per sentence, and the mean time of one question searched alone (ms). ``--limit N``
evaluates the first N questions against the full pool. ``--model`` may be left out to run the
baselines only; ``--baselines none`` runs SPARC only.

A question with ``gold_passages`` instead of ``gold`` is judged at document level: units
(a sentence's ``doc_id``, else its ``passage_id``) are ranked by their best sentence (first
occurrence in the sentence ranking) and the metrics, nDCG@10 included, are over units.

SPARC ranking (``--scorer``): by default through the app itself (``IndexRetriever``): the
pool's encoded vectors go into a real ``engine.index.sentences.SentenceIndex`` (temporary folder),
quantised as the indexer quantises (``engine.index.quantize.fit_quantizer`` on the first batch),
and every question is ranked by ``engine.search.answers.rank_sentences``, the calls ``ask`` makes
(``SentenceIndex.search``, and for the hybrid ``SentenceIndex.bm25`` + ``engine.search.answers.fuse``
over ``HYBRID_DEPTH``). ``--scorer float`` keeps the float scorer (``SparcRetriever``, the
tests' oracle, SPARC.md §1): a CSR matrix of sentence sparse vectors (sentences x vocabulary)
times the question's bag of token ids; a token id the encoder returns twice counts twice.
Encoded sentence vectors are cached per (bundle, pool) under ``runs/cache`` as ``.npz`` and
serve both scorers. ``--idf`` adds a row with each question token weighted by
``log(N / N_t)`` over the pool's sentences (``engine.index.quantize.idf_weight``, the app's
``idf`` option; the index path rounds it to the index's grid as the app does); ``--hybrid``
adds rows fusing SPARC with the app's BM25 (``engine.search.answers.fuse``: raw scores over each
system's top 100, a missing score filled with that list's minimum).

Learned question weights (issue 13, ``sparcdesk-train query-weights``): ``--query-weights T``
adds a "SPARC +QW" row ranked with table ``T`` multiplied into each question id's weight,
``--query-weights-idf T`` a "SPARC +IDF +QW" row with ``T`` times the index's IDF (and their
hybrids with ``--hybrid``). ``T`` is a ``.npy`` table or a bundle folder shipping one; the rows
go through the app's own ``rank_sentences(..., table=T)`` (index scorer only).

The package, one module per part (``trainer.evaluate`` re-exports every name it had as one module):
``sparc`` the float scorer and the pool's encoding, ``cache`` the encoded pools under
``runs/cache``, ``pool_index`` a pool in a real ``SentenceIndex``, ``index_retriever`` SPARC
ranked by the app on it (and the learned tables), ``hybrid`` the app's BM25 and the float
hybrid, ``evalset`` the pool read for evaluation, ``evaluation`` the run and its report, ``cli``
the command; the metrics are ``trainer.metrics``' and the BM25 and dense baselines
``trainer.baselines``'.
"""

from trainer.evaluate.cache import DEFAULT_CACHE, bundle_fingerprint, pool_fingerprint
from trainer.evaluate.cli import add_arguments, run
from trainer.evaluate.evalset import EvalSet, load_eval_set
from trainer.evaluate.evaluation import (
    BASELINES,
    COLUMNS,
    LATENCY_SAMPLE,
    SCORERS,
    format_table,
    measure,
    parse_baselines,
    run_evaluation,
)
from trainer.evaluate.hybrid import HYBRID_DEPTH, AppBM25Retriever, HybridRetriever
from trainer.evaluate.index_retriever import IndexRetriever, load_table
from trainer.evaluate.pool_index import PoolIndex
from trainer.evaluate.sparc import (
    ENCODE_CHUNK,
    SparcRetriever,
    bundle_vocab_size,
    encode_matrix,
    idf_vector,
    load_sparse_encoder,
    prune_rows,
)
from trainer.metrics import unit_ranking

__all__ = [
    "BASELINES",
    "COLUMNS",
    "DEFAULT_CACHE",
    "ENCODE_CHUNK",
    "HYBRID_DEPTH",
    "LATENCY_SAMPLE",
    "SCORERS",
    "AppBM25Retriever",
    "EvalSet",
    "HybridRetriever",
    "IndexRetriever",
    "PoolIndex",
    "SparcRetriever",
    "add_arguments",
    "bundle_fingerprint",
    "bundle_vocab_size",
    "encode_matrix",
    "format_table",
    "idf_vector",
    "load_eval_set",
    "load_sparse_encoder",
    "load_table",
    "measure",
    "parse_baselines",
    "pool_fingerprint",
    "prune_rows",
    "run",
    "run_evaluation",
    "unit_ranking",
]
