"""Running engine calls off the GUI thread.

A :class:`Lane` is one QThread with a worker object that runs submitted callables in order
and reports each result (or exception) back on the GUI thread through a queued signal. The
window uses two lanes: a *query* lane for short calls (ask, document text, source lists),
and an *index* lane for long ones (indexing, adding or removing a source), so a search
never waits behind an indexing run.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

log = logging.getLogger(__name__)


class _Worker(QObject):
    finished = Signal(int, object, object)  # job id, result, (exception, traceback text) or None

    @Slot(int, object)
    def run(self, job_id: int, fn: Callable[[], Any]) -> None:
        try:
            result = fn()
        except BaseException as exc:  # reported to the GUI, never lost in the thread
            self.finished.emit(job_id, None, (exc, traceback.format_exc()))
            return
        self.finished.emit(job_id, result, None)


class Lane(QObject):
    """A worker thread that runs callables in submission order."""

    busy_changed = Signal(bool)
    _submit = Signal(int, object)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callable | None, Callable | None]] = {}
        self._thread = QThread()
        self._thread.setObjectName(f"sparcdesk-{name}")
        self._worker = _Worker()
        self._worker.moveToThread(self._thread)
        self._submit.connect(self._worker.run)
        self._worker.finished.connect(self._on_finished)
        self._thread.start()
        self._closed = False

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet reported back."""
        return len(self._callbacks)

    def submit(
        self,
        fn: Callable[[], Any],
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException, str], None] | None = None,
    ) -> int:
        """Queue ``fn`` on the lane; ``on_done(result)`` / ``on_error(exc, tb)`` run on the GUI thread."""
        if self._closed:
            raise RuntimeError(f"lane {self.name} is stopped")
        job_id = next(self._ids)
        self._callbacks[job_id] = (on_done, on_error)
        if len(self._callbacks) == 1:
            self.busy_changed.emit(True)
        self._submit.emit(job_id, fn)
        return job_id

    @Slot(int, object, object)
    def _on_finished(self, job_id: int, result: Any, error: Any) -> None:
        on_done, on_error = self._callbacks.pop(job_id, (None, None))
        if not self._callbacks:
            self.busy_changed.emit(False)
        if error is not None:
            exc, tb = error
            if on_error is not None:
                on_error(exc, tb)
            else:
                log.error("%s job failed:\n%s", self.name, tb)
            return
        if on_done is not None:
            on_done(result)

    def stop(self, wait_ms: int = 10_000) -> bool:
        """Let queued jobs finish and end the thread; True when it ended within ``wait_ms``."""
        self._closed = True
        self._thread.quit()
        return self._thread.wait(wait_ms)


class Throttle:
    """Passes a value through at most every ``interval`` seconds (the last one always on flush).

    Used on the indexing thread so that a fast progress callback does not flood the GUI
    event loop with thousands of queued signals.
    """

    def __init__(self, emit: Callable[[Any], None], interval: float = 0.1) -> None:
        self._emit = emit
        self._interval = interval
        self._last = 0.0
        self._held: Any = None
        self._lock = threading.Lock()

    def __call__(self, value: Any) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last < self._interval:
                self._held = value
                return
            self._last = now
            self._held = None
        self._emit(value)

    def flush(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            self._emit(held)
