"""Extraction under limits: each unit is read in a worker process that can be killed.

A damaged or hostile file can make a parser take minutes (HTML nested 100,000 deep), take
gigabytes (a 200 MB paragraph in a 205 KB ODT), print a gigabyte to stdout (odfpy on a
damaged file) or block for ever (a file swapped for a FIFO). In the indexer's own process
that stops the run or takes the machine down; here it costs one file:

* the worker is a plain child process (``python -m engine.ingest.extract_worker``; the window's
  indexing child is a daemonic multiprocessing process, which may not use multiprocessing
  for children of its own), started once and reused for unit after unit, across runs;
* its memory is capped: ``RLIMIT_AS`` at its size after start-up plus :data:`MEMORY_LIMIT`
  (a huge allocation fails at once with MemoryError), and the parent kills it when its
  resident size passes the limit anyway;
* the parent waits at most :func:`time_limit` seconds for each document (a unit's
  documents stream back one by one, so a Maildir of 100,000 messages is never cut short),
  then kills it;
* its stdout and stderr go to the null device; documents travel on a pipe of their own;
* a text over :data:`engine.ingest.readers.common.MAX_TEXT_CHARS` is refused in the worker;
* OCR (``engine.ingest.readers.ocr``) says before each page that the worker is alive: the
  time limit then applies to each page (at least ``PAGE_LIMIT_S`` and a margin), not to the
  whole of a scanned book; a worker whose OCR overran a page is replaced after the unit.

A unit over a limit becomes an :class:`engine.ingest.documents.ExtractionError` with the reason
(``needed more than 640 MB of memory to read``, ``took longer than 36 s to read``), so the
indexer records it as failed (found by its name) and goes on; a new worker is started for
the next unit. In the bundled app ``sys.executable`` is the app, whose entry point runs
``-m MODULE`` (packaging/entry.py). Where no worker can be started, extraction runs
in-process as before, and says so in the log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from engine.ingest.documents import Document, ExtractionError

log = logging.getLogger(__name__)

#: Memory a worker may use above its size after start-up (its imports: ~100 MB resident).
MEMORY_LIMIT = 640 * 1024 * 1024
#: What the parent allows for the worker's own start-up size on top of the limit.
BASELINE = 128 * 1024 * 1024
#: Seconds a worker may take for one document: a base, plus this much per MB of the unit.
TIME_BASE_S = 30.0
TIME_PER_MB_S = 6.0
TIME_MAX_S = 900.0
#: How often the parent looks at a busy worker's memory.
WATCH_S = 0.25
#: A worker whose resident size stays above this share of the limit after a unit is replaced.
RECYCLE_SHARE = 0.5

_HEADER = struct.Struct("!Q")


def time_limit(size: int) -> float:
    """Seconds allowed for one document of a unit of ``size`` bytes."""
    return min(TIME_MAX_S, TIME_BASE_S + TIME_PER_MB_S * size / (1024 * 1024))


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MB"


def _send(stream: BinaryIO, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream: BinaryIO) -> object:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (n,) = _HEADER.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


# --------------------------------------------------------------------------- the worker side


def _limit_memory(extra: int) -> None:
    try:
        import resource

        import psutil

        vms = psutil.Process().memory_info().vms
        limit = vms + extra
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except Exception:  # no RLIMIT_AS here (Windows, macOS): the parent's memory watch
        # remains. Nothing to log: this runs in the worker, whose stderr is the null device.
        pass


def worker_main() -> None:
    """The worker: units in on stdin, ``("doc"|"error", item)`` frames and an ``("end",)``
    out on its original stdout; prints of the parsers go to the null device."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    from engine.ingest import extract
    from engine.ingest import mail as _mail  # noqa: F401 - loaded before the memory limit is set
    from engine.ingest.readers import ocr

    ocr.set_progress(lambda: _send(replies, ("alive", None)))

    extra = int(os.environ.get("SPARCDESK_EXTRACT_MEMORY", MEMORY_LIMIT))
    _limit_memory(extra)
    while True:
        try:
            request = _recv(requests)
        except EOFError:
            return
        if request is None:
            return
        path, max_bytes = request  # type: ignore[misc]
        try:
            for item in extract.iter_extract(Path(path), max_bytes=max_bytes):
                if isinstance(item, ExtractionError) and "MemoryError" in item.reason:
                    raise MemoryError  # caught by a parser's own handler (a message of a mailbox)
                _send(replies, ("item", _limited(item)))
            if ocr.retire_requested():  # an OCR page overran its limit: its thread still runs
                _send(replies, ("end", "retire"))
                return
            _send(replies, ("end", None))
        except MemoryError:
            _send(replies, ("fail", f"needed more than {_mb(extra)} of memory to read: skipped"))
            return  # its heap is in an unknown state: the parent starts a new worker
        except RecursionError:
            _send(replies, ("fail", "nested too deeply to read: skipped"))
            return


def _limited(item: Document | ExtractionError) -> Document | ExtractionError:
    from engine.ingest.readers.common import MAX_TEXT_CHARS

    if isinstance(item, Document) and len(item.text) > MAX_TEXT_CHARS:
        return ExtractionError(
            item.key, f"text too long ({len(item.text):,} characters > {MAX_TEXT_CHARS:,} limit): skipped"
        )
    return item


# --------------------------------------------------------------------------- the parent side


