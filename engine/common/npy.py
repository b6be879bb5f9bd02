"""Reading .npy files without ``np.load``'s header parser, safe beside other threads.

``np.load`` parses each file's header with ``ast.literal_eval``, and CPython 3.11's compiler
keeps a recursion counter shared by the interpreter's threads: two threads compiling at once
(a finalizer running mid-parse lets the other in) corrupt it. A question read while an
indexing thread of the same process loaded column segments to merge them failed with
``SystemError: AST constructor recursion depth mismatch`` (tests/test_pipeline.py's
reads-while-indexing test). ``np.save`` writes a header of one plain form, read here with a
regular expression; any other header goes to ``np.load``, one thread at a time, which says
what is wrong with it.
"""

from __future__ import annotations

import re
import struct
import threading
from pathlib import Path
from typing import BinaryIO

import numpy as np

#: The header ``np.save`` writes for a plain array: dtype, order, shape.
_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z][0-9]*)', 'fortran_order': (False|True), 'shape': \(([0-9, ]*)\), *\} *\n"
)
#: Serialises ``np.load`` for the headers ``_HEADER`` does not read.
_NP_LOAD = threading.Lock()


def _layout(f: BinaryIO) -> tuple[np.dtype, tuple[int, ...], bool, int] | None:
    """(dtype, shape, Fortran order, data offset) of the .npy file open as ``f`` when it is in
    ``np.save``'s plain form, or None for any other content (another header, a short or
    foreign file)."""
    head = f.read(10)
    if len(head) < 10 or head[:6] != b"\x93NUMPY" or head[6] not in (1, 2, 3):
        return None
    if head[6] == 1:
        size, start = struct.unpack("<H", head[8:10])[0], 10
    else:
        head += f.read(2)
        size, start = struct.unpack("<I", head[8:12])[0], 12
    m = _HEADER.fullmatch(f.read(size))
    if m is None:
        return None
    shape = tuple(int(x) for x in m.group(3).split(b",") if x.strip())
    return np.dtype(m.group(1).decode("ascii")), shape, m.group(2) == b"True", start + size


def load(path: Path, mmap: bool = False) -> np.ndarray:
    """The array, as ``np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)``
    returns it (a memory map as a plain ndarray view), with the same errors: ``ValueError``
    for a truncated or foreign file, ``FileNotFoundError``. The file is opened once: its
    header read, then mapped or read from the same descriptor."""
    with open(path, "rb") as f:
        found = _layout(f)
        if found is not None:
            dtype, shape, fortran, offset = found
            order = "F" if fortran else "C"
            if mmap:
                mapped = np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
                return mapped.view(np.ndarray)
            count = int(np.prod(shape, dtype=np.int64))
            f.seek(offset)
            data = np.fromfile(f, dtype=dtype, count=count)
            if data.size != count:
                raise ValueError(
                    f"{path}: the file holds {data.size} of the {count} values its header declares"
                )
            return data.reshape(shape, order=order)
    with _NP_LOAD:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    return array.view(np.ndarray)
