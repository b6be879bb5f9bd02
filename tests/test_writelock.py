"""The home's writer lock (``engine.upkeep.writelock``) on filelock: re-entrant and serialising
threads inside a process, one readable line naming the holder for another process, and
released by the OS when its holder is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from engine.index.sentences import IndexLockedError
from engine.upkeep import writelock

REPO = Path(__file__).resolve().parents[1]


def _holding_process(home: Path) -> subprocess.Popen[str]:
    """A process that takes ``home``'s lock for the task "testing", says so, and waits."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from engine.upkeep import writelock
        with writelock.hold({str(home)!r}, "testing"):
            print("held", flush=True)
            sys.stdin.readline()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_reentrant_and_says_who_holds_it(tmp_path: Path) -> None:
    assert writelock.holder(tmp_path) is None
    with writelock.hold(tmp_path, "adapting"):
        info = writelock.holder(tmp_path)
        assert info is not None and info["pid"] == os.getpid() and info["task"] == "adapting" and info["since"]
        with writelock.hold(tmp_path, "indexing"):  # the same thread again: re-entrant
            assert writelock.holder(tmp_path)["task"] == "adapting"  # type: ignore[index]
        assert writelock.holder(tmp_path) is not None  # still held by the outer block
    assert writelock.holder(tmp_path) is None
    assert (tmp_path / writelock.LOCK_FILE).exists() or sys.platform == "win32"


def test_threads_are_serialised(tmp_path: Path) -> None:
    entered = threading.Event()
    leave = threading.Event()
    seen: list[str] = []

    def first() -> None:
        with writelock.hold(tmp_path, "first"):
            entered.set()
            leave.wait(10)
            seen.append("first done")

    t = threading.Thread(target=first)
    t.start()
    try:
        assert entered.wait(10)
        with (
            pytest.raises(IndexLockedError, match="another task of this process"),
            writelock.hold(tmp_path, "second", wait_s=0.0),
        ):
            pass
        leave.set()
        with writelock.hold(tmp_path, "second", wait_s=10):
            seen.append("second")
    finally:
        leave.set()
        t.join(10)
    assert seen == ["first done", "second"]


def test_another_process_gets_one_line_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    proc = _holding_process(tmp_path)
    try:
        with pytest.raises(IndexLockedError) as caught, writelock.hold(tmp_path, "indexing", wait_s=0.3):
            pass
        message = str(caught.value)
        assert f"is being written by another sparcdesk process (pid {proc.pid}, testing, since " in message
        assert "\n" not in message
        if sys.platform != "win32":
            os.kill(proc.pid, signal.SIGKILL)  # no clean-up runs: the OS lets the lock go
        else:  # pragma: no cover
            proc.kill()
        proc.wait(10)
        with writelock.hold(tmp_path, "after the kill", wait_s=10):
            assert writelock.holder(tmp_path)["task"] == "after the kill"  # type: ignore[index]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_waiting_writer_gets_the_lock_when_it_is_let_go(tmp_path: Path) -> None:
    proc = _holding_process(tmp_path)
    try:
        assert proc.stdin is not None
        threading.Timer(0.5, lambda: (proc.stdin.write("\n"), proc.stdin.flush())).start()  # type: ignore[union-attr]
        with writelock.hold(tmp_path, "waited", wait_s=30):
            assert proc.wait(10) == 0
            assert writelock.holder(tmp_path)["pid"] == os.getpid()  # type: ignore[index]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_missing_home_is_an_error_not_created(tmp_path: Path) -> None:
    home = tmp_path / "gone" / "home"
    with pytest.raises(FileNotFoundError), writelock.hold(home):
        pass
    assert not (tmp_path / "gone").exists()
