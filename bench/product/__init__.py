"""Product-level benchmark (issue 12, item 1): the app as a user meets it, on real files.

Writes real files from the public sets in ../shared/data into ``--work`` (default
``runs/product``), indexes them with the real pipeline (:class:`engine.api.facade.Engine`, one
sparcdesk home per collection, reused between runs because indexing is incremental), asks
every question through :meth:`engine.api.facade.Engine.ask` with the app's defaults (what
``sparcdesk ask --json`` runs) and scores, per set:

* document MRR@10 and hit@1 (the first answer's document is a gold document);
* answer@1: the first answer is in a gold document and what it shows (its best sentence, or
  its field value when the answer marks a field answer) holds the gold sentence or value;
* the no-answer decision when the engine gives one (``answered``): % of answerable questions
  answered, % of unanswerable ones not answered ("n/a" before the engine has it);
* MRR@10 and hit@1 again with each answerable question typed as keywords (``keyword_form``:
  a name, a subject, the words less stopwords; ``--no-keywords`` leaves it out);

next to BM25 over whole documents with their header fields (bm25s, Lucene formula, k1 0.9,
b 0.4, English stopwords, Snowball stemmer: ``trainer.baselines.BM25Retriever``) over the
texts read back from the same files, in the same run.

Collections (homes) and sets, see docs/product.md for how each question is derived:

* ``mail``: BIPIA e-mails as .eml + Enron messages as .eml with full headers. Sets ``email``
  (BIPIA questions, one per distinct text; those no e-mail answers, every row "unknown", are
  the unanswerable calibration set) and ``enron``
  (questions derived from the Enron headers: e-mail address of a person, sender of an e-mail).
* ``squad``: SQuAD v1.1 dev, one Markdown file per article (rebuilt, see ``squad_articles``);
  10% of the articles are held out of the index and their questions are the unanswerable set.
* ``cisi``, ``time``: the classic IR collections, one .txt per document, document judgments.

    .venv/bin/python -m bench.product --quick              # a few minutes, small corpora
    .venv/bin/python -m bench.product --doc docs/product.md  # the published run

Writes bench/results/product-<stamp>.json (metrics, sizes, timings, machine, load) and
product-<stamp>.questions.jsonl.gz beside it (one row per question: ranked documents, the top
answer, its score, ``answered``), for analysis without re-running.
"""

from __future__ import annotations

# The benchmark in four parts, each importing only the ones before it: the questions (what
# each set asks, ``keyword_form``), the data (the collections written as files), asking
# (search and BM25, the metrics), the report (tables, docs/product.md from its template,
# bench/templates/product.md); the command (``cli``: ``run``, ``main``) uses all four.
# Every name the single module bench/product.py had is here still.
from bench import harness
from bench.harness import RESULTS
from bench.product.ask import (
    COVERAGE_GRID,
    KEEP_ANSWERED,
    MATCH_GRID,
    TOP,
    DocBM25,
    answer_correct,
    answered_of,
    answers_of,
    calibration,
    doc_key,
    document_text,
    index_collection,
    ranking_settings,
    reciprocal_rank,
    run_questions,
    sentence_match,
    shown_text,
    source_indexed,
    summarise,
)
from bench.product.cli import SQUAD_POOL, main, run
from bench.product.data import (
    BIPIA_DIR,
    COLLECTION_OF,
    DATA,
    ENRON_FILE,
    MAILDIR_DIR,
    ROOT,
    SETS,
    SIZES,
    SQUAD_CANDIDATES,
    SQUAD_JSON,
    SQUAD_MRQA,
    SQUAD_TITLES,
    Collection,
    bipia_eml,
    body_text,
    build_classic,
    build_mail,
    build_maildir,
    build_squad,
    date_utc,
    enron_date,
    enron_eml,
    parse_message,
    squad_articles,
)
from bench.product.questions import _SUBJECT_PREFIX as _SUBJECT_PREFIX
from bench.product.questions import (
    MAX_ADDRESS,
    MAX_DATE,
    MAX_SENDER,
    MAX_SQUAD,
    MAX_SQUAD_UNANSWERABLE,
    SEED,
    Question,
    bipia_questions,
    classic_key,
    classic_questions,
    enron_questions,
    keyword_form,
    mailboxes,
    person_name,
    squad_questions,
)
from bench.product.report import keyword_table, kind_table, render, table, write_doc

# Private names of the single module, for code written against it (bench.heldout read
# ``_SUBJECT_PREFIX`` and the git helpers); not part of ``__all__``.
_index = index_collection
_doc_ranking = ranking_settings


def _busy_processes(min_cpu: float = 15.0) -> list[str]:
    return harness.busy_processes(min_cpu)


def _git_head() -> str:
    return harness.git_head().head


def _git_dirty() -> list[str]:
    return harness.git_head().dirty


__all__ = [
    "BIPIA_DIR",
    "COLLECTION_OF",
    "COVERAGE_GRID",
    "Collection",
    "DATA",
    "DocBM25",
    "ENRON_FILE",
    "KEEP_ANSWERED",
    "MAILDIR_DIR",
    "MATCH_GRID",
    "MAX_ADDRESS",
    "MAX_DATE",
    "MAX_SENDER",
    "MAX_SQUAD",
    "MAX_SQUAD_UNANSWERABLE",
    "Question",
    "RESULTS",
    "ROOT",
    "SEED",
    "SETS",
    "SIZES",
    "SQUAD_CANDIDATES",
    "SQUAD_JSON",
    "SQUAD_MRQA",
    "SQUAD_POOL",
    "SQUAD_TITLES",
    "TOP",
    "answer_correct",
    "answered_of",
    "answers_of",
    "bipia_eml",
    "bipia_questions",
    "body_text",
    "build_classic",
    "build_mail",
    "build_maildir",
    "build_squad",
    "calibration",
    "classic_key",
    "classic_questions",
    "date_utc",
    "doc_key",
    "document_text",
    "enron_date",
    "enron_eml",
    "enron_questions",
    "index_collection",
    "keyword_form",
    "keyword_table",
    "kind_table",
    "mailboxes",
    "main",
    "parse_message",
    "person_name",
    "ranking_settings",
    "reciprocal_rank",
    "render",
    "run",
    "run_questions",
    "sentence_match",
    "shown_text",
    "source_indexed",
    "squad_articles",
    "squad_questions",
    "summarise",
    "table",
    "write_doc",
]
