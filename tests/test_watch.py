"""Freshness under watch: an edited, created, deleted or renamed file (and a new message in a
Maildir) is reflected in answers while the engine watches, with the default debounce.

These tests wait for each change with a generous timeout and assert no time limit: how fast
it is (target <= 2 s) is measured by ``python -m bench.freshness`` on the same changes.
``Engine.start_watch`` (and a source added while watching) has its watches in place when it
returns (watchdog installs inotify watches before its threads start), so nothing waits for
the observer to settle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_pipeline import census, write

from bench.freshness import STEPS, make_corpus, paths
from bench.freshness import wait_for as _wait_for
from engine.api.facade import Engine

TIMEOUT_S = 120.0  # generous: a loaded CI machine must not fail these


def wait_for(check: Callable[[], bool], what: str = "the change") -> None:
    _wait_for(check, TIMEOUT_S, what)


@pytest.fixture()
def watched(tmp_path: Path):
    d = tmp_path / "docs"
    make_corpus(d)
    e = Engine(home=tmp_path / "home", threads=1)
    e.index([d])
    changed: list[str] = []
    e.start_watch(on_change=changed.extend)  # default debounce, 0.5 s
    yield e, d, changed
    e.stop_watch()
    e.close()


def test_edit_create_delete_rename_and_mail_are_reflected(watched) -> None:
    e, d, changed = watched
    for step in STEPS:
        assert not step.reflected(e, d), f"{step.name}: reflected before the change"
        step.change(d)
        wait_for(lambda s=step: s.reflected(e, d), step.name)
    # on_change runs right after the commit that made the answers fresh.
    wait_for(lambda: str(d / "heron.txt") in changed and str(d / "mail" / "box") in changed, "on_change")
    census(e)


def test_ignored_paths_do_not_trigger_indexing(watched) -> None:
    """Ignored files changed first, then a watched one: the batches up to the watched file
    (events arrive in order) name it alone."""
    e, d, changed = watched
    write(d / ".pelican.txt.swp", "editor swap file")
    write(d / "node_modules" / "pkg" / "readme.txt", "vendored text")
    sentinel = write(d / "sentinel.txt", "A sentinel stands at the gate.")
    wait_for(lambda: str(sentinel) in changed, "the watched file")
    assert changed == [str(sentinel)]
    assert all(".swp" not in p and "node_modules" not in p for p in paths(e, "editor swap vendored text"))


def test_a_source_added_while_watching_is_watched(watched, tmp_path: Path) -> None:
    e, _d, _changed = watched
    other = tmp_path / "more"
    write(other / "stork.txt", "Storks nest on chimneys in spring.")
    e.add_source(other)
    e.index([other])
    write(other / "crane.txt", "Cranes dance in pairs on the frozen marsh.")
    wait_for(lambda: str(other / "crane.txt") in paths(e, "Where do cranes dance?"), "the new source's file")
