"""Turn a file (or the bytes of an attachment) into plain text Documents.

Each format goes through a well-kept library (pypdf, python-docx, odfpy, ebooklib,
striprtf, beautifulsoup4 with lxml, markdown-it-py, openpyxl, python-pptx) and comes out as
paragraphs separated by blank lines, because ``engine.ingest.segment`` cuts passages on blank
lines (a spreadsheet's sheet or a presentation's slide is one paragraph, a line per row or
text paragraph: see ``engine.ingest.documents.LINE_KINDS``). Every failure -- an unreadable or vanished file, a
corrupt or encrypted document, binary data posing as text, a file over the size limit --
becomes an ``ExtractionError`` naming the file and the reason, so one bad file never stops
an indexing run; a format that is not read at all (``UNSUPPORTED_FORMATS``, unknown binary
data) is an ``UnsupportedFormat`` error, which the indexer records as skipped.

This module reads one format's bytes (:func:`document_from_bytes`); the unit-level entry
points are in :mod:`engine.ingest.extract` and e-mail (with its attachments) in
:mod:`engine.ingest.mail`, both built on this one.
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.ingest.documents import Document, ExtractionError
from engine.ingest.walk import MAX_FILE_BYTES, open_regular

log = logging.getLogger(__name__)

# Files larger than this are refused without being read (the catalog records the error).
#: A document whose text is longer than this is not indexed (its name is): ~3,000 pages.
MAX_TEXT_CHARS = 6_000_000
#: Zip-based formats (DOCX, ODT, EPUB, XLSX, PPTX, ODS, ODP): what the archive's directory
#: says its members expand to is checked before anything is decompressed. A zip bomb named
#: .docx, or a 205 KB ODT holding a 200 MB paragraph, is refused instead of parsed.
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
#: ... and past this size, at most this many times the archive's own size (office XML
#: compresses 5-20 times).
ZIP_RATIO_FROM = 16 * 1024 * 1024
MAX_ZIP_RATIO = 100
#: HTML nested deeper than this (counted on its tags, before parsing) is read as plain text
#: with its tags dropped: a tree parser takes minutes on 100,000 nested elements.
MAX_HTML_DEPTH = 1000

EXTENSION_KINDS: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".odt": "odt",
    ".epub": "epub",
    ".rtf": "rtf",
    ".eml": "email",
    ".emlx": "email",  # Apple Mail: one message per file, wrapped (engine.ingest.mail.emlx_message)
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".pptx": "pptx",
    ".ods": "ods",
    ".odp": "odp",
}

#: Document formats that are recognised but not read, and what to do about them. Such a file
#: is indexed by its name only and listed as skipped with this reason.
UNSUPPORTED_FORMATS: dict[str, str] = {
    ".doc": "Word 97-2003 document (.doc) is not supported; save it as .docx to search its text",
    ".dot": "Word 97-2003 template (.dot) is not supported; save it as .docx to search its text",
    ".xls": "Excel 97-2003 workbook (.xls) is not supported; save it as .xlsx to search its text",
    ".ppt": "PowerPoint 97-2003 presentation (.ppt) is not supported; save it as .pptx to search its text",
    ".pps": "PowerPoint 97-2003 slide show (.pps) is not supported; save it as .pptx to search its text",
    ".pptm": "macro-enabled PowerPoint presentation (.pptm) is not supported; save it as .pptx to search its text",
    ".key": "Keynote presentation (.key) is not supported; export it as .pptx to search its text",
    ".numbers": "Numbers spreadsheet (.numbers) is not supported; export it as .xlsx to search its text",
    ".pages": "Pages document (.pages) is not supported; export it as .docx to search its text",
}

MIME_KINDS: dict[str, str] = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/epub+zip": "epub",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "message/rfc822": "email",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}

#: A spreadsheet is read up to this many cells (empty ones count: reading them is the cost)
#: and this many characters of cell text; the rest is left out, with a note in status.
MAX_TABLE_CELLS = 200_000
MAX_TABLE_CHARS = 2_000_000

# Share of control characters above which decoded "text" is taken to be binary data.
MAX_CONTROL_SHARE = 0.05

#: The reason for bytes that should be text but are not.
BINARY_DATA = "binary data, not text"

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_MANY_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_SPACES = re.compile(r"[ \t\u00a0]+")


# --------------------------------------------------------------------------- helpers


def _fmt_size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def too_large(size: int, limit: int) -> str:
    """The reason text for a unit over the size limit."""
    return f"file too large ({_fmt_size(size)} > {_fmt_size(limit)} limit)"


def iso_utc(timestamp: float) -> str:
    """A POSIX time as ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def join_paragraphs(paragraphs: list[str]) -> str:
    """Non-empty paragraphs, each trimmed, separated by one blank line."""
    return "\n\n".join(p for p in (q.strip() for q in paragraphs) if p)


