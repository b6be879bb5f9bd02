"""Freshness under watch: an edited, created, deleted or renamed file (and a new message in a
Maildir) is reflected in answers within 2 s of the change, with the default debounce."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_pipeline import census, mail_bytes, write

from engine.api.facade import Engine

FRESHNESS_S = 2.0


def wait_for(check: Callable[[], bool], limit: float = 10.0) -> float:
    """Seconds until ``check()`` holds (polling every 20 ms); fails after ``limit``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if check():
            return time.monotonic() - t0
        time.sleep(0.02)
    raise AssertionError(f"not reflected within {limit} s")


def paths(e: Engine, question: str) -> list[str]:
    return [a.path for a in e.ask(question, top=5, hybrid=True)]


def sentences(e: Engine, question: str) -> list[str]:
    return [h.sentence for a in e.ask(question, top=5, hybrid=True) for h in (a.best, *a.others)]


@pytest.fixture()
def watched(tmp_path: Path):
    d = tmp_path / "docs"
    write(d / "pelican.txt", "Pelicans glide low over the bay.")
    write(d / "heron.txt", "Herons wait motionless in the shallows.")
    write(d / "ibis.txt", "The ibis probes the mud with its curved bill.")
    md = d / "mail" / "box"
    for sub in ("cur", "new", "tmp"):
        (md / sub).mkdir(parents=True)
    (md / "new" / "1.M1.host").write_bytes(mail_bytes("Kickoff", "The kickoff meeting is on Monday."))
    e = Engine(home=tmp_path / "home", threads=1)
    e.index([d])
    changed: list[str] = []
    e.start_watch(on_change=changed.extend)  # default debounce, 0.5 s
    time.sleep(0.3)  # let the observer install its watches
    yield e, d, changed
    e.stop_watch()
    e.close()


def test_edit_create_delete_rename_and_mail_are_fresh_within_2s(watched) -> None:
    e, d, changed = watched
    timings: dict[str, float] = {}

    write(d / "pelican.txt", "Pelicans glide low over the bay. Flamingos balance on one leg.")
    timings["edit"] = wait_for(
        lambda: "Flamingos balance on one leg." in sentences(e, "flamingos balance on one leg")
    )

    write(d / "new" / "crane.txt", "Cranes dance in pairs before nesting.")
    timings["create"] = wait_for(lambda: str(d / "new" / "crane.txt") in paths(e, "cranes dance in pairs"))

    (d / "heron.txt").unlink()
    timings["delete"] = wait_for(lambda: str(d / "heron.txt") not in paths(e, "herons wait motionless"))

    (d / "ibis.txt").rename(d / "ibis-renamed.txt")
    timings["rename"] = wait_for(
        lambda: (
            paths(e, "ibis probes the mud")[:1] == [str(d / "ibis-renamed.txt")]
            and str(d / "ibis.txt") not in paths(e, "ibis probes the mud")
        )
    )

    box = d / "mail" / "box"
    (box / "tmp" / "2.M2.host").write_bytes(mail_bytes("Offsite", "The offsite retreat moves to Thursday."))
    (box / "tmp" / "2.M2.host").rename(box / "new" / "2.M2.host")  # how delivery works
    timings["mail"] = wait_for(
        lambda: "The offsite retreat moves to Thursday." in sentences(e, "offsite retreat")
    )

    slow = {k: round(v, 2) for k, v in timings.items() if v > FRESHNESS_S}
    assert not slow, f"slower than {FRESHNESS_S} s: {slow} (all: {timings})"
    # on_change runs right after the commit that made the answers fresh.
    wait_for(lambda: str(d / "heron.txt") in changed and str(box) in changed, limit=5)
    census(e)


def test_ignored_paths_do_not_trigger_indexing(watched) -> None:
    e, d, changed = watched
    write(d / ".pelican.txt.swp", "editor swap file")
    write(d / "node_modules" / "pkg" / "readme.txt", "vendored text")
    time.sleep(1.2)
    assert changed == []
    assert all(".swp" not in p and "node_modules" not in p for p in paths(e, "editor swap vendored text"))


def test_a_source_added_while_watching_is_watched(watched, tmp_path: Path) -> None:
    e, _d, _changed = watched
    other = tmp_path / "more"
    write(other / "stork.txt", "Storks nest on chimneys in spring.")
    e.add_source(other)
    e.index([other])
    time.sleep(0.3)  # let the observer install the new watch
    write(other / "crane.txt", "Cranes dance in pairs on the frozen marsh.")
    took = wait_for(lambda: str(other / "crane.txt") in paths(e, "Where do cranes dance?"))
    assert took <= FRESHNESS_S
