"""File names that are not valid UTF-8 (issue 18, item 1): one such name used to stop every
indexing run (UnicodeEncodeError in the catalog), and under ``watch`` to drop the rest of its
batch. They must be stored losslessly, found by their content, and printed without a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_pipeline import write

from engine.api.facade import Engine
from engine.catalog.store import Catalog
from engine.home.paths import display, from_store, to_store
from engine.watch.watcher import Watcher

ROOT = Path(__file__).resolve().parent.parent


def _bad(folder: Path, stem: bytes, text: str) -> str:
    """Create ``folder/stem + \\xff + .txt`` (not UTF-8) holding ``text``; returns its str path."""
    raw = os.fsencode(folder) + b"/" + stem + b"\xff.txt"
    with open(raw, "wb") as f:
        f.write(text.encode("utf-8"))
    return os.fsdecode(raw)


def _cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    # A strict UTF-8 stdout, as on a desktop with a UTF-8 locale: printing the raw name must
    # not raise there either.
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARCDESK_HOME=str(home), PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args], env=env, capture_output=True, timeout=timeout
    )


def test_stored_form_round_trips() -> None:
    for s in ["plain/path.txt", "/x/bad-\udcff.txt", "\0lead", "a\\udc80\\\\b\udc80", "", "\\"]:
        t = to_store(s)
        t.encode("utf-8")  # valid Unicode whatever went in
        assert from_store(t) == s
    assert to_store("/ok/é.txt") == "/ok/é.txt"
    assert display("/x/bad-\udcff.txt") == "/x/bad-\\xff.txt"


def test_undecodable_name_is_indexed_found_and_printed(tmp_path: Path) -> None:
    d = tmp_path / "docs"
    write(d / "good.txt", "Good files about otters are indexed too.")
    bad = _bad(d, b"bad-", "The zebra named Quixotic lives in Lisbon.")
    home = tmp_path / "home"

    for _ in range(2):  # every rerun used to fail the same way
        r = _cli(home, "index", str(d), "-q", "--threads", "1")
        assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-3000:]

    with Catalog(home / "catalog.sqlite") as cat:
        state = cat.file_state(bad)
        assert state is not None and state.status == "ok" and state.sentences == 2  # and its name line
        assert cat.counts()["ok"] == 2

    r = _cli(home, "ask", "--json", "where does the zebra named Quixotic live?")
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-3000:]
    answers = json.loads(r.stdout.decode("utf-8"))["answers"]  # valid UTF-8 JSON
    assert answers[0]["path"] == bad and os.path.exists(answers[0]["path"])
    assert "Quixotic" in answers[0]["best"]["sentence"]

    r = _cli(home, "ask", "where does the zebra named Quixotic live?")
    assert r.returncode == 0 and os.fsencode(bad) in r.stdout, r.stderr.decode("utf-8", "replace")[-3000:]
    for args in (["status"], ["status", "--json"], ["sources"]):
        r = _cli(home, *args)
        assert r.returncode == 0, (args, r.stderr.decode("utf-8", "replace")[-3000:])

    # The document text behind the answer (the preview pane) is reachable by its key.
    e = Engine(home=home, threads=1)
    try:
        assert "Quixotic" in e.document_text(bad)
    finally:
        e.close()


@pytest.mark.slow
def test_watch_restarts_and_indexes_a_batch_with_an_undecodable_name(tmp_path: Path) -> None:
    """Before the fix a restarted watch exited at once (its first run failed), and a batch with
    such a name was dropped whole."""
    d = tmp_path / "docs"
    d.mkdir()
    _bad(d, b"first-", "Walruses haul out on the ice floes.")
    home = tmp_path / "home"
    # Registers the source; before the fix it also failed (exit 1), which the watch below met
    # again at its start.
    _cli(home, "index", str(d), "-q", "--threads", "1")
    err_path = tmp_path / "watch.stderr"
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARCDESK_HOME=str(home), PYTHONIOENCODING="utf-8")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli.main", "watch", "-q", "--threads", "1", "--debounce", "0.3"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    try:
        line = b"-"
        while line and b"watching 1 source(s)" not in line:  # after its first run's summary
            line = proc.stdout.readline()
        assert line, err_path.read_bytes()[-3000:]  # it exited at once
        bad = _bad(d, b"second-", "Narwhals carry a single long tusk.")
        good = write(d / "good.txt", "Puffins nest in burrows on the cliffs.")
        seen: set[bytes] = set()
        while len(seen) < 2:
            line = proc.stdout.readline()
            assert line, err_path.read_bytes()[-3000:]  # watch exited
            seen.add(line.split(b"re-indexed ", 1)[-1].strip())
        assert seen == {os.fsencode(bad), os.fsencode(str(good))}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=300) == 0, err_path.read_bytes()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    e = Engine(home=home, threads=1)
    try:
        assert e.ask("which animal carries a single long tusk?", top=1)[0].path == bad
        assert e.ask("where do walruses haul out?", top=1)[0].path.startswith(str(d / "first-"))
    finally:
        e.close()


def test_one_failing_path_does_not_drop_the_rest_of_a_watch_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "docs"
    a = write(d / "a.txt", "Alpacas hum to each other.")
    b = write(d / "b.txt", "Badgers dig setts in the woods.")
    e = Engine(home=tmp_path / "home", threads=1)
    try:
        e.index([d])
        write(a, "Alpacas hum to each other. Llamas spit when annoyed.")
        write(b, "Badgers dig setts in the woods. Beavers build dams of sticks.")
        real = e.index_changes

        def failing(paths: list[str]) -> list[str]:  # one path of the batch breaks the indexer
            if str(a) in map(str, paths):
                raise RuntimeError("broken on a.txt")
            return real(paths)

        monkeypatch.setattr(e, "index_changes", failing)
        done = threading.Event()
        changed: list[str] = []
        w = Watcher(e.layout.home, lambda: [s.path for s in e.sources()], e.index_changes, on_change=lambda c: (changed.extend(c), done.set()), debounce_s=0.05)
        t = threading.Thread(target=w._loop, daemon=True)  # the worker, without an observer
        t.start()
        w.notify([str(a), str(b)])  # one batch, as the observer would hand it over
        try:
            assert done.wait(300), w.last_error  # generous: a loaded machine
        finally:
            w.stop()
            t.join(timeout=30)
        assert changed == [str(b)]
        assert w.last_error is not None and "broken on a.txt" in w.last_error
        assert e.ask("which animal builds dams of sticks?", top=1)[0].path == str(b)
    finally:
        e.close()
