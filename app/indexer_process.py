"""Indexing in a child process, so the window's process never competes for its GIL.

Indexing is mostly Python (extraction, segmentation, catalog writes) plus calls into
tantivy and ONNX Runtime; run on a thread of the GUI process it takes the interpreter
lock for long enough to make the window stutter (bench/gui_stall.py measured pauses of
400 ms). The engine supports a writer in another process (its searcher reloads at each
ask and sees the writer's commits; the catalog is SQLite in WAL mode), so the app starts
one child per indexing job with :func:`main`, at a lower CPU priority, and reads progress
from a queue. A crash in an extractor ends the child, not the window.

Nothing here imports Qt: the child only loads the engine.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.common.progress import Cancelled, Progress, RunProgress


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
