"""Benchmarks (run as ``python -m bench.<name>``); they build their data under /tmp."""

from __future__ import annotations

import gzip
from pathlib import Path


def read_rows(path: Path) -> list[str]:
    """The lines of a results file, gzipped (``.gz``, as ``bench.product`` writes its
    questions now) or not (runs before 2026-11-27)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read().splitlines()
    return path.read_text(encoding="utf-8").splitlines()
