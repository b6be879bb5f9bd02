"""What the backend's jobs report to the window: a question's answers (:class:`SearchResult`),
how an index-lane job ended (:class:`JobOutcome`), and that the index is being rebuilt for
another model (:class:`ModelRebuild`, which :func:`model_rebuild` reads off the engine's
status), and :func:`under_path` (is a path in a source). Plain data, no Qt: :mod:`app.backend`
emits them, the controllers read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.search.results import Answers


@dataclass
class SearchResult:
    """What one ``ask`` produced, with the request that produced it."""

    request: int
    question: str
    answers: list
    seconds: float
    hybrid: bool
    idf: bool
    #: The engine's decision for the question as a whole (``engine.search.answers.Answers``): False
    #: when nothing indexed answers it and ``answers`` are only the closest matches.
    answered: bool = True
    #: The quoted phrases no document holds, dropped from the search (``Answers.relaxed``).
    relaxed: tuple[str, ...] = ()
    #: The question's words no document holds (``Answers.absent``).
    absent: tuple[str, ...] = ()

    @classmethod
    def of(cls, request: int, question: str, answers: Answers, seconds: float, hybrid: bool, idf: bool) -> SearchResult:
        """The result of ``Engine.ask`` (always an ``Answers``) for the window."""
        return cls(
            request,
            question,
            list(answers),
            seconds,
            hybrid,
            idf,
            answers.answered,
            tuple(answers.relaxed),
            tuple(answers.absent),
        )


@dataclass
class JobOutcome:
    """How one index-lane job ended, for the window to report it (``job_finished``).

    ``kind``: ``index``, ``add``, ``exclusions``, ``remove``, ``adapt`` or ``restore``;
    ``outcome``: ``done``, ``cancelled``, ``failed`` or ``dropped`` (a Stop or a removal
    dropped it before it started); ``reason``: ``removal`` when a source's removal
    cancelled it."""

    kind: str
    path: str | None
    outcome: str
    final: Any = None
    error: str = ""
    reason: str = ""


@dataclass(frozen=True)
class ModelRebuild:
    """The index was built with another model than the one this app runs (an upgrade from
    0.3.0, a model chosen in Options): what the window says once while it is rebuilt."""

    old: str  # "sparc-tiny 0.3.0+<digest>"
    new: str
    sentences: int  # in the index that answers meanwhile


def model_rebuild(status: dict[str, Any]) -> ModelRebuild | None:
    """A ``ModelRebuild`` when ``Engine.status()`` says the live generation is another
    model's; None when it is this one's (or nothing is indexed)."""
    gen = status.get("generation")
    if not status.get("rebuilding") or gen is None:
        return None
    new = f"{status['model']['name']} {status['model']['version']}"
    if gen["model"] == new:
        return None  # a building generation of this same model: an ordinary run
    return ModelRebuild(gen["model"], new, int(status.get("sentences") or 0))


def under_path(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (a message of a mail store: ``root#…``)."""
    root = root.rstrip("/\\") or root
    return path == root or path.startswith((root + "/", root + "\\", root + "#"))
