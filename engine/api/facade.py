"""The engine facade the desktop app and the CLI code against.

One :class:`Engine` per sparcdesk home (``$SPARCDESK_HOME`` or the platform's user-data
folder, see :mod:`engine.home.paths`). It is safe to call :meth:`Engine.ask` from the GUI thread
while :meth:`Engine.index` runs in a worker thread (or in another process): the index is
read through its own searcher, which sees the last commit, and the catalog is SQLite in
WAL mode with one connection per thread. Writes (index, remove, watch batches) are
serialised inside a process by a lock and across processes by the index's writer lock:
a second writing process gets :class:`engine.index.sentences.IndexLockedError` with a readable
message.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from email.utils import parseaddr
from pathlib import Path

from engine.catalog.store import Catalog, Source, now_iso
from engine.catalog.texts import TextStore
from engine.common.progress import AdaptProgress, Cancelled, Progress, RunProgress
from engine.home import crashpoints, diskspace
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
from engine.ingest.walk import source_kind, under, unit_for
from engine.model import store as model_store
from engine.model.bundle import Bundle, BundleError, ModelIdentity
from engine.model.encoder import SparseEncoder, default_bundle_dir
from engine.search.answers import Answer, Answers, Hit, QueryEncoder, SearchFilters
from engine.search.answers import ask as _ask
from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF
from engine.search.settings import DEFAULT as DEFAULT_SETTINGS
from engine.search.settings import SearchSettings
from engine.upkeep import repair, writelock

log = logging.getLogger(__name__)

#: The crash points of ``remove`` (engine.home.crashpoints): after the catalog forgot the
#: source and journalled its documents, and after the index deleted them.
REMOVE_JOURNALED = "remove:journaled"
REMOVE_INDEXED = "remove:indexed"

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
]


@dataclass
class SourceInfo:
    """A source as the app lists it: ``kind`` is ``folder`` or ``mailstore``; ``files``,
    ``sentences`` and ``errors`` count the catalog's files of the source."""

    path: str
    kind: str
    files: int
    sentences: int
    errors: int
    last_indexed: str | None
    exclude: list[str] = field(default_factory=list)


@dataclass
class FileError:
    """A file (or a message or attachment inside one) with something to say, the reason and
    when it was seen. ``kind``, the one definition every view counts by: ``unreadable`` (it
    could not be read: status error, found by its name at most), ``skipped`` (a format that is
    not read, or a link to a special file: not a failure) or ``note`` (read and indexed, with
    a remark: a fallback encoding, parts that failed, a line cut short). ``skipped`` is
    ``kind == "skipped"``, kept for the JSON's readers."""

    path: str
    reason: str
    when: str
    skipped: bool = False
    kind: str = "unreadable"


@dataclass
class SenderInfo:
    """A sender of indexed e-mail: ``address`` (lower case), ``name`` (the display name it
    sends under most, '' when none) and how many ``messages`` it sent."""

    address: str
    name: str
    messages: int

    @property
    def label(self) -> str:
        """How the sender is shown and typed: 'Ann Lee <ann@x.org>', or the address alone."""
        return f"{self.name} <{self.address}>" if self.name else self.address


@dataclass
class MailboxInfo:
    """A mailbox of indexed e-mail. ``name`` is what each message carries (a Maildir
    folder's or mbox file's name, an e-mail file's folder name), ``path`` the Maildir folder,
    mbox file or folder of e-mail files, ``kind`` ``maildir``, ``mbox`` or ``folder``;
    ``label`` the name with as many of its parent folders as tell it from other mailboxes
    of the same name ('all_documents (wolfe-j)'): what the app lists, and what
    ``SearchFilters.mailbox`` takes to mean this mailbox alone."""

    name: str
    path: str
    kind: str
    label: str
    messages: int


