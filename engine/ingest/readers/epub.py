"""EPUB e-books, by ebooklib: the chapters of the spine in order, each read as HTML. The
chapters' headings are the book's sections; a chapter that opens without one is named by the
book's table of contents."""

from __future__ import annotations

from typing import Any

from engine.ingest.documents import section_fields
from engine.ingest.readers.common import Extracted, heading_starts, join_paragraphs, open_zipped
from engine.ingest.readers.html import html_to_text


def _toc_titles(book: Any) -> dict[str, str]:
    """The table of contents' first title for each chapter file (its name, no ``#part``)."""
    from ebooklib import epub

    titles: dict[str, str] = {}

    def walk(entries: Any) -> None:
        for entry in entries:
            if isinstance(entry, (tuple, list)) and len(entry) == 2:  # (Section, its entries)
                walk([entry[0], *entry[1]])
            elif isinstance(entry, (epub.Link, epub.Section)) and entry.href and entry.title:
                titles.setdefault(entry.href.split("#", 1)[0], " ".join(str(entry.title).split()))

    walk(book.toc or [])
    return titles


def read_epub(data: bytes, where: str) -> Extracted:
    import ebooklib
    from ebooklib import epub

    # A file object, never bytes: ebooklib takes bytes for a file name.
    book = open_zipped(data, where, "EPUB", lambda f: epub.read_epub(f, options={"ignore_ncx": True}))
    toc = _toc_titles(book)
    chapters: list[str] = []
    starts: list[tuple[int, str]] = []
    at = 0
    for entry in book.spine:
        idref = entry[0] if isinstance(entry, (tuple, list)) else entry
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        headings: list[str] = []
        text, _ = html_to_text(item.get_content(), headings=headings)
        if not text:
            continue
        own = heading_starts(text, headings)
        named = toc.get(item.get_name())
        if named and (not own or own[0][0] > 0):  # the chapter opens without a heading
            own.insert(0, (0, named))
        starts += [(at + o, h) for o, h in own]
        chapters.append(text)
        at += len(text) + 2  # join_paragraphs: one blank line between chapters
    title = None
    meta = book.get_metadata("DC", "title")
    if meta:
        title = str(meta[0][0]).strip() or None
    return join_paragraphs(chapters), title, section_fields(starts)
