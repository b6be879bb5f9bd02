"""Indexing in a child process, so the window's process never competes for its GIL.

Indexing is mostly Python (extraction, segmentation, catalog writes) plus calls into
tantivy and ONNX Runtime; run on a thread of the GUI process it takes the interpreter
lock for long enough to make the window stutter (bench/gui_stall.py measured pauses of
400 ms). The engine supports a writer in another process (its searcher reloads at each
ask and sees the writer's commits; the catalog is SQLite in WAL mode), so the app starts
one child per indexing job with :func:`main`, at a lower CPU priority, and reads progress
from a queue. A crash in an extractor ends the child, not the window. Both ends of that
queue are here: :func:`main` in the child, :func:`run_in_child` in the window's process.

Nothing here imports Qt: the child only loads the engine.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.common.progress import Cancelled, Progress, RunProgress

log = logging.getLogger(__name__)

#: Seconds an indexing process gets to stop after a cancel before it is terminated.
CHILD_STOP_S = 10.0


@dataclass(frozen=True)
class EngineSpec:
    """How to open the engine: called on a worker thread of the window, and (being
    picklable, and Qt-free like this module) in the child process that indexes."""

    home: Path | None = None
    bundle_dir: Path | None = None
    threads: int | None = None

    def __call__(self) -> Any:
        from engine.api.facade import Engine

        return Engine(home=self.home, bundle_dir=self.bundle_dir, threads=self.threads)

#: Niceness of the indexing process (POSIX): background work yields to the desktop.
NICE = 10
PROGRESS_INTERVAL_S = 0.1


def lower_priority() -> None:
    try:
        if hasattr(os, "nice"):
            os.nice(NICE)
        elif sys.platform == "win32":
            import psutil

            psutil.Process().nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
    except Exception as exc:  # priority is a nicety, never a reason to fail
        print(f"sparcdesk indexer: could not lower its priority: {exc}", file=sys.stderr)


def main(
    spec: Any,
    paths: list[str] | None,
    queue: Any,
    cancel: Any,
    pause: Any,
    task: str = "index",
    options: dict[str, Any] | None = None,
) -> None:
    """Open the engine from ``spec`` (a picklable callable) and run ``task``: ``index``
    ``paths`` (None: all sources), ``adapt`` the model to the indexed documents and
    re-encode them (``options``: ``steps``, ``vocab_expansion``), ``restore`` the previous
    model, or index the ``changes`` a watch saw at ``paths`` (:meth:`Engine.index_changes`).

    Messages on ``queue``: ``("progress", Progress | AdaptProgress)`` (at most ten a second,
    plus every phase change; the window tells the two apart with ``isinstance``), then
    ``("done", Progress)`` (``changes``: the list of units re-indexed or removed) or
    ``("error", message, traceback)``.
    """
    lower_priority()
    try:  # HOME/logs/indexer.log (the window's process writes sparcdesk.log)
        from engine.home import logs

        logs.setup(
            getattr(spec, "home", None),
            name=logs.INDEXER_LOG_FILE,
            started=f"indexing process of the window (pid {os.getppid()}) started: {task}",
        )
    except Exception as exc:  # a log file is a nicety, never a reason not to index
        print(f"sparcdesk indexer: no log file ({type(exc).__name__}: {exc})", file=sys.stderr)
    last = 0.0
    last_phase = None

    latest: list[Progress | None] = [None]  # the last indexing Progress (adapt reports both kinds)

    def progress(p: RunProgress) -> None:
        nonlocal last, last_phase
        if isinstance(p, Progress):
            latest[0] = p
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL_S or p.phase != last_phase:
            last, last_phase = now, p.phase
            queue.put(("progress", p))

    try:
        engine = spec()
        try:
            if task == "adapt":
                opts = options or {}
                engine.adapt(
                    steps=int(opts.get("steps", 500)),
                    vocab_expansion=bool(opts.get("vocab_expansion", False)),
                    always=bool(opts.get("always", False)),
                    on_adapt=progress,
                    progress=progress,
                    cancel=cancel,
                    pause=pause,
                )
                final = latest[0]
            elif task == "restore":
                final = engine.restore_model(progress=progress)["progress"]
            elif task == "changes":  # a watch batch: the units it re-indexed or removed
                final = engine.index_changes(paths or [])
            else:
                targets = [Path(p) for p in paths] if paths is not None else None
                final = engine.index(targets, progress=progress, cancel=cancel, pause=pause)
            queue.put(("done", final))
        except Cancelled:  # a stopped adaptation resumes next time
            queue.put(("done", latest[0]))
        finally:
            engine.close()
    except BaseException as exc:
        text = str(exc).strip()
        queue.put(
            ("error", f"{type(exc).__name__}: {text}" if text else type(exc).__name__, traceback.format_exc())
        )


def run_in_child(
    spec: Any,
    paths: Sequence[Path] | None,
    task: str,
    options: dict[str, Any] | None,
    *,
    cancel: Any,
    pause: Any,
    progress: Callable[[Any], None],
    publish_pause: Callable[[Any], None],
) -> Any:
    """Run :func:`main` (``task`` on ``paths`` with ``options``) in a spawned child process
    and wait for it; called on the window's index lane. ``cancel`` and ``pause`` are the
    caller's events: a cancel is passed on to the child (and a child that does not stop
    within :data:`CHILD_STOP_S` is terminated); ``pause`` as it is at the start, after which
    ``publish_pause`` gets the child's own pause event (None once it has ended) for the
    caller to set and clear. Each progress message goes to ``progress``. Returns the
    child's final result (None when cancelled before it had one); raises RuntimeError with
    the child's message when it failed or died."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    child_cancel, child_pause = ctx.Event(), ctx.Event()
    publish_pause(child_pause)
    if pause.is_set():
        child_pause.set()
    proc = ctx.Process(
        target=main,
        args=(
            spec,
            [str(p) for p in paths] if paths is not None else None,
            messages,
            child_cancel,
            child_pause,
            task,
            options,
        ),
        name="sparcdesk-indexer",
        daemon=True,
    )
    proc.start()
    try:
        final, error = _follow_child(proc, messages, cancel, child_cancel, child_pause, progress)
    finally:
        publish_pause(None)
        proc.join(timeout=CHILD_STOP_S)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=2)
        messages.close()
    if error is not None:
        log.error("indexing process failed:\n%s", error[1])
        raise RuntimeError(error[0])
    if final is None:
        if cancel.is_set():
            return None
        raise RuntimeError(f"the indexing process ended unexpectedly (exit code {proc.exitcode})")
    return final


