"""The on-disk sentence index: tantivy for text, BM25, stored fields, filters and deletes;
exact SPARC scoring from a column store of the same quantised levels (:mod:`engine.index.columns`).

Why tantivy: crash-safe atomic commits, an exclusive writer lock, deletes and BM25 for the
hybrid, from one dependency that ships wheels for every desktop platform.

Why SPARC scoring is not in tantivy (it was, as impact terms with base-16 level digits and
constant-score clauses): a 10-15-token question visits ~400k postings at 100k sentences
(~11M with the shipped model's vectors, whose ~1,000 most common tokens nearly every
sentence has) and tantivy's union costs ~19 ns per posting: 11.6 ms p50 at 100k. The column
store adds dense uint8 columns and sparse postings with numpy in int32, the arithmetic of
:mod:`engine.index.quantize`, so scores stay bit-identical to the oracle's (bench/search_latency.py).
Measured again with the FLOPS-regularised model's ~90 non-zeros per sentence (issue 13, item 5;
``bench/impact_terms.py``, docs/results.md): impact terms still took 2.6-5.3x the column
store's CPU time per question at 1M sentences.

One commit covers both stores: column files are written first and named in a pending
state, then tantivy commits (the atomic step), then the column manifest records tantivy's
opstamp; opening reconciles the two (see :mod:`engine.index.columns`). Filters are tantivy queries
whose matching sentence ids restrict the candidates (cached per filter and commit), so
they never change a score.

Ranking: score descending, then sentence id ascending, the same rule as the oracle.

The modules beside this one: :mod:`engine.index.records` (the schema, a record, a hit, the
errors), :mod:`engine.index.filters` (what restricts a search), :mod:`engine.index.reading`
(searches and look-ups, :class:`~engine.index.reading.IndexReader`); this module opens,
creates, writes and commits, and re-exports their names.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy

from engine.home.paths import fsync_dir, to_store, write_json_atomic
from engine.index.columns import ColumnStore, ColumnStoreError
from engine.index.docindex import DocumentIndex, DocumentText
from engine.index.filters import IndexFilters, filter_query, folder_terms, normalize_path
from engine.index.quantize import Quantizer
from engine.index.reading import FILTER_CACHE_SIZE, IndexReader, _live_ids, _View, fetch_top
from engine.index.records import (
    FORMAT_VERSION,
    IDS_FILE,
    META_FILE,
    TANTIVY_META,
    TEXT_ANALYZER,
    IndexFormatError,
    IndexHit,
    IndexLockedError,
    IndexVersionError,
    SentenceRecord,
    _text_analyzer,
    build_schema,
    index_format,
    sentence_document,
)
from engine.model.sparse import VOCAB_SIZE, SparseVector

__all__ = [
    "FILTER_CACHE_SIZE",
    "FORMAT_VERSION",
    "IDS_FILE",
    "META_FILE",
    "TANTIVY_META",
    "TEXT_ANALYZER",
    "VIEW_RETRY_S",
    "IndexFilters",
    "IndexFormatError",
    "IndexHit",
    "IndexLockedError",
    "IndexVersionError",
    "SentenceIndex",
    "SentenceRecord",
    "build_schema",
    "fetch_top",
    "filter_query",
    "folder_terms",
    "index_format",
    "normalize_path",
]

log = logging.getLogger(__name__)

#: A reader re-reads tantivy's commit and the column state for this long while they
#: disagree (another process committing between the two reads; see ``_fresh_view``).
VIEW_RETRY_S = 5.0

#: What a creation interrupted before creation was atomic could leave (no commit yet).
_UNFINISHED = frozenset({TANTIVY_META, ".managed.json", ".tantivy-meta.lock", ".tantivy-writer.lock", "columns"})


def _clear_unfinished(path: Path) -> None:
    """Before creating at ``path``: remove ``.creating`` folders of killed creators, and what
    an older version's interrupted creation left at ``path`` itself (tantivy's files of an
    index that never committed, without sparcdesk's metadata). Anything else stays and
    makes creation fail with FileExistsError."""
    for leftover in path.parent.glob(f".{path.name}.creating-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        names = set(os.listdir(path))
    except FileNotFoundError:
        return
    if not names:
        return
    if names <= _UNFINISHED and TANTIVY_META in names:
        with contextlib.suppress(OSError, ValueError, KeyError):
            if json.loads((path / TANTIVY_META).read_text(encoding="utf-8")).get("segments") == []:
                shutil.rmtree(path)
                return
    raise FileExistsError(f"an index already exists at {path} (or the folder is not empty)")


def _tantivy_opstamp(path: Path) -> int:
    """Opstamp of tantivy's last commit, from its meta file (merges keep it)."""
    return int(json.loads((path / TANTIVY_META).read_text(encoding="utf-8"))["opstamp"])


