"""The indexer's commit: how a run's work reaches the index and the catalog together.

Between two commits a run adds and deletes sentences in the index (uncommitted, invisible)
and collects what the catalog must learn: the text of every document it (re)adds, the units
it finished, the units that were deleted. :class:`Committer` holds that and writes it in
three steps, in this order:

  (a) a catalog transaction: the text and digest of every document (re)added since the last
      commit, and a *journal* row (unit, document key) for each: "these documents may be in
      the index without the catalog knowing";
  (b) the index commit (:meth:`engine.index.sentences.SentenceIndex.commit`: column files and
      ``pending.json``, the tantivy commit, the column manifest; the tantivy commit is its one
      atomic step and :mod:`engine.index.columns` says how a reopened index finds the column
      state of that commit, so the index is wholly at (b) or wholly before it);
  (c) a catalog transaction: for every unit finished before the commit, its documents,
      messages and file row (status, size, mtime, hash, generation), and its journal rows
      are cleared; deleted units are forgotten.

Free space is checked before (a): a commit that would not fit writes nothing
(:func:`engine.home.diskspace.commit_estimate`).

Why a crash at any instant is repaired by the next run, with no sentence lost or doubled:

* before (a) commits: the catalog is unchanged and the index still at its last commit; the
  units of this commit are still pending or changed on disk, so the next scan redoes them;
* between (a) and (c), whether or not (b) happened: the units' file rows were not written,
  so the next scan redoes them (their rows still hold the old size and mtime, or are
  pending, or absent), and it also redoes every unit the journal names
  (:func:`engine.indexer.scan.scan`). Before re-adding a unit's documents the run deletes
  every key the catalog knows for the unit *and* every key the journal names
  (``Indexer._start_job``, ``Indexer._delete_unit``), which covers whatever (b) may have
  committed;
* after (c): the commit is complete.

So the catalog never claims what the index lacks, and the index never keeps a sentence the
catalog cannot find again. The steps are crash points (:mod:`engine.home.crashpoints`):
``index-commit:journaled`` between (a) and (b), ``index-commit:indexed`` between (b) and
(c), reached when the index has something to commit; ``tests/test_pipeline.py`` kills a
real indexing process at each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from engine.catalog.store import Catalog, FileState, now_iso
from engine.catalog.texts import TextStore
from engine.home import crashpoints, diskspace
from engine.index.sentences import SentenceIndex
from engine.indexer.scan import Job

log = logging.getLogger(__name__)

#: At most this many per-part errors are kept in a file's ``last_error``.
MAX_REASONS = 5
#: The crash points of a commit, in order (see the module docstring).
JOURNALED = "index-commit:journaled"
INDEXED = "index-commit:indexed"


@dataclass
class Committer:
    """What a run did since its last commit that the catalog does not know yet, and the
    commit that makes it durable (steps (a), (b), (c) of the module docstring).

    The run fills it: :meth:`journal` for each document it (re)adds, :meth:`unit_done` when
    every sentence of a unit is in the index, :meth:`unit_deleted` for a unit gone from
    disk, :meth:`index_changed` after each change to the index."""

    catalog: Catalog
    store: TextStore
    home: Path
    #: ``(unit, key, digest, text)`` of documents (re)added: journalled in step (a).
    texts: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: Units whose every sentence is in the index: recorded in step (c).
    finished: list[Job] = field(default_factory=list)
    #: Units deleted from disk: forgotten in step (c).
    deleted: list[str] = field(default_factory=list)
    #: The index has changes since its last commit (step (b) is due).
    dirty: bool = False
    #: Sentences added to the index since the last commit.
    sentences: int = 0
    #: ``time.monotonic()`` of the last commit (of the run's start before the first).
    last_at: float = field(default_factory=time.monotonic)

    # ---- what the run reports

    def journal(self, unit: str, key: str, digest: str, text: str) -> None:
        """A document of ``unit`` is being (re)added to the index."""
        self.texts.append((unit, key, digest, text))

    def unit_done(self, job: Job) -> None:
        """Every sentence of ``job``'s unit is in the index (uncommitted)."""
        self.finished.append(job)

    def unit_deleted(self, path: str) -> None:
        """The unit at ``path`` is gone; its documents were deleted from the index."""
        self.deleted.append(path)

    def index_changed(self, sentences: int = 0) -> None:
        """The index changed (``sentences`` of them added)."""
        self.dirty = True
        self.sentences += sentences

    # ---- when and how much

    def has_work(self) -> bool:
        """Whether a commit would write anything."""
        return bool(self.dirty or self.finished or self.deleted or self.texts)

    def due(self, every: int, seconds: float) -> bool:
        """Whether to commit now: ``every`` sentences added, or ``seconds`` since the last
        commit with something to commit."""
        return self.sentences >= every or (
            bool(self.dirty or self.finished) and time.monotonic() - self.last_at >= seconds
        )

    def text_bytes(self) -> int:
        """Characters of document text step (a) writes."""
        return sum(len(t) for *_, t in self.texts)

    def space_needed(self) -> int:
        """Bytes this commit may write (:func:`engine.home.diskspace.commit_estimate`)."""
        return diskspace.commit_estimate(self.sentences if self.dirty else 0, self.text_bytes())

    # ---- the commit

    def commit(
        self,
        index: SentenceIndex | None,
        generation: int | None,
        short_of_space: Callable[[int | None], Exception],
        committing: Callable[[], None] | None = None,
    ) -> bool:
        """Steps (a), (b), (c); True when the index committed (step (b) ran).

        Short of space for what it writes, nothing is written: ``short_of_space(free)`` is
        raised (the run knows what it still needs). ``committing`` is called once the commit
        is sure to start (the run reports it)."""
        free = diskspace.free_bytes(self.home)
        if free is not None and free < self.space_needed():
            raise short_of_space(free)
        if committing is not None:
            committing()
        cat = self.catalog
        if self.texts:  # (a)
            with cat.transaction():
                self.store.put(self.texts)
            self.texts = []
        indexed = False
        if self.dirty and index is not None:  # (b)
            crashpoints.reached(JOURNALED)
            index.commit()
            indexed = True
            crashpoints.reached(INDEXED)
        self.dirty = False
        with cat.transaction():  # (c)
            for job in self.finished:
                self._record_unit(job, generation)
            for path in self.deleted:
                cat.remove_file(path)
                self.store.forget_unit(path)
        self.finished = []
        self.deleted = []
        self.sentences = 0
        self.last_at = time.monotonic()
        return indexed

    def _record_unit(self, job: Job, generation: int | None) -> None:
        """Step (c) for one unit: its documents, messages and file row; its journal cleared."""
        cat = self.catalog
        if job.unit_error is not None and not job.docs:
            old = cat.replace_documents(job.path, [])
            cat.delete_messages(old)
            self.store.forget_unit(job.path)
            cat.record_error(job.path, job.source_id, job.unit_error, job.size, job.mtime_ns)
            log.info("%s: could not be read: %s", job.path, job.unit_error)
            return
        old = cat.replace_documents(job.path, job.docs)
        gone = set(old) - job.seen
        cat.delete_messages(gone)
        self.store.delete_keys(gone)
        if job.messages:
            cat.upsert_messages(job.messages)
        reason = None
        if job.reasons:
            extra = len(job.reasons) - MAX_REASONS
            reason = "; ".join(job.reasons[:MAX_REASONS]) + (f"; and {extra} more" if extra > 0 else "")
        if job.sentences == 0:
            reason = "nothing to index: " + (reason or ("no documents" if not job.docs else "no text found"))
        status = "ok"
        if job.unit_error is not None:
            # Its content could not be read (a damaged file, a permission): a failure, listed
            # and retried when it changes, but the file is in the index by its name.
            status = "error"
            reason = job.unit_error + (f"; {reason}" if reason else "")
        if reason:  # the log a user can send says what status says, with the time
            log.info("%s: %s", job.path, reason)
        cat.upsert_file(
            FileState(
                job.path,
                job.source_id,
                job.size,
                job.mtime_ns,
                job.hash,
                status,
                reason,
                job.sentences,
                now_iso(),
                generation,
            )
        )
        self.store.clear_journal(job.path)