def _follow_child(
    proc: Any, messages: Any, cancel: Any, child_cancel: Any, child_pause: Any, progress: Callable[[Any], None]
) -> tuple[Any, tuple[str, str] | None]:
    """Read the child's messages until it is done, has failed or is gone: ``(final, None)``
    or ``(None, (message, traceback))``."""
    import queue as queue_mod

    final: Any = None
    error: tuple[str, str] | None = None
    cancelled_at: float | None = None
    while True:
        if cancel.is_set() and cancelled_at is None:
            child_cancel.set()
            child_pause.clear()
            cancelled_at = time.monotonic()
        if cancelled_at is not None and proc.is_alive() and time.monotonic() - cancelled_at > CHILD_STOP_S:
            log.warning("indexing process did not stop within %.0f s: terminating it", CHILD_STOP_S)
            proc.terminate()
        try:
            item = messages.get(timeout=0.1)
        except queue_mod.Empty:
            if proc.is_alive():
                continue
            try:  # the child may have exited right after its last message
                item = messages.get(timeout=0.5)
            except queue_mod.Empty:
                break
        kind = item[0]
        if kind == "progress":
            progress(item[1])
        elif kind == "done":
            final = item[1]
            break
        elif kind == "error":
            error = (item[1], item[2])
            break
    return final, error
