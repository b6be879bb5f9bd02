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
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.common import npy
from engine.home.paths import fsync_dir, write_json_atomic

try:
    import fcntl
except ImportError:  # Windows: see the module docstring
    fcntl = None  # type: ignore[assignment]

COLUMNS_DIR = "columns"
MANIFEST = "manifest.json"
PENDING = "pending.json"
#: Readers hold a shared flock on it while they load a state; deleting files needs it exclusive.
READERS_LOCK = "readers.lock"
#: Deleted sentence ids a pending state names as probes of its commit.
PROBES = 8
#: A token is stored as a dense column when at least 1/DENSE_FRACTION of a segment's rows
#: have it (a sparse posting costs 3 bytes and ~5 ns to add, a dense row 1 byte and ~0.3 ns).
DENSE_FRACTION = 8
#: Segments below this many rows are always sparse (a dense column would be mostly padding).
DENSE_MIN_ROWS = 64
#: More segments than this after a commit: the smallest MERGE_WIDTH are merged into one.
MAX_SEGMENTS = 10
MERGE_WIDTH = 10
#: A segment with more than this share of rows deleted is rewritten without them.
MAX_DELETED_SHARE = 0.5
#: top_rows guesses the k-th score from every SAMPLE_STEP-th positive row.
SAMPLE_STEP = 32
_FILES = ("sids", "ptr", "rows", "levels", "dense_tokens", "dense", "df")
#: Segment layout this version writes (module docstring); it reads formats 1 and 2.
FORMAT = 2
#: A segment file naming its format; format-1 segments have none.
META = "meta.json"
#: Sparse postings store a row as its offset in a block of 2**BLOCK_BITS rows (uint16).
BLOCK_BITS = 16
BLOCK_ROWS = 1 << BLOCK_BITS
#: From this many postings a token's block offsets are added per block after one conversion
#: (measured on a 560k-row, 9-block segment: faster from ~10k postings, slower below).
LONG_POSTINGS = 8192
#: The rows of a token without postings (shared, read-only: no allocation per absent token).
_NO_ROWS = np.zeros(0, np.intp)
_NO_ROWS.flags.writeable = False


class ColumnStoreError(RuntimeError):
    """The column store does not match the tantivy index it belongs to."""


# ----------------------------------------------------------------------------- files


