"""The engine facade the desktop app and the CLI code against.

One :class:`Engine` per sparcdesk home (``$SPARCDESK_HOME`` or the platform's user-data
folder, see :mod:`engine.home.paths`). It is safe to call :meth:`Engine.ask` from the GUI thread
while :meth:`Engine.index` runs in a worker thread (or in another process): the index is
read through its own searcher, which sees the last commit, and the catalog is SQLite in
WAL mode with one connection per thread. Writes (index, remove, watch batches) are
serialised inside a process by a lock and across processes by the index's writer lock:
a second writing process gets :class:`engine.index.sentences.IndexLockedError` with a readable
message.

The facade wires the stages; their protocols are theirs (issue 40): opening a home is a step
list (:meth:`Engine._open`: self-repair, the model's choice in :mod:`engine.model.selection`,
version checks, the source list, finishing an interrupted restore or removal), the restore
protocol is :mod:`engine.upkeep.restore`, a source's removal :mod:`engine.upkeep.removal`, the
e-mail senders and mailboxes and what the mail filters mean :mod:`engine.catalog.mail_directory`.
``Engine``'s source methods are :mod:`engine.api.sources`, its model methods (adaptation,
restore) :mod:`engine.api.models`; the names other code imports from here stay importable here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from engine.api.models import EngineModels
from engine.api.records import FileError, SourceInfo
from engine.api.sources import EngineSources
from engine.catalog import mail_directory
from engine.catalog.mail_directory import MailboxInfo, SenderInfo, mailbox_labels
from engine.catalog.store import Catalog
from engine.catalog.texts import TextStore
from engine.common.progress import AdaptProgress, Cancelled, Progress, RunProgress
from engine.home import diskspace
from engine.home.paths import Layout
from engine.index.sentences import (
    FORMAT_VERSION,
    IndexFormatError,
    IndexLockedError,
    IndexVersionError,
    SentenceIndex,
    index_format,
)
from engine.indexer.progress import RunResult
from engine.indexer.run import Indexer
from engine.indexer.scan import Target
from engine.ingest.documents import SKIPPED_PREFIX
from engine.ingest.extract import iter_extract
from engine.ingest.walk import under, unit_for
from engine.model.bundle import Bundle, ModelIdentity
from engine.model.encoder import SparseEncoder
from engine.model.selection import bundle_problem, choose_bundle
from engine.search.answers import Answer, Answers, Hit, QueryEncoder, SearchFilters
from engine.search.answers import ask as _ask
from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF
from engine.search.settings import DEFAULT as DEFAULT_SETTINGS
from engine.search.settings import SearchSettings
from engine.upkeep import removal, repair, writelock

log = logging.getLogger(__name__)

#: The crash points of ``remove`` (:mod:`engine.upkeep.removal`).
REMOVE_JOURNALED = removal.JOURNALED
REMOVE_INDEXED = removal.INDEXED

__all__ = [
    "AdaptProgress",
    "Answer",
    "Cancelled",
    "Engine",
    "FileError",
    "Hit",
    "IndexLockedError",
    "MailboxInfo",
    "Progress",
    "RunProgress",
    "SearchFilters",
    "SenderInfo",
    "SourceInfo",
    "bundle_problem",
    "mailbox_labels",
]


class Engine(EngineSources, EngineModels):
    """Indexing, search, sources, models and watching for one sparcdesk home. Constructing
    one opens the home (:meth:`_open`); the sources and models methods come from its bases."""

    #: Commit policy of indexing runs (see :mod:`engine.indexer.run`).
    commit_every: int = 2000
    commit_seconds: float = 20.0
    #: How long a write waits for another writer of this home (another process indexing
    #: any source, adapting, restoring) before :class:`IndexLockedError`; None: no limit.
    lock_wait_s: float | None = 0.0

    def __init__(
        self, home: Path | None = None, bundle_dir: Path | None = None, threads: int | None = None
    ) -> None:
        self.layout = Layout.resolve(home)
        self.threads = threads
        self._explicit_bundle = bundle_dir is not None
        self._local = threading.local()
        self._catalogs: list[Catalog] = []
        self._catalogs_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._read_lock = threading.RLock()
        self._encoder_lock = threading.Lock()
        self._reader: SentenceIndex | None = None
        self._reader_dir: str | None = None
        self._queries: dict[str, QueryEncoder] = {}
        self._encoder: SparseEncoder | None = None
        self._model: ModelIdentity | None = None
        self._watcher = None
        self._indexing = 0
        self._closed = False
        #: What was found damaged in the data folder and repaired when this engine opened
        #: (one line each, see engine.upkeep.repair); the command line prints them.
        self.repairs: list[str] = []
        self.bundle_dir: Path  # chosen as the home opens
        self._open(bundle_dir)

    # ---- opening

    def _open(self, bundle_dir: Path | None) -> None:
        """Open the home, in this order: repair what is damaged (:mod:`engine.upkeep.repair`);
        choose the model, a damaged one of the home's own falling back to the shipped one
        (:mod:`engine.model.selection`); refuse an index written by a newer sparcdesk; keep the
        source list beside the catalog; finish a model restore and a source removal that a
        crash interrupted (:mod:`engine.upkeep.restore`, :mod:`engine.upkeep.removal`)."""
        self.repairs.extend(repair.repair(self.layout))
        self.bundle_dir, notes = choose_bundle(self.layout.home, bundle_dir)
        self.repairs.extend(notes)
        self._check_index_versions()
        self._save_source_list()
        self._finish_interrupted()

    def _check_index_versions(self) -> None:
        """Raise :class:`IndexVersionError` (closing this engine) when a live generation's index
        was written by a newer sparcdesk; an older one was rebuilt by repair."""
        for gen in self._cat().generations():
            fmt = index_format(gen.index_dir) if gen.status != "retired" else None
            if fmt is not None and fmt > FORMAT_VERSION:
                self.close()
                raise IndexVersionError(Path(gen.index_dir), fmt)

    def _save_source_list(self) -> None:
        """The source list beside the catalog (``sources.json``), which rebuilds a lost catalog."""
        try:
            if not self._cat().read_only:
                repair.save_sources(self.layout, self._cat().sources())
        except Exception:  # the copy is for rebuilding a lost catalog: opening goes on without it
            log.warning("could not save the source list beside the catalog in %s", self.layout.home, exc_info=True)

    def _finish_interrupted(self) -> None:
        """Finish a restore and a removal a crash interrupted; one another process is writing
        waits for this engine's next run."""
        try:
            self._finish_restore()
        except IndexLockedError as exc:
            log.info("an unfinished model restore in %s waits for the next run: %s", self.layout.home, exc)
        try:
            self._finish_removals()
        except IndexLockedError as exc:
            log.info("an unfinished removal in %s waits for the next run: %s", self.layout.home, exc)

    # ---- plumbing

    def _cat(self) -> Catalog:
        """This thread's catalog connection (sqlite connections are per thread here)."""
        cat = getattr(self._local, "catalog", None)
        if cat is None:
            cat = Catalog(self.layout.catalog)
            self._local.catalog = cat
            with self._catalogs_lock:
                self._catalogs.append(cat)
        return cat

    @property
    def model(self) -> ModelIdentity:
        if self._model is None:
            self._model = Bundle.open(self.bundle_dir).identity
        return self._model

    def _get_encoder(self) -> SparseEncoder:
        with self._encoder_lock:
            if self._encoder is None:
                self._encoder = SparseEncoder(self.bundle_dir, threads=self.threads)
            return self._encoder

    def _query_encoder(self, reader: SentenceIndex | None = None) -> QueryEncoder:
        """The question tokenizer of the bundle the live generation was encoded with (after an
        adaptation with new vocabulary, questions must be cut the way its sentences were)."""
        bundle = self.bundle_dir
        if reader is not None:
            recorded = (reader.model or {}).get("bundle")
            if recorded and (Path(recorded) / "config.json").is_file():
                bundle = Path(recorded)
        key = str(bundle)
        if key not in self._queries:
            self._queries[key] = QueryEncoder(bundle)
        return self._queries[key]

    def _invalidate_reader(self) -> None:
        """Called after every commit of this process: the next ask reloads (it does anyway)."""
        with self._read_lock:
            if self._reader is not None:
                try:
                    self._reader.reload()
                except Exception as exc:  # a reader of a removed generation: reopen on next ask
                    log.info("reopening the index reader of %s on the next ask: %s", self._reader_dir, exc)
                    self._reader = None
                    self._reader_dir = None

    def _get_reader(self) -> SentenceIndex | None:
        gen = self._cat().active_generation()
        if gen is None:
            return None
        if self._reader is None or self._reader_dir != gen.index_dir:
            if self._reader is not None:
                self._reader.close()
            self._reader = None
            if not (Path(gen.index_dir) / "meta.json").exists():
                return None
            try:
                self._reader = SentenceIndex.open(gen.index_dir)
            except IndexVersionError:
                raise  # another version's index: ask repairs (rebuilds) it or reports it
            except IndexFormatError as exc:
                log.warning("the live index cannot be read: %s", exc)
                return None
            self._reader_dir = gen.index_dir
        else:
            self._reader.reload()
        return self._reader

    def _writing(self, task: str):
        """The home's writer lock for one write (:mod:`engine.upkeep.writelock`)."""
        return writelock.hold(self.layout.home, task, self.lock_wait_s)

    # ---- indexing

    def _indexer(
        self,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
        catalog: Catalog | None = None,
        hold: bool = False,
    ) -> Indexer:
        return Indexer(
            catalog or Catalog(self.layout.catalog),
            self.layout,
            self._get_encoder,
            commit_every=self.commit_every,
            commit_seconds=self.commit_seconds,
            progress=progress,
            cancel=cancel,
            pause=pause,
            on_commit=self._invalidate_reader,
            hold=hold,
        )

    def _run(self, targets: list[Target], activate: bool, **kw: object) -> tuple[Indexer, RunResult]:
        self._follow_model_choice()
        home = self.layout.home
        diskspace.check(home, diskspace.MIN_FREE_BYTES)  # a full disk: stop before writing anything
        try:
            cat = Catalog(self.layout.catalog)  # a connection of its own for this run's thread
        except sqlite3.OperationalError as exc:
            if diskspace.is_disk_full(exc, home):
                raise diskspace.DiskFullError(home, diskspace.free_bytes(home), diskspace.MIN_FREE_BYTES) from exc
            raise
        if cat.read_only:
            cat.close()
            raise diskspace.DiskFullError(home, diskspace.free_bytes(home), diskspace.MIN_FREE_BYTES)
        try:
            indexer = self._indexer(catalog=cat, **kw)  # type: ignore[arg-type]
            with self._writing("indexing"), self._write_lock:
                if self._finish_restore() is not None:
                    self._follow_model_choice()
                self._finish_removals()
                self._indexing += 1
                before = cat.active_generation()
                try:
                    result = indexer.run(targets, self.model, activate=activate)
                finally:
                    self._indexing -= 1
                    self._note_switch(cat, before)
                if not result.cancelled:
                    for t in targets:
                        if t.subtree is None:
                            cat.mark_source_indexed(t.source.id)
        finally:
            cat.close()
        return indexer, result

    def index(
        self,
        paths: Sequence[Path] | None = None,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
    ) -> Progress:
        """Bring the index up to date with ``paths`` (sources, or files and folders inside
        sources; a path outside every source is added as a source) or, with None, with every
        source. Returns the final progress (``phase`` ``done`` or ``cancelled``).

        Raises :class:`IndexLockedError` when another process is writing the index.
        """
        cat = self._cat()
        targets: list[Target] = []
        if paths is None:
            targets = [Target(s) for s in cat.sources()]
        else:
            for raw in paths:
                p = self._abs(raw)
                src = self._find_source(p)
                if src is None:
                    self.add_source(p)
                    src = self._find_source(p)
                assert src is not None
                targets.append(Target(src, None if src.path == str(p) else p))
        indexer, _ = self._run(targets, activate=paths is None, progress=progress, cancel=cancel, pause=pause)
        return indexer.snapshot()

    def index_changes(self, paths: Sequence[str | Path]) -> list[str]:
        """Re-index changed, created or deleted paths (the watcher calls this); returns the
        units that were re-indexed or removed. Paths outside every source are ignored."""
        cat = self._cat()
        by_path: dict[str, Target] = {}
        for raw in paths:
            p = self._abs(raw)
            src = self._find_source(p)
            if src is None:
                continue
            unit = unit_for(p)
            if not under(str(unit), src.path):
                unit = p
            key = str(unit)
            by_path[key] = Target(src, None if key == src.path else unit)
        # A folder target covers the targets below it.
        keys = sorted(by_path, key=len)
        targets: list[Target] = []
        chosen: list[str] = []
        for k in keys:
            if any(under(k, c) for c in chosen):
                continue
            chosen.append(k)
            targets.append(by_path[k])
        if not targets:
            return []
        _, result = self._run(targets, activate=False)
        del cat
        return result.changed_paths

    # ---- search

    def ask(
        self,
        question: str,
        top: int = 10,
        filters: SearchFilters | None = None,
        idf: bool = DEFAULT_IDF,
        hybrid: bool = DEFAULT_HYBRID,
        fusion: str = DEFAULT_FUSION,
        settings: SearchSettings = DEFAULT_SETTINGS,
    ) -> Answers:
        """Answers grouped per document, best first (empty before anything is indexed), always
        an :class:`Answers` (the no-answer decision and the absent words with them).
        ``settings``: the search's tunables and rule switches (benchmarks pass their own)."""
        filters, possible = mail_directory.resolve_filters(self._cat(), filters)
        if not possible:
            return Answers()
        try:
            return self._ask(question, top, filters, idf, hybrid, fusion, settings)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a damaged index (tantivy panics are BaseExceptions)
            if not self._repair_index(exc):
                raise
            return self._ask(question, top, filters, idf, hybrid, fusion, settings)

    # ---- e-mail senders and mailboxes (engine.catalog.mail_directory)

    def senders(self, containing: str = "") -> list[SenderInfo]:
        """Everyone who sent indexed e-mail, most messages first; with ``containing``, those
        whose name or address holds it (case-insensitive): the sender filter's suggestions."""
        return mail_directory.senders(self._cat(), containing)

    def mailboxes(self) -> list[MailboxInfo]:
        """Every mailbox of indexed e-mail with its message count, by label."""
        return mail_directory.mailboxes(self._cat())

    def _repair_index(self, exc: BaseException) -> bool:
        """After a failure reading the index: repair it if it is damaged (True), else False."""
        with self._read_lock:
            if self._reader is not None:
                try:
                    self._reader.close()
                except Exception as close_exc:  # a damaged index may not even close
                    log.warning("closing the damaged index reader failed: %s", close_exc)
            self._reader = None
            self._reader_dir = None
        notes = repair.repair(self.layout)
        self.repairs.extend(notes)
        if notes:
            log.warning("reading the index failed (%s): repaired", exc)
        return bool(notes)

    def _ask(self, question, top, filters, idf, hybrid, fusion, settings, reader=None) -> Answers:  # type: ignore[no-untyped-def]
        """The search over the live generation, or over ``reader`` (another generation's
        index: the self-check of a building one)."""
        with self._read_lock:
            reader = reader or self._get_reader()
            if reader is None:
                return Answers()
            return _ask(
                reader,
                self._query_encoder(reader),
                question,
                top=top,
                filters=filters,
                idf=idf,
                hybrid=hybrid,
                fusion=fusion,
                catalog=self._cat(),
                text_of=self._text_or_none,
                settings=settings,
            )

    def _text_or_none(self, doc_key: str) -> str | None:
        try:
            return self.document_text(doc_key)
        except KeyError:
            return None

    def document_text(self, doc_key: str) -> str:
        """The full extracted text of a document (offsets of answers refer to it)."""
        cat = self._cat()
        text = TextStore(cat).text(doc_key)
        if text is not None:
            return text
        row = cat.get_document(doc_key)
        if row is None:
            raise KeyError(f"unknown document: {doc_key}")
        for item in iter_extract(Path(row.path)):
            if not isinstance(item, Exception) and item.key == doc_key:
                return item.text
        raise KeyError(f"document no longer extractable: {doc_key}")

    # ---- status

    def errors(self) -> list[FileError]:
        """Files that failed, and files indexed with a problem (parts that failed, nothing
        to index), with the reason."""
        out = []
        for p, r, w, st in self._cat().file_errors():
            kind = "skipped" if r.startswith(SKIPPED_PREFIX) else "unreadable" if st == "error" else "note"
            out.append(FileError(p, r, w, kind == "skipped", kind))
        return out

    def status(self) -> dict:
        """A JSON-able summary: home, model, generation, counts, sources, errors, self-check."""
        self._follow_model_choice()
        cat = self._cat()
        gen = cat.active_generation()
        counts = cat.counts()
        sentences = None
        try:
            with self._read_lock:
                reader = self._get_reader()
                if reader is not None:
                    sentences = reader.num_sentences
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a damaged index: repaired, rebuilt by the next run
            if not self._repair_index(exc):
                raise
            gen = cat.active_generation()
        size = 0
        if gen is not None:
            for root, _, files in os.walk(gen.index_dir):
                for f in files:
                    # a file merged away by a writer between the listing and here: not counted
                    with contextlib.suppress(FileNotFoundError):
                        size += os.path.getsize(os.path.join(root, f))
        building = [g for g in cat.generations() if g.status == "building"]
        new = building[-1] if building else None
        return {
            "home": str(self.layout.home),
            "model": {
                "name": self.model.name,
                "version": self.model.version,
                "training_steps": self.model.training_steps,
                "bundle": str(self.bundle_dir),
            },
            "generation": None
            if gen is None
            else {"id": gen.id, "model": f"{gen.model_name} {gen.model_version}", "index_dir": gen.index_dir},
            "rebuilding": bool(building) or (gen is not None and gen.model_version != self.model.version),
            # what a rebuild still waits for: any indexing run completes it and switches
            "building": None
            if new is None
            else {
                "id": new.id,
                "model": f"{new.model_name} {new.model_version}",
                "files_done": cat.files_in_generation(new.id),
                "files_total": counts["files"],
            },
            "files": counts["files"],
            "files_ok": counts["ok"],
            # one definition everywhere (FileError.kind): could not be read / skipped / a note
            "files_error": cat.count_unreadable(SKIPPED_PREFIX),
            # formats that are not read (found by their name; listed in errors as skipped)
            "files_skipped": cat.count_errors_starting(SKIPPED_PREFIX),
            "files_pending": counts["pending"],
            "sentences": counts["sentences"] if sentences is None else sentences,
            "index_bytes": size,
            "sources": [asdict(s) for s in self.sources()],
            "errors": [asdict(e) for e in self.errors()],
            "adapted_model": self.model_state(),
            # the latest self-check and the last adaptation's switch decision (HOME/selfcheck.json)
            "selfcheck": self.last_selfcheck(),
            "indexing": self._indexing > 0,
            "watching": self._watcher is not None,
        }

    # ---- watching

    def start_watch(
        self,
        on_change: Callable[[list[str]], None] | None = None,
        debounce_s: float = 0.5,
        index_batch: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        """Watch every source and re-index what changes (see :mod:`engine.watch.watcher`); with
        ``index_batch``, batches of changed paths are indexed by it instead of
        :meth:`index_changes` (the window runs them in its indexing child process)."""
        from engine.watch.watcher import Watcher

        if self._watcher is not None:
            return
        self._watcher = Watcher(
            self.layout.home,
            lambda: [s.path for s in self.sources()],
            index_batch or self.index_changes,
            on_change=on_change,
            debounce_s=debounce_s,
        )
        self._watcher.start()

    def stop_watch(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    # ---- lifecycle

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop_watch()
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self._catalogs_lock:
            for cat in self._catalogs:
                try:
                    cat.close()
                except Exception as exc:  # closing must go on for the other connections
                    log.warning("closing a catalog connection of %s failed: %s", self.layout.catalog, exc)
            self._catalogs.clear()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
