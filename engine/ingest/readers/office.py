"""Office Open XML: Word (DOCX, by python-docx and its XML), Excel (XLSX, XLSM, by openpyxl)
and PowerPoint (PPTX, by python-pptx). A sheet or slide is one paragraph, a line per row or
text paragraph (``engine.ingest.readers.tables``)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

from engine.ingest.documents import ExtractionError, section_fields
from engine.ingest.readers.common import Extracted, clean, heading_starts, join_paragraphs, open_zipped, tidy
from engine.ingest.readers.tables import TableBudget, one_line, sheet_paragraph

# --------------------------------------------------------------------------- Word

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


_HEADING_NAME = re.compile(r"heading [1-9]$", re.I)


def _outline(level: Any) -> bool:
    """Whether a ``w:outlineLvl`` element (or None) makes a heading: levels 0-8 (9 is body text)."""
    value = level.get(_W + "val") if level is not None else None
    return bool(value and value.isdigit() and int(value) < 9)


def _docx_heading_styles(document: Any) -> set[str]:
    """The ids of a Word file's heading styles: Word's built-in "heading N" (the name in the
    file is English whatever the language of Word that wrote it; the id is not), a style with
    an outline level, and a style based on either (a "My Heading" made from "Heading 2")."""
    based: dict[str, str] = {}
    found: set[str] = set()
    for style in document.styles.element.iter(_W + "style"):
        sid = style.get(_W + "styleId") or ""
        name = style.find(_W + "name")
        level = style.find(f"{_W}pPr/{_W}outlineLvl")
        parent = style.find(_W + "basedOn")
        if (name is not None and _HEADING_NAME.match(name.get(_W + "val") or "")) or _outline(level):
            found.add(sid)
        elif parent is not None:
            based[sid] = parent.get(_W + "val") or ""
    for sid, parent in based.items():
        for _ in range(10):  # a chain of styles, not a loop
            if parent in found:
                found.add(sid)
                break
            parent = based.get(parent, "")
    return found


def _docx_headings(document: Any) -> list[str]:
    """The text of a Word body's headings, in order: paragraphs of a heading style or with an
    outline level of their own (what Word's navigation pane lists)."""
    styles = _docx_heading_styles(document)
    out: list[str] = []
    for p in document.element.body.iter(_W + "p"):
        style = p.find(f"{_W}pPr/{_W}pStyle")
        level = p.find(f"{_W}pPr/{_W}outlineLvl")
        if (style is not None and style.get(_W + "val") in styles) or _outline(level):
            out.append(_docx_inline(p, []))
    return out


def read_docx(data: bytes, where: str) -> Extracted:
    import docx

    document = open_zipped(data, where, "DOCX", docx.Document)
    paragraphs: list[str] = []
    _docx_blocks(document.element.body, paragraphs)
    paragraphs += _docx_parts(document)
    title = (document.core_properties.title or "").strip() or None
    text = tidy(join_paragraphs(paragraphs))
    return text, title, section_fields(heading_starts(text, _docx_headings(document)))


# --------------------------------------------------------------------------- Excel


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
    return one_line(str(value))


def read_xlsx(data: bytes, where: str) -> Extracted:
    import openpyxl

    book = open_zipped(
        data, where, "XLSX", lambda f: openpyxl.load_workbook(f, read_only=True, data_only=True)
    )
    budget = TableBudget()
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
            sheets.append(sheet_paragraph(sheet.title, lines))
        title = ((book.properties.title if book.properties else None) or "").strip() or None
    except Exception as exc:
        raise ExtractionError(where, f"corrupt XLSX: {type(exc).__name__}: {exc}") from None
    finally:
        book.close()
    return clean(join_paragraphs(sheets)), title, budget.notes()


# --------------------------------------------------------------------------- PowerPoint


def read_pptx(data: bytes, where: str) -> Extracted:
    import pptx
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    deck = open_zipped(data, where, "PPTX", pptx.Presentation)
    furniture = {PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER}

    def frame_lines(frame: Any) -> list[str]:
        # a line break inside a paragraph comes as a vertical tab
        return [one_line(x) for p in frame.paragraphs for x in p.text.split("\v")]

    def shape_lines(shape: Any) -> list[str]:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            return [line for inner in shape.shapes for line in shape_lines(inner)]
        if shape.is_placeholder and shape.placeholder_format.type in furniture:
            return []
        if shape.has_text_frame:
            return frame_lines(shape.text_frame)
        if getattr(shape, "has_table", False) and shape.has_table:
            return [
                " | ".join(c for c in (one_line(cell.text) for cell in row.cells) if c)
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
    return clean(join_paragraphs(slides)), doc_title, {}

