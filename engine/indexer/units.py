"""What one indexing run does with each unit (:class:`UnitWork`, part of
:class:`engine.indexer.run.Indexer`): a unit started (what the catalog and the journal know
of it, which documents may be kept as they are), each of its documents buffered as sentences
to encode (or kept, when its digest did not change), its errors, its end; then the buffer
encoded in batches and added to the index, one document left out when it cannot be encoded,
and the deletes applied before what replaces them. The run loop, the generation, the
records-version upgrade and the commit are :mod:`engine.indexer.run`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from engine.catalog.store import Catalog, DocumentRow, Generation
from engine.catalog.texts import TextStore
from engine.index.docindex import DocumentText
from engine.index.sentences import SentenceIndex, SentenceRecord
from engine.indexer.commit import Committer
from engine.indexer.prepare import PreparedDoc, message_row
from engine.indexer.progress import RunResult
from engine.indexer.scan import Job
from engine.ingest.documents import (
    PAGES,
    SECTIONS,
    SKIPPED_PREFIX,
    Document,
    ExtractionError,
    UnsupportedFormat,
)
from engine.model.encoder import SparseEncoder
from engine.model.sparse import SparseVector

log = logging.getLogger(__name__)


def document_row(doc: Document, path: str, sentences: int) -> DocumentRow:
    """The catalog's row of ``doc`` (of the unit at ``path``), its pages and headings kept."""
    return DocumentRow(
        doc.key, path, doc.kind, doc.title, doc.parent_key, sentences, doc.fields.get(PAGES, ""), doc.fields.get(SECTIONS, "")
    )


@dataclass
class _Pending:
    job: Job
    record: SentenceRecord
    sentence: str
    context: str
    passage: int = 0  # PreparedDoc.passages


