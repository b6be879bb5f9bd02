"""What a long run (indexing, adaptation) reports while it runs, and how it is stopped.

One type per concept (issue 14): indexing (:mod:`engine.indexer`) and adaptation
(:mod:`engine.model.adapt`) both report a :class:`RunProgress` and both stop with
:class:`Cancelled`, so the CLI and the window tell them apart with ``isinstance`` and catch
one exception. This module imports no other engine module, so every stage may import it.
"""

from __future__ import annotations

from dataclasses import dataclass


class Cancelled(Exception):
    """A run stopped because its cancel event was set. Indexing catches it and ends with
    phase ``cancelled`` (what was committed stays); adaptation saves its state and raises it
    to the caller, and the next run resumes from there."""


@dataclass
class RunProgress:
    """Where a long run stands: ``phase`` names its step; the subclass says which run
    (the window dispatches on it with ``isinstance``)."""

    phase: str


@dataclass
class Progress(RunProgress):
    """Where an indexing run stands (``engine.api.facade.Progress`` is this class).

    ``phase``: ``scanning``, ``indexing``, ``paused``, ``committing``, ``done`` or
    ``cancelled``. ``rate`` is sentences per second since the run started; ``eta_s`` the
    seconds left, estimated from the bytes of the units still to do (None until known).
    ``upgrade``: the run re-reads every file for what this version indexes (a new records
    version), so ``files_done`` counts files read again, not files that changed.
    """

    files_done: int
    files_total: int
    sentences_done: int
    rate: float
    eta_s: float | None
    current: str | None
    upgrade: bool = False


@dataclass
class AdaptProgress(RunProgress):
    """Where an adaptation stands: ``phase`` is ``vocabulary``, ``training``, ``writing`` or
    ``done``; ``step`` of ``steps`` training steps, the last step's ``loss``."""

    step: int
    steps: int
    loss: float | None
    elapsed_s: float
    eta_s: float | None
