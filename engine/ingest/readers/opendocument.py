"""OpenDocument, by odfpy: text (ODT), spreadsheets (ODS) and presentations (ODP). A sheet or
slide is one paragraph, a line per row or text paragraph (``engine.ingest.readers.tables``)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from engine.ingest.documents import ExtractionError, section_fields
from engine.ingest.readers.common import Extracted, clean, heading_starts, join_paragraphs, open_zipped, tidy
from engine.ingest.readers.tables import MAX_TABLE_CELLS, TableBudget, one_line, sheet_paragraph


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


def _odf_load(data: bytes, where: str, name: str, body: str) -> tuple[Any, Any]:
    """An OpenDocument file and its ``body`` element (``text``, ``spreadsheet``, ``presentation``)."""
    from odf.opendocument import load

    def opened(f: io.BytesIO) -> tuple[Any, Any]:
        document = load(f)
        return document, getattr(document, body, None)

    document, element = open_zipped(data, where, name, opened)
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


def read_odt(data: bytes, where: str) -> Extracted:
    document, body = _odf_load(data, where, "ODT", "text")
    from odf.text import H

    paragraphs: list[str] = []
    _odf_blocks(body, paragraphs)
    text = tidy(join_paragraphs(paragraphs))
    headings = [_odf_inline(h, []) for h in body.getElementsByType(H)]
    return text, _odf_title(document), section_fields(heading_starts(text, headings))


def read_ods(data: bytes, where: str) -> Extracted:
    from odf import teletype
    from odf.namespaces import TABLENS, TEXTNS

    document, body = _odf_load(data, where, "ODS", "spreadsheet")
    budget = TableBudget()

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
        return one_line(" ".join(parts))

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
        sheets.append(sheet_paragraph(table.getAttrNS(TABLENS, "name") or "", lines))
    return clean(join_paragraphs(sheets)), _odf_title(document), budget.notes()


def read_odp(data: bytes, where: str) -> Extracted:
    from odf.namespaces import DRAWNS

    document, body = _odf_load(data, where, "ODP", "presentation")
    slides: list[str] = []
    for page in body.childNodes:
        if getattr(page, "qname", None) != (DRAWNS, "page"):
            continue
        blocks: list[str] = []
        _odf_blocks(page, blocks)  # its frames in order, then its speaker notes
        slides.append("\n".join(x for x in (one_line(b) for b in blocks) if x))
    return clean(join_paragraphs(slides)), _odf_title(document), {}
