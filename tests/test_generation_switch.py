"""An index built with the shipped model moves to a new model through the building
generation, answering all the while (issue 13, item 6).

The new model here is the shipped network under a new version with encode-time pruning
(``prune_ratio`` 0.1, as the sparse models export): a different identity and different,
sparser vectors, so every file is re-encoded into a new generation while the old one answers.
The rebuild is paused deterministically (the run's own pause, after its first commit into the
new generation) to ask while it is half done; a reader opened before the switch (as the
window's engine is) must go on answering after it, from the new generation.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_model_switch import new_model
from test_pipeline import write

from engine.api.facade import Engine, Progress
from engine.catalog.store import Catalog
from engine.model.encoder import default_bundle_dir

FACTS = {
    "owls.txt": ("Owls hunt at night over the open fields.", "when do owls hunt?"),
    "bats.txt": ("Bats sleep upside down in limestone caves.", "where do bats sleep?"),
    "newts.txt": ("Newts breathe through their damp skin.", "how do newts breathe?"),
    "moths.txt": ("Moths are drawn to the porch lamp after dark.", "what draws moths after dark?"),
    "toads.txt": ("Toads bury themselves in mud to survive the winter.", "how do toads survive winter?"),
    "kestrels.txt": ("Kestrels hover before they dive onto voles.", "what do kestrels dive onto?"),
}


def assert_answers(engine: Engine, docs: Path) -> None:
    for name, (_, question) in FACTS.items():
        answers = engine.ask(question, top=3)
        assert answers and answers[0].path == str(docs / name), (question, [a.path for a in answers])


#: sparc-tiny 0.3.0, the default until 0.4.0, kept beside it (assets/sparc-tiny-0.3.0)
OLD_DEFAULT = default_bundle_dir().parent / "sparc-tiny-0.3.0"


@pytest.mark.parametrize("upgrade", [False, True], ids=["variant-of-the-default", "0.3.0-to-0.4.0"])
def test_switch_from_the_shipped_model_answers_throughout(tmp_path: Path, upgrade: bool) -> None:
    """``upgrade``: an index built with 0.3.0 (as every user's was) opened by this version,
    whose default is 0.4.0 (issue 34): the window's engine and the run's both use the default."""
    docs, home = tmp_path / "docs", tmp_path / "home"
    for name, (text, _) in FACTS.items():
        write(docs / name, text)
    with Engine(home=home, bundle_dir=OLD_DEFAULT if upgrade else None, threads=1) as first:
        first.index([docs])
        shipped = first.status()["generation"]["model"]
    reader = Engine(home=home, threads=1)  # opened before the switch, like the window's
    assert_answers(reader, docs)

    # upgrade: the new default; else the shipped network as a new model, weights below 0.1 x
    # a sentence's largest dropped
    new = None if upgrade else new_model(tmp_path / "new", "9.0.0", prune_ratio=0.1)
    version = "0.4.0" if upgrade else "9.0.0"
    writer = Engine(home=home, bundle_dir=new, threads=1)
    writer.commit_every = 1  # encode and commit sentence by sentence: the pause below comes mid-run
    pause, paused = threading.Event(), threading.Event()
    seen: list[Progress] = []

    def progress(p: Progress) -> None:
        seen.append(p)
        if p.phase == "committing" and p.files_done >= 1 and not paused.is_set():
            pause.set()  # the run commits what it holds, reports "paused" and waits
        if p.phase in ("paused", "done", "cancelled"):
            paused.set()  # ("done": the run ended without pausing, which the test reports)

    outcome: list[Progress] = []
    run = threading.Thread(target=lambda: outcome.append(writer.index(None, progress=progress, pause=pause)))
    run.start()
    try:
        assert paused.wait(180) and seen[-1].phase == "paused", [p.phase for p in seen][-5:]
        # Half rebuilt: the new generation holds some files, the old one still answers all.
        with Catalog(home / "catalog.sqlite") as cat:
            building = [g for g in cat.generations() if g.status == "building"]
            assert len(building) == 1 and building[0].model_version.startswith(version)
            done = sum(f.generation == building[0].id for f in cat.files())
        assert 1 <= done < len(FACTS)
        assert_answers(reader, docs)
        with Engine(home=home, threads=1) as fresh:  # a reader opened mid-rebuild too
            assert_answers(fresh, docs)
            st = fresh.status()
            assert st["generation"]["model"] == shipped and st["rebuilding"]
    finally:
        pause.clear()
        run.join(300)
    assert not run.is_alive() and outcome and outcome[0].phase == "done", outcome
    writer.close()

    # Switched: the long-lived reader and a new one answer from the new generation.
    assert_answers(reader, docs)
    with Engine(home=home, threads=1) as after:
        st = after.status()
        assert st["generation"]["model"].startswith(f"sparc-tiny {version}+") and not st["rebuilding"]
        assert_answers(after, docs)
    with Catalog(home / "catalog.sqlite") as cat:
        live = cat.active_generation()
        assert live is not None and {f.generation for f in cat.files()} == {live.id}
        assert [g.status for g in cat.generations()] == ["retired", "active"]
    reader.close()
