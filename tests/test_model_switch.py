"""After a model change, a partial indexing run completes the switch (issue 18, item 3).

A new model (a new shipped bundle, a deleted adapted one) makes indexing fill a *building*
generation beside the live one. Only a run over every source used to switch it live, so
files indexed with ``sparcdesk index PATH`` (a file, a folder, even the one source named
explicitly) never became searchable, and status kept advising a command that did not help.
Now any run on a building generation also brings every other source up to date in it and
switches it live; a run that stops early leaves status saying what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from test_pipeline import write

from engine.api.facade import Engine
from engine.catalog.store import Catalog
from engine.model.encoder import default_bundle_dir

ROOT = Path(__file__).resolve().parent.parent


def new_model(folder: Path, version: str, **config: object) -> Path:
    """The shipped bundle under another version (same weights: only the identity changes,
    and whatever ``config`` sets in its config.json); large files are linked, not copied."""
    src = default_bundle_dir()
    folder.mkdir(parents=True)
    for item in src.iterdir():
        if item.name != "config.json":
            os.symlink(item, folder / item.name)
    cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
    cfg.update(config, version=version)
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"{args}: {r.stderr[-3000:]}"
    return r


def test_index_of_one_file_after_a_model_change_switches_and_finds_it(tmp_path: Path) -> None:
    notes, mail = tmp_path / "notes", tmp_path / "more"
    write(notes / "owls.txt", "Owls hunt at night over the fields.")
    write(mail / "bats.txt", "Bats sleep upside down in caves.")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARCDESK_HOME=str(tmp_path / "home"))
    _cli(env, "index", str(notes), str(mail), "-q", "--threads", "1")

    # A new shipped model, then one new file indexed by path.
    env["SPARCDESK_MODEL"] = str(new_model(tmp_path / "bundle", "9.9.9"))
    newt = write(notes / "newts.txt", "Newts breathe through their damp skin.")
    _cli(env, "index", str(newt), "-q", "--threads", "1")

    answers = json.loads(_cli(env, "ask", "--json", "how do newts breathe?").stdout)["answers"]
    assert answers and answers[0]["path"] == str(newt)
    status = json.loads(_cli(env, "status", "--json").stdout)
    assert status["generation"]["model"].startswith("sparc-tiny 9.9.9+")
    assert not status["rebuilding"]
    # every source was brought into the new generation, not only the file asked for
    bats = json.loads(_cli(env, "ask", "--json", "where do bats sleep?").stdout)["answers"]
    assert bats and bats[0]["path"] == str(mail / "bats.txt")
    with Catalog(tmp_path / "home" / "catalog.sqlite") as cat:
        live = cat.active_generation()
        assert live is not None and {f.generation for f in cat.files()} == {live.id}
        assert [g.status for g in cat.generations()] == ["retired", "active"]
    assert "the model changed" not in _cli(env, "status").stdout


def test_a_stopped_rebuild_says_what_it_waits_for(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for i, animal in enumerate(["Moths", "Crickets", "Toads"]):
        write(notes / f"{i}.txt", f"{animal} come out after dark.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([notes])
    bundle = new_model(tmp_path / "bundle", "9.9.9")
    with Engine(home=home, bundle_dir=bundle, threads=1) as e:
        stop = threading.Event()
        stop.set()  # the rebuild is cancelled before it indexes anything
        assert e.index([notes / "0.txt"], cancel=stop).phase == "cancelled"
        st = e.status()
        assert st["rebuilding"]
        assert st["building"] is not None
        assert st["building"]["model"].startswith("sparc-tiny 9.9.9+")
        assert (st["building"]["files_done"], st["building"]["files_total"]) == (0, 3)
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARCDESK_HOME=str(home), SPARCDESK_MODEL=str(bundle))
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "status"], env=env, capture_output=True, text=True, timeout=120
    ).stdout
    assert "0 of 3 files" in out and "any 'sparcdesk index' run" in out, out
