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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from engine.home.paths import from_store, fsync_dir, to_store, write_json_atomic
from engine.index.columns import ColumnStore, ColumnStoreError, ColumnView
from engine.index.docindex import DocumentIndex, DocumentText, add_filter_fields
from engine.index.quantize import Quantizer, QueryWeights, idf_weight, query_weights
from engine.model.sparse import VOCAB_SIZE, SparseVector

log = logging.getLogger(__name__)

#: 2: SPARC levels in the column store (1 had them as tantivy impact terms).
FORMAT_VERSION = 2
META_FILE = "sparcdesk-index.json"
IDS_FILE = "sparcdesk-ids.json"
TANTIVY_META = "meta.json"
TEXT_ANALYZER = "sparc_en"
#: A reader re-reads tantivy's commit and the column state for this long while they
#: disagree (another process committing between the two reads; see ``_fresh_view``).
VIEW_RETRY_S = 5.0
#: Sentence-id sets of this many recent filters are kept per commit.
FILTER_CACHE_SIZE = 32

# Stored display fields travel as one JSON blob in a stored-only bytes field: tantivy text
# fields are always indexed, and indexing passages or recipients would only cost space.
_META_KEYS = (
    "doc_key",
    "passage",
    "start",
    "end",
    "position",
    "title",
    "path",
    "kind",
    "date",
    "sender",
    "recipients",
    "subject",
    "mailbox",
    "field",
)


class IndexLockedError(RuntimeError):
    """Another writer (this process or another sparcdesk process) holds the index."""


class IndexFormatError(RuntimeError):
    """The directory is not a sparcdesk sentence index this code can read."""


class IndexVersionError(IndexFormatError):
    """The index was made by another version of sparcdesk, in another index format. An older
    one is rebuilt from the sources (:mod:`engine.upkeep.repair`); a newer one is left as it is."""

    def __init__(self, path: Path, found: int) -> None:
        self.path, self.found = Path(path), found
        self.newer = found > FORMAT_VERSION
        if self.newer:
            what = (
                f"the index {path} was made by a newer sparcdesk (index format {found}; this version"
                f" reads format {FORMAT_VERSION}): run that newer sparcdesk, or, to index afresh with"
                " this one, move the data folder aside and add your folders again"
            )
        else:
            what = (
                f"the index {path} was made by an older sparcdesk (index format {found}; this version"
                f" reads format {FORMAT_VERSION}): run 'sparcdesk index' on your folders ('sparcdesk sources'"
                " lists them) to rebuild it"
            )
        super().__init__(what)