def mailbox_labels(boxes: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Labels of (name, path) mailboxes: the name when no other mailbox has it, else the name
    with the shortest tail of the path's parent folders that sets each apart."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for box in boxes:
        by_name.setdefault(box[0].lower(), []).append(box)
    labels: dict[tuple[str, str], str] = {}
    for same in by_name.values():
        if len(same) == 1:
            labels[same[0]] = same[0][0]
            continue
        parents = [Path(path).parent.parts for _, path in same]

        def tail(parts: tuple[str, ...], depth: int) -> str:
            return str(Path(*parts[-depth:])) if parts else ""

        for i, box in enumerate(same):
            mine = parents[i]
            for depth in range(1, len(mine) + 1):
                if all(tail(p, depth) != tail(mine, depth) for j, p in enumerate(parents) if j != i):
                    labels[box] = f"{box[0]} ({tail(mine, depth)})"
                    break
            else:  # same parent folder (a Maildir "x" and ".x"): the whole path
                labels[box] = f"{box[0]} ({box[1]})"
    return labels


def bundle_problem(bundle: Path) -> str | None:
    """Why a model bundle cannot be used (config, tokenizer or graph missing or unreadable), or None."""
    try:
        Bundle.open(bundle).tokenizer()
    except BundleError as exc:
        return exc.reason
    except FileNotFoundError as exc:
        return f"{Path(exc.filename or '?').name} is missing"
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return None


class Engine:
    """Indexing, search, sources and watching for one sparcdesk home."""

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
        #: What was found damaged in the data folder and repaired when this engine opened
        #: (one line each, see engine.upkeep.repair); the command line prints them.
        self.repairs: list[str] = repair.repair(self.layout)
        # An explicit bundle wins; else the one this home selected (an adapted model);
        # else $SPARCDESK_MODEL or the shipped one.
        self.bundle_dir = (
            Path(bundle_dir)
            if bundle_dir
            else model_store.selected_bundle(self.layout.home) or default_bundle_dir()
        )
        problem = bundle_problem(self.bundle_dir)
        if problem and bundle_dir is None and self.bundle_dir != default_bundle_dir():
            # This home's own (adapted) model is damaged: back to the shipped one, which
            # rebuilds the index with it (a new generation; the current one answers meanwhile).
            self.repairs.append(
                f"the model {self.bundle_dir} is damaged ({problem}): using the shipped model; the next"
                " indexing run re-encodes the index with it"
            )
            model_store.select(self.layout.home, default_bundle_dir())
            self.bundle_dir = default_bundle_dir()
            problem = bundle_problem(self.bundle_dir)
        if problem:
            raise FileNotFoundError(
                f"the model bundle at {self.bundle_dir} is damaged ({problem}): reinstall sparcdesk, or point"
                " SPARCDESK_MODEL at a good bundle"
            )
        self._explicit_bundle = bundle_dir is not None
        self.threads = threads
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
        for gen in self._cat().generations():
            fmt = index_format(gen.index_dir) if gen.status != "retired" else None
            if fmt is not None and fmt > FORMAT_VERSION:  # an older one was rebuilt by repair
                self.close()
                raise IndexVersionError(Path(gen.index_dir), fmt)
        try:
            if not self._cat().read_only:
                repair.save_sources(self.layout, self._cat().sources())
        except Exception:  # the copy is for rebuilding a lost catalog: opening goes on without it
            log.warning("could not save the source list beside the catalog in %s", self.layout.home, exc_info=True)
        try:
            self._finish_restore()
        except IndexLockedError as exc:  # another process is writing: this engine's next run finishes it
            log.info("an unfinished model restore in %s waits for the next run: %s", self.layout.home, exc)
        try:
            self._finish_removals()
        except IndexLockedError as exc:  # likewise
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

    def _use_bundle(self, bundle: Path) -> None:
        """Index with ``bundle`` from now on (encoder and identity are rebuilt lazily)."""
        with self._encoder_lock:
            self.bundle_dir = Path(bundle)
            self._encoder = None
            self._model = None

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

    @staticmethod
    def _abs(path: Path | str) -> Path:
        return Path(os.path.abspath(Path(path).expanduser()))

    def _find_source(self, path: Path) -> Source | None:
        """The source that is ``path`` or contains it (the deepest one)."""
        best: Source | None = None
        for s in self._cat().sources():
            if under(str(path), s.path) and (best is None or len(s.path) > len(best.path)):
                best = s
        return best

    def _info(self, s: Source, counts: dict[str, int] | None = None) -> SourceInfo:
        c = counts if counts is not None else self._cat().counts(s.id)
        return SourceInfo(
            s.path,
            s.kind,
            c["files"],
            c["sentences"],
            self._cat().count_unreadable(SKIPPED_PREFIX, s.id),
            s.last_indexed,
            list(s.exclude),
        )

    # ---- sources

    def add_source(self, path: Path, exclude: Sequence[str] = ()) -> SourceInfo:
        """Register a folder or mail store (mbox file, Maildir folder, .eml) for indexing.

        A path inside an existing source is already covered: that source is returned (with
        ``exclude`` added to it when given). A folder that contains existing sources takes
        them over, with their files, so nothing is re-encoded.
        """
        p = self._abs(path)
        if not os.path.exists(p):
            raise FileNotFoundError(f"no such file or folder: {p}")
        with self._writing("adding a source"):
            info = self._add_source(p, exclude)
            repair.save_sources(self.layout, self._cat().sources())
        if self._watcher is not None:
            self._watcher.refresh()  # a running watch covers the new source at once
        return info

    def _add_source(self, p: Path, exclude: Sequence[str]) -> SourceInfo:
        cat = self._cat()
        outer = self._find_source(p)
        if outer is not None and outer.path != str(p):
            if exclude:
                cat.add_source(outer.path, outer.kind, list(dict.fromkeys([*outer.exclude, *exclude])))
                outer = cat.get_source(outer.id) or outer
            return self._info(outer)
        sid = cat.add_source(str(p), source_kind(p), list(exclude))
        inner = [s for s in cat.sources() if s.id != sid and under(s.path, str(p))]
        if inner:
            with cat.transaction():
                for s in inner:
                    cat.merge_source(s.id, sid)
        src = cat.get_source(sid)
        assert src is not None
        return self._info(src)

    def remove_source(self, path: Path) -> None:
        """Forget a source and delete its documents from the index (all live generations)."""
        p = self._abs(path)
        cat = self._cat()
        src = next((s for s in cat.sources() if s.path == str(p)), None)
        if src is None:
            raise KeyError(f"not a source: {p}")
        with self._writing("removing a source"), self._write_lock:
            store = TextStore(cat)
            units = [f.path for f in cat.files(src.id)]
            rows: list[tuple[str, str]] = []
            for unit in units:
                rows += [(unit, d.key) for d in cat.documents(unit)]
                rows += [(unit, k) for k in store.journal(unit)]
            # Catalog first, with a journal row for every document the index still holds
            # ("may be in the index without the catalog knowing", engine.indexer.commit);
            # then the index; then the journal is cleared. A crash after the first step
            # leaves journal rows of units under no source, which the next open or run
            # deletes from the index (_finish_removals): the catalog never claims documents
            # the index lost, and no sentence stays that the catalog cannot find.
            with cat.transaction():
                cat.remove_source(src.id)
                for unit in units:
                    store.forget_unit(unit)
                store.journal_keys(rows)
            crashpoints.reached(REMOVE_JOURNALED)
            self._delete_from_indexes({k for _, k in rows})
            crashpoints.reached(REMOVE_INDEXED)
            with cat.transaction():
                for unit in units:
                    store.clear_journal(unit)
            repair.save_sources(self.layout, cat.sources())
            self._invalidate_reader()
        if self._watcher is not None:
            self._watcher.refresh()

    def _delete_from_indexes(self, keys: set[str]) -> None:
        """Delete ``keys`` from the index of every generation that answers or is building,
        one commit each."""
        if not keys:
            return
        for gen in self._cat().generations():
            if gen.status == "retired" or not (Path(gen.index_dir) / "meta.json").exists():
                continue
            ix = SentenceIndex.open(gen.index_dir, writable=True)
            try:
                for key in keys:
                    ix.delete_document(key)
                ix.commit()
            finally:
                ix.close()

    def _finish_removals(self) -> int:
        """Finish a ``remove`` a crash interrupted: journal rows of units under no source name
        documents the index may still hold (``remove_source``); they are deleted from every
        live index and the rows cleared. Returns the number of documents; 0 when none."""
        cat = self._cat()
        if cat.read_only:
            return 0
        store = TextStore(cat)

        def orphans() -> dict[str, set[str]]:
            roots = [s.path for s in cat.sources()]
            return {u: store.journal(u) for u in store.journal_units() if not any(under(u, r) for r in roots)}

        if not orphans():
            return 0
        with self._writing("finishing an interrupted removal"), self._write_lock:
            left = orphans()  # read again under the lock: another process may have finished it
            keys = {k for ks in left.values() for k in ks}
            self._delete_from_indexes(keys)
            with cat.transaction():
                for unit in left:
                    store.clear_journal(unit)
            self._invalidate_reader()
        log.info("finished an interrupted removal: %d documents deleted from the index", len(keys))
        return len(keys)

    def sources(self) -> list[SourceInfo]:
        cat = self._cat()
        return [self._info(s) for s in cat.sources()]

    # ---- indexing

    def _indexer(
        self,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
        catalog: Catalog | None = None,
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
        )

    def _follow_model_choice(self) -> None:
        """Pick up a model another process selected (an adaptation or restore run by the app's
        child process or the CLI), so this engine never indexes with a stale bundle."""
        if self._explicit_bundle:
            return
        chosen = model_store.selected_bundle(self.layout.home)
        if chosen is not None and chosen != self.bundle_dir:
            self._use_bundle(chosen)

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

    # ---- models: adaptation, switch, restore

    def _note_switch(self, cat: Catalog, before: object) -> None:
        """After a run: if it switched generations, remember the retired one for restore."""
        after = cat.active_generation()
        if before is None or after is None or before.id == after.id:  # type: ignore[attr-defined]
            return
        old_bundle = str(self.bundle_dir)
        try:
            ix = SentenceIndex.open(before.index_dir)  # type: ignore[attr-defined]
            try:
                old_bundle = str((ix.model or {}).get("bundle") or old_bundle)
            finally:
                ix.close()
        except Exception:
            log.warning(
                "cannot read which bundle the retired index %s was encoded with; restore will use %s",
                before.index_dir,  # type: ignore[attr-defined]
                old_bundle,
                exc_info=True,
            )
        model_store.select(
            self.layout.home,
            self.bundle_dir,
            previous={"bundle": old_bundle, "generation": before.id, "retired_at": now_iso()},  # type: ignore[attr-defined]
        )
        model_store.prune_models(self.layout.home)
        self._invalidate_reader()

    def corpus_sentences(self, limit: int = 200_000) -> list[str]:
        """The sentences of every indexed document, in document order (what adaptation
        trains on), cut exactly as the indexer cuts them; at most ``limit``, taken evenly
        across documents when there are more."""
        from engine.ingest.segment import passages_of

        store = TextStore(self._cat())
        out: list[str] = []
        for key, kind in store.keys_and_kinds():
            text = store.text(key) or ""
            for passage in passages_of(text, kind):
                out.extend(span.text for span in passage)
        if len(out) > limit:
            step = len(out) / limit
            out = [out[int(i * step)] for i in range(limit)]
        return out

    def adapt(
        self,
        steps: int = 500,
        mlm: str | None = None,
        vocab_expansion: bool = False,
        on_adapt: Callable[[AdaptProgress], None] | None = None,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        reencode: bool = True,
        pause: threading.Event | None = None,
    ) -> Path:
        """Adapt the model to the indexed documents (:mod:`engine.model.adapt`), select the new
        bundle and re-encode every source into a new generation, which goes live when
        complete; the current one answers until then. Cancelling keeps what was done: the
        next call resumes (training from its checkpoint, re-encoding from its last commit).
        Returns the adapted bundle's folder."""
        log.info("adaptation started: %d steps on the indexed text of %s", steps, self.layout.home)
        with self._writing("adapting the model"):
            try:
                out = self._adapt(steps, mlm, vocab_expansion, on_adapt, progress, cancel, reencode, pause)
            except Cancelled:
                log.info("adaptation cancelled (the next one resumes where it stopped)")
                raise
            except Exception as exc:
                log.warning("adaptation failed: %s: %s", type(exc).__name__, exc)
                raise
        log.info(
            "adaptation %s: %s", "cancelled" if cancel is not None and cancel.is_set() else "finished", out
        )
        return out

    def _adapt(
        self,
        steps: int,
        mlm: str | None,
        vocab_expansion: bool,
        on_adapt: Callable[[AdaptProgress], None] | None,
        progress: Callable[[Progress], None] | None,
        cancel: threading.Event | None,
        reencode: bool,
        pause: threading.Event | None = None,
    ) -> Path:
        from engine.model.adapt import DEFAULT_MLM, adapt_bundle

        self._follow_model_choice()
        home = self.layout.home
        current = self.bundle_dir
        cfg = model_store.original_bundle(current)
        pending = self._cat().active_generation()
        resuming = (
            current != cfg
            and pending is not None
            and (pending.model_name, pending.model_version) != (self.model.name, self.model.version)
        )
        if not resuming:
            sentences = self.corpus_sentences()
            if not sentences:
                raise ValueError("nothing to adapt to: index some documents first")
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            out = model_store.models_dir(home) / f"{cfg.name}-adapted-{stamp}"
            try:
                adapt_bundle(
                    cfg,
                    sentences,
                    out,
                    steps=steps,
                    mlm=mlm or DEFAULT_MLM,
                    vocab_expansion=vocab_expansion,
                    threads=self.threads,
                    progress=on_adapt,
                    should_stop=cancel.is_set if cancel is not None else None,
                    state_dir=model_store.adapt_state_dir(home),
                    paused=pause.is_set if pause is not None else None,
                )
            except Cancelled:
                shutil.rmtree(out, ignore_errors=True)
                raise
            model_store.select(home, out)
            self._use_bundle(out)
        if reencode:
            self.index(None, progress=progress, cancel=cancel, pause=pause)
        return self.bundle_dir

    def restore_model(self, progress: Callable[[Progress], None] | None = None) -> dict:
        """Make the previous model and its generation live again (the one the last switch
        retired), then bring it up to date with what changed since. Returns what was done."""
        with self._writing("restoring the previous model"):
            done = self._restore_model(progress)
        log.info("restored the previous model: %s", done)
        return done

    def _restore_model(self, progress: Callable[[Progress], None] | None) -> dict:
        home = self.layout.home
        self._finish_restore()  # one interrupted earlier: finish it first
        self._follow_model_choice()
        prev = model_store.load(home).get("previous") or {}
        cat = self._cat()
        gen = cat.get_generation(int(prev["generation"])) if prev.get("generation") is not None else None
        if gen is None or gen.status != "retired" or not (Path(gen.index_dir) / "meta.json").exists():
            raise LookupError("no previous model to restore (nothing was switched, or its index is gone)")
        bundle = Path(prev["bundle"])
        if not (bundle / "config.json").is_file():
            raise LookupError(f"the previous model's bundle is gone: {bundle}")
        current = cat.active_generation()
        # The plan first: the steps below write three stores, and whichever one a crash
        # interrupts, the next engine to open this home redoes them all (_finish_restore).
        plan = {
            "generation": gen.id,
            "bundle": str(bundle),
            "retired_at": prev.get("retired_at") or "",
            "from_generation": None if current is None else current.id,
            "from_bundle": str(self.bundle_dir),
            "from_retired_at": now_iso(),
        }
        model_store.begin_restore(home, plan)
        crashpoints.reached("restore:journaled")
        removed = self._apply_restore(plan)
        p = self.index(None, progress=progress)
        return {
            "generation": gen.id,
            "bundle": str(bundle),
            "removed_documents": removed,
            "reindexed_files": p.files_done,
            "progress": p,
        }

    def _apply_restore(self, plan: dict) -> int:
        """Carry out a restore's plan; every step can be redone after a crash. Returns how
        many documents deleted since the switch were dropped from the restored index."""
        cat = self._cat()
        gen = cat.get_generation(int(plan["generation"]))
        assert gen is not None
        bundle = Path(plan["bundle"])
        with self._write_lock:
            live_keys = TextStore(cat).keys()
            ix = SentenceIndex.open(gen.index_dir, writable=True)
            try:
                stale = ix.doc_keys() - live_keys  # documents deleted since it was retired
                for key in stale:
                    ix.delete_document(key)
                ix.commit()
            finally:
                ix.close()
            crashpoints.reached("restore:stale-deleted")
            with cat.transaction():
                cat.activate_generation(gen.id)
                if plan.get("from_generation") is not None:
                    # Files indexed before the switch are in the restored index as they are;
                    # the rest are re-indexed by the next run.
                    cat.move_files_to_generation(gen.id, plan["from_generation"], plan.get("retired_at") or "")
            crashpoints.reached("restore:activated")
            model_store.end_restore(
                self.layout.home,
                bundle,
                previous=None
                if plan.get("from_generation") is None
                else {
                    "bundle": plan["from_bundle"],
                    "generation": plan["from_generation"],
                    "retired_at": plan["from_retired_at"],
                },
            )
            crashpoints.reached("restore:selected")
            if not self._explicit_bundle:
                self._use_bundle(bundle)
            self._invalidate_reader()
        return len(stale)

    def _finish_restore(self) -> str | None:
        """Finish a restore a crash interrupted (see :mod:`engine.model.store`), under the
        writer lock; returns what was done, one line, or None when there was nothing to do."""
        home = self.layout.home
        if model_store.pending_restore(home) is None:
            return None
        with self._writing("finishing an interrupted restore"):
            plan = model_store.pending_restore(home)  # read again: another process may have
            if plan is None:  # finished it meanwhile
                return None
            gen = self._cat().get_generation(int(plan["generation"]))
            active = self._cat().active_generation()
            usable = (
                gen is not None
                and (Path(gen.index_dir) / "meta.json").exists()
                and (gen.status == "retired" or (active is not None and active.id == gen.id))
                and (Path(plan["bundle"]) / "config.json").is_file()
            )
            if not usable:
                data = model_store.load(home)
                data.pop("restoring", None)
                model_store.save(home, data)
                note = (
                    f"an interrupted restore of {plan['bundle']} (generation {plan['generation']}) could"
                    " not be finished: its index or bundle is gone; the current model stays"
                )
            else:
                self._apply_restore(plan)
                note = (
                    f"an interrupted restore was finished: {plan['bundle']} (generation"
                    f" {plan['generation']}) is live; the next indexing run brings it up to date"
                )
        log.warning("%s", note)
        self.repairs.append(note)
        return note

    def model_state(self) -> dict:
        """What the app shows about the model: the bundle in use, whether it is adapted, and
        the previous model ``restore_model`` would bring back (None when there is none)."""
        self._follow_model_choice()
        bundle: Bundle | None = None
        try:
            bundle = Bundle.open(self.bundle_dir)
        except BundleError as exc:  # the state shows the folder's name instead
            log.warning("%s", exc)
        prev = model_store.load(self.layout.home).get("previous") or None
        if prev is not None:
            gen = self._cat().get_generation(int(prev.get("generation", -1)))
            if gen is None or gen.status != "retired" or not (Path(gen.index_dir) / "meta.json").exists():
                prev = None
        return {
            "bundle": str(self.bundle_dir),
            "name": bundle.name if bundle else self.bundle_dir.name,
            "adapted": bundle is not None and bundle.adaptation is not None,
            "adaptation": bundle.adaptation if bundle else None,
            "previous": prev,
        }

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
        filters, possible = self._mail_filters(filters)
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

    # ---- e-mail senders and mailboxes

    def senders(self, containing: str = "") -> list[SenderInfo]:
        """Everyone who sent indexed e-mail, most messages first; with ``containing``, those
        whose name or address holds it (case-insensitive): the sender filter's suggestions."""
        needle = containing.strip().lower()
        merged: dict[str, SenderInfo] = {}
        names: dict[str, dict[str, int]] = {}
        for header, n in self._cat().from_headers(needle):
            name, addr = parseaddr(header)
            addr = (addr or header).strip().lower()
            info = merged.setdefault(addr, SenderInfo(addr, "", 0))
            info.messages += n
            name = " ".join(name.split()).strip("'\" ")
            if name and name.lower() != addr:
                names.setdefault(addr, {})
                names[addr][name] = names[addr].get(name, 0) + n
        for addr, counts in names.items():
            merged[addr].name = max(counts, key=lambda k: (counts[k], k))
        return sorted(merged.values(), key=lambda s: (-s.messages, s.address))

    def mailboxes(self) -> list[MailboxInfo]:
        """Every mailbox of indexed e-mail with its message count, by label."""
        counts: dict[tuple[str, str], int] = {}
        kinds: dict[tuple[str, str], str] = {}
        for name, unit, n in self._cat().mailbox_units():
            p = Path(unit)
            if name in (p.name, p.name.lstrip(".")):  # the store is the unit: Maildir or mbox
                box, kind = (name, unit), "maildir" if os.path.isdir(unit) else "mbox"
            else:  # e-mail files: their folder
                box, kind = (name, str(p.parent)), "folder"
            counts[box] = counts.get(box, 0) + n
            kinds[box] = kind
        labels = mailbox_labels(list(counts))
        out = [MailboxInfo(b[0], b[1], kinds[b], labels[b], n) for b, n in counts.items()]
        return sorted(out, key=lambda m: (m.label.lower(), m.path))

    def _mail_filters(self, filters: SearchFilters | None) -> tuple[SearchFilters | None, bool]:
        """The filters with ``sender`` and ``mailbox`` as the index knows them, and False when
        nothing can match. A sender that is not a known address (a name, part of an address)
        becomes the addresses of the catalog's senders holding it; a mailbox label or path
        becomes that mailbox's name, restricted to its folder (within the folder filter)."""
        if filters is None:
            return None, True
        sender: str | tuple[str, ...] | None = filters.sender
        if isinstance(sender, str) and sender.strip():
            text = sender.strip()
            _, addr = parseaddr(text)
            known = self.senders(addr) if "@" in addr else []
            if not any(s.address == addr.lower() for s in known):
                found = tuple(s.address for s in self.senders(text))
                if not found:
                    return filters, False
                sender = found
        mailbox, folder = filters.mailbox, filters.folder
        if mailbox and mailbox.strip():
            wanted = mailbox.strip()
            box = next(
                (m for m in self.mailboxes() if wanted.lower() == m.label.lower() or wanted == m.path), None
            )
            if box is not None and (box.label != box.name or wanted == box.path):
                mailbox = box.name
                where = box.path if box.kind != "mbox" else str(Path(box.path).parent)
                if folder:
                    mine = str(Path(folder).expanduser().absolute())
                    if under(mine, where):
                        where = mine
                    elif not under(where, mine):
                        return filters, False
                folder = where
        return replace(filters, sender=sender, mailbox=mailbox, folder=folder), True

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

    def _ask(self, question, top, filters, idf, hybrid, fusion, settings) -> Answers:  # type: ignore[no-untyped-def]
        with self._read_lock:
            reader = self._get_reader()
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
        """A JSON-able summary: home, model, generation, counts, sources, errors."""
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
