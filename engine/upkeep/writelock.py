"""One writer per home, whichever source it writes: ``HOME/writer.lock``.

Every run that changes the index or the catalog (an indexing run on any source, a watch
batch, removing a source, adapting or restoring the model) holds this lock for its whole
length. tantivy's own writer lock covers one generation's folder only, and a run writes
the catalog before it opens the index (sources, files marked pending), so two runs on two
sources used to meet in SQLite instead, and the loser could die with ``database is locked``.
With this lock a second writer either waits (``wait_s``) or gets
:class:`engine.index.sentences.IndexLockedError` with one readable line: which process holds the
lock, doing what, since when.

The lock is :class:`filelock.FileLock` on ``writer.lock``: an OS file lock (``flock`` on
POSIX, a byte-range lock on Windows), so it is released by the OS when its holder dies, even
by ``kill -9``: a stale lock file never blocks anyone. filelock, not a hand-written
``fcntl``/``msvcrt`` pair, because it is tested on Windows upstream (this project is not)
and handles the corners (a file system without ``flock``, where it falls back to a marker
file it breaks once its writer's process is gone; a fork while the lock is held). Who holds
it (``pid``, ``task``, ``since``) is written beside it, in ``writer.lock.json``, once the
lock is taken, and removed before it is let go: the lock file itself belongs to filelock
(and on Windows another process cannot read its locked byte). Inside a process the lock is
re-entrant (a run inside an adaptation, a watch batch after an index run in the same
engine) and serialises threads.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from engine.index.sentences import IndexLockedError

LOCK_FILE = "writer.lock"
#: Who holds the lock: ``{"pid", "task", "since"}``, written by the holder once it has it.
HOLDER_FILE = "writer.lock.json"
#: How often a waiting writer tries again.
POLL_S = 0.2

_registry_lock = threading.Lock()
_holders: dict[str, _Held] = {}


class _Held:
    """This process's hold on one home's lock file."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.lock: FileLock | None = None
        self.count = 0


def _try_os_lock(lock: FileLock) -> bool:
    """One attempt at the OS lock, without waiting."""
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    return True


def holder(home: Path | str) -> dict | None:
    """What the holder file says about the lock's holder (``pid``, ``task``, ``since``); None
    when it says nothing readable (no holder, or one that has not written it yet)."""
    try:
        data = json.loads((Path(home) / HOLDER_FILE).read_text(encoding="utf-8") or "null")
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
            if held.count == 0 and held.lock is not None:
                lock, held.lock = held.lock, None
                # Removed while still held, so it never erases the next holder's.
                with contextlib.suppress(OSError):
                    (home / HOLDER_FILE).unlink(missing_ok=True)
                lock.release()
    finally:
        held.thread_lock.release()


def _acquire_file(home: Path, held: _Held, task: str, deadline: float | None) -> None:
    if not home.is_dir():  # filelock would create it: a home that is gone is an error, as before
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(home / LOCK_FILE))
    lock = FileLock(home / LOCK_FILE, mode=0o600, thread_local=False)
    while not _try_os_lock(lock):
        if deadline is not None and time.monotonic() >= deadline:
            raise IndexLockedError(busy_message(home))
        time.sleep(POLL_S)
    try:
        _write_holder(home, {"pid": os.getpid(), "task": task, "since": time.strftime("%Y-%m-%d %H:%M:%S")})
    except BaseException:
        lock.release()
        raise
    held.lock = lock


def _write_holder(home: Path, info: dict) -> None:
    """Replace the holder file whole, so a reader sees the old one, none or the new one, never
    half of it. Who holds the lock is a nicety for the message: failing to say it is not an error."""
    tmp = home / f"{HOLDER_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(info), encoding="utf-8")
        os.replace(tmp, home / HOLDER_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)

