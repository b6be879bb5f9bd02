"""The cache of encoded pools: a pool's sentence vectors under one bundle, as a CSR matrix in
an ``.npz`` file named after the bundle's folder, a digest of its files and one of the pool's
(sentence, context) pairs; both SPARC scorers read it, so a pool is encoded once per bundle."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import scipy.sparse as sp

DEFAULT_CACHE = Path("runs/cache")


def bundle_fingerprint(bundle_dir: str | Path) -> str:
    """sha1 over the names and contents of every file of the bundle."""
    h = hashlib.sha1()
    root = Path(bundle_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def pool_fingerprint(sentences: Sequence[str], contexts: Sequence[str]) -> str:
    h = hashlib.sha1()
    for s, c in zip(sentences, contexts, strict=True):
        h.update(s.encode("utf-8") + b"\0" + c.encode("utf-8") + b"\1")
    return h.hexdigest()


def cache_file(
    cache_dir: str | Path, bundle_dir: str | Path, sentences: Sequence[str], contexts: Sequence[str]
) -> Path:
    """Where the vectors of this pool under this bundle are kept."""
    bundle = Path(bundle_dir)
    name = f"sparc-{bundle.resolve().name}-{bundle_fingerprint(bundle)[:12]}-{pool_fingerprint(sentences, contexts)[:12]}.npz"
    return Path(cache_dir) / name


def read_matrix(path: Path, rows: int) -> sp.csr_matrix | None:
    """The cached matrix, or None when there is none or it has not ``rows`` rows."""
    if not path.exists():
        return None
    matrix = sp.load_npz(path).tocsr()
    return matrix if matrix.shape[0] == rows else None


def write_matrix(path: Path, matrix: sp.csr_matrix) -> None:
    """Write the matrix whole or not at all (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    sp.save_npz(tmp, matrix)
    tmp.replace(path)
