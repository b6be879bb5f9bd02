"""Plain text (``.txt``, ``.text``, and any text file whose name says nothing) and Markdown
(rendered by markdown-it-py, then read as HTML)."""

from __future__ import annotations

import re

from engine.ingest.documents import section_fields
from engine.ingest.readers.common import Extracted, clean, decode_text, heading_starts
from engine.ingest.readers.html import html_to_text


def read_text(data: bytes, where: str) -> Extracted:
    text, notes = decode_text(data, where)
    return clean(text), None, notes


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*\n", re.S)


def markdown_to_text(source: str, headings: list[str] | None = None) -> tuple[str, str | None]:
    """Markdown rendered by markdown-it-py (CommonMark plus tables), then read as HTML.

    The title is the first top-level heading, if any; ``headings``, when given, receives the
    text of every heading (``html_to_text``).
    """
    from markdown_it import MarkdownIt

    source = _FRONT_MATTER.sub("", source)
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = md.parse(source)
    title = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and i + 1 < len(tokens):
            inline = tokens[i + 1].children or []
            title = "".join(c.content for c in inline if c.type in ("text", "code_inline")).strip() or None
            break
    text, _ = html_to_text(md.renderer.render(tokens, md.options, {}), headings=headings)
    return text, title


def read_markdown(data: bytes, where: str) -> Extracted:
    source, notes = decode_text(data, where)
    headings: list[str] = []
    text, title = markdown_to_text(source, headings)
    return text, title, {**notes, **section_fields(heading_starts(text, headings))}

