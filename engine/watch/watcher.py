"""Keep the index fresh while sources change: a watchdog observer on every source.

Events (created, modified, deleted, moved) are collected into a set of paths; a worker
thread waits until the burst is quiet for ``debounce_s`` (or ``max_delay_s`` passed since
its first event, so a file that is written continuously is still picked up) and hands the
batch to the ``index_batch`` callback (by default :meth:`engine.api.facade.Engine.index_changes`, which maps paths to extraction units
(a message file to its Maildir), re-indexes the changed ones, removes the deleted ones and
commits. An edited, deleted or renamed file is reflected in answers about
``debounce_s`` + encoding time + one commit after the last write (well under 2 s for
ordinary documents).

When another process holds the index's writer lock the batch is kept and retried.

``index_batch`` is what indexes a batch (``Engine.index_changes`` by default): the window
passes one that runs it in its indexing child process, so this process (the GUI's) only
watches and never writes the index.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine.index.sentences import IndexLockedError

log = logging.getLogger(__name__)

#: Retry delay while another process holds the writer lock.
LOCKED_RETRY_S = 2.0


def _events() -> list[type]:
    """The watchdog events the watcher needs: without a filter inotify also reports every
    open, read and close of a watched file, so indexing a source (which reads each of its
    files) flooded the observer with events that are then dropped, and one in flight when
    the observer stops makes watchdog log an ERROR at shutdown. Close-after-write is left
    out too: a write is reported by its modification already, and Python's mailbox opens an
    mbox read-write to read it, so indexing one queued a watch batch for it."""
    from watchdog import events as ev

    # Not DirModifiedEvent: its inotify mask adds close-after-write, and the handler drops a
    # folder's own change anyway (its entries' events say what happened).
    return [
        ev.FileCreatedEvent,
        ev.DirCreatedEvent,
        ev.FileModifiedEvent,
        ev.FileDeletedEvent,
        ev.DirDeletedEvent,
        ev.FileMovedEvent,
        ev.DirMovedEvent,
    ]


class _Handler:
    """watchdog event handler that only records paths (it runs on the observer thread)."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event) -> None:  # watchdog calls dispatch() on its handlers
        kind = getattr(event, "event_type", "")
        if kind in ("opened", "closed_no_write"):
            return
        if event.is_directory and kind == "modified":
            return  # a folder's mtime changed: its entries' own events say what happened
        paths = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(dest)
        self.watcher.notify([os.fsdecode(p) for p in paths])


class Watcher:
    """Watches the engine's sources and re-indexes changed paths in debounced batches.

    It knows the engine through three things only, so this stage never imports the facade:
    ``home`` (events under the data folder are ignored), ``sources`` (the folders and files
    to watch, asked again on :meth:`refresh`) and ``index_batch`` (index a batch of changed
    paths, returning the units it changed; raises ``IndexLockedError`` while another writer
    holds the home)."""

    def __init__(
        self,
        home: Path,
        sources: Callable[[], list[str]],
        index_batch: Callable[[list[str]], list[str]],
        on_change: Callable[[list[str]], None] | None = None,
        debounce_s: float = 0.5,
        max_delay_s: float = 2.0,
    ) -> None:
        self.home = str(home)
        self.sources = sources
        self.on_change = on_change
        #: What indexes a batch of changed paths and returns the units it changed.
        self.index_batch = index_batch
        self.debounce_s = debounce_s
        self.max_delay_s = max(max_delay_s, debounce_s)
        self._pending: set[str] = set()
        self._first = 0.0
        self._last = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer = None
        self._worker: threading.Thread | None = None
        self._watched: dict[str, object] = {}
        self.last_error: str | None = None

    # ---- lifecycle

    def start(self) -> None:
        from watchdog.observers import Observer

        self._observer = Observer()
        self._schedule()
        self._observer.start()
        self._worker = threading.Thread(target=self._loop, name="sparcdesk-watch", daemon=True)
        self._worker.start()

    def _schedule(self) -> None:
        """Watch every source (a file source through its folder, filtered to the file)."""
        assert self._observer is not None
        wanted: dict[str, bool] = {}
        for source in self.sources():
            p = Path(source)
            if p.is_dir():
                wanted[str(p)] = True
            elif p.parent.is_dir():
                wanted.setdefault(str(p.parent), False)
        handler = _Handler(self)
        for path, recursive in wanted.items():
            if path in self._watched:
                continue
            try:
                self._watched[path] = self._observer.schedule(
                    handler, path, recursive=recursive, event_filter=_events()
                )
            except OSError as exc:  # e.g. inotify watch limit reached
                self.last_error = f"cannot watch {path}: {exc}"
                log.warning(self.last_error)
        for path in list(self._watched):
            if path not in wanted:
                self._observer.unschedule(self._watched.pop(path))

    def refresh(self) -> None:
        """Follow added or removed sources."""
        if self._observer is not None:
            self._schedule()

    def stop(self) -> None:
        """Worker first, observer second: a batch still indexing reads the watched files,
        and an event in flight while watchdog's inotify emitter stops is logged as an
        ERROR ("queue_events() called when the thread is inactive")."""
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=30)
            self._worker = None
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    # ---- events

    def notify(self, paths: list[str]) -> None:
        home = self.home
        paths = [p for p in paths if not (p == home or p.startswith(home + os.sep))]
        if not paths:
            return
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._first = now
            self._pending.update(paths)
            self._last = now
        self._wake.set()

    def _take_batch(self) -> list[str] | None:
        """Wait for a quiet burst (or the maximum delay); None when stopping."""
        while not self._stop.is_set():
            self._wake.wait(timeout=0.5)
            self._wake.clear()
            while not self._stop.is_set():
                with self._lock:
                    if not self._pending:
                        break
                    now = time.monotonic()
                    quiet = now - self._last >= self.debounce_s
                    overdue = now - self._first >= self.max_delay_s
                    if quiet or overdue:
                        batch = sorted(self._pending)
                        self._pending.clear()
                        return batch
                    wait = min(self.debounce_s - (now - self._last), self.max_delay_s - (now - self._first))
                time.sleep(max(0.01, wait))
        return None

    def _index_each(self, batch: list[str]) -> list[str]:
        """After a batch failed: its paths one at a time, so one bad path loses only itself
        (it used to take the rest of the batch down with it, silently)."""
        changed: list[str] = []
        for path in batch:
            try:
                changed += self.index_batch([path])
            except IndexLockedError:
                self.notify([path])
            except Exception as exc:
                self.last_error = f"{path}: {type(exc).__name__}: {exc}"
                log.exception("watch: indexing %s failed", path)
        return changed

    def _loop(self) -> None:
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            try:
                changed = self.index_batch(batch)
            except IndexLockedError as exc:
                self.last_error = str(exc)
                log.info("index busy, retrying in %.0f s: %s", LOCKED_RETRY_S, exc)
                self.notify(batch)
                self._stop.wait(LOCKED_RETRY_S)
                continue
            except Exception as exc:  # keep watching whatever one batch did
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("watch batch failed")
                changed = self._index_each(batch) if len(batch) > 1 else []
            if changed and self.on_change is not None:
                try:
                    self.on_change(changed)
                except Exception:
                    log.exception("on_change callback failed")
