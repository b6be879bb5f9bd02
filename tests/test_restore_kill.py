"""``sparcdesk restore`` survives a kill at each of its steps (issue 14, item 2).

Restoring the previous model writes three stores one after the other: the retired index
(documents deleted since it was retired), the catalog (which generation is live, which files
it holds) and ``model.json`` (which bundle indexes). A crash between them used to leave the
restored generation live with ``model.json`` still naming the adapted model, so the next
indexing run silently re-encoded everything with it. Here a real ``sparcdesk restore`` process
is killed (SIGKILL) at each step; the next engine to open the data folder finishes the
restore: the previous model and generation are live, nothing is re-encoded, and the model
switched away from can itself be restored again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_model_switch import new_model
from test_pipeline import kill_at_step, write

from engine.api.facade import Engine
from engine.catalog.store import Catalog
from engine.model import store as model_store
from engine.model.encoder import default_bundle_dir

STEPS = ["restore:journaled", "restore:stale-deleted", "restore:activated", "restore:selected"]


@pytest.fixture(scope="module")
def switched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder indexed with the shipped model, then switched to another one (a new
    generation went live), with one document deleted after the switch."""
    base = tmp_path_factory.mktemp("switched")
    docs = base / "docs"
    write(docs / "owls.txt", "Owls hunt at night over the fields.")
    write(docs / "bats.txt", "Bats sleep upside down in caves.")
    write(docs / "newts.txt", "Newts breathe through their damp skin.")
    home = base / "home"
    with Engine(home=home, threads=1) as e:
        e.index([docs])
    model_store.select(home, new_model(base / "bundle", "9.9.9"))
    with Engine(home=home, threads=1) as e:
        e.index(None)
        (docs / "bats.txt").unlink()
        e.index(None)
        assert e.status()["generation"]["id"] == 2
        assert e.model_state()["previous"]["generation"] == 1
    return home


@pytest.mark.parametrize("step", STEPS)
def test_restore_killed_at_each_step_is_finished_by_the_next_open(
    switched: Path, tmp_path: Path, step: str
) -> None:
    home = tmp_path / "home"
    shutil.copytree(switched, home, symlinks=True)
    adapted = model_store.selected_bundle(home)
    kill_at_step(
        ["-m", "engine.cli.main", "restore", "-q", "--threads", "1"], step, {"SPARCDESK_HOME": str(home)}
    )

    with Engine(home=home, threads=1) as e:
        assert e.bundle_dir == default_bundle_dir()
        st = e.status()
        assert st["generation"]["id"] == 1 and not st["rebuilding"], st["generation"]
        assert e.model_state()["previous"]["generation"] == 2
        assert e.model_state()["previous"]["bundle"] == str(adapted)
        e.index(None)
        with Catalog(home / "catalog.sqlite") as cat:
            # nothing was re-encoded into a new generation; every file is in the restored one
            assert [(g.id, g.status) for g in cat.generations()] == [(1, "active"), (2, "retired")]
            assert {f.generation for f in cat.files()} == {1}
        assert e.ask("Where do owls hunt?")[0].path.endswith("owls.txt")
        assert not any(a.path.endswith("bats.txt") for a in e.ask("Where do bats sleep?"))
