"""HTML (``.html``, ``.htm``, ``.xhtml``): the visible text by beautifulsoup4 with lxml, block
elements as paragraphs; also what Markdown, EPUB chapters and HTML e-mail are read through
(:func:`html_to_text`)."""

from __future__ import annotations

import re
import warnings

from engine.ingest.documents import section_fields
from engine.ingest.readers.common import Extracted, decode_text, heading_starts, join_paragraphs

#: HTML nested deeper than this (counted on its tags, before parsing) is read as plain text
#: with its tags dropped: a tree parser takes minutes on 100,000 nested elements.
MAX_HTML_DEPTH = 1000

_DROP_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "head", "iframe", "object", "canvas")
_HEADING_TAGS = ["h1", "h2", "h3", "h4", "h5", "h6"]
# Elements that end a paragraph: sections, headings, lists, tables, quotes.
_BLOCK_TAGS = [
    *("p", "div", "section", "article", "main", "aside", "header", "footer", "address", "hr"),
    *_HEADING_TAGS,
    *("li", "ul", "ol", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "caption"),
    *("blockquote", "pre", "figure", "figcaption", "form", "fieldset", "details", "summary"),
]
_CELL_TAGS = ("td", "th")
_PARA, _LINE = "\ue000", "\ue001"  # private-use markers that survive get_text()

# Quoted history in HTML e-mail (Gmail, Thunderbird, Apple Mail, Outlook on the web).
_QUOTE_SELECTORS = (
    "blockquote[type=cite]",
    ".gmail_quote",
    ".moz-cite-prefix",
    "#divRplyFwdMsg",
    "#appendonsend",
)


_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*?(/?)>")
_VOID_TAGS = frozenset(
    b"area base br col embed hr img input link meta param source track wbr p li dt dd tr td th"
    b" option optgroup thead tbody tfoot colgroup rp rt".split()
)
_ANY_TAG = re.compile(r"<[^>]*>")
_BLOCK_END = re.compile(r"(?i)</?(?:p|div|br|li|h[1-6]|tr|table|section|article|blockquote|pre)\b[^>]*>")


def html_depth(data: bytes, stop: int = MAX_HTML_DEPTH) -> int:
    """How deep the elements of an HTML page nest, counted on its tags (elements whose end
    tag may be left out are not counted); stops counting past ``stop``."""
    depth = deepest = 0
    for m in _TAG.finditer(data):
        closing, name, selfclosing = m.group(1), m.group(2).lower(), m.group(3)
        if name in _VOID_TAGS or selfclosing:
            continue
        if closing:
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
    return deepest


def _flat_html_text(html: str) -> str:
    """Text of HTML too deeply nested to parse as a tree: block tags end paragraphs, other
    tags are dropped, entities decoded."""
    import html as html_mod

    text = _BLOCK_END.sub("\n\n", html)
    text = html_mod.unescape(_ANY_TAG.sub(" ", text))
    return join_paragraphs([" ".join(p.split()) for p in text.split("\n\n")])


def html_to_text(
    html: str | bytes, drop_quotes: bool = False, headings: list[str] | None = None
) -> tuple[str, str | None]:
    """Visible text of an HTML page as blank-line separated paragraphs, and its ``<title>``;
    an image's alternative text of two words or more stands where the image is.

    ``drop_quotes`` also removes the quoted history of an HTML e-mail reply. A page nested
    deeper than ``MAX_HTML_DEPTH`` is read without building a tree (``_flat_html_text``).
    ``headings``, when given, receives the text of the page's ``<h1>``-``<h6>`` in order (for
    ``engine.ingest.readers.common.heading_starts``).
    """
    from bs4 import BeautifulSoup, NavigableString

    raw_bytes = html if isinstance(html, bytes) else html.encode("utf-8", "surrogatepass")
    if html_depth(raw_bytes) > MAX_HTML_DEPTH:
        source = html if isinstance(html, str) else decode_text(html, "html")[0]
        return _flat_html_text(source), None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bs4 warns on markup that looks like a file name or URL
        soup = BeautifulSoup(html, "lxml")
    title = None
    if soup.title is not None:
        title = " ".join(soup.title.get_text().split()) or None
    for tag in soup.find_all(list(_DROP_TAGS)):
        if not tag.decomposed:
            tag.decompose()
    if drop_quotes:
        for selector in _QUOTE_SELECTORS:
            for tag in soup.select(selector):
                if tag.decomposed:
                    continue
                if selector == "#appendonsend":  # Outlook: everything after this marker is history
                    for later in list(tag.find_all_next()):
                        if not later.decomposed:
                            later.decompose()
                tag.decompose()
    for img in soup.find_all("img"):
        # an image's words, where a text browser shows them; a one-word alt ("logo",
        # "Facebook", "spacer") is an icon's, not content
        alt = " ".join(str(img.get("alt") or "").split())
        if len(alt.split()) >= 2:
            img.replace_with(NavigableString(f" {alt} "))
    for pre in soup.find_all("pre"):
        for string in pre.find_all(string=True):
            string.replace_with(NavigableString(str(string).replace("\n", _LINE)))
    for br in soup.find_all("br"):
        br.replace_with(_LINE)
    for tag in soup.find_all(list(_CELL_TAGS)):
        tag.insert_after(" \t ")
    if headings is not None:
        headings += [" ".join(h.get_text().replace(_LINE, " ").split()) for h in soup.find_all(_HEADING_TAGS)]
    for tag in soup.find_all(_BLOCK_TAGS):
        tag.insert_before(_PARA)
        tag.insert_after(_PARA)
    raw = soup.get_text()
    paragraphs = []
    for chunk in raw.split(_PARA):
        lines = [" ".join(line.split()) for line in chunk.split(_LINE)]
        paragraphs.append("\n".join(line for line in lines if line))
    return join_paragraphs(paragraphs), title


def read_html(data: bytes, where: str) -> Extracted:
    headings: list[str] = []
    text, title = html_to_text(data, headings=headings)
    notes = section_fields(heading_starts(text, headings))
    if html_depth(data) > MAX_HTML_DEPTH:
        notes["note"] = f"HTML nested more than {MAX_HTML_DEPTH:,} deep: read as plain text, without its layout"
    return text, title, notes


def looks_like_html(head: bytes) -> bool:
    """Whether a file's first bytes begin an HTML page (a doctype, ``<html``, or XHTML)."""
    lower = head.lstrip()[:512].lower()
    xhtml = lower.startswith(b"<?xml") and b"<html" in lower
    return lower.startswith((b"<!doctype html", b"<html")) or xhtml
