"""The indexer: sources -> walk -> change detection -> extraction -> sentences -> encoder -> index.

One run (:meth:`Indexer.run`) takes a list of *targets* (a source, or a file or folder inside
one), finds the extraction units under them with :func:`engine.ingest.walk.walk`, compares them with
the catalog (size and mtime, then content hash) and re-indexes only what changed:

* a unit is extracted with :func:`engine.ingest.extract.iter_extract` in a producer thread (so
  parsing overlaps with ONNX encoding, which releases the GIL); each Document is cut into
  passages and sentences by :func:`engine.ingest.segment.split_passages`, and each sentence is
  encoded with the other sentences of its passage, joined by spaces, as context;
* sentences are encoded in batches across units and added to the tantivy index;
* within a changed unit, documents whose text and fields did not change are kept as they
  are (an mbox with one new message re-encodes one message), the others are deleted from
  the index and re-added, and documents that disappeared are deleted.

Crash safety (kill -9 at any point loses at most the uncommitted batch, and a restart
leaves no duplicates): changes are committed every ``commit_every`` sentences or
``commit_seconds`` seconds by :class:`engine.indexer.commit.Committer`, whose module says
the order of the steps and why the next run repairs a crash between any two of them. This
module's part of that: before re-adding a unit's documents it deletes every key the catalog
knows for the unit and every key the journal names (:meth:`Indexer._start_job`,
:meth:`Indexer._delete_unit`).

The journal and the document texts (for the preview pane and for "did this document
change?") live in two tables of the catalog database (:class:`engine.catalog.texts.TextStore`).

The stages of a run live beside this module: :mod:`engine.indexer.scan` (what changed),
:mod:`engine.indexer.produce` (the extraction thread), :mod:`engine.indexer.prepare` (a
Document as sentences and records), :mod:`engine.indexer.commit` (the commit),
:mod:`engine.indexer.progress` (what a run reports), and what the run does with each unit and
its documents, :mod:`engine.indexer.units` (the :class:`~engine.indexer.units.UnitWork` part of
:class:`Indexer`).
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.catalog.store import Catalog, Generation
from engine.catalog.texts import TextStore
from engine.common.progress import Cancelled, Progress
from engine.home import diskspace
from engine.home.paths import Layout
from engine.index.docindex import DocumentText
from engine.index.quantize import fit_quantizer
from engine.index.sentences import META_FILE, SentenceIndex
from engine.indexer.commit import Committer
from engine.indexer.prepare import RECORDS_VERSION, PreparedDoc, document_digest, has_name_line
from engine.indexer.produce import drain, produce
from engine.indexer.progress import RunResult
from engine.indexer.scan import Job, Target, scan
from engine.indexer.units import UnitWork, _Pending, document_row
from engine.model.bundle import ModelIdentity
from engine.model.encoder import DEFAULT_BATCH, SparseEncoder
from engine.model.sparse import SparseVector

log = logging.getLogger(__name__)

#: Commit after this many new sentences ...
COMMIT_EVERY = 2000
#: ... or this many seconds, whichever comes first.
COMMIT_SECONDS = 20.0
#: Sentences encoded per ONNX call. Small on purpose: the bundle's graph materialises a
#: float32 [batch, sentence positions, vocabulary] tensor before max-pooling, so peak memory
#: grows ~35 MB per sentence of batch, and on 1-2 threads batches of 1-4 were also the
#: fastest (bench/indexing.py; batch 32: 58/s and 1.0 GB, batch 4: 97/s and 0.3 GB).
BATCH_SIZE = DEFAULT_BATCH  # see engine.model.encoder
#: Sentences collected (across documents and units) before they are encoded and added.
FLUSH_SENTENCES = 128


class Indexer(UnitWork):
    """One indexing run against one catalog and one index generation.

    ``encoder`` may be shared across runs (ONNX Runtime sessions are thread-safe).
    ``on_commit`` is called after each commit (the engine refreshes its searcher there).
    Not thread-safe: one run at a time per object; the index's writer lock makes that hold
    across processes too (:class:`engine.index.sentences.IndexLockedError`).
    """

    def __init__(
        self,
        catalog: Catalog,
        layout: Layout,
        encoder: SparseEncoder | Callable[[], SparseEncoder],
        *,
        commit_every: int = COMMIT_EVERY,
        commit_seconds: float = COMMIT_SECONDS,
        batch_size: int = BATCH_SIZE,
        flush_sentences: int = FLUSH_SENTENCES,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
        on_commit: Callable[[], None] | None = None,
        progress_interval: float = 0.25,
        hold: bool = False,
    ) -> None:
        self.catalog = catalog
        self.layout = layout
        self.store = TextStore(catalog)
        self._encoder_src = encoder
        self._encoder: SparseEncoder | None = encoder if isinstance(encoder, SparseEncoder) else None
        self.commit_every = max(1, commit_every)
        self.commit_seconds = commit_seconds
        self.batch_size = batch_size
        self.flush_sentences = max(1, min(flush_sentences, self.commit_every))
        self.progress_cb = progress
        self.cancel = cancel or threading.Event()
        self.pause = pause or threading.Event()
        self.on_commit = on_commit
        self.progress_interval = progress_interval
        #: complete a building generation but leave the switch to the caller (an adaptation
        #: first compares the two generations by the self-check, issue 38)
        self.hold = hold
        self.index: SentenceIndex | None = None
        self.generation: Generation | None = None
        self._reset()

    # ---- state

    def _reset(self) -> None:
        self._upgrading = False
        self._buffer: list[_Pending] = []
        self._deletes: list[str] = []
        self._wholes: list[DocumentText] = []
        #: What the catalog must learn at the next commit, and the commit itself.
        self.committer = Committer(self.catalog, self.store, self.layout.home)
        self._t0 = time.monotonic()
        self._last_progress = 0.0
        self._phase = "scanning"
        self._current: str | None = None
        self._bytes_total = 0
        self._bytes_done = 0
        self.result = RunResult()

    @property
    def encoder(self) -> SparseEncoder:
        if self._encoder is None:
            src = self._encoder_src
            self._encoder = src() if callable(src) else src  # type: ignore[assignment]
        return self._encoder

    # ---- progress

    def snapshot(self) -> Progress:
        r = self.result
        elapsed = max(1e-9, time.monotonic() - self._t0)
        rate = r.sentences / elapsed
        eta: float | None = None
        if self._phase in ("done", "cancelled"):
            eta = 0.0
        elif self._bytes_done > 0 and self._bytes_total >= self._bytes_done:
            eta = (self._bytes_total - self._bytes_done) * elapsed / self._bytes_done
        return Progress(
            self._phase, r.files_done, r.files_total, r.sentences, rate, eta, self._current, self._upgrading
        )

    def _report(self, force: bool = False) -> None:
        if self.progress_cb is None:
            return
        now = time.monotonic()
        if force or now - self._last_progress >= self.progress_interval:
            self._last_progress = now
            try:
                self.progress_cb(self.snapshot())
            except Exception:  # a broken progress callback must not stop indexing
                log.exception("progress callback failed")

    def _checkpoint(self) -> None:
        """Honour cancel and pause between units of work."""
        if self.cancel.is_set():
            raise Cancelled
        if self.pause.is_set():
            self._commit()  # a long pause must not hold uncommitted work
            phase, self._phase = self._phase, "paused"
            self._report(force=True)
            while self.pause.is_set() and not self.cancel.is_set():
                time.sleep(0.05)
            self._phase = phase
            self._report(force=True)
            if self.cancel.is_set():
                raise Cancelled

    # ---- generation and index

    def open_generation(self, model: ModelIdentity, create: bool = True) -> Generation | None:
        """The generation this run writes to: the active one when it was built with this
        model, else a building one for this model (created when missing). The very first
        generation is activated at once, so searches see results while it fills."""
        cat = self.catalog
        active = cat.active_generation()
        if active and (active.model_name, active.model_version) == (model.name, model.version):
            return active
        for g in reversed(cat.generations()):
            if g.status == "building" and (g.model_name, g.model_version) == (model.name, model.version):
                return g
        if not create:
            return None
        existing = [g.id for g in cat.generations()] + self.layout.generations_on_disk()
        number = max(existing, default=0) + 1
        gid = cat.create_generation(model.name, model.version, str(self.layout.generation_dir(number)))
        if active is None:
            cat.activate_generation(gid)
        return cat.get_generation(gid)

    def _open_index(self) -> None:
        """Open the generation's index for writing if it exists (IndexLockedError if busy).
        It exists once sparcdesk's metadata does: creation is atomic, and tantivy files
        without it are what an older version's interrupted creation left (replaced)."""
        assert self.generation is not None
        path = Path(self.generation.index_dir)
        if self.index is None and (path / META_FILE).exists():
            self.index = SentenceIndex.open(path, writable=True)

    def _ensure_index(self, vectors: Sequence[SparseVector]) -> SentenceIndex:
        if self.index is not None:
            return self.index
        assert self.generation is not None
        path = Path(self.generation.index_dir)
        quantizer = fit_quantizer(vectors)
        enc = self.encoder
        model = {
            "name": enc.config.name,
            "version": enc.config.version,
            "generation": self.generation.id,
            "bundle": str(enc.bundle_dir),
        }
        try:
            self.index = SentenceIndex.create(path, quantizer, model=model, records=RECORDS_VERSION)
        except FileExistsError:
            self.index = SentenceIndex.open(path, writable=True)
        return self.index

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    # ---- scanning

    def _counted(self, n: int) -> None:
        self.result.files_total = n
        self._report()

    # ---- the run

    def run(self, targets: Sequence[Target], model: ModelIdentity, activate: bool = False) -> RunResult:
        """Index ``targets``; ``activate`` (a run over every source) switches a building
        generation live when the run completes."""
        self._reset()
        diskspace.check(self.layout.home, diskspace.MIN_FREE_BYTES)
        log.info(
            "indexing %s with %s %s", ", ".join(str(t.subtree or t.source.path) for t in targets), model.name, model.version
        )
        try:
            result = self._run(targets, model, activate)
        except diskspace.DiskFullError:
            raise
        except Exception as exc:
            if not diskspace.is_disk_full(exc, self.layout.home):
                raise
            # Every store's commit is atomic and the failed one was rolled back (close()):
            # the index answers as of the last commit; the journal redoes the rest.
            log.info("disk full in %s: %s", self.layout.home, exc)
            raise diskspace.DiskFullError(
                self.layout.home, diskspace.free_bytes(self.layout.home), self._space_needed(), self.result.files_done
            ) from exc
        r = result
        log.info(
            "indexing %s: %d of %d files done (%d indexed, %d with problems, %d unchanged, %d deleted), "
            "%d sentences in %.1f s",
            "cancelled" if r.cancelled else "finished",
            r.files_done,
            r.files_total,
            r.indexed,
            r.failed,
            r.unchanged,
            r.deleted,
            r.sentences,
            r.seconds,
        )
        return result

    def _space_needed(self) -> int:
        """About how many more bytes this run needs: its next commit, and the files still to
        do at the sentences per byte seen so far."""
        c = self.committer
        need = diskspace.commit_estimate(c.sentences + len(self._buffer), c.text_bytes())
        rest = max(0, self._bytes_total - self._bytes_done)
        per_byte = self.result.sentences / self._bytes_done if self._bytes_done and self.result.sentences else 0.01
        return need + int(rest * per_byte * diskspace.BYTES_PER_SENTENCE)

    def _run(self, targets: Sequence[Target], model: ModelIdentity, activate: bool) -> RunResult:
        self.generation = self.open_generation(model)
        if self.generation is not None and self.generation.status == "building":
            targets, activate = self.complete_targets(targets), True
        self._open_index()
        # An index written before the current records (e.g. without e-mail header lines or
        # whole documents): every unit is re-read; documents whose records did not change
        # keep their vectors and only gain what is new (no re-encoding).
        self._upgrading = self.index is not None and (
            self.index.records_version != RECORDS_VERSION or not self.index.documents_complete
        )
        full = {t.source.id for t in targets if t.subtree is None} >= {s.id for s in self.catalog.sources()}
        producer: threading.Thread | None = None
        stop = threading.Event()
        q: queue.Queue[tuple[str, Job | None, object]] = queue.Queue(maxsize=64)
        try:
            jobs = self._scan(targets)
            producer = threading.Thread(
                target=produce, args=(jobs, q, stop), name="sparcdesk-extract", daemon=True
            )
            producer.start()
            self._consume(q)
            self._flush()
            self._commit()
            if self._upgrading and full and self.index is not None:
                self.index.set_records_version(RECORDS_VERSION)
            self._phase = "done"
            if activate and not self.hold and self.generation is not None and self.generation.status != "active":
                self._activate()
        except Cancelled:
            self.result.cancelled = True
            stop.set()
            drain(q if producer is not None else None, producer)
            # Buffered sentences belong to unfinished units, which the journal makes the
            # next run redo: drop them rather than spend seconds encoding on a cancel.
            self._buffer = []
            self._commit()
            self._phase = "cancelled"
        finally:
            stop.set()
            if producer is not None and producer.is_alive():
                drain(q, producer)
            self.close()
        self._current = None
        self.result.seconds = time.monotonic() - self._t0
        self._report(force=True)
        return self.result

    def _scan(self, targets: Sequence[Target]) -> list[Job]:
        """What changed under ``targets``: the units to index (each once), in order; the
        units that are gone are deleted from the index and the catalog at once."""
        jobs: list[Job] = []
        deletions: list[str] = []
        seen_paths: set[str] = set()
        for target in targets:
            self._checkpoint()
            found = scan(
                self.catalog,
                self.store,
                target,
                self.generation.id if self.generation else None,
                self._upgrading,
                self._counted,
            )
            self.result.unchanged += found.unchanged
            self.result.touched += found.touched
            j, d = found.jobs, found.deleted
            for job in j:
                if job.path not in seen_paths:
                    seen_paths.add(job.path)
                    jobs.append(job)
            deletions += [p for p in d if p not in seen_paths]
        self.result.files_total = len(jobs)
        self._bytes_total = sum(j.size for j in jobs)
        self._phase = "indexing"
        self._report(force=True)
        for path in dict.fromkeys(deletions):
            self._delete_unit(path)
        return jobs

    def _consume(self, q: queue.Queue[tuple[str, Job | None, object]]) -> None:
        """What the extraction thread puts on ``q``, until it is done: each unit's start,
        documents, errors and end, the buffer encoded and committed as it fills."""
        while True:
            self._checkpoint()
            kind, job, payload = q.get()
            if kind == "done":
                break
            assert job is not None
            self._current = job.path
            if kind == "start":
                self._start_job(job, payload)  # type: ignore[arg-type]
            elif kind == "doc":
                self._add_document(job, payload)  # type: ignore[arg-type]
            elif kind == "error":
                self._part_error(job, payload)  # type: ignore[arg-type]
            elif kind == "end":
                self._end_job(job)
            if len(self._buffer) >= self.flush_sentences:
                self._flush()
            self._maybe_commit()
            self._report()

    def complete_targets(self, targets: Sequence[Target]) -> list[Target]:
        """``targets`` followed by every source they do not cover whole.

        A run on a building generation (a new or adapted model) indexes only into it, and it
        goes live only once it holds every source: a partial run (``index FILE``, a watch
        batch) used to leave it building for ever, its files unsearchable. So any run on it
        also brings the rest up to date (files already in it are skipped) and switches it."""
        whole = {t.source.id for t in targets if t.subtree is None}
        return [*targets, *(Target(s) for s in self.catalog.sources() if s.id not in whole)]

    def _activate(self) -> None:
        """Switch the building generation live and retire the old one. The generation just
        retired keeps its folder (``sparcdesk restore`` can make it live again); older
        retired ones are removed."""
        assert self.generation is not None
        previous = self.catalog.activate_generation(self.generation.id)
        self.generation = self.catalog.get_generation(self.generation.id)
        keep = {self.generation.id if self.generation else None, previous.id if previous else None}
        for g in self.catalog.generations():
            if g.status == "retired" and g.id not in keep and os.path.isdir(g.index_dir):
                shutil.rmtree(g.index_dir, ignore_errors=True)

    # ---- upgrading

    def _add_name_line(self, job: Job, prepared: PreparedDoc) -> bool:
        """While upgrading an index from before file names were lines (records version 2):
        a kept file gains its name line alone, without re-encoding its text. Journalled like
        any re-added document, so a crash before its unit is recorded re-adds it whole."""
        doc = prepared.doc
        stored = job.digests.get(doc.key)
        if not (self._upgrading and job.keep and stored is not None and has_name_line(doc)):
            return False
        names = [i for i, r in enumerate(prepared.records) if r.field == "name"]
        if (
            stored == prepared.digest
            or stored != document_digest(doc, records="")
            or len(names) != 1
            or job.kept_docs.get(doc.key) != len(prepared.records) - 1
        ):
            return False
        i = names[0]
        self.committer.journal(job.path, doc.key, prepared.digest, doc.text)
        job.docs.append(document_row(doc, job.path, len(prepared.records)))
        job.sentences += len(prepared.records)
        if prepared.whole is not None:
            self._wholes.append(prepared.whole)
        self._buffer.append(
            _Pending(job, prepared.records[i], prepared.sentences[i], prepared.contexts[i], prepared.passages[i])
        )
        job.outstanding += 1
        return True

    # ---- committing

    def _maybe_commit(self) -> None:
        if self.committer.due(self.commit_every, self.commit_seconds):
            self._flush()
            self._commit()

    def _commit(self) -> None:
        """The index's pending deletes, then the commit (:mod:`engine.indexer.commit`)."""
        self._apply_deletes()
        if not self.committer.has_work():
            return
        phase = self._phase

        def committing() -> None:
            self._phase = "committing"
            self._report(force=True)

        def short_of_space(free: int | None) -> Exception:
            return diskspace.DiskFullError(self.layout.home, free, self._space_needed(), self.result.files_done)

        if self.committer.commit(
            self.index, self.generation.id if self.generation else None, short_of_space, committing
        ):
            self.result.commits += 1
        self._phase = phase
        if self.on_commit is not None:
            try:
                self.on_commit()
            except Exception:
                log.exception("on_commit callback failed")