class UnitWork:
    """Units and their documents into the index (see the module docstring)."""

    catalog: Catalog
    store: TextStore
    generation: Generation | None
    index: SentenceIndex | None
    committer: Committer
    result: RunResult
    encoder: SparseEncoder
    batch_size: int
    _upgrading: bool
    _buffer: list[_Pending]
    _deletes: list[str]
    _wholes: list[DocumentText]
    _bytes_done: int

    def _add_name_line(self, job: Job, prepared: PreparedDoc) -> bool:
        """A kept file's name line alone while upgrading (the indexer's; see there)."""
        raise NotImplementedError

    def _ensure_index(self, vectors: Sequence[SparseVector]) -> SentenceIndex:
        """The generation's index, created for these first vectors (the indexer's)."""
        raise NotImplementedError

    # ---- per unit

    def _start_job(self, job: Job, file_hash: object) -> None:
        job.hash = file_hash if isinstance(file_hash, str) else None
        prev_docs = {d.key: d for d in self.catalog.documents(job.path)}
        journal = self.store.journal(job.path)
        gen = self.generation.id if self.generation else None
        job.keep = (
            job.prev is not None and job.prev.generation == gen and job.prev.status in ("ok", "pending")
        )
        job.old_keys = set(prev_docs) | journal
        if job.keep:
            digests = self.store.digests(job.path)
            job.digests = {k: d for k, d in digests.items() if k in prev_docs and k not in journal}
            job.kept_docs = {k: prev_docs[k].n_sentences for k in job.digests}

    def _add_document(self, job: Job, prepared: PreparedDoc) -> None:
        doc = prepared.doc
        if doc.key in job.seen:
            return
        job.seen.add(doc.key)
        # fallback decoding, empty file, skipped PDF pages, a line cut short: worth showing in status
        for note in [doc.fields.get("note") or "", *prepared.notes]:
            if note:
                job.reasons.append(note if doc.key == job.path else f"{doc.key}: {note}")
        job.name_only = job.name_only or prepared.name_only
        if self._add_name_line(job, prepared):
            return
        if job.keep and job.digests.get(doc.key) == prepared.digest:
            if self._upgrading and prepared.whole is not None:
                self._wholes.append(prepared.whole)
            n = job.kept_docs.get(doc.key, 0)
            job.docs.append(document_row(doc, job.path, n))
            job.sentences += n
            return
        try:
            if doc.key in job.old_keys:
                self._deletes.append(doc.key)
            self.committer.journal(job.path, doc.key, prepared.digest, doc.text)
            job.docs.append(document_row(doc, job.path, len(prepared.records)))
            if doc.kind == "email":
                job.messages.append(message_row(doc, job.path))
            job.sentences += len(prepared.records)
            if prepared.whole is not None:
                self._wholes.append(prepared.whole)
            for rec, s, c, g in zip(
                prepared.records, prepared.sentences, prepared.contexts, prepared.passages, strict=True
            ):
                self._buffer.append(_Pending(job, rec, s, c, g))
                job.outstanding += 1
        except Exception as exc:  # anything odd in one document must not stop the run
            job.reasons.append(f"{doc.key}: {type(exc).__name__}: {exc}")

    def _part_error(self, job: Job, err: ExtractionError) -> None:
        if err.path == job.path and isinstance(err, UnsupportedFormat):
            # not a failure: listed as skipped, and found by its name (the producer adds it)
            job.reasons.insert(0, f"{SKIPPED_PREFIX}{err.reason}; only its name is searchable")
        elif err.path == job.path:
            job.unit_error = err.reason
        else:
            job.reasons.append(f"{err.path}: {err.reason}")

    def _end_job(self, job: Job) -> None:
        job.extracted = True
        if job.unit_error is not None and not job.docs:
            # The whole unit failed: stale sentences of an earlier version must go too.
            self._deletes.extend(sorted(job.old_keys))
        else:
            self._deletes.extend(sorted(job.old_keys - job.seen))
            if job.unit_error is not None and not job.name_only:
                job.reasons.insert(0, job.unit_error)
                job.unit_error = None
        if job.outstanding == 0:
            self._finish(job)

    def _finish(self, job: Job) -> None:
        self.committer.unit_done(job)
        self.result.files_done += 1
        self._bytes_done += job.size
        if job.unit_error is not None:
            self.result.failed += 1
        else:
            self.result.indexed += 1
        self.result.changed_paths.append(job.path)

    def _delete_unit(self, path: str) -> None:
        keys = {d.key for d in self.catalog.documents(path)} | self.store.journal(path)
        self._deletes.extend(sorted(keys))
        self.committer.unit_deleted(path)
        self.result.deleted += 1
        self.result.changed_paths.append(path)

    # ---- encoding, adding, committing

    def _apply_deletes(self) -> None:
        """Deletes, then the whole documents queued since (which replace what was deleted)."""
        if self._deletes and self.index is not None:
            for key in self._deletes:
                self.index.delete_document(key)
            self.committer.index_changed()
        self._deletes = []
        if self._wholes and self.index is not None:
            self.index.add_documents(self._wholes)
            self._wholes = []
            self.committer.index_changed()

    def _flush(self) -> None:
        if not self._buffer:
            self._apply_deletes()
            return
        items, self._buffer = self._buffer, []
        items, vectors = self._encode(items)
        self._apply_deletes()
        if items:
            index = self._ensure_index(vectors)
            index.add([p.record for p in items], vectors)
            self.committer.index_changed(len(items))
            self.result.sentences += len(items)
        for p in items:
            p.job.outstanding -= 1
            if p.job.outstanding == 0 and p.job.extracted:
                self._finish(p.job)

    def _encode(self, items: list[_Pending]) -> tuple[list[_Pending], list[SparseVector]]:
        """The vectors of ``items``. When the batch fails (a tokenizer or ONNX Runtime error on
        one odd input), each document is encoded alone and one that still fails is left out
        (``_drop_document``): one bad document must never stop the run, nor every rerun."""
        try:
            return items, self._encode_batch(items)
        except Exception:
            log.info("a batch of %d sentences failed to encode; encoding its documents one by one", len(items))
        groups: dict[tuple[int, str], list[_Pending]] = {}
        for p in items:
            groups.setdefault((id(p.job), p.record.doc_key), []).append(p)
        kept: list[_Pending] = []
        vectors: list[SparseVector] = []
        for group in groups.values():
            try:
                vectors += self._encode_batch(group)
                kept += group
            except Exception as exc:
                self._drop_document(group, exc)
        return kept, vectors

    def _encode_batch(self, items: list[_Pending]) -> list[SparseVector]:
        # a document's sentences are buffered together, so no passage spans two flushes
        return self.encoder.encode(
            [p.sentence for p in items],
            [p.context for p in items],
            self.batch_size,
            groups=[(id(p.job), p.record.doc_key, p.passage) for p in items],
        )

    def _drop_document(self, group: list[_Pending], exc: Exception) -> None:
        """The sentences of one document could not be encoded: the document is left out of
        its unit (its text, message row and count too) and the reason is kept for status;
        the unit finishes with the rest. A later run tries the document again."""
        job, key = group[0].job, group[0].record.doc_key
        log.info("%s: could not be encoded: %s: %s", key, type(exc).__name__, exc)
        job.reasons.append(f"{key}: could not be encoded ({type(exc).__name__}: {str(exc)[:200]})")
        job.docs = [d for d in job.docs if d.key != key]
        job.messages = [m for m in job.messages if m.key != key]
        job.sentences -= len(group)
        job.seen.discard(key)
        self.committer.texts = [t for t in self.committer.texts if t[1] != key]
        job.outstanding -= len(group)
        if job.outstanding == 0 and job.extracted:
            self._finish(job)