def _save(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def _load(path: Path) -> np.ndarray:
    """Memory-mapped: pages are read on first use and shared with the OS page cache. As a
    plain ndarray view of the map: every slice of an ``np.memmap`` builds another memmap
    object (~2 us), and a question slices each of its tokens' postings in every segment.
    Without ``np.load``'s header parser, which fails beside another thread (``engine.common.npy``)."""
    return npy.load(path, mmap=True)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


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


# ----------------------------------------------------------------------------- segments


def _blocks(n: int) -> int:
    """Blocks of ``BLOCK_ROWS`` rows a format-2 segment of ``n`` rows has (at least one)."""
    return max(1, -(-n // BLOCK_ROWS))


def _ptr_dtype(postings: int) -> type[np.signedinteger[Any]]:
    """int32 offsets while they fit (half the bytes of a ``ptr`` table), int64 beyond."""
    return np.int32 if postings < 1 << 31 else np.int64


def _write_meta(d: Path) -> None:
    with open(d / META, "w", encoding="utf-8") as f:
        json.dump({"format": FORMAT, "block_rows": BLOCK_ROWS}, f)
        f.flush()
        os.fsync(f.fileno())


def _build_arrays(
    sids: np.ndarray, lengths: np.ndarray, tokens: np.ndarray, levels: np.ndarray
) -> dict[str, np.ndarray]:
    """Segment arrays from row-major entries (``lengths[i]`` entries of row ``i``, rows in
    ascending sentence id order); entries with level 0 are dropped."""
    n = int(sids.shape[0])
    rows = np.repeat(np.arange(n, dtype=np.int32), lengths)
    keep = levels > 0
    rows, tokens, levels = rows[keep], tokens[keep], levels[keep]
    t_count = int(tokens.max()) + 1 if tokens.size else 0
    # Group by token; a stable sort keeps rows ascending within a token (radix sort when
    # token ids fit 16 bits, which is why the key is narrowed).
    key = tokens.astype(np.uint16) if t_count <= 1 << 16 else tokens
    perm = np.argsort(key, kind="stable")
    rows, tokens, levels = rows[perm], tokens[perm].astype(np.int64), levels[perm]
    df = np.bincount(tokens, minlength=t_count).astype(np.int64)
    return _split_dense(np.asarray(sids, dtype=np.int64), df, rows, tokens, levels)


def _split_dense(
    sids: np.ndarray, df: np.ndarray, rows: np.ndarray, tokens: np.ndarray, levels: np.ndarray
) -> dict[str, np.ndarray]:
    """Move the postings of frequent tokens into dense columns (inputs grouped by token)."""
    n = int(sids.shape[0])
    dense_tokens = (
        np.flatnonzero(df * DENSE_FRACTION >= n).astype(np.int32)
        if n >= DENSE_MIN_ROWS
        else np.zeros(0, np.int32)
    )
    dense = np.zeros((dense_tokens.shape[0], n), dtype=np.uint8)
    is_dense = np.zeros(df.shape[0], dtype=bool)
    is_dense[dense_tokens] = True
    slot = np.full(df.shape[0], -1, dtype=np.int64)
    slot[dense_tokens] = np.arange(dense_tokens.shape[0])
    in_dense = is_dense[tokens] if tokens.size else np.zeros(0, bool)
    if dense_tokens.size:
        dense[slot[tokens[in_dense]], rows[in_dense]] = levels[in_dense]
    sparse = ~in_dense
    s_rows, s_tokens = rows[sparse].astype(np.int64), tokens[sparse]
    blocks = _blocks(n)
    # Postings are grouped by token with rows ascending, hence by (token, block) already.
    counts = np.bincount(s_tokens * blocks + (s_rows >> BLOCK_BITS), minlength=df.shape[0] * blocks)
    ptr = np.zeros(df.shape[0] * blocks + 1, dtype=_ptr_dtype(int(s_rows.shape[0])))
    ptr[1:] = np.cumsum(counts)
    return {
        "sids": sids,
        "ptr": ptr,
        "rows": np.ascontiguousarray(s_rows & (BLOCK_ROWS - 1), dtype=np.uint16),
        "levels": np.ascontiguousarray(levels[sparse], dtype=np.uint8),
        "dense_tokens": dense_tokens,
        "dense": dense,
        "df": df.astype(np.int32),
    }


def _write_segment(root: Path, name: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write a segment directory atomically: a temporary directory renamed into place."""
    tmp = root / f"tmp-{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for f in _FILES:
        _save(tmp / f"{f}.npy", arrays[f])
    _write_meta(tmp)
    fsync_dir(tmp)
    os.replace(tmp, root / name)
    fsync_dir(root)


@dataclass(eq=False)
class Segment:
    """One immutable segment, memory-mapped, with its deletions applied as a row list.

    ``blocks``: row blocks of the sparse postings (``ptr`` has ``blocks`` entries per
    token); a format-1 segment is one block whose ``rows`` are int32 absolute rows."""

    name: str
    sids: np.ndarray
    ptr: np.ndarray
    rows: np.ndarray
    levels: np.ndarray
    dense: np.ndarray
    df: np.ndarray
    slot: np.ndarray  # token -> dense slot, -1 when sparse
    deleted: np.ndarray  # int64 rows, ascending
    deletes_file: str | None = None
    blocks: int = 1
    format: int = FORMAT
    _live_df: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path, name: str, deletes_file: str | None) -> Segment:
        d = root / name
        meta = _read_json(d / META)
        fmt = 1 if meta is None else meta.get("format")
        if fmt not in (1, FORMAT) or (meta is not None and meta.get("block_rows") != BLOCK_ROWS):
            raise ColumnStoreError(
                f"{d / META}: column segment layout {meta} is not one this version reads"
                f" (format 1, or {FORMAT} with block_rows {BLOCK_ROWS}); a newer sparcdesk wrote it"
            )
        a = {f: _load(d / f"{f}.npy") for f in _FILES}
        n, t_count = int(a["sids"].shape[0]), int(a["df"].shape[0])
        blocks = 1 if fmt == 1 else _blocks(n)
        if a["ptr"].shape != (t_count * blocks + 1,):
            raise ColumnStoreError(
                f"{d / 'ptr.npy'}: {a['ptr'].shape[0]} offsets, expected {t_count * blocks + 1}"
                f" ({t_count} tokens x {blocks} blocks + 1): the segment is damaged"
            )
        slot = np.full(t_count, -1, dtype=np.int64)
        slot[np.asarray(a["dense_tokens"], dtype=np.int64)] = np.arange(a["dense_tokens"].shape[0])
        deleted = (
            np.asarray(npy.load(root / deletes_file), dtype=np.int64)
            if deletes_file
            else np.zeros(0, np.int64)
        )
        return cls(
            name,
            a["sids"],
            a["ptr"],
            a["rows"],
            a["levels"],
            a["dense"],
            a["df"],
            slot,
            deleted,
            deletes_file,
            blocks,
            int(fmt),
        )

    @property
    def n(self) -> int:
        """Rows, deleted ones included."""
        return int(self.sids.shape[0])

    @property
    def live(self) -> int:
        return self.n - int(self.deleted.shape[0])

    def _sparse_rows(self, token: int) -> tuple[int, int, np.ndarray]:
        """Posting range ``[a, b)`` of sparse ``token`` and the intp row of each posting
        (block offset added; with one block the stored rows are the rows)."""
        if self.blocks == 1:
            a, b = int(self.ptr[token]), int(self.ptr[token + 1])
            return a, b, self.rows[a:b].astype(np.intp)
        base = token * self.blocks
        bounds = self.ptr[base : base + self.blocks + 1].tolist()
        a, b = bounds[0], bounds[-1]
        if a == b:
            return a, b, _NO_ROWS
        if b - a >= LONG_POSTINGS:
            # Converted in one pass, then each later block's offset added to its slice (a
            # ufunc call per block, ~1.5 us, is small against the list).
            rows = self.rows[a:b].astype(np.intp)
            for blk in range(1, self.blocks):
                lo, hi = bounds[blk] - a, bounds[blk + 1] - a
                if hi > lo:
                    rows[lo:hi] += blk << BLOCK_BITS
        else:
            # Each block's offset assigned to its slice (~0.3 us a block), then the stored
            # rows added (a slower, mixed-type pass). np.repeat of the offsets would copy
            # element by element (~9 ns a posting).
            rows = np.empty(b - a, dtype=np.intp)
            for blk in range(self.blocks):
                rows[bounds[blk] - a : bounds[blk + 1] - a] = blk << BLOCK_BITS
            rows += self.rows[a:b]
        return a, b, rows

    def postings(self, token: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, levels) of ``token``, deleted rows included."""
        if not 0 <= token < self.df.shape[0]:
            return np.zeros(0, np.intp), np.zeros(0, np.uint8)
        s = int(self.slot[token])
        if s >= 0:
            col = self.dense[s]
            nz = np.flatnonzero(col)
            return nz, col[nz]
        a, b, rows = self._sparse_rows(token)
        return rows, self.levels[a:b]

    def add_scores(self, acc: np.ndarray, token: int, multiplier: int, tmp: np.ndarray) -> None:
        """``acc[row] += multiplier * level(token, row)`` for every row (int32, exact)."""
        if not 0 <= token < self.df.shape[0]:
            return
        s = int(self.slot[token])
        if s >= 0:
            if multiplier == 1:
                np.add(acc, self.dense[s], out=acc)
            else:
                np.multiply(self.dense[s], multiplier, out=tmp, dtype=np.int32)
                np.add(acc, tmp, out=acc)
            return
        a, b, rows = self._sparse_rows(token)
        if a == b:
            return
        # ufunc.at: numpy 2's scatter-add takes ~half the time of ``acc[rows] += v`` (gather,
        # add, scatter), on its fast path only, when the values are int32 like ``acc``; its
        # index is intp (a narrower one is converted to intp inside anyway).
        np.add.at(acc, rows, np.multiply(self.levels[a:b], multiplier, dtype=np.int32))

    def doc_freq(self, token: int) -> int:
        """Live rows having ``token``."""
        if not 0 <= token < self.df.shape[0]:
            return 0
        total = int(self.df[token])
        if total == 0 or self.deleted.size == 0:
            return total
        hit = self._live_df.get(token)
        if hit is None:
            s = int(self.slot[token])
            if s >= 0:
                gone = int(np.count_nonzero(self.dense[s][self.deleted]))
            else:
                rows = self.postings(token)[0]
                gone = int(np.count_nonzero(np.isin(rows, self.deleted, assume_unique=True)))
            hit = total - gone
            self._live_df[token] = hit
        return hit

    def rows_of(self, sentence_ids: np.ndarray) -> np.ndarray:
        """Rows of these sentence ids that are in this segment and not deleted."""
        ids = np.asarray(sentence_ids, dtype=np.int64)
        pos = np.searchsorted(self.sids, ids)
        ok = pos < self.n
        pos = pos[ok]
        pos = pos[np.asarray(self.sids[pos]) == ids[ok]]
        if self.deleted.size and pos.size:
            pos = pos[~np.isin(pos, self.deleted)]
        return pos


# ----------------------------------------------------------------------------- top-k


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows that can be in the top ``k`` (score > 0): the best ``k`` and all ties of the k-th,
    ascending.

    The k-th score is selected among the positive rows only: with sparse vectors most rows
    score 0, and ``np.partition`` over a mostly-zero array is ~10x slower than finding the
    positive rows and partitioning those. With many more positive rows than ``k`` (a 1M
    sentence segment has ~100k per question), a guess of the k-th score from every
    ``SAMPLE_STEP``-th row first narrows them to ~2k: when at least ``k`` rows reach the
    guess, the k-th score is at least the guess, so no row that can rank is dropped (otherwise
    all positive rows are partitioned, as without the guess)."""
    if k <= 0 or scores.shape[0] == 0:
        return np.zeros(0, np.int64)
    pos = np.flatnonzero(scores > 0)
    if pos.shape[0] <= k:
        return pos
    vals = scores[pos]
    if vals.shape[0] >= 8 * k:
        sample = vals[::SAMPLE_STEP]
        j = min(sample.shape[0], 2 * k // SAMPLE_STEP + 1)
        guess = np.partition(sample, sample.shape[0] - j)[sample.shape[0] - j]
        keep = np.flatnonzero(vals >= guess)
        if keep.shape[0] >= k:
            pos, vals = pos[keep], vals[keep]
    kth = np.partition(vals, vals.shape[0] - k)[vals.shape[0] - k]
    return pos[vals >= kth]


# ----------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class State:
    """A committed (or pending) column state: segments and their deletion files."""

    opstamp: int
    segments: tuple[tuple[str, str | None], ...]
    next_seq: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "opstamp": self.opstamp,
            "segments": [{"name": n, "deletes": d} for n, d in self.segments],
            "next_seq": self.next_seq,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> State:
        segs = tuple((str(s["name"]), s.get("deletes")) for s in d.get("segments", []))
        return cls(int(d["opstamp"]), segs, int(d.get("next_seq", 0)))


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


class ColumnView:
    """The segments of one state, memory-mapped; scoring and document frequencies."""

    def __init__(self, root: Path, state: State, reuse: Mapping[str, Segment] | None = None) -> None:
        self.root = root
        self.state = state
        segs: list[Segment] = []
        for name, deletes in state.segments:
            old = (reuse or {}).get(name)
            if old is not None and old.deletes_file == deletes:
                segs.append(old)
            else:
                segs.append(Segment.load(root, name, deletes))
        self.segments: tuple[Segment, ...] = tuple(segs)

    @property
    def num_live(self) -> int:
        return sum(s.live for s in self.segments)

    def doc_freq(self, token: int) -> int:
        return sum(s.doc_freq(token) for s in self.segments)

    def top_k(
        self,
        tokens: Sequence[int],
        multipliers: Sequence[int],
        k: int,
        allowed: Sequence[np.ndarray | None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` ``(sentence_ids, raw integer scores)``: score desc, id asc, > 0.

        ``allowed[i]`` (the live rows of segment ``i`` a filter lets through, ascending, as
        :meth:`allowed_rows` gives them; None for all) restricts the candidates without
        changing any score: the top k is selected among those rows' scores alone, so a
        filter costs a gather of its rows, not a pass over the whole segment."""
        pairs = [(int(t), int(m)) for t, m in zip(tokens, multipliers, strict=True) if t >= 0 and m > 0]
        ids: list[np.ndarray] = []
        raws: list[np.ndarray] = []
        if not pairs or k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        for i, seg in enumerate(self.segments):
            keep = None if allowed is None else allowed[i]
            if seg.n == 0 or (keep is not None and keep.shape[0] == 0):
                continue
            acc = np.zeros(seg.n, dtype=np.int32)
            tmp = np.empty(seg.n, dtype=np.int32)
            for t, m in pairs:
                seg.add_scores(acc, t, m, tmp)
            if keep is None:
                if seg.deleted.size:
                    acc[seg.deleted] = 0
                rows = top_rows(acc, k)
            else:  # allowed rows are live rows
                rows = keep[top_rows(acc[keep], k)]
            ids.append(np.asarray(seg.sids[rows], dtype=np.int64))
            raws.append(acc[rows].astype(np.int64))
        if not ids:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        sid, raw = np.concatenate(ids), np.concatenate(raws)
        pos = top_rows(raw, k)
        order = pos[np.lexsort((sid[pos], -raw[pos]))][:k]
        return sid[order], raw[order]

    def allowed_rows(self, sentence_ids: np.ndarray) -> list[np.ndarray]:
        """Per segment, the live rows whose sentence id is in ``sentence_ids`` (a filter),
        ascending."""
        return [np.sort(seg.rows_of(sentence_ids)) for seg in self.segments]


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


def merge_segments(root: Path, name: str, group: Sequence[Segment]) -> int:
    """Write segment ``name`` holding the live rows of ``group``; returns its row count.

    Token by token into memory-mapped output files, so a merge of millions of rows never
    holds the postings in RAM. An empty result writes nothing. The output is format 2
    whatever the inputs' formats (format-1 segments are upgraded by merging)."""
    keeps = []
    for s in group:
        keep = np.ones(s.n, dtype=bool)
        keep[s.deleted] = False
        keeps.append(keep)
    all_sids = np.concatenate([np.asarray(s.sids)[k] for s, k in zip(group, keeps, strict=True)])
    n = int(all_sids.shape[0])
    if n == 0:
        return 0
    order = np.argsort(all_sids, kind="stable")
    new_of_concat = np.empty(n, dtype=np.int64)
    new_of_concat[order] = np.arange(n)
    remaps: list[np.ndarray] = []  # old row -> new row, -1 when deleted
    start = 0
    for s, keep in zip(group, keeps, strict=True):
        r = np.full(s.n, -1, dtype=np.int64)
        cnt = int(keep.sum())
        r[keep] = new_of_concat[start : start + cnt]
        start += cnt
        remaps.append(r)
    t_count = max(int(s.df.shape[0]) for s in group)
    df = np.zeros(t_count, dtype=np.int64)
    for s in group:
        if s.deleted.size:
            df[: s.df.shape[0]] += [s.doc_freq(t) for t in range(s.df.shape[0])]
        else:
            df[: s.df.shape[0]] += s.df
    dense_tokens = (
        np.flatnonzero(df * DENSE_FRACTION >= n).astype(np.int32)
        if n >= DENSE_MIN_ROWS
        else np.zeros(0, np.int32)
    )
    is_dense = np.zeros(t_count, dtype=bool)
    is_dense[dense_tokens] = True
    tok_ptr = np.zeros(t_count + 1, dtype=np.int64)  # each token's first posting
    np.cumsum(np.where(is_dense, 0, df), out=tok_ptr[1:])
    blocks = _blocks(n)
    # Per (token, block): the token's first posting until its rows are known (below).
    ptr = np.empty(t_count * blocks + 1, dtype=_ptr_dtype(int(tok_ptr[-1])))
    ptr[:-1] = np.repeat(tok_ptr[:-1], blocks)
    ptr[-1] = tok_ptr[-1]
    block_starts = np.arange(blocks, dtype=np.int64) << BLOCK_BITS
    tmp = root / f"tmp-{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()

    def out(f: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        if 0 in shape:  # open_memmap cannot map an empty file
            a = np.zeros(shape, dtype=dtype)
            _save(tmp / f"{f}.npy", a)
            return a
        return np.lib.format.open_memmap(tmp / f"{f}.npy", mode="w+", dtype=dtype, shape=shape)

    rows_out = out("rows", np.uint16, (int(tok_ptr[-1]),))
    levels_out = out("levels", np.uint8, (int(tok_ptr[-1]),))
    dense = out("dense", np.uint8, (int(dense_tokens.shape[0]), n))
    slot = 0
    for t in np.flatnonzero(df).tolist():
        parts_r: list[np.ndarray] = []
        parts_l: list[np.ndarray] = []
        for s, remap in zip(group, remaps, strict=True):
            r, lv = s.postings(t)
            if r.shape[0]:
                nr = remap[r]
                ok = nr >= 0
                parts_r.append(nr[ok])
                parts_l.append(np.asarray(lv)[ok])
        r = np.concatenate(parts_r)
        lv = np.concatenate(parts_l)
        if is_dense[t]:
            dense[slot, r] = lv
            slot += 1
        else:
            o = np.argsort(r, kind="stable")
            r = r[o]
            a, b = int(tok_ptr[t]), int(tok_ptr[t + 1])
            ptr[t * blocks : (t + 1) * blocks] = a + np.searchsorted(r, block_starts)
            rows_out[a:b] = r & (BLOCK_ROWS - 1)
            levels_out[a:b] = lv[o]
    for a in (rows_out, levels_out, dense):
        if isinstance(a, np.memmap):
            a.flush()
    del rows_out, levels_out, dense
    for f in ("rows", "levels", "dense"):
        with open(tmp / f"{f}.npy", "rb+") as fh:
            os.fsync(fh.fileno())
    _save(tmp / "sids.npy", all_sids[order].astype(np.int64))
    _save(tmp / "ptr.npy", ptr)
    _save(tmp / "dense_tokens.npy", dense_tokens)
    _save(tmp / "df.npy", df.astype(np.int32))
    _write_meta(tmp)
    fsync_dir(tmp)
    os.replace(tmp, root / name)
    fsync_dir(root)
    return n
