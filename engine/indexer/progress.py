"""What an indexing run reports: its progress while it runs and its counts at the end."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Progress:
    """Where an indexing run stands (``engine.api.facade.Progress`` is this class).

    ``phase``: ``scanning``, ``indexing``, ``paused``, ``committing``, ``done`` or
    ``cancelled``. ``rate`` is sentences per second since the run started; ``eta_s`` the
    seconds left, estimated from the bytes of the units still to do (None until known).
    """

    phase: str
    files_done: int
    files_total: int
    sentences_done: int
    rate: float
    eta_s: float | None
    current: str | None


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


class Cancelled(Exception):
    """Raised inside a run when the cancel event is set."""