def index_format(path: str | os.PathLike[str]) -> int | None:
    """The index format recorded in the index at ``path`` (None: no readable metadata)."""
    try:
        meta = json.loads((Path(path) / META_FILE).read_text(encoding="utf-8"))
        return int(meta.get("format", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


@dataclass
class SentenceRecord:
    """One sentence and what the app shows or filters on.

    ``start``/``end`` are character offsets of the sentence in its document's text,
    ``position`` its index among the document's sentences, ``passage`` its passage text
    (the encoder's context) or a passage id. ``date`` is seconds since the epoch (UTC) or a
    timezone-aware datetime; a naive datetime is taken as UTC.
    """

    doc_key: str
    text: str
    start: int = 0
    end: int = 0
    position: int = 0
    passage: str = ""
    title: str = ""
    path: str = ""
    kind: str = ""
    date: int | _dt.date | None = None
    sender: str = ""
    recipients: Sequence[str] = ()
    subject: str = ""
    mailbox: str = ""
    sentence_id: int | None = None
    #: For an e-mail header line indexed as a sentence ("From: Ann <ann@x.org>"): which
    #: header it is (``from``, ``to``, ``cc``, ``subject``); empty for text sentences.
    field: str = ""
    #: The passage's character offsets in the document's text. When set, the index stores
    #: them instead of the passage's text (which the catalog holds with the document's):
    #: ~75 bytes a sentence of prose (issue 34); ``passage`` is then not stored.
    passage_start: int | None = None
    passage_end: int | None = None
    #: In the quoted history of a reply (``engine.ingest.mail.quoted_history``): searchable,
    #: ranked below the message's own words (stored only when true).
    quoted: bool = False


@dataclass(frozen=True)
class IndexFilters:
    """Restrictions that never change scores (they only restrict the candidate sentences).
    The search's ``SearchFilters`` (what the user sets) becomes this in one place,
    ``engine.search.answers.to_index_filters``.

    ``folder``: the document's path lies under this folder (whole path components).
    ``kinds``: any of these kinds. ``date_from``/``date_to``: inclusive, seconds since the
    epoch, datetimes or dates (a ``date_to`` date includes the whole day, UTC); sentences
    without a date are excluded by a date filter.
    ``sender`` (any of several)/``mailbox``: exact, case-insensitive. ``doc_keys``: any of these documents;
    ``exclude_keys``: none of these.
    """

    folder: str | None = None
    kinds: Sequence[str] | None = None
    date_from: int | _dt.date | None = None
    date_to: int | _dt.date | None = None
    sender: str | Sequence[str] | None = None
    mailbox: str | None = None
    doc_keys: Sequence[str] | None = None
    exclude_keys: Sequence[str] | None = None

    def is_empty(self) -> bool:
        """True when no restriction is set."""
        return all(v is None for v in asdict(self).values())


@dataclass
class IndexHit:
    """One ranked sentence of the index; ``fields`` holds its stored fields when they were
    loaded. (An answer's sentence, with its passage and highlights, is ``engine.search.answers.Hit``.)"""

    sentence_id: int
    score: float
    fields: dict[str, Any] | None = field(default=None, repr=False)


# ----------------------------------------------------------------------------- helpers


def _epoch(value: int | float | _dt.date | None, end_of_day: bool = False) -> int | None:
    """Seconds since the epoch. Naive datetimes are UTC; a plain date means its first
    second (UTC), or its last one with ``end_of_day`` (so ``date_to`` includes that day)."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp())
    if isinstance(value, _dt.date):
        t = _dt.time(23, 59, 59) if end_of_day else _dt.time(0, 0, 0)
        return int(_dt.datetime.combine(value, t, tzinfo=_dt.timezone.utc).timestamp())
    return int(value)


def normalize_path(path: str) -> str:
    """Forward slashes, no trailing slash: the form folders are indexed and filtered in."""
    p = path.replace("\\", "/")
    p = re.sub(r"/+", "/", p)
    return p.rstrip("/") or "/"


def folder_terms(path: str) -> list[str]:
    """Every ancestor folder of ``path`` (``/a/b/c.txt`` -> ``/a``, ``/a/b``), for prefix filters."""
    p = normalize_path(path)
    parts = p.split("/")
    out: list[str] = []
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i])
        if folder:
            out.append(folder)
        elif i == 1 and p.startswith("/"):
            out.append("/")
    return out


def _text_analyzer() -> tantivy.TextAnalyzer:
    """English BM25 analysis: lowercase, Lucene English stopwords, Snowball stemmer
    (SPARC.md §4 finds stemming and stopwords make BM25 a much stronger baseline)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def build_schema() -> tantivy.Schema:
    """The sentence index schema.

    ``sentence_id`` is a signed i64 that is indexed (tantivy silently deletes nothing by
    term on unsigned fields, and aborts when deleting on a fast-only field) and fast (for
    cheap id lookup of 1,000 hits and the max id).
    """
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("sentence_id", stored=True, indexed=True, fast=True)
    sb.add_text_field("doc_key", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", stored=True, tokenizer_name=TEXT_ANALYZER, index_option="position")
    sb.add_bytes_field("meta", stored=True, indexed=False)
    add_filter_fields(sb)
    return sb.build()


@dataclass
class _View:
    """A searcher, the column view of the same commit and the filter cache built from them.
    ``reload`` swaps the whole view in one assignment, so a search running in another thread
    keeps a consistent pair and never caches one commit's filter under another."""

    searcher: tantivy.Searcher
    columns: ColumnView
    filters: dict[str, list[np.ndarray]] = field(default_factory=dict)


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


def _live_ids(schema: tantivy.Schema, searcher: tantivy.Searcher) -> Callable[[Sequence[int]], set[int]]:
    """Which of some sentence ids the searcher's commit holds (probes of a pending column state)."""

    def live(ids: Sequence[int]) -> set[int]:
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return set()
        q = tantivy.Query.term_set_query(schema, "sentence_id", wanted)
        hits = searcher.search(q, len(wanted), count=False).hits
        return {int(i) for i in searcher.fast_field_values("sentence_id", [a for _, a in hits])}

    return live


def fetch_top(
    searcher: tantivy.Searcher, query: tantivy.Query, top_k: int
) -> tuple[list[tuple[float, Any]], np.ndarray, np.ndarray]:
    """The hits of ``query`` that rank its top ``top_k`` exactly: tantivy's order among tied
    scores is not sentence-id order, so a hit tied with the k-th may have been cut; more are
    fetched until the last one scores below the k-th. Returns the hits, their sentence ids and
    their scores, in tantivy's order (the caller sorts by score desc, sentence id asc)."""
    limit = top_k + 16
    while True:
        hits = searcher.search(query, limit, count=False).hits
        if len(hits) < limit or hits[-1][0] < hits[top_k - 1][0]:
            break
        limit *= 4
    ids = np.asarray(searcher.fast_field_values("sentence_id", [a for _, a in hits]), dtype=np.int64)
    scores = np.fromiter((h[0] for h in hits), dtype=np.float64, count=len(hits))
    return hits, ids, scores


def filter_query(schema: tantivy.Schema, filters: IndexFilters | None) -> tantivy.Query | None:
    """The constant-score (0) query of ``filters`` against ``schema``: any index whose filter
    fields come from :func:`engine.index.docindex.add_filter_fields` (the sentence index, the
    document index, the impact-term layout of ``bench/impact_terms.py``); None when no
    restriction is set."""
    if filters is None or filters.is_empty():
        return None
    s = schema
    must: list[tuple[tantivy.Occur, tantivy.Query]] = []

    def any_of(field_name: str, values: Iterable[str]) -> None:
        vals = list(values)
        if not vals:
            must.append((tantivy.Occur.Must, tantivy.Query.empty_query()))
        elif len(vals) == 1:
            must.append((tantivy.Occur.Must, tantivy.Query.term_query(s, field_name, vals[0])))
        else:
            must.append((tantivy.Occur.Must, tantivy.Query.term_set_query(s, field_name, vals)))

    if filters.folder is not None:
        any_of("folder", [to_store(normalize_path(filters.folder))])
    if filters.kinds is not None:
        any_of("kind", filters.kinds)
    if filters.sender is not None:
        senders = [filters.sender] if isinstance(filters.sender, str) else filters.sender
        any_of("sender", sorted({s.strip().lower() for s in senders}))
    if filters.mailbox is not None:
        any_of("mailbox", [filters.mailbox.strip().lower()])
    if filters.doc_keys is not None:
        any_of("doc_key", [to_store(k) for k in filters.doc_keys])
    lo, hi = _epoch(filters.date_from), _epoch(filters.date_to, end_of_day=True)
    if lo is not None or hi is not None:
        must.append(
            (
                tantivy.Occur.Must,
                tantivy.Query.range_query(s, "date", tantivy.FieldType.Integer, lo, hi),
            )
        )
    if filters.exclude_keys:
        keys = [to_store(k) for k in filters.exclude_keys]
        must.append((tantivy.Occur.MustNot, tantivy.Query.term_set_query(s, "doc_key", keys)))
        if not any(o == tantivy.Occur.Must for o, _ in must):
            must.append((tantivy.Occur.Must, tantivy.Query.all_query()))
    return tantivy.Query.const_score_query(tantivy.Query.boolean_query(must), 0.0)


def _load(searcher: tantivy.Searcher, addr: Any) -> dict[str, Any]:
    """Stored fields of one hit as a flat dict (display fields, ``text``, ``sentence_id``)."""
    doc = searcher.doc(addr)
    fields: dict[str, Any] = json.loads(bytes(doc.get_first("meta")).decode("utf-8", "surrogatepass"))
    fields["sentence_id"] = int(doc.get_first("sentence_id"))
    fields["text"] = doc.get_first("text")
    return fields


# ----------------------------------------------------------------------------- the index


class SentenceIndex:
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
            writer.add_document(self._document(int(sid), rec))
            levels = self.quantizer.levels(vec.weights)
            self._columns.add(int(sid), rec.doc_key, vec.ids, levels)
            out.append(int(sid))
        if out:
            self._pending = True
        return out

    def _document(self, sid: int, rec: SentenceRecord) -> tantivy.Document:
        doc = tantivy.Document()
        doc.add_integer("sentence_id", sid)
        doc.add_text("doc_key", to_store(rec.doc_key))
        doc.add_text("text", rec.text)
        date = _epoch(rec.date)
        meta = {k: getattr(rec, k) for k in _META_KEYS}
        meta["date"] = date
        if rec.quoted:
            meta["quoted"] = True
        if rec.passage_start is not None and rec.passage_end is not None and not rec.field:
            del meta["passage"]  # the reader slices it from the document's text
            meta["passage_start"], meta["passage_end"] = rec.passage_start, rec.passage_end
        meta["recipients"] = list(rec.recipients)
        # surrogatepass: file names that are not valid UTF-8 (lone surrogates) round-trip.
        meta_json = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
        doc.add_bytes("meta", meta_json.encode("utf-8", "surrogatepass"))
        if rec.path:
            for f in folder_terms(rec.path):
                doc.add_text("folder", to_store(f))
        if rec.kind:
            doc.add_text("kind", rec.kind)
        if date is not None:
            doc.add_integer("date", date)
        if rec.sender:
            doc.add_text("sender", rec.sender.strip().lower())
        if rec.mailbox:
            doc.add_text("mailbox", rec.mailbox.strip().lower())
        return doc

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

    @property
    def num_sentences(self) -> int:
        """Live (not deleted) sentences in the current searcher."""
        return int(self._view.searcher.num_docs)

    @property
    def num_segments(self) -> int:
        """tantivy segments in the current searcher (each adds per-clause lookup cost)."""
        return int(self._view.searcher.num_segments)

    def max_sentence_id(self) -> int:
        """Largest live sentence id, -1 when empty."""
        res = self._view.searcher.search(
            tantivy.Query.all_query(), 1, count=False, order_by_field="sentence_id", order=tantivy.Order.Desc
        )
        return int(res.hits[0][0]) if res.hits else -1

    def doc_freq(self, token: int) -> int:
        """Live sentences whose vector contains ``token``."""
        return self._view.columns.doc_freq(int(token))

    def idf(self, tokens: Iterable[int]) -> dict[int, float]:
        """CAI IDF ``log(N / N_t)`` of ``tokens`` over the live sentences."""
        n = self.num_sentences
        return {int(t): idf_weight(self.doc_freq(int(t)), n) for t in tokens}

    def query_weights(
        self, query_ids: Iterable[int], idf: Mapping[int, float] | bool | None = None
    ) -> QueryWeights:
        """Integer question weights; ``idf=True`` computes IDF from this index."""
        ids = list(query_ids)
        if idf is True:
            idf = self.idf(ids)
        elif idf is False:
            idf = None
        return query_weights(ids, self.quantizer.scale, idf, self.quantizer.max_level)

    def max_score(
        self, query_ids: Iterable[int], idf: Mapping[int, float] | bool | None = None, tokens: int | None = None
    ) -> float:
        """The highest score the question could reach: every token at the top level (only its
        ``tokens`` weightiest ones, when given: a sentence cannot hold a long query's every word)."""
        qw = self.query_weights(query_ids, idf)
        if not len(qw):
            return 0.0
        weights = np.sort(qw.multipliers)[::-1]
        total = float(weights[:tokens].sum() if tokens else weights.sum())
        return float(qw.scores(total * self.quantizer.max_level))

    def _filter_query(
        self, filters: IndexFilters | None, schema: tantivy.Schema | None = None
    ) -> tantivy.Query | None:
        """The constant-score query of ``filters`` against ``schema`` (the sentence schema,
        or the document index's, whose filter fields have the same names)."""
        return filter_query(schema or self._schema, filters)

    @staticmethod
    def _ranked(searcher: tantivy.Searcher, query: tantivy.Query, top_k: int) -> list[tuple[int, float, Any]]:
        """Top-k (sentence_id, raw score, address) by score desc, id asc, ties at the cut exact."""
        hits, ids, scores = fetch_top(searcher, query, top_k)
        order = np.lexsort((ids, -scores))[:top_k].tolist()
        return [(int(ids[i]), float(scores[i]), hits[i][1]) for i in order]

    @staticmethod
    def _with_fields(
        searcher: tantivy.Searcher, rows: list[tuple[int, float, Any]], load: int
    ) -> list[IndexHit]:
        return [
            IndexHit(sid, sc, _load(searcher, addr) if i < load else None)
            for i, (sid, sc, addr) in enumerate(rows)
        ]

    def search(
        self,
        query_ids: Iterable[int],
        top_k: int = 1000,
        idf: Mapping[int, float] | bool | None = None,
        filters: IndexFilters | None = None,
        load_fields: int = 0,
    ) -> list[IndexHit]:
        """Exact SPARC top-k for a bag of question token ids.

        ``score = scale * sum_t count_t * level(t, s)`` (times the rounded IDF of t when
        ``idf`` is a mapping, or ``True`` for this index's IDF). Stored fields are loaded for
        the first ``load_fields`` hits only: reading 1,000 stored documents would cost more
        than the search itself.
        """
        if top_k <= 0:
            return []
        view = self._view  # one searcher and column state for the whole call
        qw = self.query_weights(query_ids, idf)
        allowed = self._allowed(view, filters)
        sids, raw = view.columns.top_k(qw.tokens.tolist(), qw.multipliers.tolist(), top_k, allowed)
        # One float64 multiply per hit, as the oracle's (QueryWeights.scores), vectorised.
        scores = np.asarray(qw.scores(raw.astype(np.float64)), dtype=np.float64)
        hits = [IndexHit(i, s) for i, s in zip(sids.tolist(), scores.tolist(), strict=True)]
        if load_fields > 0 and hits:
            self.load_fields(hits[:load_fields])
        return hits

    def _allowed(self, view: _View, filters: IndexFilters | None) -> list[np.ndarray] | None:
        """Per column segment, the rows a filter lets through (tantivy finds the sentence
        ids once per filter and commit)."""
        fq = self._filter_query(filters)
        if fq is None:
            return None
        key = repr(filters)
        hit = view.filters.get(key)
        if hit is None:
            searcher = view.searcher
            n = int(searcher.search(fq, 1, count=True).count or 0)
            ids = np.zeros(0, np.int64)
            if n:
                addrs = [a for _, a in searcher.search(fq, n, count=False).hits]
                ids = np.sort(np.asarray(searcher.fast_field_values("sentence_id", addrs), dtype=np.int64))
            hit = view.columns.allowed_rows(ids)
            if len(view.filters) >= FILTER_CACHE_SIZE:
                view.filters.pop(next(iter(view.filters)))
            view.filters[key] = hit
        return hit

    def bm25(
        self, text: str, top_k: int = 1000, filters: IndexFilters | None = None, load_fields: int = 0
    ) -> list[IndexHit]:
        """BM25 over sentence text (stemmed, English stopwords removed); same tie rule."""
        if top_k <= 0:
            return []
        terms = list(dict.fromkeys(self._analyzer.analyze(text)))
        if not terms:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t)) for t in terms]
        )
        fq = self._filter_query(filters)
        if fq is not None:
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, fq), (tantivy.Occur.Must, query)])
        searcher = self._view.searcher
        rows = self._ranked(searcher, query, top_k)
        return self._with_fields(searcher, rows, load_fields)

    def absent_words(self, words: Sequence[str]) -> list[str]:
        """The ``words`` no indexed sentence holds (each analysed as the text is: stemmed, in
        lower case; a stopword, which the analyser drops, is never absent). Any sentence
        counts: a header line, a file name, a reply's quoted history."""
        searcher = self._view.searcher
        out: list[str] = []
        for word in words:
            terms = [t for t in self._analyzer.analyze(word) if t]
            if terms and all(int(searcher.doc_freq("text", t)) == 0 for t in terms):
                out.append(word)
        return out

    def bm25_documents(
        self, text: str, top_k: int = 100, filters: IndexFilters | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over whole documents with their header lines: ``(doc_key, score)``, best
        first; empty when this generation has no document index."""
        docs = self._docs
        if docs is None:
            return []
        return docs.bm25(text, top_k, self._filter_query(filters, docs.schema))

    def matching_documents(
        self,
        required: Sequence[Sequence[tuple[str, str]]],
        excluded: Sequence[tuple[str, str]],
        filters: IndexFilters | None = None,
    ) -> list[str] | None:
        """Documents that hold every required phrase or field value (any of each group) and
        none of the excluded ones (the query syntax, :mod:`engine.search.query`); None when this
        generation has no document index to tell."""
        docs = self._docs
        if docs is None:
            return None
        return docs.matching(required, excluded, self._filter_query(filters, docs.schema))

    def coverage(self, text: str, doc_key: str) -> tuple[float, int]:
        """IDF-weighted share of the question's terms that ``doc_key`` holds (see
        :meth:`engine.index.docindex.DocumentIndex.coverage`); ``(0.0, 0)`` without a document index."""
        return self._docs.coverage(text, doc_key) if self._docs is not None else (0.0, 0)

    def load_fields(self, hits: Iterable[IndexHit]) -> list[IndexHit]:
        """Fill ``fields`` of hits that lack them (by sentence id); returns the same hits."""
        hits = list(hits)
        missing = [h.sentence_id for h in hits if h.fields is None]
        if missing:
            found = self.get(missing)
            for h in hits:
                if h.fields is None:
                    h.fields = found.get(h.sentence_id)
        return hits

    def get(self, sentence_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Stored fields of live sentences by id (missing ids are absent from the result)."""
        ids = sorted({int(i) for i in sentence_ids})
        if not ids:
            return {}
        q = tantivy.Query.term_set_query(self._schema, "sentence_id", ids)
        searcher = self._view.searcher
        hits = searcher.search(q, len(ids), count=False).hits
        out: dict[int, dict[str, Any]] = {}
        for _, addr in hits:
            f = _load(searcher, addr)
            out[int(f["sentence_id"])] = f
        return out

    def document_sentence_ids(self, doc_key: str) -> list[int]:
        """Ids of the live sentences of a document, ascending."""
        q = tantivy.Query.term_query(self._schema, "doc_key", to_store(doc_key))
        searcher = self._view.searcher
        n = int(searcher.search(q, 1, count=True).count or 0)
        if n == 0:
            return []
        hits = searcher.search(q, n, count=False).hits
        return sorted(int(i) for i in searcher.fast_field_values("sentence_id", [a for _, a in hits]))

    def doc_keys(self) -> set[str]:
        """Keys of every document with a live sentence (a full scan: for rare maintenance,
        such as restoring a previous generation)."""
        searcher = self._view.searcher
        n = int(searcher.num_docs)
        if n == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), n, count=False).hits
        return {from_store(str(searcher.doc(a).get_first("doc_key"))) for _, a in hits}
