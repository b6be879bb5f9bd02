"""Fixtures shared by several test modules, built once per test session (per xdist worker).

Indexing the sample corpus with the shipped model is the costly part of many tests; a
session fixture does it once and the tests that only read it share the home. A test that
changes an index gets a home of its own (or a ``shutil.copytree`` of a shared one).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


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