class SentenceIndex(IndexReader):
    """A tantivy index of sentences with exact quantised SPARC scoring.

    Open read-only with :meth:`open`, or writable (``writable=True`` or :meth:`create`),
    which takes tantivy's exclusive writer lock for the lifetime of the object. Changes
    become visible (here and to readers that :meth:`reload`) only at :meth:`commit`;
    tantivy commits are atomic, so a crash loses at most the uncommitted changes.
    """

    def __init__(
        self,
        path: Path,
        index: tantivy.Index,
        meta: Mapping[str, Any],
        writable: bool,
        writer_heap: int,
        writer_threads: int,
    ) -> None:
        self.path = path
        # Searchers are reloaded when asked (``reload``), never by tantivy's own watcher
        # thread: it polls meta.json twice a second in every process holding an index open,
        # and one that woke while a closed index's folder was being removed re-created
        # .tantivy-meta.lock in it, leaving the folder behind.
        index.config_reader(reload_policy="Manual")
        self._index = index
        self._meta = dict(meta)
        self.quantizer = Quantizer.from_dict(meta["quantizer"])
        self.vocab_size = int(meta.get("vocab_size", VOCAB_SIZE))
        self._schema = index.schema
        self._index.register_tokenizer(TEXT_ANALYZER, _text_analyzer())
        self._analyzer = _text_analyzer()
        self._writer: tantivy.IndexWriter | None = None
        self._columns = ColumnStore(path)
        self._next_id = 0
        self._pending = False
        self._writer_args = (writer_heap, writer_threads)
        if writable:
            try:
                self._writer = index.writer(heap_size=writer_heap, num_threads=writer_threads)
            except ValueError as e:
                if "LockBusy" in str(e) or "lock" in str(e).lower():
                    raise IndexLockedError(
                        f"index at {path} is being written by another sparcdesk process"
                    ) from e
                raise
            try:
                # Holding the writer lock, nothing commits meanwhile: tantivy's last commit
                # is the searcher's, which checks a pending column state's probes.
                self._index.reload()
                self._columns.recover(_tantivy_opstamp(path), _live_ids(self._schema, self._index.searcher()))
            except ColumnStoreError as e:
                self._writer = None
                raise IndexFormatError(str(e)) from e
        try:
            self._view = self._fresh_view(None)
        except ColumnStoreError as e:
            self._writer = None
            raise IndexFormatError(str(e)) from e
        if self._writer is not None:
            self._next_id = max(self._stored_next_id(), self.max_sentence_id() + 1)
        self._docs = DocumentIndex.open(path, TEXT_ANALYZER, _text_analyzer(), self._writer is not None)
        if self._docs is not None and self._writer is not None and self.num_sentences == 0:
            self._docs.mark_complete()  # a new generation: every document it gets is recorded

    # ---- opening and closing

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        quantizer: Quantizer,
        model: Mapping[str, Any] | None = None,
        writer_heap: int = 128_000_000,
        writer_threads: int = 1,
        records: str = "1",
    ) -> SentenceIndex:
        """Create a new empty index in ``path`` (which must not hold one) and open it for writing.

        ``quantizer`` fixes the global scale for the life of the index (re-encoding with a
        new model means a new index, see the catalog's generations). ``model`` is recorded
        in the metadata for provenance.
        """
        p = Path(os.path.abspath(path))
        if (p / META_FILE).exists():
            raise FileExistsError(f"an index already exists at {p}")
        _clear_unfinished(p)
        meta = {
            "format": FORMAT_VERSION,
            "layout": {"kind": "columns"},
            "quantizer": quantizer.to_dict(),
            "vocab_size": VOCAB_SIZE,
            "model": dict(model or {}),
            "records": records,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        # Built whole in a hidden sibling folder, then renamed into place (the one atomic
        # step): a creator killed at any point leaves no half-made index at ``path``, only
        # a ``.creating`` folder that the next creation removes.
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.parent / f".{p.name}.creating-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            tantivy.Index(build_schema(), path=str(tmp), reuse=False)  # reopened at its final path
            ColumnStore.create(tmp, _tantivy_opstamp(tmp))
            write_json_atomic(tmp / META_FILE, meta)
            fsync_dir(tmp)
            with contextlib.suppress(FileNotFoundError):
                p.rmdir()  # an empty folder (made by the caller) is replaced
            os.rename(tmp, p)
            fsync_dir(p.parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        index = tantivy.Index.open(str(p))
        return cls(p, index, meta, True, writer_heap, writer_threads)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        writable: bool = False,
        writer_heap: int = 128_000_000,
        writer_threads: int = 1,
    ) -> SentenceIndex:
        """Open an existing index; ``writable`` takes the writer lock or raises IndexLockedError."""
        p = Path(path)
        try:
            meta = json.loads((p / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise IndexFormatError(f"no sparcdesk index at {p}") from e
        if int(meta.get("format", 0)) != FORMAT_VERSION:
            raise IndexVersionError(p, int(meta.get("format", 0)))
        try:
            index = tantivy.Index.open(str(p))
        except (ValueError, OSError) as e:
            raise IndexFormatError(f"cannot open tantivy index at {p}: {e}") from e
        return cls(p, index, meta, writable, writer_heap, writer_threads)

    def close(self) -> None:
        """Release the writer lock. Uncommitted changes are discarded (as after a crash); the
        writer is dropped once its merge threads are done, so nothing writes in the index folder
        after close returns."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            with contextlib.suppress(ValueError):
                if self._pending:
                    writer.rollback()
            with contextlib.suppress(ValueError):
                writer.wait_merging_threads()
            self._pending = False
            self._columns.rollback()
        if self._docs is not None:
            self._docs.close()

    def __enter__(self) -> SentenceIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def writable(self) -> bool:
        """Whether this object holds the writer lock."""
        return self._writer is not None

    @property
    def records_version(self) -> str:
        """What the indexer made of documents when it wrote this index (see
        ``engine.indexer.prepare.RECORDS_VERSION``); "1" for indexes from before it was recorded."""
        return str(self._meta.get("records", "1"))

    def set_records_version(self, version: str) -> None:
        """Record that every document now has the records of ``version`` and its whole-
        document record (after a full run)."""
        self._w()
        self._meta["records"] = version
        write_json_atomic(self.path / META_FILE, self._meta)
        if self._docs is not None:
            self._docs.mark_complete()

    @property
    def documents_complete(self) -> bool:
        """Whether the document index holds every document (see ``set_records_version``)."""
        return self._docs is not None and self._docs.complete

    @property
    def model(self) -> dict[str, Any]:
        """Model provenance recorded at creation."""
        return dict(self._meta.get("model", {}))

    # ---- writing

    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise PermissionError("index opened read-only; open it with writable=True")
        return self._writer

    def allocate_ids(self, n: int) -> list[int]:
        """Reserve ``n`` fresh sentence ids (never reused, also across restarts)."""
        self._w()
        start = self._next_id
        self._next_id += n
        return list(range(start, start + n))

    def add(self, records: Sequence[SentenceRecord], vectors: Sequence[SparseVector]) -> list[int]:
        """Add sentences (visible after :meth:`commit`); returns their sentence ids.

        A record's ``sentence_id`` is used when set, otherwise one is allocated. Vector ids
        must be unique within a vector (see :meth:`SparseVector.validate`).
        """
        writer = self._w()
        if len(records) != len(vectors):
            raise ValueError("one vector per record")
        out: list[int] = []
        for rec, vec in zip(records, vectors, strict=True):
            sid = rec.sentence_id
            if sid is None:
                sid = self._next_id
                self._next_id += 1
            else:
                self._next_id = max(self._next_id, int(sid) + 1)
            writer.add_document(sentence_document(int(sid), rec))
            levels = self.quantizer.levels(vec.weights)
            self._columns.add(int(sid), rec.doc_key, vec.ids, levels)
            out.append(int(sid))
        if out:
            self._pending = True
        return out

    def delete_document(self, doc_key: str) -> None:
        """Delete every sentence of a document (effective at :meth:`commit`)."""
        self._w().delete_documents_by_term("doc_key", to_store(doc_key))
        # The column store learns which ids these are: the committed ones from tantivy,
        # the ones added since the last commit from its own buffer.
        self._columns.delete_ids(self.document_sentence_ids(doc_key))
        self._columns.delete_key(doc_key)
        if self._docs is not None:
            self._docs.delete(doc_key)
        self._pending = True

    def add_documents(self, docs: Iterable[DocumentText]) -> None:
        """Add whole documents to the document-level BM25 index (:mod:`engine.index.docindex`),
        visible after :meth:`commit` like sentences; delete older versions first."""
        self._w()
        assert self._docs is not None
        self._docs.add(docs)
        self._pending = True

    @property
    def num_documents(self) -> int:
        """Documents in the document-level index (0 when the generation has none)."""
        return self._docs.num_documents if self._docs is not None else 0

    def delete_sentence(self, sentence_id: int) -> None:
        """Delete one sentence by id (effective at :meth:`commit`)."""
        self._w().delete_documents_by_term("sentence_id", int(sentence_id))
        self._columns.delete_ids([int(sentence_id)])
        self._pending = True

    def commit(self) -> None:
        """Make all changes durable and visible, atomically, then reload this object's searcher.

        Column files and the pending column state first, then the tantivy commit (the one
        atomic step), then the column manifest; small column segments are merged after."""
        writer = self._w()
        self._columns.prepare(self._view.columns)
        opstamp = int(writer.commit())
        self._columns.finish(opstamp)
        self._pending = False
        write_json_atomic(self.path / IDS_FILE, {"next_id": self._next_id})
        if self._docs is not None:
            self._docs.commit()
        self.reload()
        if self._columns.maybe_merge(self._view.columns) is not None:
            self.reload()

    def rollback(self) -> None:
        """Discard changes since the last commit."""
        self._w().rollback()
        self._columns.rollback()
        if self._docs is not None:
            self._docs.rollback()
        self._pending = False

    def wait_merging_threads(self) -> None:
        """Block until background segment merges finish; this consumes the writer, so the
        index is reopened for writing afterwards (used by the benchmark before timing)."""
        writer = self._w()
        writer.wait_merging_threads()
        self._writer = None
        heap, threads = self._writer_args
        self._writer = self._index.writer(heap_size=heap, num_threads=threads)

    def _stored_next_id(self) -> int:
        path = self.path / IDS_FILE
        try:
            return int(json.loads(path.read_text(encoding="utf-8"))["next_id"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError) as exc:  # the index's largest id sets the next one
            log.warning("%s is unreadable (%s: %s): ids go on from the largest stored", path, type(exc).__name__, exc)
            return 0

    # ---- reading

    def _fresh_view(self, previous: _View | None) -> _View:
        """A searcher and the column state of the same tantivy commit.

        Another process may commit or merge at any instant (the window reads while its
        indexing child commits). The opstamp is read before and after reloading the
        searcher, then the column state of that opstamp is loaded under the readers' lock
        (:mod:`engine.index.columns`: no file it names is deleted meanwhile). A commit landing
        between these reads shows as a changed opstamp or a manifest of another commit; the
        whole read is then done again (each try takes milliseconds, commits come seconds
        apart), for up to ``VIEW_RETRY_S``. Only a store that stays inconsistent raises."""
        deadline = time.monotonic() + VIEW_RETRY_S
        delay = 0.001
        while True:
            try:
                before = _tantivy_opstamp(self.path)
                self._index.reload()
                searcher = self._index.searcher()
                if _tantivy_opstamp(self.path) != before:
                    continue  # a commit in between: read again at once
                columns = self._columns.view(
                    before, previous.columns if previous else None, _live_ids(self._schema, searcher)
                )
                break
            except (ColumnStoreError, FileNotFoundError, ValueError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(2 * delay, 0.05)
        if previous is not None and columns is previous.columns:
            return _View(searcher, columns, previous.filters)
        return _View(searcher, columns)

    def reload(self) -> None:
        """See the latest commit (also one made by another process); cheap when nothing changed."""
        self._view = self._fresh_view(self._view)
        if self._docs is None:
            self._docs = DocumentIndex.open(self.path, TEXT_ANALYZER, _text_analyzer(), False)
        else:
            self._docs.reload()
