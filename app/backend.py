"""The window's only door to the engine: every engine call runs on a worker thread.

:class:`Backend` owns the :class:`engine.api.facade.Engine` and two :class:`~app.workers.Lane`
threads. Short calls (ask, document text, the source list, errors, status) go to the
*query* lane; long ones (indexing, adding and removing sources) to the *index* lane, so a
question is answered while a folder is being indexed. Results come back as Qt signals on
the GUI thread. The GUI thread never touches the engine, not even to construct it (loading
the model takes a moment). What the signals carry is :mod:`app.jobs` (re-exported here); an
indexing job runs in a child process through :func:`app.indexer_process.run_in_child`; the
model's jobs (adapt, restore, the self-check) are :class:`app.model_tasks.ModelTasks`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.jobs import JobOutcome, ModelRebuild, SearchResult, model_rebuild, under_path
from app.model_tasks import ModelTasks
from app.workers import Lane, Throttle
from engine.common.progress import Progress

log = logging.getLogger(__name__)

__all__ = ["Backend", "JobOutcome", "ModelRebuild", "SearchResult", "model_rebuild", "under_path"]


_DROPPED = object()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Backend(QObject, ModelTasks):
    """Engine calls as asynchronous requests with Qt signals for their results."""

    ready = Signal()  # the engine is open
    engine_failed = Signal(str)  # the engine could not be opened
    answers_ready = Signal(object)  # SearchResult
    search_failed = Signal(int, str)  # request, message
    document_ready = Signal(int, str, str)  # request, doc_key, text
    document_failed = Signal(int, str, str)  # request, doc_key, message
    sources_changed = Signal(object)  # list[SourceInfo]
    errors_changed = Signal(object)  # list[FileError]
    status_changed = Signal(object)  # dict
    indexing_changed = Signal(bool)  # an index-lane job is queued or running
    progress = Signal(object)  # Progress, throttled to ~10 a second
    index_finished = Signal(object, str)  # final Progress (or None), error message ("" when fine)
    job_finished = Signal(object)  # JobOutcome of every index-lane job, before index_finished
    action_failed = Signal(str, str)  # what, message
    watch_event = Signal(object)  # whatever the engine's on_change passed
    watching_changed = Signal(bool)
    mail_catalog_ready = Signal(object, object)  # list[SenderInfo], list[MailboxInfo]
    model_rebuild = Signal(object)  # ModelRebuild: the index is being rebuilt for another model
    selfcheck_ready = Signal(object)  # the self-check's result as JSON (ModelTasks.measure_search)
    selfcheck_failed = Signal(str)  # why it could not measure
    _refresh_requested = Signal()  # emitted on worker threads, handled on the GUI thread
    _watch_batch = Signal(object, object)  # paths, reply: from the watch thread to the GUI thread

    def __init__(
        self,
        engine_factory: Callable[[], Any],
        parent: QObject | None = None,
        index_in_process: bool | None = None,
    ) -> None:
        """``engine_factory`` opens the engine (called on a worker thread). Indexing runs in a
        child process that calls the same factory, so it must be picklable (an
        :class:`app.indexer_process.EngineSpec`); with ``index_in_process`` (default: when the factory
        is not an EngineSpec, or ``$SPARCDESK_INDEX_IN_PROCESS`` is set) it runs on a thread."""
        super().__init__(parent)
        self._factory = engine_factory
        if index_in_process is None:
            from app.indexer_process import EngineSpec

            index_in_process = not isinstance(engine_factory, EngineSpec) or bool(
                os.environ.get("SPARCDESK_INDEX_IN_PROCESS")
            )
        self.index_in_process = index_in_process
        self._child_pause: Any = None
        self.engine: Any = None
        self.query_lane = Lane("query", self)
        self.index_lane = Lane("index", self)
        self.index_lane.busy_changed.connect(self.indexing_changed)
        self._latest_ask = 0
        self._ask_ids = 0
        self._doc_ids = 0
        self._latest_doc = 0
        self._pause = threading.Event()
        self._cancel = threading.Event()
        self._index_epoch = 0
        #: (kind, path, cancel event) of the index-lane job running now (set on its thread).
        self._running: tuple[str, str | None, threading.Event, list[str]] | None = None
        #: Sources being removed: hidden from the lists at once, their queued jobs dropped.
        self._removing: set[str] = set()
        self._watching = False
        self._closed = False
        self.last_progress: Any = None
        self.progress.connect(self._remember_progress)
        self._refresh_requested.connect(self.refresh)
        self._watch_batch.connect(self._queue_watch_batch)

    def _remember_progress(self, p: Any) -> None:
        self.last_progress = p

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Open the engine on the query lane; emits ``ready`` or ``engine_failed``."""

        def open_engine() -> None:
            self.engine = self._factory()

        def done(_: Any) -> None:
            self.ready.emit()
            self.refresh()

        self.query_lane.submit(open_engine, done, lambda e, tb: self._fail_open(e, tb))

    def _fail_open(self, exc: BaseException, tb: str) -> None:
        log.error("engine failed to open:\n%s", tb)
        self.engine_failed.emit(_message(exc))

    @property
    def is_ready(self) -> bool:
        return self.engine is not None

    @property
    def indexing(self) -> bool:
        return self.index_lane.pending > 0

    @property
    def paused(self) -> bool:
        return self._pause.is_set()

    @property
    def watching(self) -> bool:
        return self._watching

    def shutdown(self, wait_ms: int = 15_000) -> None:
        """Stop indexing and watching, close the engine, end the threads."""
        if self._closed:
            return
        self._closed = True
        self._index_epoch += 1
        self._cancel.set()
        self._pause.clear()
        engine = self.engine
        self.index_lane.stop(wait_ms)
        if engine is not None:
            try:
                if self._watching:
                    engine.stop_watch()
            except Exception:
                log.exception("stop_watch failed")
            self._watching = False

            def close() -> None:
                engine.close()

            self.query_lane.submit(close)
        self.query_lane.stop(wait_ms)

    # ------------------------------------------------------------------ queries

    def ask(
        self, question: str, filters: Any = None, top: int = 20, idf: bool = False, hybrid: bool = False
    ) -> int:
        """Run a question; only the latest request's answers are emitted (older ones are skipped)."""
        if self._closed:
            return 0
        self._ask_ids += 1
        req = self._ask_ids
        self._latest_ask = req

        def job() -> SearchResult | None:
            if req != self._latest_ask or self.engine is None:
                return None  # superseded before it started
            t0 = time.perf_counter()
            answers = self.engine.ask(question, top=top, filters=filters, idf=idf, hybrid=hybrid)
            return SearchResult.of(req, question, answers, time.perf_counter() - t0, hybrid, idf)

        def done(result: SearchResult | None) -> None:
            if result is not None and result.request == self._latest_ask:
                self.answers_ready.emit(result)

        def failed(exc: BaseException, tb: str) -> None:
            log.warning("search failed:\n%s", tb)
            if req == self._latest_ask:
                self.search_failed.emit(req, _message(exc))

        self.query_lane.submit(job, done, failed)
        return req

    def load_document(self, doc_key: str) -> int:
        if self._closed:
            return 0
        self._doc_ids += 1
        req = self._doc_ids
        self._latest_doc = req

        def job() -> str | None:
            if req != self._latest_doc:
                return None
            return self.engine.document_text(doc_key)

        def done(text: str | None) -> None:
            if text is not None and req == self._latest_doc:
                self.document_ready.emit(req, doc_key, text)

        def failed(exc: BaseException, tb: str) -> None:
            log.warning("document_text failed:\n%s", tb)
            if req == self._latest_doc:
                self.document_failed.emit(req, doc_key, _message(exc))

        self.query_lane.submit(job, done, failed)
        return req

    def refresh(self) -> None:
        """Re-read sources, errors and status (results arrive as signals)."""
        if self.engine is None or self._closed:
            return

        def job() -> tuple[list, list, dict]:
            return list(self.engine.sources()), list(self.engine.errors()), dict(self.engine.status())

        def done(result: tuple[list, list, dict]) -> None:
            sources, errors, status = result
            sources = [s for s in sources if not self.is_removed(s.path)]
            errors = [e for e in errors if not self.is_removed(e.path)]
            self.sources_changed.emit(sources)
            self.errors_changed.emit(errors)
            self.status_changed.emit(status)

        self.query_lane.submit(job, done, lambda e, tb: log.warning("refresh failed:\n%s", tb))

    def load_mail_catalog(self) -> None:
        """Read every indexed sender and mailbox (for the e-mail filters' suggestions)."""
        if self.engine is None or self._closed:
            return

        def job() -> tuple[list, list]:
            return list(self.engine.senders()), list(self.engine.mailboxes())

        def done(result: tuple[list, list]) -> None:
            self.mail_catalog_ready.emit(*result)

        self.query_lane.submit(job, done, lambda e, tb: log.warning("mail catalog failed:\n%s", tb))

    # ------------------------------------------------------------------ index lane

    def is_removed(self, path: str) -> bool:
        """``path`` belongs to a source whose removal is under way."""
        return any(under_path(path, r) for r in self._removing)

    def _index_job(
        self,
        what: str,
        work: Callable[[threading.Event], Any],
        kind: str = "index",
        path: str | None = None,
        after: Callable[[JobOutcome], None] | None = None,
    ) -> None:
        """Queue ``work(cancel)`` on the index lane; a Stop drops it if it has not started,
        and so does the removal of the source it is for. ``job_finished`` says how it
        ended, then ``after`` runs (on the GUI thread)."""
        if self._closed:
            return
        epoch = self._index_epoch
        cancels: list[threading.Event] = []
        removal: list[str] = []  # set by remove_source when it cancels this job

        def job() -> Any:
            if epoch != self._index_epoch or self._closed:
                return _DROPPED
            if kind != "remove" and path is not None and self.is_removed(path):
                return _DROPPED
            self._cancel = cancel = threading.Event()
            cancels.append(cancel)
            self._running = (kind, path, cancel, removal)
            try:
                return work(cancel)
            finally:
                self._running = None

        def finish(outcome: JobOutcome) -> None:
            self.job_finished.emit(outcome)
            if after is not None:
                after(outcome)

        def done(result: Any) -> None:
            self.refresh()
            dropped = result is _DROPPED
            result = None if dropped else result
            final = result if isinstance(result, Progress) else None
            if final is not None:
                self.last_progress = final
            cancelled = bool(cancels and cancels[0].is_set()) or getattr(final, "phase", "") == "cancelled"
            state = "dropped" if dropped else "cancelled" if cancelled else "done"
            finish(JobOutcome(kind, path, state, final, "", "removal" if removal else ""))
            if result is not None or epoch == self._index_epoch:
                self.index_finished.emit(final, "")

        def failed(exc: BaseException, tb: str) -> None:
            log.error("%s failed:\n%s", what, tb)
            self.refresh()
            self.action_failed.emit(what, _message(exc))
            finish(JobOutcome(kind, path, "failed", None, _message(exc)))
            self.index_finished.emit(None, _message(exc))

        self.index_lane.submit(job, done, failed)

    def _run_index(self, cancel: threading.Event, paths: Sequence[Path] | None = None) -> Any:
        if self.index_in_process:
            throttle = Throttle(self.progress.emit, 0.1)
            result = self.engine.index(paths, progress=throttle, cancel=cancel, pause=self._pause)
            throttle.flush()
        else:
            result = self._run_index_child(cancel, paths)
        if result is not None:
            self.progress.emit(result)
        return result

    def _run_index_child(
        self,
        cancel: threading.Event,
        paths: Sequence[Path] | None,
        task: str = "index",
        options: dict[str, Any] | None = None,
    ) -> Any:
        """``Engine.index`` in a child process (see :mod:`app.indexer_process`); runs on the index
        lane. While it runs, Pause and Stop reach the child through ``_child_pause``."""
        from app import indexer_process

        def publish_pause(event: Any) -> None:
            self._child_pause = event

        return indexer_process.run_in_child(
            self._factory,
            paths,
            task,
            options,
            cancel=cancel,
            pause=self._pause,
            progress=self.progress.emit,
            publish_pause=publish_pause,
        )

    def update_index(self, paths: Sequence[Path] | None = None) -> None:
        """Bring the index up to date with the files of all sources (or of ``paths``)."""
        self._index_job("Updating the index", lambda cancel: self._run_index(cancel, paths))

    def add_source(self, path: Path, exclude: Sequence[str] = (), kind: str = "add") -> None:
        """Register a folder or mail store and index it (Engine.add_source also tells a
        running watcher about it)."""
        path = Path(path)

        def work(cancel: threading.Event) -> Any:
            self.engine.add_source(path, exclude=list(exclude))
            self._refresh_requested.emit()
            return self._run_index(cancel, [path])

        self._index_job(f"Adding {path}", work, kind=kind, path=str(path))

    def set_exclusions(self, path: Path, exclude: Sequence[str]) -> None:
        """Change a source's exclusion patterns and bring its files up to date."""
        self.add_source(path, exclude, kind="exclusions")

    def remove_source(self, path: Path) -> None:
        """Remove a source at once, as far as the window can tell: it leaves the lists and
        the results now (``is_removed``), the indexing run under way is stopped, jobs queued
        for it are dropped, and the engine deletes its documents next. The run that was
        stopped is resumed afterwards for the other sources."""
        key = str(path)
        self._removing.add(key)
        running = self._running
        resume = False
        if running is not None and running[0] in ("index", "add", "exclusions"):
            kind, target, cancel, removal = running
            removal.append(key)
            cancel.set()  # a paused run sees it too (the child's pause is lifted on cancel)
            resume = not (kind in ("add", "exclusions") and target is not None and under_path(target, key))

        def work(cancel: threading.Event) -> None:
            self.engine.remove_source(Path(key))

        def after(outcome: JobOutcome) -> None:
            self._removing.discard(key)
            if resume and outcome.outcome == "done" and not self._closed:
                self.update_index(None)
            self.refresh()  # a failed removal brings the source back into the lists

        self._index_job(f"Removing {key}", work, kind="remove", path=key, after=after)
        self.refresh()

    def set_paused(self, paused: bool) -> None:
        child = self._child_pause
        for event in (self._pause, child):
            if event is None:
                continue
            if paused:
                event.set()
            else:
                event.clear()

    def cancel_indexing(self) -> None:
        """Stop the running indexing job and drop queued ones (what was committed stays)."""
        self._index_epoch += 1
        self._pause.clear()
        child = self._child_pause
        if child is not None:
            child.clear()
        self._cancel.set()

    # ------------------------------------------------------------------ watching

    def set_watch(self, on: bool) -> None:
        """Start or stop watching; starting also catches up (see :meth:`catch_up`), so what
        changed while nothing watched is indexed too, not only what changes from now on."""
        if on == self._watching or self.engine is None or self._closed:
            return

        def job() -> tuple[bool, bool]:
            if on:
                self._start_watch()
            else:
                self.engine.stop_watch()
            return on, on and bool(self.engine.sources())

        def done(result: tuple[bool, bool]) -> None:
            state, catch_up = result
            self._watching = state
            self.watching_changed.emit(state)
            if catch_up:
                self.update_index(None)

        def failed(exc: BaseException, tb: str) -> None:
            log.error("watch failed:\n%s", tb)
            self.action_failed.emit("Watching for changes", _message(exc))
            self.watching_changed.emit(self._watching)

        self.query_lane.submit(job, done, failed)

    def _start_watch(self) -> None:
        """Start the engine's watcher. With indexing in the child process, the watcher here
        only watches: each batch of changes is indexed in the indexing child, on the index
        lane (so never beside another indexing job), and this process never writes the index."""
        batch = None if self.index_in_process else self._index_watch_batch
        self.engine.start_watch(on_change=self._on_change, index_batch=batch)

    def _index_watch_batch(self, paths: list[str]) -> list[str]:
        """Called on the watch thread: index ``paths`` in the indexing child and wait; returns
        the units re-indexed or removed. A batch dropped by Stop or by closing returns none
        (the next catch-up finds its files); another writer raises IndexLockedError, which the
        watcher retries."""
        from engine.index.sentences import IndexLockedError

        reply: dict[str, Any] = {"done": threading.Event()}
        self._watch_batch.emit(list(paths), reply)
        while not reply["done"].wait(0.2):
            if self._closed:
                return []
        error = reply.get("error")
        if error is not None:
            if str(error).startswith("IndexLockedError"):
                raise IndexLockedError(str(error))
            raise RuntimeError(f"indexing the watched changes failed: {error}")
        changed = reply.get("changed")
        if changed is None:
            log.info("watch batch of %d path(s) dropped (stopped)", len(paths))
            return []
        return list(changed)

    def _queue_watch_batch(self, paths: list[str], reply: dict[str, Any]) -> None:
        """On the GUI thread: queue a watch batch on the index lane (see _index_watch_batch)."""
        if self._closed:
            reply["done"].set()
            return

        def job() -> Any:
            if self._closed:
                return None
            self._cancel = cancel = threading.Event()
            return self._run_index_child(cancel, paths, task="changes")

        def done(result: Any) -> None:
            reply["changed"] = result
            reply["done"].set()

        def failed(exc: BaseException, tb: str) -> None:
            log.warning("indexing a watch batch failed:\n%s", tb)
            reply["error"] = _message(exc) if not isinstance(exc, RuntimeError) else str(exc)
            reply["done"].set()

        self.index_lane.submit(job, done, failed)

    def check_rebuild(self) -> None:
        """Emit ``model_rebuild`` when the index is another model's (the watch, once on,
        rebuilds it; :meth:`catch_up` does the same without the watch)."""
        if self.engine is None or self._closed:
            return
        self.query_lane.submit(
            lambda: model_rebuild(self.engine.status()) if self.engine.sources() else None,
            self._report_rebuild,
            lambda e, tb: log.warning("model check failed:\n%s", tb),
        )

    def _report_rebuild(self, rebuild: ModelRebuild | None) -> None:
        if rebuild is not None and not self._closed:
            self.model_rebuild.emit(rebuild)

    def catch_up(self) -> None:
        """Resume an indexing run cut short (quitting, a crash): when a source never finished
        its first run or files were left pending, run :meth:`update_index` (incremental, in
        the indexing child). With watching on, :meth:`set_watch` catches up in any case."""
        if self.engine is None or self._closed:
            return

        def job() -> tuple[bool, ModelRebuild | None]:
            sources = self.engine.sources()
            st = self.engine.status()
            rebuild = model_rebuild(st) if sources else None
            # a repair at open (an index of an older format, a damaged one) is rebuilt too,
            # and an index of another model (an upgrade: 0.3.0 -> 0.4.0) moves to this one
            return (
                any(s.last_indexed is None for s in sources)
                or (bool(sources) and (st["files_pending"] > 0 or bool(self.engine.repairs)))
                or rebuild is not None
            ), rebuild

        def done(result: tuple[bool, ModelRebuild | None]) -> None:
            needed, rebuild = result
            self._report_rebuild(rebuild)
            if needed and not self._closed:
                self.update_index(None)

        self.query_lane.submit(job, done, lambda e, tb: log.warning("catch-up check failed:\n%s", tb))

    def _on_change(self, *args: Any) -> None:
        # Called on the engine's watch thread: hand over to the GUI thread by signal.
        if self._closed:
            return
        self.watch_event.emit(args[0] if len(args) == 1 else args)
