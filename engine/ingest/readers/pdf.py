"""PDF, by pypdf: a page's paragraphs from its layout (vertical gaps) when it has one column,
else from its line lengths; an encrypted PDF is opened with the empty password if it can be.
A page without a text layer (a scan) that holds a picture is rendered by pypdfium2 and read
by OCR (:mod:`engine.ingest.readers.ocr`), unless OCR is off."""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from engine.ingest.documents import PAGES, ExtractionError, add_note, pages_field
from engine.ingest.readers import ocr
from engine.ingest.readers.common import SPACES, Extracted, clean, join_paragraphs

log = logging.getLogger(__name__)


def pdf_paragraphs(page_text: str) -> str:
    """Guess paragraph ends in a page's text: pypdf gives one line per printed line.

    A line clearly shorter than the page's full lines ends a paragraph (the usual last
    line of a paragraph, a heading, a list item). Runs of spaces from justified text are
    collapsed.
    """
    lines = [SPACES.sub(" ", line).strip() for line in page_text.split("\n")]
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
            current.append(SPACES.sub(" ", line))
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
    return pdf_paragraphs(page.extract_text() or "")


def read_pdf(data: bytes, where: str) -> Extracted:
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
        pages: dict[int, str] = {}
        failed: list[int] = []
        for number, page in enumerate(reader.pages, start=1):
            try:
                pages[number] = _pdf_page_text(page)
            except Exception as exc:  # one damaged page must not cost the others (the notes name it)
                log.debug("%s: page %d unreadable: %s: %s", where, number, type(exc).__name__, exc)
                failed.append(number)
        if failed and not pages:
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
    blank = [n for n, t in pages.items() if not t.strip()]
    if blank and ocr.pdf_ocr_available():  # scanned pages: their text by OCR
        found, ocr_notes = ocr.ocr_pdf_pages(data, blank, where)
        pages.update(found)
        for note in filter(None, ocr_notes.get("note", "").split("; ")):
            add_note(notes, note)
        if ocr.OCR_FIELD in ocr_notes:
            notes[ocr.OCR_FIELD] = ocr_notes[ocr.OCR_FIELD]
    text, starts = _paged_text(pages)
    if text:
        notes[PAGES] = pages_field(len(pages) + len(failed), starts)
    if failed:
        add_note(notes, f"unreadable pages skipped: {', '.join(map(str, failed))}")
    elif not text:
        add_note(notes, "no extractable text (scanned or image-only PDF?)")
    return text, title, notes


def _paged_text(pages: dict[int, str]) -> tuple[str, list[tuple[int, int]]]:
    """The document's text, its pages' paragraphs one blank line apart (as ``join_paragraphs``
    and ``clean`` make it), and where each page with text starts: (offset, page number)."""
    parts = [(n, clean(join_paragraphs([pages[n]]))) for n in sorted(pages)]
    starts, out, at = [], [], 0
    for number, part in parts:
        if not part:
            continue
        if out:
            at += 2  # the blank line between two pages
        starts.append((at, number))
        out.append(part)
        at += len(part)
    return "\n\n".join(out), starts


def looks_like_pdf(head: bytes) -> bool:
    return head.startswith(b"%PDF-")