def tidy(text: str) -> str:
    """Unify line ends, trim trailing spaces, collapse runs of blank lines to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _MANY_BLANKS.sub("\n\n", text).strip()


def read_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file, refusing (without reading) one over ``max_bytes``."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ExtractionError(path, exc.strerror or str(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise ExtractionError(path, "is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        # Opening a FIFO would block until a writer appears; devices may never end.
        raise ExtractionError(path, "not a regular file (FIFO, socket or device)")
    if st.st_size > max_bytes:
        raise ExtractionError(path, too_large(st.st_size, max_bytes))
    try:
        with open_regular(path) as handle:  # never blocks on a file swapped for a FIFO
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ExtractionError(path, exc.strerror or str(exc)) from None
    if len(data) > max_bytes:  # grew between stat and read
        raise ExtractionError(path, too_large(len(data), max_bytes))
    return data, st


def check_zip(data: bytes, where: str, name: str) -> None:
    """Refuse an archive that would expand too much (see ``MAX_UNZIPPED_BYTES``), from the
    sizes in its directory (Python's zipfile never reads past a member's stated size)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ExtractionError(where, f"corrupt {name}: {type(exc).__name__}: {exc}") from None
    total = sum(max(0, i.file_size) for i in infos)
    if total > MAX_UNZIPPED_BYTES or (total > ZIP_RATIO_FROM and total > MAX_ZIP_RATIO * max(1, len(data))):
        raise ExtractionError(
            where,
            f"{name} expands to {_fmt_size(total)} from {_fmt_size(len(data))} (limit {_fmt_size(MAX_UNZIPPED_BYTES)},"
            f" or {MAX_ZIP_RATIO}x past {_fmt_size(ZIP_RATIO_FROM)}): a zip bomb or a damaged file; skipped",
        )
    if len(infos) > 100_000:
        raise ExtractionError(where, f"{name} holds {len(infos):,} parts: skipped")


# --------------------------------------------------------------------------- plain text


def decode_text(data: bytes, where: str) -> tuple[str, dict[str, str]]:
    """Decode bytes that should be text; returns the text and notes for ``Document.fields``.

    A byte-order mark decides (UTF-8, UTF-16, UTF-32); otherwise strict UTF-8; otherwise
    cp1252 (latin-1 for the five bytes cp1252 leaves undefined), noted in the fields. NUL
    bytes without a UTF-16/32 BOM, or too many control characters, mean binary data.
    """
    notes: dict[str, str] = {}
    if data.startswith(b"\xef\xbb\xbf"):
        text, encoding = data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    elif data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        text, encoding = data.decode("utf-32", errors="replace"), "utf-32"
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text, encoding = data.decode("utf-16", errors="replace"), "utf-16"
    else:
        if b"\x00" in data:
            raise ExtractionError(where, BINARY_DATA)
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            try:
                text, encoding = data.decode("cp1252"), "cp1252"
            except UnicodeDecodeError:
                text, encoding = data.decode("latin-1"), "latin-1"
            notes["encoding"] = encoding
            notes["note"] = f"not valid UTF-8; decoded as {encoding}"
    sample = text[:65536]
    if sample and len(_CONTROL.findall(sample)) > MAX_CONTROL_SHARE * len(sample):
        raise ExtractionError(where, BINARY_DATA)
    if encoding != "utf-8" and "encoding" not in notes:
        notes["encoding"] = encoding
    return text, notes


