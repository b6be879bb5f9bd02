"""Column store of quantised SPARC levels: exact question scoring beside the tantivy index.

Why not tantivy: a question of 10-15 tokens touches millions of postings at 1M sentences
(the shipped model gives every sentence ~1,000 tokens that nearly every sentence has), and
tantivy's term union costs ~19 ns per posting. Here a question is a few numpy adds per
token and segment (~0.3 ns per sentence for a dense column, ~5 ns per posting for a sparse
one), then one partition for the top-k.

Layout. A *segment* is an immutable directory ``seg-NNNNNNNN/`` written once per commit
(format 2, ``meta.json`` ``{"format": 2, "block_rows": 65536}``). Its ``n`` rows fall in
``B = ceil(n / 65536)`` blocks of 65,536 rows, so that a posting's row fits 16 bits:

* ``sids.npy``   int64 [n]  sentence id of each row, ascending (row order = tie order);
* ``ptr.npy``    int32 [T*B+1] (int64 from 2**31 postings) start of the sparse postings of
  token ``t`` in block ``b`` at ``ptr[t*B + b]``; a token's postings are contiguous
  (``ptr[t*B]`` to ``ptr[(t+1)*B]``), grouped by block. ``T`` = largest token id in the
  segment + 1 (taken from the data: the vocabulary can grow);
* ``rows.npy``   uint16 [P] row within its block (row - 65536*b), ascending within a token;
  ``levels.npy`` uint8 [P]: 3 bytes a posting;
* ``dense_tokens.npy`` int32 [D], ``dense.npy`` uint8 [D, n]: tokens that at least
  ``1/DENSE_FRACTION`` of the rows have are stored as a full column (level 0 = absent),
  which is both smaller (1 byte per row instead of 3 per posting) and ~15x faster to add;
* ``df.npy``     int32 [T] rows having each token (deleted rows included).

Format 1 (segments without ``meta.json``, written before 16-bit rows): ``ptr`` int64
[T+1], ``rows`` int32 absolute rows, ``df`` int64, i.e. one block of any size. It is read
as it is; a merge rewrites its rows into a format-2 segment (:func:`merge_segments`).

Deletions of a segment are a separate immutable file ``del-NNNNNNNN.npy`` (int32 rows,
ascending) named in the manifest; a new deletion writes a new file.

Commit protocol (the tantivy commit is the one atomic step; see
:meth:`ColumnWriter.prepare`): new segment and deletion files are written and fsynced
first, then ``pending.json`` (the next state, with the tantivy opstamp it builds on), then
tantivy commits, then ``manifest.json`` (the state and the tantivy opstamp it matches)
replaces the old one. On open, the state whose opstamp matches tantivy's last commit is
used: the manifest, or the pending state when tantivy committed but the process died before
the manifest was written. The pending state is taken only when tantivy's last commit is
its commit: tantivy's opstamp advances with every operation, so "tantivy moved on" alone
proves nothing, and ``pending.json`` names probes (the last sentence id it adds, a few it
deletes) that the caller checks against tantivy's searcher (:func:`committed_state`).
Files named by neither are orphans of a crash; the writer removes them.

Readers in other processes. A reader pairs tantivy's commit with the column state of the
same opstamp, reading the manifest (or pending state) and memory-mapping its files under a
shared ``flock`` on ``readers.lock``; the writer deletes superseded files (after a commit,
a merge, or on recovery) only under the exclusive lock, taken without waiting: when a reader
holds it, deletion is left to the next commit. So a file a reader is loading is never
deleted under it, and once mapped it stays readable after deletion (POSIX). A reader that
reads tantivy's opstamp just before a commit and the manifest just after sees a mismatch
and reads both again (:meth:`engine.index.sentences.SentenceIndex.reload`); it never waits on the
writer beyond one deletion. Without ``flock`` (Windows) mapped files cannot be deleted
anyway, and the reader's retry covers the instant between reading the manifest and opening.

Scores use the integer arithmetic of :mod:`engine.index.quantize` (int32 sums of
``multiplier * level``, exact below 2**24), so they equal the oracle's bit for bit.

The modules beside this one: :mod:`engine.index.segments` (a segment's files, building,
loading and merging one, :class:`~engine.index.segments.State`) and
:mod:`engine.index.scoring` (top-k over a state's segments,
:class:`~engine.index.scoring.ColumnView`); this module is the store (manifest, pending
state, commit, readers' lock) and re-exports their names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from engine.home.paths import fsync_dir, write_json_atomic
from engine.index.scoring import SAMPLE_STEP, ColumnView, top_rows
from engine.index.segments import (
    BLOCK_BITS,
    BLOCK_ROWS,
    DENSE_FRACTION,
    DENSE_MIN_ROWS,
    FORMAT,
    LONG_POSTINGS,
    META,
    ColumnStoreError,
    Segment,
    State,
    _build_arrays,
    _read_json,
    _save,
    _write_segment,
    merge_segments,
)

try:
    import fcntl
except ImportError:  # Windows: see the module docstring
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "BLOCK_BITS",
    "BLOCK_ROWS",
    "COLUMNS_DIR",
    "DENSE_FRACTION",
    "DENSE_MIN_ROWS",
    "FORMAT",
    "LONG_POSTINGS",
    "MANIFEST",
    "MAX_DELETED_SHARE",
    "MAX_SEGMENTS",
    "MERGE_WIDTH",
    "META",
    "PENDING",
    "PROBES",
    "READERS_LOCK",
    "SAMPLE_STEP",
    "ColumnStore",
    "ColumnStoreError",
    "ColumnView",
    "LiveIds",
    "Segment",
    "State",
    "committed_state",
    "merge_segments",
    "top_rows",
]

COLUMNS_DIR = "columns"
MANIFEST = "manifest.json"
PENDING = "pending.json"
#: Readers hold a shared flock on it while they load a state; deleting files needs it exclusive.
READERS_LOCK = "readers.lock"
#: Deleted sentence ids a pending state names as probes of its commit.
PROBES = 8
#: More segments than this after a commit: the smallest MERGE_WIDTH are merged into one.
MAX_SEGMENTS = 10
MERGE_WIDTH = 10
#: A segment with more than this share of rows deleted is rewritten without them.
MAX_DELETED_SHARE = 0.5


@contextlib.contextmanager
def _readers_lock(root: Path, exclusive: bool) -> Iterator[bool]:
    """Shared (a reader loading a state: waits for a deletion in progress) or exclusive
    without waiting (the writer deleting files); yields whether the lock is held."""
    if fcntl is None:
        yield not exclusive
        return
    try:
        fd = os.open(root / READERS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # e.g. a read-only copy: nobody deletes there
        yield not exclusive
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock



#: ``live(ids)``: the subset of ``ids`` that tantivy's last commit holds.
LiveIds = Callable[[Sequence[int]], set[int]]


def committed_state(root: Path, opstamp: int, live: LiveIds | None = None) -> tuple[State, bool]:
    """The state matching tantivy's last commit ``opstamp``, and whether it is the pending
    one (tantivy committed it, the manifest was not yet rewritten).

    The pending state is taken only when its probes say tantivy's commit is its own: the
    sentence id it adds last is live and the ids it deletes are gone (``live`` asks
    tantivy; a pending state without probes changes no content). Otherwise, or when the
    manifest is of another commit, ``ColumnStoreError`` (a reader reads both again)."""
    manifest = _read_json(root / MANIFEST)
    if manifest is None:
        raise ColumnStoreError(f"no column manifest in {root}")
    state = State.from_dict(manifest)
    if state.opstamp == opstamp:
        return state, False
    pending = _read_json(root / PENDING)
    if pending is not None and int(pending.get("base_opstamp", -1)) == state.opstamp:
        if "probe_adds" not in pending:  # written before probes existed: taken as it was then
            return State.from_dict({**pending, "opstamp": opstamp}), True
        adds = [int(i) for i in pending["probe_adds"]]
        dels = [int(i) for i in pending.get("probe_deletes", [])]
        if (adds or dels) and live is None:
            raise ColumnStoreError(f"pending column state in {root} cannot be matched to tantivy's commit")
        found = live(adds + dels) if live is not None and (adds or dels) else set()
        if all(i in found for i in adds) and not any(i in found for i in dels):
            return State.from_dict({**pending, "opstamp": opstamp}), True
        raise ColumnStoreError(
            f"pending column state in {root} is not tantivy's commit {opstamp} (a writer died before"
            f" committing it); the column store is at opstamp {state.opstamp}"
        )
    raise ColumnStoreError(
        f"column store in {root} is at tantivy opstamp {state.opstamp}, the index at {opstamp}"
    )



class ColumnStore:
    """The column directory of one index: opening a state, writing and merging segments.

    Read-only use: :meth:`view` for tantivy's opstamp. The writer (the process holding
    tantivy's writer lock) buffers adds and deletes, then :meth:`prepare`, tantivy commit,
    :meth:`finish`."""

    def __init__(self, index_dir: Path) -> None:
        self.root = Path(index_dir) / COLUMNS_DIR
        self._sids: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self._tokens: list[np.ndarray] = []
        self._levels: list[np.ndarray] = []
        self._keys: list[str] = []
        self._dead: set[int] = set()  # committed sentence ids deleted since the last commit
        self._dead_pending: set[int] = set()  # positions in the buffer deleted before commit
        self._prepared: State | None = None

    @classmethod
    def create(cls, index_dir: Path, opstamp: int) -> ColumnStore:
        store = cls(index_dir)
        store.root.mkdir(parents=True, exist_ok=True)
        write_json_atomic(store.root / MANIFEST, State(opstamp, (), 0).to_dict())
        return store

    def view(
        self, opstamp: int, previous: ColumnView | None = None, live: LiveIds | None = None
    ) -> ColumnView:
        """The segments of the state that matches tantivy's commit ``opstamp`` (``live``:
        see :func:`committed_state`), loaded under the readers' lock so that no file of it
        is deleted meanwhile."""
        with _readers_lock(self.root, exclusive=False):
            state, _ = committed_state(self.root, opstamp, live)
            if previous is not None and previous.state == state:
                return previous
            return ColumnView(self.root, state, {s.name: s for s in previous.segments} if previous else None)

    # ---- writer side

    def recover(self, opstamp: int, live: LiveIds | None = None) -> None:
        """Writer on open: make the manifest match tantivy's commit and drop crash orphans."""
        state, pending = committed_state(self.root, opstamp, live)
        if pending:
            write_json_atomic(self.root / MANIFEST, state.to_dict())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.root / PENDING)
        self.collect_garbage(state)

    def collect_garbage(self, state: State) -> None:
        """Remove files no state names, unless a reader is loading a state right now (then
        the next commit removes them; see the module docstring). Best effort: a reader on
        Windows may hold one open."""
        keep = {n for n, _ in state.segments} | {d for _, d in state.segments if d}
        keep |= {MANIFEST, READERS_LOCK}
        with _readers_lock(self.root, exclusive=True) as held:
            if not held:
                return
            for p in self.root.iterdir():
                if p.name in keep:
                    continue
                with contextlib.suppress(OSError):
                    if p.is_dir():
                        shutil.rmtree(p)
                    else:
                        p.unlink()

    def add(self, sentence_id: int, doc_key: str, tokens: np.ndarray, levels: np.ndarray) -> None:
        self._sids.append(np.array([sentence_id], np.int64))
        self._lengths.append(np.array([tokens.shape[0]], np.int64))
        self._tokens.append(np.asarray(tokens, np.int32))
        self._levels.append(np.asarray(levels, np.uint8))
        self._keys.append(doc_key)

    def delete_ids(self, sentence_ids: Iterable[int]) -> None:
        """Delete committed and buffered sentences (as tantivy does: what was added so far)."""
        ids = {int(i) for i in sentence_ids}
        self._dead |= ids
        for pos, s in enumerate(self._sids):
            if int(s[0]) in ids:
                self._dead_pending.add(pos)

    def delete_key(self, doc_key: str) -> None:
        """Delete the buffered sentences of a document (committed ones go via :meth:`delete_ids`)."""
        self._dead_pending.update(pos for pos, k in enumerate(self._keys) if k == doc_key)

    def rollback(self) -> None:
        """Forget buffered adds and deletes (tantivy's rollback, or after a commit)."""
        self._sids, self._lengths, self._tokens, self._levels = [], [], [], []
        self._keys = []
        self._dead = set()
        self._dead_pending = set()
        self._prepared = None

    def prepare(self, current: ColumnView) -> None:
        """Write the next state's files and ``pending.json``; call before tantivy commits."""
        state = current.state
        seq = state.next_seq
        segments = list(state.segments)
        probe_deletes: list[int] = []
        if self._dead:
            dead = np.fromiter(self._dead, dtype=np.int64)
            for i, seg in enumerate(current.segments):
                rows = seg.rows_of(dead)
                if rows.size:
                    probe_deletes += np.asarray(seg.sids[rows[:PROBES]]).tolist()
                    name = f"del-{seq:08d}.npy"
                    seq += 1
                    _save(self.root / name, np.union1d(seg.deleted, rows).astype(np.int32))
                    segments[i] = (seg.name, name)
        live = sorted(
            (i for i in range(len(self._keys)) if i not in self._dead_pending),
            key=lambda i: int(self._sids[i][0]),
        )
        if live:
            arrays = _build_arrays(
                np.concatenate([self._sids[i] for i in live]),
                np.concatenate([self._lengths[i] for i in live]),
                np.concatenate([self._tokens[i] for i in live]),
                np.concatenate([self._levels[i] for i in live]),
            )
            name = f"seg-{seq:08d}"
            seq += 1
            _write_segment(self.root, name, arrays)
            segments.append((name, None))
        fsync_dir(self.root)
        nxt = State(state.opstamp, tuple(segments), seq)
        probe_adds = [max(int(self._sids[i][0]) for i in live)] if live else []
        write_json_atomic(
            self.root / PENDING,
            {
                **nxt.to_dict(),
                "base_opstamp": state.opstamp,
                "probe_adds": probe_adds,
                "probe_deletes": probe_deletes[:PROBES],
            },
        )
        self._prepared = nxt

    def finish(self, opstamp: int) -> State:
        """After tantivy committed ``opstamp``: the prepared state becomes the manifest."""
        if self._prepared is None:
            raise ColumnStoreError("finish() without prepare()")
        state = State(opstamp, self._prepared.segments, self._prepared.next_seq)
        write_json_atomic(self.root / MANIFEST, state.to_dict())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.root / PENDING)
        self.rollback()  # empty the buffers
        self.collect_garbage(state)
        return state

    def maybe_merge(self, current: ColumnView) -> State | None:
        """Merge small segments and compact heavily deleted ones; returns the new state.

        Merging changes no content, so the new manifest keeps the same opstamp and is
        consistent with tantivy at every instant of a crash."""
        segs = list(current.segments)
        groups: list[list[Segment]] = [[s] for s in segs if s.n and s.deleted.size > MAX_DELETED_SHARE * s.n]
        rest = [s for s in segs if not any(s is g[0] for g in groups)]
        if len(rest) > MAX_SEGMENTS:
            groups.append(sorted(rest, key=lambda s: s.n)[:MERGE_WIDTH])
        if not groups:
            return None
        state = current.state
        seq = state.next_seq
        replaced: dict[str, tuple[str, str | None] | None] = {}
        for group in groups:
            name = f"seg-{seq:08d}"
            seq += 1
            rows = merge_segments(self.root, name, group)
            for j, s in enumerate(group):
                replaced[s.name] = (name, None) if j == 0 and rows else None
        out: list[tuple[str, str | None]] = []
        for name, deletes in state.segments:
            if name in replaced:
                r = replaced[name]
                if r is not None:
                    out.append(r)
            else:
                out.append((name, deletes))
        new = State(state.opstamp, tuple(out), seq)
        write_json_atomic(self.root / MANIFEST, new.to_dict())
        self.collect_garbage(new)
        return new

