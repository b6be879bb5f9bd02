"""What the facade returns about sources and files (:class:`engine.api.facade.Engine`'s
``sources()`` and ``errors()``; re-exported by :mod:`engine.api.facade`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SourceInfo:
    """A source as the app lists it: ``kind`` is ``folder`` or ``mailstore``; ``files``,
    ``sentences`` and ``errors`` count the catalog's files of the source."""

    path: str
    kind: str
    files: int
    sentences: int
    errors: int
    last_indexed: str | None
    exclude: list[str] = field(default_factory=list)


@dataclass
class FileError:
    """A file (or a message or attachment inside one) with something to say, the reason and
    when it was seen. ``kind``, the one definition every view counts by: ``unreadable`` (it
    could not be read: status error, found by its name at most), ``skipped`` (a format that is
    not read, or a link to a special file: not a failure) or ``note`` (read and indexed, with
    a remark: a fallback encoding, parts that failed, a line cut short). ``skipped`` is
    ``kind == "skipped"``, kept for the JSON's readers."""

    path: str
    reason: str
    when: str
    skipped: bool = False
    kind: str = "unreadable"