def _text(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    text, notes = decode_text(data, where)
    return tidy(_CONTROL.sub("", text)), None, notes


# --------------------------------------------------------------------------- HTML and Markdown

_DROP_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "head", "iframe", "object", "canvas")
# Elements that end a paragraph: sections, headings, lists, tables, quotes.
_BLOCK_TAGS = [
    *("p", "div", "section", "article", "main", "aside", "header", "footer", "address", "hr"),
    *("h1", "h2", "h3", "h4", "h5", "h6"),
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


def html_to_text(html: str | bytes, drop_quotes: bool = False) -> tuple[str, str | None]:
    """Visible text of an HTML page as blank-line separated paragraphs, and its ``<title>``;
    an image's alternative text of two words or more stands where the image is.

    ``drop_quotes`` also removes the quoted history of an HTML e-mail reply. A page nested
    deeper than ``MAX_HTML_DEPTH`` is read without building a tree (``_flat_html_text``).
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
    for tag in soup.find_all(_BLOCK_TAGS):
        tag.insert_before(_PARA)
        tag.insert_after(_PARA)
    raw = soup.get_text()
    paragraphs = []
    for chunk in raw.split(_PARA):
        lines = [" ".join(line.split()) for line in chunk.split(_LINE)]
        paragraphs.append("\n".join(line for line in lines if line))
    return join_paragraphs(paragraphs), title


def _html(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    text, title = html_to_text(data)
    notes = {}
    if html_depth(data) > MAX_HTML_DEPTH:
        notes["note"] = f"HTML nested more than {MAX_HTML_DEPTH:,} deep: read as plain text, without its layout"
    return text, title, notes


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*\n", re.S)


def markdown_to_text(source: str) -> tuple[str, str | None]:
    """Markdown rendered by markdown-it-py (CommonMark plus tables), then read as HTML.

    The title is the first top-level heading, if any.
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
    text, _ = html_to_text(md.renderer.render(tokens, md.options, {}))
    return text, title


def _markdown(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    source, notes = decode_text(data, where)
    text, title = markdown_to_text(source)
    return text, title, notes


# --------------------------------------------------------------------------- PDF


def _pdf_paragraphs(page_text: str) -> str:
    """Guess paragraph ends in a page's text: pypdf gives one line per printed line.

    A line clearly shorter than the page's full lines ends a paragraph (the usual last
    line of a paragraph, a heading, a list item). Runs of spaces from justified text are
    collapsed.
    """
    lines = [_SPACES.sub(" ", line).strip() for line in page_text.split("\n")]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    lengths = sorted(len(line) for line in lines)
    full = lengths[int(0.9 * (len(lengths) - 1))]
    if full < 40:  # short lines everywhere (slides, tables): leave the layout alone
        return "\n".join(lines)
    out: list[str] = []
    for line in lines:
        out.append(line)
        out.append("\n\n" if len(line) < 0.75 * full else "\n")
    return "".join(out).strip()


_COLUMN_GAP = re.compile(r"\S {6,}\S")
_SENTENCE_END = re.compile(r"[.!?:;\"'\u201d\u2019)\]]$")


def _pdf_layout_paragraphs(layout: str) -> str | None:
    """Paragraphs from pypdf's layout mode, which shows vertical gaps as blank lines.

    Returns None for a page that looks multi-column (layout mode puts the columns side by
    side on one line; plain mode reads them one after the other). A block that stops
    mid-sentence and is followed by one starting in lower case is joined back (double
    line spacing, a page footer gap).
    """
    lines = [line.strip() for line in layout.split("\n")]
    text_lines = [line for line in lines if line]
    if not text_lines:
        return ""
    if len(text_lines) >= 4 and sum(bool(_COLUMN_GAP.search(line)) for line in text_lines) > 0.3 * len(
        text_lines
    ):
        return None
    blocks: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line:
            current.append(_SPACES.sub(" ", line))
        elif current:
            block = "\n".join(current)
            if blocks and not _SENTENCE_END.search(blocks[-1]) and block[:1].islower():
                blocks[-1] += "\n" + block
            else:
                blocks.append(block)
            current = []
    return "\n\n".join(blocks)


def _pdf_page_text(page: Any) -> str:
    try:
        layout = _pdf_layout_paragraphs(page.extract_text(extraction_mode="layout") or "")
    except Exception as exc:  # layout mode is the younger code path; plain mode is the fallback
        log.debug("PDF layout mode failed, plain mode instead: %s: %s", type(exc).__name__, exc)
        layout = None
    if layout is not None:
        return layout
    return _pdf_paragraphs(page.extract_text() or "")


def _pdf(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # recoverable-damage chatter
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")  # many PDFs are encrypted with an empty user password
            except (DependencyError, NotImplementedError) as exc:
                raise ExtractionError(where, f"encrypted PDF that cannot be opened: {exc}") from None
            if not ok:
                raise ExtractionError(where, "encrypted PDF (password required)")
        pages: list[str] = []
        failed: list[int] = []
        for number, page in enumerate(reader.pages, start=1):
            try:
                pages.append(_pdf_page_text(page))
            except Exception as exc:  # one damaged page must not cost the others (the notes name it)
                log.debug("%s: page %d unreadable: %s: %s", where, number, type(exc).__name__, exc)
                failed.append(number)
        if failed and len(failed) == len(pages) + len(failed):
            raise ExtractionError(where, f"corrupt PDF: no page could be read ({len(failed)} pages)")
        title = None
        try:
            meta = reader.metadata
            if meta is not None and meta.title:
                title = str(meta.title).strip() or None
        except Exception as exc:  # a damaged info dictionary must not cost the text
            log.debug("%s: PDF title unreadable: %s: %s", where, type(exc).__name__, exc)
            title = None
    except ExtractionError:
        raise
    except FileNotDecryptedError:
        raise ExtractionError(where, "encrypted PDF (password required)") from None
    except PdfReadError as exc:
        raise ExtractionError(where, f"corrupt PDF: {exc}") from None
    except Exception as exc:  # pypdf raises many types on damaged files
        raise ExtractionError(where, f"corrupt PDF: {type(exc).__name__}: {exc}") from None
    notes: dict[str, str] = {}
    text = tidy(_CONTROL.sub("", join_paragraphs(pages)))
    if failed:
        notes["note"] = f"unreadable pages skipped: {', '.join(map(str, failed))}"
    elif not text:
        notes["note"] = "no extractable text (scanned or image-only PDF?)"
    return text, title, notes


# --------------------------------------------------------------------------- office and e-books


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_CHOICE = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Choice"
_MC_ALTERNATE = "{http://schemas.openxmlformats.org/markup-compatibility/2006}AlternateContent"
#: Elements whose text is not the document's (deleted text of a tracked change, a field's
#: code) or that hold none (run, paragraph and section properties): not walked.
_DOCX_SKIP = {_W + "del", _W + "moveFrom", _W + "instrText", _W + "delText", _W + "rPr", _W + "pPr", _W + "sectPr"}


def _docx_blocks(parent: Any, out: list[str], rows: list[str] | None = None) -> None:
    """The text of a Word body (or cell, content control, text box) in reading order: a
    paragraph per block into ``out``, a table row as its cells joined by `` | `` into ``rows``
    (``out`` for the body; a cell's own paragraphs make its text, a table inside it adds its
    rows before the row holding it), and what python-docx's own reading skips: content
    controls (``w:sdt``, common in templates and forms), text boxes (after the paragraph they
    are anchored in) and tracked insertions."""
    rows = out if rows is None else rows
    for child in parent:
        tag = child.tag
        if tag == _W + "p":
            boxes: list[Any] = []
            out.append(_docx_inline(child, boxes))
            for box in boxes:
                _docx_blocks(box, out, rows)
        elif tag == _W + "tbl":
            for row in _docx_own(child, _W + "tr"):
                cells = []
                for cell in _docx_own(row, _W + "tc"):
                    texts: list[str] = []
                    _docx_blocks(cell, texts, rows)
                    text = " ".join(t.strip() for t in texts if t.strip())
                    if text:
                        cells.append(text)
                if cells:
                    rows.append(" | ".join(cells))
        elif tag == _MC_ALTERNATE:  # the same content twice: one alternative
            first = child.find(_MC_CHOICE)
            _docx_blocks(first if first is not None else child, out, rows)
        elif tag not in _DOCX_SKIP:
            _docx_blocks(child, out, rows)  # w:sdt / w:sdtContent, w:customXml, w:ins ...


def _docx_own(el: Any, tag: str) -> Iterator[Any]:
    """The ``tag`` elements of a table or row, looking through content controls and custom
    XML (a row or cell may be wrapped in either), not into nested tables."""
    for child in el:
        if child.tag == tag:
            yield child
        elif child.tag in (_W + "sdt", _W + "sdtContent", _W + "customXml"):
            yield from _docx_own(child, tag)


def _docx_inline(el: Any, boxes: list[Any]) -> str:
    """A paragraph's text: its runs, wherever nested (hyperlinks, inline content controls,
    tracked insertions, smart tags); tabs and breaks as python-docx writes them. Text boxes
    are collected into ``boxes`` (one alternative of each ``mc:AlternateContent``: Word stores
    a text box twice, as DrawingML and as VML)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        for child in node:
            tag = child.tag
            if tag == _W + "t":
                out.append(child.text or "")
            elif tag == _W + "tab":
                out.append("\t")
            elif tag in (_W + "br", _W + "cr"):
                out.append("\n")
            elif tag == _W + "txbxContent":
                boxes.append(child)
            elif tag == _MC_ALTERNATE:
                first = child.find(_MC_CHOICE)
                walk(first if first is not None else child)
            elif tag not in _DOCX_SKIP:
                walk(child)

    walk(el)
    return "".join(out)


#: The parts of a Word file python-docx does not read, in the order their text follows the
#: body's, and the element of each that holds one note, comment or (the root) header/footer.
_DOCX_PARTS = (
    ("footnotes", _W + "footnote"),
    ("endnotes", _W + "endnote"),
    ("comments", _W + "comment"),
    ("header", None),
    ("footer", None),
)


def _docx_parts(document: Any) -> list[str]:
    """The footnotes, endnotes, comments, headers and footers of a Word document, a paragraph
    each after its text (python-docx reads none of them): the separator lines Word keeps among
    the notes are not notes, and a header or footer line repeated by several sections (a first
    page's, an even page's) is read once."""
    from lxml import etree

    out: list[str] = []
    for kind, element in _DOCX_PARTS:
        seen: set[str] = set()
        for rel in document.part.rels.values():
            if rel.is_external or not rel.reltype.endswith("/" + kind):
                continue
            try:
                root = etree.fromstring(rel.target_part.blob, etree.XMLParser(resolve_entities=False))
            except etree.XMLSyntaxError:  # a damaged part: the document's text stands
                continue
            if element is None:  # a header or footer: its root holds the paragraphs
                lines: list[str] = []
                _docx_blocks(root, lines)
                for line in lines:
                    if (key := line.strip()) and key not in seen:
                        seen.add(key)
                        out.append(line)
                continue
            for note in root.iter(element):
                if note.get(_W + "type") in (None, "normal"):
                    _docx_blocks(note, out)
    return out


def _docx(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    import docx

    document = _open_zipped(data, where, "DOCX", docx.Document)
    paragraphs: list[str] = []
    _docx_blocks(document.element.body, paragraphs)
    paragraphs += _docx_parts(document)
    title = (document.core_properties.title or "").strip() or None
    return tidy(join_paragraphs(paragraphs)), title, {}


def _odf_blocks(node: Any, out: list[str]) -> None:
    """The paragraphs and headings under an OpenDocument node, in order; a table row is one
    block, its non-empty cells joined by `` | `` (a cell's paragraphs joined by spaces); a
    frame (text box) or footnote inside a paragraph is a block of its own after it, so its
    words are not glued to the paragraph's ("note1Footnote")."""
    from odf.namespaces import TABLENS, TEXTNS

    qname = getattr(node, "qname", None)
    if qname in ((TEXTNS, "p"), (TEXTNS, "h")):
        boxes: list[Any] = []
        out.append(_odf_inline(node, boxes))
        for box in boxes:
            _odf_blocks(box, out)
        return
    if qname == (TABLENS, "table-row"):
        cells = []
        for c in node.childNodes:
            if getattr(c, "qname", None) == (TABLENS, "table-cell"):
                texts: list[str] = []
                _odf_blocks(c, texts)
                cells.append(" ".join(t.strip() for t in texts if t.strip()))
        out.append(" | ".join(c for c in cells if c))
        return
    for child in getattr(node, "childNodes", []):
        _odf_blocks(child, out)


def _odf_inline(node: Any, boxes: list[Any]) -> str:
    """A paragraph's text as ``odf.teletype.extractText`` reads it (spaces, tabs and line
    breaks unwrapped), with its frames and footnote bodies put in ``boxes`` instead."""
    from odf.namespaces import DRAWNS, TEXTNS

    out: list[str] = []
    for child in node.childNodes:
        if child.nodeType == child.TEXT_NODE:
            out.append(child.data)
            continue
        qname = getattr(child, "qname", None)
        if qname == (TEXTNS, "line-break"):
            out.append("\n")
        elif qname == (TEXTNS, "tab"):
            out.append("\t")
        elif qname == (TEXTNS, "s"):
            count = child.getAttribute("c")
            out.append(" " * (int(count) if count and count.isdigit() else 1))
        elif qname == (DRAWNS, "frame"):
            boxes.append(child)
        elif qname == (TEXTNS, "note"):
            boxes.extend(c for c in child.childNodes if getattr(c, "qname", None) == (TEXTNS, "note-body"))
        else:
            out.append(_odf_inline(child, boxes))
    return "".join(out)


def _open_zipped(data: bytes, where: str, name: str, opener: Callable[[io.BytesIO], Any]) -> Any:
    """A zip-based document (DOCX, XLSX, PPTX, EPUB, OpenDocument) opened by its library's
    ``opener``, after ``check_zip``; whatever the library raises is "corrupt NAME" naming why."""
    check_zip(data, where, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl and ebooklib warn about what they skip
            return opener(io.BytesIO(data))
    except Exception as exc:
        raise ExtractionError(where, f"corrupt {name}: {type(exc).__name__}: {exc}") from None


def _odf_load(data: bytes, where: str, name: str, body: str) -> tuple[Any, Any]:
    """An OpenDocument file and its ``body`` element (``text``, ``spreadsheet``, ``presentation``)."""
    from odf.opendocument import load

    def opened(f: io.BytesIO) -> tuple[Any, Any]:
        document = load(f)
        return document, getattr(document, body, None)

    document, element = _open_zipped(data, where, name, opened)
    if element is None:
        raise ExtractionError(where, f"corrupt {name}: no {body} body")
    return document, element


def _odf_title(document: Any) -> str | None:
    from odf import teletype
    from odf.namespaces import DCNS

    for node in document.meta.childNodes:
        if getattr(node, "qname", None) == (DCNS, "title"):
            return teletype.extractText(node).strip() or None
    return None


def _odt(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    document, body = _odf_load(data, where, "ODT", "text")
    paragraphs: list[str] = []
    _odf_blocks(body, paragraphs)
    return tidy(join_paragraphs(paragraphs)), _odf_title(document), {}


# --------------------------------------------------------------------------- spreadsheets and slides


class _TableBudget:
    """What is left of ``MAX_TABLE_CELLS`` and ``MAX_TABLE_CHARS`` for one spreadsheet."""

    def __init__(self) -> None:
        self.cells = MAX_TABLE_CELLS
        self.chars = MAX_TABLE_CHARS
        self.cut = False

    def row(self, cells: list[str], read: int) -> str | None:
        """A row as one line (its non-empty cells joined by `` | ``; ``read``: the cells it
        cost to read); None once the budget is spent."""
        line = " | ".join(c for c in cells if c)
        self.cells -= max(read, 1)
        self.chars -= len(line)
        if self.cells < 0 or self.chars < 0:
            self.cut = True
        return None if self.cut else line

    def notes(self) -> dict[str, str]:
        if not self.cut:
            return {}
        return {
            "note": f"large spreadsheet: only the first {MAX_TABLE_CELLS:,} cells "
            f"(or {MAX_TABLE_CHARS:,} characters) indexed"
        }


def _line(text: str) -> str:
    """One cell or text paragraph on one line, its whitespace collapsed."""
    return " ".join(text.split())


def _cell_text(value: Any) -> str:
    """A cell's value as it reads: whole numbers without ``.0``, dates without midnight."""
    import datetime as dt

    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g")
    if isinstance(value, dt.datetime):
        if value.time() == dt.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="minutes" if value.second == 0 else "seconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return _line(str(value))


def _sheet_paragraph(name: str, lines: list[str]) -> str:
    """A sheet (or slide) as one paragraph: its name as a heading line, then its lines."""
    lines = [line for line in lines if line]
    if not lines:
        return ""
    return "\n".join([_line(name), *lines] if name and name.strip() else lines)


def _xlsx(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    import openpyxl

    book = _open_zipped(
        data, where, "XLSX", lambda f: openpyxl.load_workbook(f, read_only=True, data_only=True)
    )
    budget = _TableBudget()
    sheets: list[str] = []
    try:
        for sheet in book.worksheets:
            if budget.cut:
                break
            # Stored dimensions are often wrong (a formatted column to XFD): rows are read
            # as long as their last cell instead of padded to them.
            sheet.reset_dimensions()
            lines: list[str] = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for values in sheet.iter_rows(values_only=True):
                    line = budget.row([_cell_text(v) for v in values], len(values))
                    if line is None:
                        break
                    lines.append(line)
            sheets.append(_sheet_paragraph(sheet.title, lines))
        title = ((book.properties.title if book.properties else None) or "").strip() or None
    except Exception as exc:
        raise ExtractionError(where, f"corrupt XLSX: {type(exc).__name__}: {exc}") from None
    finally:
        book.close()
    return tidy(_CONTROL.sub("", join_paragraphs(sheets))), title, budget.notes()


def _ods(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    from odf import teletype
    from odf.namespaces import TABLENS, TEXTNS

    document, body = _odf_load(data, where, "ODS", "spreadsheet")
    budget = _TableBudget()

    def repeat(node: Any, attr: str) -> int:
        try:
            return max(1, int(node.getAttrNS(TABLENS, attr) or 1))
        except (TypeError, ValueError):
            return 1

    def rows(node: Any) -> Iterator[Any]:
        for child in getattr(node, "childNodes", []):
            qname = getattr(child, "qname", None)
            if qname == (TABLENS, "table-row"):
                yield child
            elif qname in (
                (TABLENS, "table-rows"),
                (TABLENS, "table-header-rows"),
                (TABLENS, "table-row-group"),
            ):
                yield from rows(child)

    def cell_text(cell: Any) -> str:
        parts = [
            teletype.extractText(p)
            for p in cell.childNodes
            if getattr(p, "qname", None) in ((TEXTNS, "p"), (TEXTNS, "h"))
        ]
        return _line(" ".join(parts))

    sheets: list[str] = []
    for table in body.childNodes:
        if getattr(table, "qname", None) != (TABLENS, "table") or budget.cut:
            continue
        lines: list[str] = []
        for row in rows(table):
            cells: list[str] = []
            read = 0
            for cell in row.childNodes:
                if getattr(cell, "qname", None) != (TABLENS, "table-cell"):
                    continue  # covered (merged) cells repeat nothing
                text = cell_text(cell)
                # a run of empty cells (often to the last column) costs one cell
                n = min(repeat(cell, "number-columns-repeated"), MAX_TABLE_CELLS) if text else 1
                cells.extend([text] * n)
                read += n
            line = " | ".join(c for c in cells if c)
            # empty rows repeated to the sheet's end cost one row
            times = repeat(row, "number-rows-repeated") if line else 1
            for _ in range(min(times, MAX_TABLE_CELLS)):
                got = budget.row(cells, read)
                if got is None:
                    break
                lines.append(got)
            if budget.cut:
                break
        sheets.append(_sheet_paragraph(table.getAttrNS(TABLENS, "name") or "", lines))
    return tidy(_CONTROL.sub("", join_paragraphs(sheets))), _odf_title(document), budget.notes()


def _pptx(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    import pptx
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    deck = _open_zipped(data, where, "PPTX", pptx.Presentation)
    furniture = {PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER}

    def frame_lines(frame: Any) -> list[str]:
        # a line break inside a paragraph comes as a vertical tab
        return [_line(x) for p in frame.paragraphs for x in p.text.split("\v")]

    def shape_lines(shape: Any) -> list[str]:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            return [line for inner in shape.shapes for line in shape_lines(inner)]
        if shape.is_placeholder and shape.placeholder_format.type in furniture:
            return []
        if shape.has_text_frame:
            return frame_lines(shape.text_frame)
        if getattr(shape, "has_table", False) and shape.has_table:
            return [
                " | ".join(c for c in (_line(cell.text) for cell in row.cells) if c)
                for row in shape.table.rows
            ]
        return []

    slides: list[str] = []
    try:
        for slide in deck.slides:
            title = slide.shapes.title
            lines = frame_lines(title.text_frame) if title is not None and title.has_text_frame else []
            for shape in slide.shapes:
                if title is None or shape.shape_id != title.shape_id:
                    lines.extend(shape_lines(shape))
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                lines.extend(frame_lines(slide.notes_slide.notes_text_frame))
            slides.append("\n".join(line for line in lines if line))
        doc_title = (deck.core_properties.title or "").strip() or None
    except Exception as exc:
        raise ExtractionError(where, f"corrupt PPTX: {type(exc).__name__}: {exc}") from None
    return tidy(_CONTROL.sub("", join_paragraphs(slides))), doc_title, {}


def _odp(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    from odf.namespaces import DRAWNS

    document, body = _odf_load(data, where, "ODP", "presentation")
    slides: list[str] = []
    for page in body.childNodes:
        if getattr(page, "qname", None) != (DRAWNS, "page"):
            continue
        blocks: list[str] = []
        _odf_blocks(page, blocks)  # its frames in order, then its speaker notes
        slides.append("\n".join(x for x in (_line(b) for b in blocks) if x))
    return tidy(_CONTROL.sub("", join_paragraphs(slides))), _odf_title(document), {}


def _epub(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    import ebooklib
    from ebooklib import epub

    # A file object, never bytes: ebooklib takes bytes for a file name.
    book = _open_zipped(data, where, "EPUB", lambda f: epub.read_epub(f, options={"ignore_ncx": True}))
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


_RTF_TITLE = re.compile(r"\{\\title\s+([^{}]*)\}")


def _rtf(data: bytes, where: str) -> tuple[str, str | None, dict[str, str]]:
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip().startswith(b"{\\rtf"):
        raise ExtractionError(where, "corrupt RTF: no {\\rtf header")
    source = data.decode("latin-1")
    try:
        # RTF is 7-bit; \'xx escapes carry the code page, which striprtf reads from \ansicpg.
        text = rtf_to_text(source, errors="ignore")
        match = _RTF_TITLE.search(source)
        title = (
            rtf_to_text("{\\rtf1\\ansi " + match.group(1) + "}", errors="ignore").strip() if match else None
        )
    except Exception as exc:
        raise ExtractionError(where, f"corrupt RTF: {type(exc).__name__}: {exc}") from None
    # Each \par becomes one newline: in RTF a line break is a paragraph.
    paragraphs = text.replace("\r\n", "\n").split("\n")
    return tidy(_CONTROL.sub("", join_paragraphs(paragraphs))), title or None, {}


_Extractor = Callable[[bytes, str], tuple[str, "str | None", dict[str, str]]]
EXTRACTORS: dict[str, _Extractor] = {
    "text": _text,
    "markdown": _markdown,
    "html": _html,
    "pdf": _pdf,
    "docx": _docx,
    "odt": _odt,
    "epub": _epub,
    "rtf": _rtf,
    "xlsx": _xlsx,
    "ods": _ods,
    "pptx": _pptx,
    "odp": _odp,
}


# --------------------------------------------------------------------------- dispatch

_MAIL_HEADER = re.compile(
    rb"^(?:From|To|Subject|Date|Message-ID|Received|Return-Path|MIME-Version|Delivered-To|Reply-To|Cc):[ \t]",
    re.I | re.M,
)


def sniff_kind(data: bytes) -> str | None:
    """The format of bytes whose name says nothing, from their first bytes; None for unknown binary."""
    head = data[:4096]
    stripped = head.lstrip()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if stripped.startswith(b"{\\rtf"):
        return "rtf"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
                small = "mimetype" in names and archive.getinfo("mimetype").file_size < 256
                mimetype = archive.read("mimetype").strip() if small else b""
        except (zipfile.BadZipFile, OSError, KeyError, ValueError, EOFError, zlib.error):
            return None
        if mimetype == b"application/epub+zip":
            return "epub"
        odf = {
            b"application/vnd.oasis.opendocument.text": "odt",
            b"application/vnd.oasis.opendocument.spreadsheet": "ods",
            b"application/vnd.oasis.opendocument.presentation": "odp",
        }
        if mimetype in odf:
            return odf[mimetype]
        if "word/document.xml" in names:
            return "docx"
        if "xl/workbook.xml" in names:
            return "xlsx"
        if "ppt/presentation.xml" in names:
            return "pptx"
        return None
    lower = stripped[:512].lower()
    if lower.startswith((b"<!doctype html", b"<html")) or (lower.startswith(b"<?xml") and b"<html" in lower):
        return "html"
    header_block = head.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    if re.match(rb"[A-Za-z][A-Za-z0-9-]*:[ \t]", head) and len(_MAIL_HEADER.findall(header_block)) >= 2:
        return "email"
    return "text"


def kind_for_name(name: str, content_type: str | None = None) -> str | None:
    """The format named by a file name's extension, else by a MIME type; None when neither says."""
    kind = EXTENSION_KINDS.get(os.path.splitext(name)[1].lower())
    if kind is None and content_type:
        kind = MIME_KINDS.get(content_type.split(";")[0].strip().lower())
    return kind


def document_from_bytes(
    data: bytes,
    kind: str,
    *,
    key: str,
    path: str,
    title: str,
    fields: dict[str, str],
    parent_key: str | None = None,
) -> Document:
    """Run one format's extractor over bytes; errors name ``key``."""
    text, found_title, notes = EXTRACTORS[kind](data, key)
    out_fields = dict(fields)
    if found_title:
        out_fields["title"] = found_title
    out_fields.update(notes)
    return Document(
        key=key,
        path=path,
        kind=kind,
        title=found_title or title,
        text=text,
        fields=out_fields,
        parent_key=parent_key,
    )
