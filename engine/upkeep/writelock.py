"""One writer per home, whichever source it writes: ``HOME/writer.lock``.

Every run that changes the index or the catalog (an indexing run on any source, a watch
batch, removing a source, adapting or restoring the model) holds this lock for its whole
length. tantivy's own writer lock covers one generation's folder only, and a run writes
the catalog before it opens the index (sources, files marked pending), so two runs on two
sources used to meet in SQLite instead, and the loser could die with ``database is locked``.
With this lock a second writer either waits (``wait_s``) or gets
:class:`engine.index.sentences.IndexLockedError` with one readable line: which process holds the
lock, doing what, since when.

The lock is an OS file lock (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows), so it
is released by the OS when its holder dies, even by ``kill -9``: a stale lock file never
blocks anyone. Inside a process it is re-entrant (a run inside an adaptation, a watch batch
after an index run in the same engine) and serialises threads.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from engine.index.sentences import IndexLockedError

LOCK_FILE = "writer.lock"
#: How often a waiting writer tries again.
POLL_S = 0.2

_registry_lock = threading.Lock()
_holders: dict[str, _Held] = {}


class _Held:
    """This process's hold on one home's lock file."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.fd: int | None = None
        self.count = 0


def _try_os_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - not tested on this platform
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _os_unlock(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def holder(home: Path | str) -> dict | None:
    """What the lock file says about its last holder (``pid``, ``task``, ``since``); None
    when it says nothing readable."""
    try:
        data = json.loads((Path(home) / LOCK_FILE).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def busy_message(home: Path | str) -> str:
    """The line a second writer gets."""
    h = holder(home)
    who = "another sparcdesk process"
    if h:
        bits = [f"pid {h.get('pid')}"]
        if h.get("task"):
            bits.append(str(h["task"]))
        if h.get("since"):
            bits.append(f"since {h['since']}")
        who += f" ({', '.join(bits)})"
    return f"the index in {home} is being written by {who}"


@contextlib.contextmanager
def hold(home: Path | str, task: str = "indexing", wait_s: float = 0.0) -> Iterator[None]:
    """Hold ``home``'s writer lock for the ``with`` block; wait up to ``wait_s`` seconds
    (None: for ever) for another holder, then raise :class:`IndexLockedError`."""
    home = Path(home)
    key = os.path.abspath(home)
    with _registry_lock:
        held = _holders.setdefault(key, _Held())
    deadline = None if wait_s is None else time.monotonic() + max(0.0, wait_s)
    # Threads of this process first (re-entrant for the thread that holds it).
    timeout = -1 if deadline is None else max(0.0, deadline - time.monotonic())
    if not held.thread_lock.acquire(timeout=timeout):
        raise IndexLockedError(f"the index in {home} is being written by another task of this process")
    try:
        if held.count == 0:
            _acquire_file(home, held, task, deadline)
        held.count += 1
        try:
            yield
        finally:
            held.count -= 1
            if held.count == 0 and held.fd is not None:
                fd, held.fd = held.fd, None
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                _os_unlock(fd)
                os.close(fd)
    finally:
        held.thread_lock.release()


def _acquire_file(home: Path, held: _Held, task: str, deadline: float | None) -> None:
    path = home / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while not _try_os_lock(fd):
            if deadline is not None and time.monotonic() >= deadline:
                raise IndexLockedError(busy_message(home))
            time.sleep(POLL_S)
        info = {"pid": os.getpid(), "task": task, "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        with contextlib.suppress(OSError):  # who holds it is a nicety for the message
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, json.dumps(info).encode())
    except BaseException:
        os.close(fd)
        raise
    held.fd = fd
