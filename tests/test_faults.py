"""Fault paths (issue 17), scaled down for CI: a second writer on another source, a long
catalog transaction in another process; the full campaign is ``python -m bench.faults``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_pipeline import write

import engine.catalog
from engine.api import Engine
from engine.catalog import Catalog
from engine.writelock import LOCK_FILE

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SPARCDESK_HOME"] = str(home)
    return env


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _wait_for_holder(home: Path, pid: int, proc: subprocess.Popen, timeout: float = 180) -> None:
    """Until the lock file names ``pid`` (the run holds the home's writer lock)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the first run ended early: {proc.stderr.read()!r}"
        try:
            if json.loads((home / LOCK_FILE).read_text() or "null")["pid"] == pid:
                return
        except (OSError, ValueError, TypeError):
            pass
        time.sleep(0.05)
    raise AssertionError("the first run never took the writer lock")


# --------------------------------------------------------------------------- one writer


def test_two_writers_on_two_sources(tmp_path: Path) -> None:
    """Two ``sparcdesk index`` processes on two different sources: the second gets one clear
    line and exit code 3 and changes nothing (its source is not even added), or, with
    ``--wait``, waits for the first and then indexes. Never a traceback."""
    home = tmp_path / "home"
    a = tmp_path / "a"
    b = tmp_path / "b"
    for i in range(300):
        write(a / f"a{i:03d}.txt", f"Note {i} about otters and the river token alpha{i}.")
    for i in range(5):
        write(b / f"b{i}.txt", f"Heron note {i}: herons stand in the pond token beta{i}.")
    first = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "index", str(a), "-q", "--threads", "1", "--commit-every", "25"],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_holder(home, first.pid, first)
        second = _cli(home, "index", str(b), "-q", "--threads", "1")
        assert first.poll() is None, "the first run ended before the second started: the test proves nothing"
        assert second.returncode == 3, second.stderr
        assert "Traceback" not in second.stderr and "database is locked" not in second.stderr
        lines = [x for x in second.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and f"being written by another sparcdesk process (pid {first.pid}" in lines[0]
        cat = Catalog(home / "catalog.sqlite")
        assert [s.path for s in cat.sources()] == [str(a)]  # nothing half-done by the second
        cat.close()
        # with --wait the second run waits for the first, then indexes its own source
        waited = _cli(home, "index", str(b), "-q", "--threads", "1", "--wait", "-1")
        assert waited.returncode == 0, waited.stderr
        assert "Traceback" not in waited.stderr
        assert first.wait(timeout=300) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        first.stdout.close()
        first.stderr.close()
    with Engine(home=home, threads=1) as e:
        st = e.status()
        assert st["files"] == 305 and st["files_ok"] == 305 and st["files_pending"] == 0
        assert e.ask("where do herons stand? beta3", top=1)[0].path == str(b / "b3.txt")


def test_opening_waits_for_no_other_writers_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Status and questions while another process holds a long catalog write transaction:
    opening the catalog writes nothing (it used to set the schema version on every open, and
    so waited for the writer, then failed with 'database is locked')."""
    d = tmp_path / "docs"
    write(d / "a.txt", "Walruses haul out onto the ice to rest.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([d])
    holder = sqlite3.connect(home / "catalog.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer in the middle of a long transaction
    try:
        monkeypatch.setattr(engine.catalog, "BUSY_TIMEOUT_S", 0.5)
        with Engine(home=home, threads=1) as e:
            assert e.status()["files"] == 1
            assert e.ask("where do walruses rest?", top=1)[0].path == str(d / "a.txt")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# --------------------------------------------------------------------------- full disk


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 16 MB tmpfs (root only; skipped where mounting is not permitted)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(disk: Path, leave: int) -> Path:
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def _two_corpora(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    for i in range(20):
        write(one / f"f{i}.txt", f"Otter note {i}. Otters swim in river number {i}. They eat fish daily.")
    for i in range(150):
        write(
            two / f"g{i}.txt",
            " ".join(f"Heron report {i} line {j} mentions pond {j * i} and reeds token{i}x{j}." for j in range(10)),
        )
    return one, two


# Indexing whose free-space check before each commit is switched off, so the disk fills in
# the middle of a commit (SQLite, tantivy or the column store fails half-way).
NO_CHECK = (
    "import sys\n"
    "from engine import diskspace\n"
    "diskspace.commit_estimate = lambda *a: 0\n"
    "diskspace.MIN_FREE_BYTES = 0\n"
    "from engine.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize("check", ["before", "during"])
def test_full_disk_stops_cleanly_and_the_next_run_continues(tmp_path: Path, small_disk: Path, check: str) -> None:
    """The data folder's disk fills while indexing: one line naming the data folder and the
    space needed, exit code 4, no traceback; status and questions work at the last commit;
    once space is free the same command finishes, with nothing indexed twice."""
    one, two = _two_corpora(tmp_path)
    home = small_disk / "home"
    r = _cli(home, "index", str(one), "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    filler = _fill(small_disk, 1 << 20)
    args = ("index", str(two), "-q", "--threads", "1", "--commit-every", "200")
    if check == "before":
        r = _cli(home, *args)
    else:
        r = subprocess.run(
            [sys.executable, "-c", NO_CHECK, *args], env=_env(home), capture_output=True, text=True, timeout=600
        )
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr
    assert f"the disk holding the data folder {home} is full" in lines[0] and "needs about" in lines[0]
    st = _cli(home, "status")
    assert st.returncode == 0 and "Traceback" not in st.stderr, st.stderr
    ask = _cli(home, "ask", "where do otters swim? river 7", "--json")
    assert ask.returncode == 0 and json.loads(ask.stdout)["answers"][0]["path"] == str(one / "f7.txt")
    with Engine(home=home, threads=1) as e:
        from test_pipeline import census

        census(e)  # index and catalog agree at the last commit
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,size=96m", str(small_disk)], check=True)
    r = _cli(home, *args)
    assert r.returncode == 0, r.stderr
    with Engine(home=home, threads=1) as e:
        from test_pipeline import assert_complete

        assert_complete(e, [*sorted(one.iterdir()), *sorted(two.iterdir())])
        st = e.status()
        assert st["files"] == st["files_ok"] == 170
        assert e.ask("heron report 17 token17x3", top=1)[0].path == str(two / "g17.txt")
