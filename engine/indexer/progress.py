"""What an indexing run reports at the end: its counts. (Its progress while it runs, and
:class:`~engine.common.progress.Cancelled`, are :mod:`engine.common.progress`, shared with
adaptation.)"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    """Counts of one run (for the CLI and tests)."""

    files_total: int = 0
    files_done: int = 0
    indexed: int = 0
    unchanged: int = 0
    touched: int = 0
    deleted: int = 0
    failed: int = 0
    sentences: int = 0
    commits: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    changed_paths: list[str] = field(default_factory=list)
