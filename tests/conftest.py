"""Fixtures shared by several test modules, built once per test session (per xdist worker).

Indexing the sample corpus with the shipped model is the costly part of many tests; a
session fixture does it once and the tests that only read it share the home. A test that
changes an index gets a home of its own (or a ``shutil.copytree`` of a shared one).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
#: the SQuAD training subset in ../shared/data (tests that need it skip without it)
SQUAD_SUBSET = Path(__file__).resolve().parents[2] / "shared/data/squad/train-v1.1.subset-real-ids.json.gz"


@pytest.fixture(scope="session")
def app_samples(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A home with the sample corpus (copied, plus a corrupt PDF) indexed by the real engine:
    ``home`` and ``corpus``. Read-only for the window tests of test_app and test_app_polish."""
    from engine.api.facade import Engine

    base = tmp_path_factory.mktemp("app-samples")
    corpus = base / "samples"
    shutil.copytree(SAMPLES / "documents", corpus / "documents")
    shutil.copytree(SAMPLES / "mail", corpus / "mail")
    (corpus / "documents" / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a PDF\n")
    home = base / "home"
    engine = Engine(home=home)
    try:
        engine.add_source(corpus)
        final = engine.index()
    finally:
        engine.close()
    assert final.files_done == final.files_total > 0
    return SimpleNamespace(home=home, corpus=corpus)


# --------------------------------------------------------------------------- training data


@pytest.fixture(scope="module")
def squad_articles() -> list[dict]:
    """Two real SQuAD articles, six paragraphs each."""
    if not SQUAD_SUBSET.is_file():
        pytest.skip(f"SQuAD subset not found at {SQUAD_SUBSET} (../shared/data absent)")
    from trainer.data import read_squad

    articles = read_squad(SQUAD_SUBSET)[:2]
    for a in articles:
        a["paragraphs"] = a["paragraphs"][:6]
    return articles


@pytest.fixture(scope="module")
def squad_handful(tmp_path_factory: pytest.TempPathFactory, squad_articles: list[dict]):
    """Training data (sentences.jsonl, examples.jsonl) from ``squad_articles``: ``folder,
    sentences, examples`` (test_trainer, test_passage)."""
    from trainer.data import build_examples, split_corpus

    sentences, paragraphs = split_corpus(squad_articles)
    examples = build_examples(sentences, paragraphs, seed=1, bm25_k=20)
    folder = tmp_path_factory.mktemp("train-data")
    with open(folder / "sentences.jsonl", "w") as fh:
        for s in sentences:
            fh.write(json.dumps({"id": s.id, "passage_id": s.passage_id, "text": s.text}) + "\n")
    with open(folder / "examples.jsonl", "w") as fh:
        for e in examples:
            fh.write(json.dumps({"qid": e.qid, "question": e.question, "pos": e.pos, "negs": e.negs}) + "\n")
    return folder, sentences, examples
