"""Moving a user's index from the old default model to the new one (issue 34).

Every user's index was built with sparc-tiny 0.3.0; this version's default is 0.4.0. The
engine's generation switch rebuilds the index while the old one answers
(test_generation_switch); here the window's side: it starts that rebuild by itself when it
opens such a home, and says once why it is re-indexing and about how long it takes.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("PySide6")

import test_app  # noqa: E402
from test_pipeline import write  # noqa: E402

from app.backend import ModelRebuild, model_rebuild  # noqa: E402
from app.format import rebuild_notice  # noqa: E402
from engine.api.facade import Engine  # noqa: E402
from engine.model.encoder import default_bundle_dir  # noqa: E402

OLD_DEFAULT = default_bundle_dir().parent / "sparc-tiny-0.3.0"
WAIT_MS = test_app.WAIT_MS
open_window = test_app.open_window


def _status(gen_model: str | None, rebuilding: bool, version: str = "0.4.0+b2") -> dict:
    return {
        "model": {"name": "sparc-tiny", "version": version},
        "generation": None if gen_model is None else {"model": gen_model},
        "rebuilding": rebuilding,
        "sentences": 12_000,
    }


def test_model_rebuild_fires_only_for_an_index_of_another_model() -> None:
    fired = model_rebuild(_status("sparc-tiny 0.3.0+a1", True))
    assert fired == ModelRebuild("sparc-tiny 0.3.0+a1", "sparc-tiny 0.4.0+b2", 12_000)
    assert model_rebuild(_status("sparc-tiny 0.4.0+b2", False)) is None  # up to date
    assert (
        model_rebuild(_status("sparc-tiny 0.4.0+b2", True)) is None
    )  # an ordinary run's building generation
    assert model_rebuild(_status(None, False)) is None  # nothing indexed yet


def test_rebuild_notice_says_why_and_how_long() -> None:
    title, text = rebuild_notice("sparc-tiny 0.3.0+a1", "sparc-tiny 0.4.0+b2", 24_000)
    assert title == "Rebuilding the index for a new search model"
    assert "searches with sparc-tiny 0.4.0; your index was built with sparc-tiny 0.3.0" in text
    assert "five times smaller" in text and "24,000 indexed sentences" in text and "min" in text
    assert "keeps answering" in text and "+a1" not in text
    # another switch (an adapted model) makes no claim about size
    _, other = rebuild_notice("sparc-tiny 0.4.0+b2", "sparc-tiny-adapted 0.4.0+c3", 100)
    assert "smaller" not in other


def test_window_rebuilds_an_index_of_the_old_default_and_says_so_once(qtbot, open_window, tmp_path) -> None:
    docs, home = tmp_path / "docs", tmp_path / "home"
    write(docs / "owls.txt", "Owls hunt at night over the open fields.")
    write(docs / "bees.txt", "Bees make honey from the nectar of flowers.")
    with Engine(home=home, bundle_dir=OLD_DEFAULT, threads=1) as old:
        old.add_source(docs)
        old.index()
        assert old.status()["generation"]["model"].startswith("sparc-tiny 0.3.0+")

    window = open_window(home)  # the default model: 0.4.0
    qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=WAIT_MS)
    text = window.banner.text()
    assert text.startswith("Rebuilding the index for a new search model.")
    assert "searches with sparc-tiny 0.4.0; your index was built with sparc-tiny 0.3.0" in text

    def rebuilt() -> bool:
        st = window.backend.engine.status()
        return st["generation"]["model"].startswith("sparc-tiny 0.4.0+") and not st["rebuilding"]

    qtbot.waitUntil(lambda: not window.backend.indexing and rebuilt(), timeout=WAIT_MS)
    answers = window.backend.engine.ask("when do owls hunt?")
    assert answers and answers[0].path == str(docs / "owls.txt")

    # said once: the same switch reported again (another start) leaves the closed banner closed
    window.banner.dismiss()
    window._model_rebuild(
        ModelRebuild("sparc-tiny 0.3.0+x", window.settings.value("model/rebuild_explained"), 2)
    )
    assert not window.banner.isVisible()
