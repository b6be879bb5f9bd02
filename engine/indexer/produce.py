"""The producer thread of a run: units are extracted (in the worker process, under limits)
and cut into sentences while the run's thread encodes, so parsing overlaps with ONNX."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from engine.indexer.prepare import PreparedDoc, prepare
from engine.indexer.scan import Job
from engine.ingest.documents import Document, ExtractionError
from engine.ingest.extract import iter_extract, name_only_document
from engine.ingest.walk import MAX_FILE_BYTES, classify, unit_hash

log = logging.getLogger(__name__)


#: Extract in a worker process under limits (engine.ingest.extract_worker); False: in this
#: process, as before (tests that replace ``iter_extract`` in this process use it).
ISOLATE_EXTRACTION = True


def _extract_items(path: str, stop: threading.Event) -> Iterator[Document | ExtractionError]:
    """The documents and errors of one unit: in the worker under limits, or in-process."""
    if ISOLATE_EXTRACTION:
        from engine.ingest import extract_worker

        return extract_worker.shared().extract(path, MAX_FILE_BYTES, stop)
    return iter_extract(Path(path))


def produce(jobs: Sequence[Job], q: queue.Queue, stop: threading.Event) -> None:
    """Producer thread: extract and segment units, in order, into ``q``."""

    def put(item: tuple[str, Job | None, object]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    try:
        for job in jobs:
            if stop.is_set():
                return
            try:
                file_hash: str | None = unit_hash(job.path)
            except OSError as exc:  # extracting it reports why it cannot be read
                log.debug("cannot hash %s: %s", job.path, exc)
                file_hash = None
            if not put(("start", job, file_hash)):
                return
            mail: dict[str, dict[str, str]] = {}
            docs = 0
            failed = False
            try:
                with contextlib.closing(_extract_items(job.path, stop)) as items:  # type: ignore[type-var]
                    for item in items:
                        if stop.is_set():
                            return
                        if isinstance(item, ExtractionError):
                            msg: tuple[str, Job | None, object] = ("error", job, item)
                            failed = failed or item.path == job.path
                        else:
                            msg = _prepared(job, item, mail)
                            if msg[0] == "doc":
                                docs += 1
                            else:
                                failed = failed or item.key == job.path
                        if not put(msg):
                            return
            except Exception as exc:  # a bug on one odd unit must not stop the run
                log.exception("extraction of %s failed", job.path)
                failed = True
                if not put(
                    ("error", job, ExtractionError(job.path, f"indexing failed: {type(exc).__name__}: {exc}"))
                ):
                    return
            name_only = _name_only(job.path) if failed and not docs else None
            if name_only is not None and not put(("doc", job, name_only)):
                return
            if not put(("end", job, None)):
                return
    finally:
        while True:
            try:
                q.put(("done", None, None), timeout=0.1)
                break
            except queue.Full:
                if stop.is_set():
                    with contextlib.suppress(queue.Empty):
                        q.get_nowait()


def _prepared(job: Job, doc: Document, mail: dict[str, dict[str, str]]) -> tuple[str, Job, object]:
    """``("doc", job, PreparedDoc)``, or ``("error", job, ExtractionError)`` for a document
    over a limit or one the segmenter fails on (one odd document must not cost its unit)."""
    try:
        return ("doc", job, prepare(doc, mail))
    except ExtractionError as exc:
        return ("error", job, exc)
    except Exception as exc:
        log.exception("segmenting %s failed", doc.key)
        return ("error", job, ExtractionError(doc.key, f"indexing failed: {type(exc).__name__}: {exc}"))


def _name_only(path: str) -> PreparedDoc | None:
    """A file whose content could not be read (or is in a format not read), as a document of
    its name alone, so that every file can be found; None for a mail store or a file gone."""
    try:
        if not os.path.isfile(path) or classify(Path(path)) != "file":
            return None
        prepared = prepare(name_only_document(path), {})
    except Exception:  # never worse than the failure it stands in for
        log.exception("indexing the name of %s failed", path)
        return None
    prepared.name_only = True
    return prepared


def drain(q: queue.Queue | None, producer: threading.Thread | None) -> None:
    if q is None or producer is None:
        return
    while producer.is_alive():
        with contextlib.suppress(queue.Empty):
            q.get(timeout=0.05)
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            break