class _Worker:
    """One worker process and the thread that reads its replies."""

    def __init__(self, memory_limit: int) -> None:
        env = dict(os.environ)
        env["SPARCDESK_EXTRACT_MEMORY"] = str(memory_limit)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine.ingest.extract_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=root,
        )
        self.replies: queue.Queue[object] = queue.Queue(maxsize=8)
        self.reader = threading.Thread(target=self._read, name="sparcdesk-extract-reader", daemon=True)
        self.reader.start()
        self.units = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            try:
                msg = _recv(self.proc.stdout)
            except (EOFError, OSError, ValueError):  # the worker left or was killed, its pipe closed
                msg = ("eof", None)
            except Exception as exc:  # a frame that does not unpickle: the unit is lost, not the run
                log.warning("extraction worker %d sent an unreadable reply: %s: %s", self.proc.pid, type(exc).__name__, exc)
                msg = ("eof", None)
            while True:
                try:
                    self.replies.put(msg, timeout=0.5)
                    break
                except queue.Full:
                    if self.proc.poll() is not None and msg[0] != "eof":  # type: ignore[index]
                        return
            if msg[0] == "eof":  # type: ignore[index]
                return

    def rss(self) -> int:
        import psutil

        try:
            return int(psutil.Process(self.proc.pid).memory_info().rss)
        except psutil.Error:  # it exited since the last look: it holds no memory
            return 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):  # it has exited already
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.warning("extraction worker %d did not exit 10 s after it was killed", self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            # Closing stdin flushes it: a pipe whose reader is gone (the killed worker) says so.
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]

    def close(self) -> None:
        """Ask it to leave; kill it if it does not."""
        with contextlib.suppress(OSError, ValueError):  # it left already; kill() below cleans up
            _send(self.proc.stdin, None)  # type: ignore[arg-type]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        self.kill()


class Extractor:
    """Extraction of units in worker processes (see the module docstring); thread-safe, one
    unit at a time per worker."""

    def __init__(
        self, memory_limit: int = MEMORY_LIMIT, time_limit: Callable[[int], float] = time_limit
    ) -> None:
        self.memory_limit = memory_limit
        self.time_limit = time_limit
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        #: Extract in this process (set when no worker could be started).
        self.in_process = False

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                w = self._idle.pop()
                if w.alive():
                    return w
                w.kill()
        return _Worker(self.memory_limit)

    def _give_back(self, w: _Worker) -> None:
        w.units += 1
        if not w.alive() or w.rss() > BASELINE + RECYCLE_SHARE * self.memory_limit:
            w.kill()
            return
        with self._lock:
            if self._closed or len(self._idle) >= 2:
                w.close()
            else:
                self._idle.append(w)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for w in idle:
            w.close()

    def extract(
        self, path: str | Path, max_bytes: int, stop: threading.Event | None = None
    ) -> Iterator[Document | ExtractionError]:
        """The documents and errors of one unit, as :func:`engine.ingest.extract.iter_extract`
        gives them, with the limits applied. Stops early (yielding nothing more) once
        ``stop`` is set."""
        from engine.ingest.extract import iter_extract

        path = str(path)
        if self.in_process:
            yield from iter_extract(Path(path), max_bytes=max_bytes)
            return
        try:
            w = self._take()
            _send(w.proc.stdin, (path, max_bytes))  # type: ignore[arg-type]
        except OSError as exc:
            log.warning("no extraction worker (%s): extracting in this process", exc)
            self.in_process = True
            yield from iter_extract(Path(path), max_bytes=max_bytes)
            return
        try:
            size = os.stat(path).st_size if os.path.isfile(path) else _folder_size(path)
        except OSError:  # gone or unreadable: the worker reports why; allow the base time
            size = 0
        allowed = self.time_limit(size)
        done = retire = False
        try:
            while True:
                waited = 0.0
                msg: Any = None
                while msg is None:
                    if stop is not None and stop.is_set():
                        return
                    try:
                        msg = w.replies.get(timeout=WATCH_S)
                    except queue.Empty:
                        waited += WATCH_S
                        if w.rss() > self.memory_limit + BASELINE:
                            yield ExtractionError(
                                path, f"needed more than {_mb(self.memory_limit)} of memory to read: skipped"
                            )
                            return
                        if waited >= allowed:
                            yield ExtractionError(path, f"took longer than {allowed:.0f} s to read: skipped")
                            return
                kind, item = msg
                if kind == "alive":  # a page of OCR begins: the limit starts again for it
                    allowed = max(allowed, _ocr_page_allowance())
                elif kind == "item":
                    yield item
                elif kind == "end":
                    done, retire = True, item == "retire"
                    return
                elif kind == "fail":
                    yield ExtractionError(path, item)
                    return
                else:  # the worker died (killed by the OS for memory, a crash in a C library)
                    code = w.proc.wait(timeout=10) if w.proc.poll() is None else w.proc.returncode
                    yield ExtractionError(path, f"the reader crashed on this file (exit {code}): skipped")
                    return
        finally:
            if done and not retire:
                self._give_back(w)
            else:
                w.kill()


def _ocr_page_allowance() -> float:
    """Seconds the parent waits for a page of OCR: its own limit, and the base time as a margin."""
    from engine.ingest.readers.ocr import PAGE_LIMIT_S

    return PAGE_LIMIT_S + TIME_BASE_S


def _folder_size(path: str) -> int:
    # Sizes only set a time limit: a missing ``new`` or a message moved between listing and
    # stat is ordinary Maildir life; reading the folder reports what is really unreadable.
    total = 0
    for sub in ("cur", "new"):
        with contextlib.suppress(OSError), os.scandir(os.path.join(path, sub)) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    total = max(total, e.stat().st_size)
    return total  # a Maildir's documents come one by one: its largest message sets the pace


_shared: Extractor | None = None
_shared_lock = threading.Lock()


def shared() -> Extractor:
    """The process's extractor (workers are reused across runs and engines)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Extractor()
            import atexit

            atexit.register(_shared.close)
        return _shared


if __name__ == "__main__":
    worker_main()
