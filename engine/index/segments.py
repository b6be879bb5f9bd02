"""The column store's segment format: one immutable directory of numpy arrays per commit or
merge (the layout, formats 1 and 2, is in :mod:`engine.index.columns`' docstring), how a
segment is built from rows, loaded memory-mapped, scored token by token and merged, and the
state a manifest names (:class:`State`). The store around it (manifest, pending state,
commit protocol, readers' lock) is :mod:`engine.index.columns`; scoring over a state's
segments is :mod:`engine.index.scoring`.

Scores use the integer arithmetic of :mod:`engine.index.quantize` (int32 sums of
``multiplier * level``, exact below 2**24), so they equal the oracle's bit for bit.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.common import npy
from engine.home.paths import fsync_dir

#: A token is stored as a dense column when at least 1/DENSE_FRACTION of a segment's rows
#: have it (a sparse posting costs 3 bytes and ~5 ns to add, a dense row 1 byte and ~0.3 ns).
DENSE_FRACTION = 8
#: Segments below this many rows are always sparse (a dense column would be mostly padding).
DENSE_MIN_ROWS = 64
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



def merge_segments(root: Path, name: str, group: Sequence[Segment]) -> int:
    """Write segment ``name`` holding the live rows of ``group``; returns its row count.

    Token by token into memory-mapped output files, so a merge of millions of rows never
    holds the postings in RAM. An empty result writes nothing. The output is format 2
    whatever the inputs' formats (format-1 segments are upgraded by merging)."""
    all_sids, order, remaps = _merged_rows(group)
    n = int(all_sids.shape[0])
    if n == 0:
        return 0
    df, dense_tokens, is_dense = _merged_df(group, n)
    t_count = int(df.shape[0])
    tok_ptr = np.zeros(t_count + 1, dtype=np.int64)  # each token's first posting
    np.cumsum(np.where(is_dense, 0, df), out=tok_ptr[1:])
    blocks = _blocks(n)
    # Per (token, block): the token's first posting until its rows are known (below).
    ptr = np.empty(t_count * blocks + 1, dtype=_ptr_dtype(int(tok_ptr[-1])))
    ptr[:-1] = np.repeat(tok_ptr[:-1], blocks)
    ptr[-1] = tok_ptr[-1]
    tmp = root / f"tmp-{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _merge_postings(tmp, group, remaps, df, dense_tokens, is_dense, tok_ptr, ptr, n)
    _save(tmp / "sids.npy", all_sids[order].astype(np.int64))
    _save(tmp / "ptr.npy", ptr)
    _save(tmp / "dense_tokens.npy", dense_tokens)
    _save(tmp / "df.npy", df.astype(np.int32))
    _write_meta(tmp)
    fsync_dir(tmp)
    os.replace(tmp, root / name)
    fsync_dir(root)
    return n


def _merged_rows(group: Sequence[Segment]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The live sentence ids of ``group`` in segment order, the order that sorts them, and
    per segment its old row -> new row (-1 when deleted)."""
    keeps = []
    for s in group:
        keep = np.ones(s.n, dtype=bool)
        keep[s.deleted] = False
        keeps.append(keep)
    all_sids = np.concatenate([np.asarray(s.sids)[k] for s, k in zip(group, keeps, strict=True)])
    n = int(all_sids.shape[0])
    if n == 0:
        return all_sids, np.zeros(0, np.int64), []
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
    return all_sids, order, remaps


def _merged_df(group: Sequence[Segment], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Live rows per token over ``group`` (of ``n`` live rows), the tokens stored dense, and
    a dense flag per token."""
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
    return df, dense_tokens, is_dense


def _merge_postings(
    tmp: Path,
    group: Sequence[Segment],
    remaps: Sequence[np.ndarray],
    df: np.ndarray,
    dense_tokens: np.ndarray,
    is_dense: np.ndarray,
    tok_ptr: np.ndarray,
    ptr: np.ndarray,
    n: int,
) -> None:
    """Write the merged ``rows``, ``levels`` and ``dense`` files into ``tmp`` token by token
    (memory-mapped, fsynced) and fill each token's block offsets in ``ptr``."""
    blocks = _blocks(n)
    block_starts = np.arange(blocks, dtype=np.int64) << BLOCK_BITS

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
