"""The e-mail directory of a catalog: who sent the indexed messages, which mailboxes hold
them, and what a search's sender and mailbox filters mean in the index's terms (issue 40:
one owner of these e-mail semantics; ``Engine.senders``, ``Engine.mailboxes`` and
``Engine.ask`` go through it).

Reading a message (its From header, its mailbox's name) is :mod:`engine.ingest.mail`'s; this
module only reads what the catalog stored of them (:meth:`Catalog.from_headers`,
:meth:`Catalog.mailbox_units`), so it sits in the catalog stage, below search: the filters it
resolves are any dataclass with ``sender``, ``mailbox`` and ``folder`` fields
(:class:`engine.search.results.SearchFilters`), changed with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from email.utils import parseaddr
from pathlib import Path
from typing import Protocol, TypeVar

from engine.catalog.store import Catalog
from engine.ingest.walk import under

__all__ = ["MailboxInfo", "SenderInfo", "mailbox_labels", "mailboxes", "resolve_filters", "senders"]


@dataclass
class SenderInfo:
    """A sender of indexed e-mail: ``address`` (lower case), ``name`` (the display name it
    sends under most, '' when none) and how many ``messages`` it sent."""

    address: str
    name: str
    messages: int

    @property
    def label(self) -> str:
        """How the sender is shown and typed: 'Ann Lee <ann@x.org>', or the address alone."""
        return f"{self.name} <{self.address}>" if self.name else self.address


@dataclass
class MailboxInfo:
    """A mailbox of indexed e-mail. ``name`` is what each message carries (a Maildir
    folder's or mbox file's name, an e-mail file's folder name), ``path`` the Maildir folder,
    mbox file or folder of e-mail files, ``kind`` ``maildir``, ``mbox`` or ``folder``;
    ``label`` the name with as many of its parent folders as tell it from other mailboxes
    of the same name ('all_documents (wolfe-j)'): what the app lists, and what
    ``SearchFilters.mailbox`` takes to mean this mailbox alone."""

    name: str
    path: str
    kind: str
    label: str
    messages: int


def mailbox_labels(boxes: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Labels of (name, path) mailboxes: the name when no other mailbox has it, else the name
    with the shortest tail of the path's parent folders that sets each apart."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for box in boxes:
        by_name.setdefault(box[0].lower(), []).append(box)
    labels: dict[tuple[str, str], str] = {}
    for same in by_name.values():
        if len(same) == 1:
            labels[same[0]] = same[0][0]
            continue
        parents = [Path(path).parent.parts for _, path in same]

        def tail(parts: tuple[str, ...], depth: int) -> str:
            return str(Path(*parts[-depth:])) if parts else ""

        for i, box in enumerate(same):
            mine = parents[i]
            for depth in range(1, len(mine) + 1):
                if all(tail(p, depth) != tail(mine, depth) for j, p in enumerate(parents) if j != i):
                    labels[box] = f"{box[0]} ({tail(mine, depth)})"
                    break
            else:  # same parent folder (a Maildir "x" and ".x"): the whole path
                labels[box] = f"{box[0]} ({box[1]})"
    return labels


def senders(catalog: Catalog, containing: str = "") -> list[SenderInfo]:
    """Everyone who sent indexed e-mail, most messages first; with ``containing``, those
    whose name or address holds it (case-insensitive): the sender filter's suggestions."""
    needle = containing.strip().lower()
    merged: dict[str, SenderInfo] = {}
    names: dict[str, dict[str, int]] = {}
    for header, n in catalog.from_headers(needle):
        name, addr = parseaddr(header)
        addr = (addr or header).strip().lower()
        info = merged.setdefault(addr, SenderInfo(addr, "", 0))
        info.messages += n
        name = " ".join(name.split()).strip("'\" ")
        if name and name.lower() != addr:
            names.setdefault(addr, {})
            names[addr][name] = names[addr].get(name, 0) + n
    for addr, counts in names.items():
        merged[addr].name = max(counts, key=lambda k: (counts[k], k))
    return sorted(merged.values(), key=lambda s: (-s.messages, s.address))


def mailboxes(catalog: Catalog) -> list[MailboxInfo]:
    """Every mailbox of indexed e-mail with its message count, by label."""
    counts: dict[tuple[str, str], int] = {}
    kinds: dict[tuple[str, str], str] = {}
    for name, unit, n in catalog.mailbox_units():
        p = Path(unit)
        if name in (p.name, p.name.lstrip(".")):  # the store is the unit: Maildir or mbox
            box, kind = (name, unit), "maildir" if os.path.isdir(unit) else "mbox"
        else:  # e-mail files: their folder
            box, kind = (name, str(p.parent)), "folder"
        counts[box] = counts.get(box, 0) + n
        kinds[box] = kind
    labels = mailbox_labels(list(counts))
    out = [MailboxInfo(b[0], b[1], kinds[b], labels[b], n) for b, n in counts.items()]
    return sorted(out, key=lambda m: (m.label.lower(), m.path))


class MailFilters(Protocol):
    """What :func:`resolve_filters` reads and replaces of a search's filters."""

    sender: str | Sequence[str] | None
    mailbox: str | None
    folder: str | None


F = TypeVar("F", bound=MailFilters)


def resolve_filters(catalog: Catalog, filters: F | None) -> tuple[F | None, bool]:
    """The filters with ``sender`` and ``mailbox`` as the index knows them, and False when
    nothing can match. A sender that is not a known address (a name, part of an address)
    becomes the addresses of the catalog's senders holding it; a mailbox label or path
    becomes that mailbox's name, restricted to its folder (within the folder filter)."""
    if filters is None:
        return None, True
    sender: str | Sequence[str] | None = filters.sender
    if isinstance(sender, str) and sender.strip():
        text = sender.strip()
        _, addr = parseaddr(text)
        known = senders(catalog, addr) if "@" in addr else []
        if not any(s.address == addr.lower() for s in known):
            found = tuple(s.address for s in senders(catalog, text))
            if not found:
                return filters, False
            sender = found
    mailbox, folder = filters.mailbox, filters.folder
    if mailbox and mailbox.strip():
        wanted = mailbox.strip()
        box = next(
            (m for m in mailboxes(catalog) if wanted.lower() == m.label.lower() or wanted == m.path), None
        )
        if box is not None and (box.label != box.name or wanted == box.path):
            mailbox = box.name
            where = box.path if box.kind != "mbox" else str(Path(box.path).parent)
            if folder:
                mine = str(Path(folder).expanduser().absolute())
                if under(mine, where):
                    where = mine
                elif not under(where, mine):
                    return filters, False
            folder = where
    return replace(filters, sender=sender, mailbox=mailbox, folder=folder), True  # type: ignore[type-var]
