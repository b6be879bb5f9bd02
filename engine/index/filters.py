"""What restricts a search of the sentence index without changing a score: :class:`IndexFilters`,
the tantivy query that applies them (:func:`filter_query`, shared by the sentence index, the
document index and ``bench/impact_terms.py``), and the folder form paths are indexed in."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import tantivy

from engine.home.paths import to_store


@dataclass(frozen=True)
class IndexFilters:
    """Restrictions that never change scores (they only restrict the candidate sentences).
    The search's ``SearchFilters`` (what the user sets) becomes this in one place,
    ``engine.search.answers.to_index_filters``.

    ``folder``: the document's path lies under this folder (whole path components).
    ``kinds``: any of these kinds. ``date_from``/``date_to``: inclusive, seconds since the
    epoch, datetimes or dates (a ``date_to`` date includes the whole day, UTC); sentences
    without a date are excluded by a date filter.
    ``sender`` (any of several)/``mailbox``: exact, case-insensitive. ``doc_keys``: any of these documents;
    ``exclude_keys``: none of these.
    """

    folder: str | None = None
    kinds: Sequence[str] | None = None
    date_from: int | _dt.date | None = None
    date_to: int | _dt.date | None = None
    sender: str | Sequence[str] | None = None
    mailbox: str | None = None
    doc_keys: Sequence[str] | None = None
    exclude_keys: Sequence[str] | None = None

    def is_empty(self) -> bool:
        """True when no restriction is set."""
        return all(v is None for v in asdict(self).values())



def _epoch(value: int | float | _dt.date | None, end_of_day: bool = False) -> int | None:
    """Seconds since the epoch. Naive datetimes are UTC; a plain date means its first
    second (UTC), or its last one with ``end_of_day`` (so ``date_to`` includes that day)."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp())
    if isinstance(value, _dt.date):
        t = _dt.time(23, 59, 59) if end_of_day else _dt.time(0, 0, 0)
        return int(_dt.datetime.combine(value, t, tzinfo=_dt.timezone.utc).timestamp())
    return int(value)


def normalize_path(path: str) -> str:
    """Forward slashes, no trailing slash: the form folders are indexed and filtered in."""
    p = path.replace("\\", "/")
    p = re.sub(r"/+", "/", p)
    return p.rstrip("/") or "/"


def folder_terms(path: str) -> list[str]:
    """Every ancestor folder of ``path`` (``/a/b/c.txt`` -> ``/a``, ``/a/b``), for prefix filters."""
    p = normalize_path(path)
    parts = p.split("/")
    out: list[str] = []
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i])
        if folder:
            out.append(folder)
        elif i == 1 and p.startswith("/"):
            out.append("/")
    return out


def filter_query(schema: tantivy.Schema, filters: IndexFilters | None) -> tantivy.Query | None:
    """The constant-score (0) query of ``filters`` against ``schema``: any index whose filter
    fields come from :func:`engine.index.docindex.add_filter_fields` (the sentence index, the
    document index, the impact-term layout of ``bench/impact_terms.py``); None when no
    restriction is set."""
    if filters is None or filters.is_empty():
        return None
    s = schema
    must: list[tuple[tantivy.Occur, tantivy.Query]] = []

    def any_of(field_name: str, values: Iterable[str]) -> None:
        vals = list(values)
        if not vals:
            must.append((tantivy.Occur.Must, tantivy.Query.empty_query()))
        elif len(vals) == 1:
            must.append((tantivy.Occur.Must, tantivy.Query.term_query(s, field_name, vals[0])))
        else:
            must.append((tantivy.Occur.Must, tantivy.Query.term_set_query(s, field_name, vals)))

    if filters.folder is not None:
        any_of("folder", [to_store(normalize_path(filters.folder))])
    if filters.kinds is not None:
        any_of("kind", filters.kinds)
    if filters.sender is not None:
        senders = [filters.sender] if isinstance(filters.sender, str) else filters.sender
        any_of("sender", sorted({s.strip().lower() for s in senders}))
    if filters.mailbox is not None:
        any_of("mailbox", [filters.mailbox.strip().lower()])
    if filters.doc_keys is not None:
        any_of("doc_key", [to_store(k) for k in filters.doc_keys])
    lo, hi = _epoch(filters.date_from), _epoch(filters.date_to, end_of_day=True)
    if lo is not None or hi is not None:
        must.append(
            (
                tantivy.Occur.Must,
                tantivy.Query.range_query(s, "date", tantivy.FieldType.Integer, lo, hi),
            )
        )
    if filters.exclude_keys:
        keys = [to_store(k) for k in filters.exclude_keys]
        must.append((tantivy.Occur.MustNot, tantivy.Query.term_set_query(s, "doc_key", keys)))
        if not any(o == tantivy.Occur.Must for o, _ in must):
            must.append((tantivy.Occur.Must, tantivy.Query.all_query()))
    return tantivy.Query.const_score_query(tantivy.Query.boolean_query(must), 0.0)
