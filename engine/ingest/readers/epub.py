"""EPUB e-books, by ebooklib: the chapters of the spine in order, each read as HTML."""

from __future__ import annotations

from engine.ingest.readers.common import Extracted, join_paragraphs, open_zipped
from engine.ingest.readers.html import html_to_text


def read_epub(data: bytes, where: str) -> Extracted:
    import ebooklib
    from ebooklib import epub

    # A file object, never bytes: ebooklib takes bytes for a file name.
    book = open_zipped(data, where, "EPUB", lambda f: epub.read_epub(f, options={"ignore_ncx": True}))
    chapters: list[str] = []
    for entry in book.spine:
        idref = entry[0] if isinstance(entry, (tuple, list)) else entry
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        text, _ = html_to_text(item.get_content())
        chapters.append(text)
    title = None
    meta = book.get_metadata("DC", "title")
    if meta:
        title = str(meta[0][0]).strip() or None
    return join_paragraphs(chapters), title, {}
