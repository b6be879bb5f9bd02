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
