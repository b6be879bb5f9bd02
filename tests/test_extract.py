"""Extraction of every supported format from real files built with the format's own library.

Each robustness case must end as an ExtractionError whose text names the file and says why,
never as a library exception or a hang.
"""

from __future__ import annotations

import html
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.pdfs import write_pdf
from engine.ingest.documents import Document, ExtractionError
from engine.ingest.extract import MAX_FILE_BYTES, extract, iter_extract
from engine.ingest.formats import sniff_kind
from engine.ingest.mail import extract_bytes
from engine.ingest.segment import split_paragraphs
from engine.ingest.walk import walk

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def squash(text: str) -> str:
    return " ".join(text.split())


def one(path: Path, **kwargs: int) -> Document:
    docs = extract(path, **kwargs)
    assert len(docs) == 1, docs
    return docs[0]


def saved_paragraphs(document: Any, path: Path) -> list[str]:
    """The paragraphs read from ``document`` (python-docx, odfpy) saved at ``path``."""
    document.save(str(path))
    return one(path).text.split("\n\n")


def minimal_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A valid PDF written by hand (Helvetica 12 pt, one text line per entry, '' for a blank
    line; ``bench.pdfs.write_pdf`` lays out the file)."""

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    streams = [
        f"BT /F1 12 Tf 72 720 Td 16 TL {' '.join(f'({esc(line)}) Tj T*' if line else 'T*' for line in lines)} ET".encode(
            "latin-1"
        )
        for lines in pages
    ]
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    return write_pdf(streams, font, esc(title).encode("latin-1") if title else None)


# --------------------------------------------------------------------------- plain text


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        ("Grüße aus Köln.\n\nZweiter Absatz – mit Gedankenstrich.".encode(), None),
        (b"\xef\xbb\xbf" + "Grüße aus Köln.\n\nZweiter Absatz – mit Gedankenstrich.".encode(), "utf-8-sig"),
        ("Grüße aus Köln.\r\n\r\nZweiter Absatz – mit Gedankenstrich.".encode("utf-16"), "utf-16"),
        ("Grüße aus Köln.\n\nZweiter Absatz – mit Gedankenstrich.".encode("utf-16-be"), None),
    ],
    ids=["utf8", "utf8-bom", "utf16-le-bom", "utf16-be-no-bom"],
)
def test_text_encodings(tmp_path: Path, raw: bytes, encoding: str | None) -> None:
    path = tmp_path / "note.txt"
    path.write_bytes(raw)
    if encoding is None and raw.startswith(b"\x00"):
        # UTF-16 without a BOM has NUL bytes: indistinguishable from binary, refused as such.
        with pytest.raises(ExtractionError, match="binary data, not text"):
            extract(path)
        return
    doc = one(path)
    assert doc.kind == "text" and doc.title == "note.txt"
    assert doc.text == "Grüße aus Köln.\n\nZweiter Absatz – mit Gedankenstrich."
    assert doc.fields.get("encoding") == encoding
    assert doc.key == doc.path == str(path)
    assert doc.fields["date"].endswith("+00:00")


def test_invalid_utf8_falls_back_to_cp1252_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes(b"Caf\xe9 cr\xe8me \x93quoted\x94 and valid ASCII.\n")
    doc = one(path)
    assert doc.text == "Café crème “quoted” and valid ASCII."
    assert doc.fields["encoding"] == "cp1252"
    assert "not valid UTF-8" in doc.fields["note"]


def test_binary_data_named_txt_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "photo.txt"
    path.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(ExtractionError) as err:
        extract(path)
    assert err.value.path == str(path)
    assert err.value.reason == "binary data, not text"
    assert str(err.value) == f"{path}: binary data, not text"


def test_control_characters_without_nul_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(bytes([1, 2, 3, 4, 5, 6, 7, 8, 65]) * 200)
    with pytest.raises(ExtractionError, match="binary data, not text"):
        extract(path)


def test_empty_file_gives_a_document_without_text(tmp_path: Path) -> None:
    """Chosen policy: an empty file is not an error; it is one Document with empty text."""
    for name in ("empty.txt", "empty.pdf", "blank.md"):
        path = tmp_path / name
        path.write_bytes(b"" if name != "blank.md" else b"  \n\n ")
        doc = one(path)
        assert doc.text == ""
        assert doc.fields["note"] == "empty file"
    segments = split_paragraphs(doc.text)
    assert segments == []


def test_unknown_extension_is_sniffed(tmp_path: Path) -> None:
    csv = tmp_path / "table.csv"
    csv.write_text("name,value\nalpha,1\n", encoding="utf-8")
    assert one(csv).text == "name,value\nalpha,1"
    pdf = tmp_path / "report"  # no extension: recognised by its %PDF- header
    pdf.write_bytes(minimal_pdf([["Sniffed PDF text."]]))
    assert one(pdf).kind == "pdf"
    assert sniff_kind(b"{\\rtf1 hello}") == "rtf"
    png = tmp_path / "image.dat"  # unknown extension, binary content
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(ExtractionError, match="binary data"):
        extract(png)


# --------------------------------------------------------------------------- Markdown and HTML


def test_markdown_is_stripped_to_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text(
        "---\nlayout: post\n---\n"
        "# Project *Orion* notes\n\n"
        "The **launch window** opens in [March](https://example.org/march) and\n"
        "closes in `April`.\n\n"
        "- first item\n- second item\n\n"
        "| Stage | Fuel |\n|---|---|\n| one | kerosene |\n\n"
        "> A quoted line.\n\n"
        "```\ncode_line = 1\n```\n",
        encoding="utf-8",
    )
    doc = one(path)
    assert doc.kind == "markdown"
    assert doc.title == "Project Orion notes"
    paragraphs = doc.text.split("\n\n")
    assert paragraphs[0] == "Project Orion notes"
    assert paragraphs[1] == "The launch window opens in March and closes in April."
    assert "first item" in paragraphs and "second item" in paragraphs
    assert "one kerosene" in doc.text
    assert "A quoted line." in paragraphs
    assert "code_line = 1" in doc.text
    for markup in ("**", "](", "`", "---", "layout: post", "|", "#"):
        assert markup not in doc.text


def test_html_drops_script_style_nav_and_keeps_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(
        b"<!DOCTYPE html><html><head><meta charset='windows-1252'><title>Caf\xe9 &amp; Bar</title>"
        b"<style>p { color: red }</style><script>var hidden = 1;</script></head><body>"
        b"<nav><a href='/'>Home</a> <a href='/menu'>Menu</a></nav>"
        b"<h1>Opening hours</h1><p>We open at <b>nine</b>\n   in the morning.</p>"
        b"<div>Closed on Sundays.<br>Except in December.</div>"
        b"<table><tr><td>Coffee</td><td>2 EUR</td></tr></table>"
        b"<noscript>Enable JavaScript</noscript></body></html>"
    )
    doc = one(path)
    assert doc.kind == "html"
    assert doc.title == "Café & Bar" and doc.fields["title"] == "Café & Bar"
    assert doc.text.split("\n\n") == [
        "Opening hours",
        "We open at nine in the morning.",
        "Closed on Sundays.\nExcept in December.",
        "Coffee 2 EUR",
    ]


def test_html_image_alt_text_stands_where_the_image_is(tmp_path: Path) -> None:
    """An image's alternative text is read where a text browser shows it; a one-word alt
    (an icon's "logo") and an empty one (decoration) are not."""
    path = tmp_path / "report.html"
    path.write_text(
        "<html><body><p>The new layout of the depot:</p>"
        "<p><img src='plan.png' alt='Floor plan of the harbour depot, east wing'></p>"
        "<p>Questions to <img src='logo.png' alt='logo'> the site office<img src='x.gif' alt=''>.</p>"
        "</body></html>",
        encoding="utf-8",
    )
    assert one(path).text.split("\n\n") == [
        "The new layout of the depot:",
        "Floor plan of the harbour depot, east wing",
        "Questions to the site office.",
    ]


# --------------------------------------------------------------------------- PDF


def test_pdf_pages_and_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(
        minimal_pdf(
            [
                ["The first paragraph starts here and", "ends on this line.", "", "A second paragraph."],
                ["Page two has its own text."],
            ],
            title="Quarterly Report",
        )
    )
    doc = one(path)
    assert doc.kind == "pdf" and doc.title == "Quarterly Report"
    assert doc.text.split("\n\n") == [
        "The first paragraph starts here and\nends on this line.",
        "A second paragraph.",
        "Page two has its own text.",
    ]


def test_real_pdf_with_embedded_font() -> None:
    doc = one(SAMPLES / "documents" / "normans.pdf")
    assert doc.title == "Normans"
    assert "Rollo's Vikings" in doc.text and "Norðmaðr" in doc.text
    assert len(split_paragraphs(doc.text)) >= 8  # title, seven paragraphs, attribution


def test_corrupt_pdf_reports_the_library_reason(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"%PDF-1.4\nthis is not a pdf at all\n")
    with pytest.raises(ExtractionError) as err:
        extract(garbage)
    assert err.value.path == str(garbage)
    assert err.value.reason.startswith("corrupt PDF: ")
    assert len(err.value.reason) > len("corrupt PDF: ")  # the library's own words follow

    real = (SAMPLES / "documents" / "normans.pdf").read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(real[: len(real) // 3])
    with pytest.raises(ExtractionError, match=r"truncated\.pdf: corrupt PDF"):
        extract(truncated)


def test_encrypted_pdf(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    def encrypted(user_password: str) -> bytes:
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(minimal_pdf([["Secret budget figures."]]))))
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
        buffer = io.BytesIO()
        writer.write(buffer)
        return buffer.getvalue()

    locked = tmp_path / "locked.pdf"
    locked.write_bytes(encrypted("hunter2"))
    with pytest.raises(ExtractionError, match=r"locked\.pdf: encrypted PDF \(password required\)"):
        extract(locked)
    # Encrypted with an empty user password (permissions only): readable without asking.
    open_pdf = tmp_path / "restricted.pdf"
    open_pdf.write_bytes(encrypted(""))
    assert one(open_pdf).text == "Secret budget figures."


# --------------------------------------------------------------------------- office and e-books


def test_docx_paragraphs_and_tables(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Lab Manual"
    document.add_heading("Safety rules", level=1)
    document.add_paragraph("Always wear goggles in the lab.")
    document.add_paragraph("")
    table = document.add_table(rows=2, cols=3)
    table.cell(0, 0).text, table.cell(0, 1).text, table.cell(0, 2).text = "Chemical", "Hazard", "Shelf"
    merged = table.cell(1, 0).merge(table.cell(1, 1))
    merged.text = "Acetone (flammable)"
    table.cell(1, 2).text = "B2"
    document.add_paragraph("Report spills at once.")
    path = tmp_path / "manual.docx"
    document.save(str(path))
    doc = one(path)
    assert doc.kind == "docx" and doc.title == "Lab Manual"
    assert doc.text.split("\n\n") == [
        "Safety rules",
        "Always wear goggles in the lab.",
        "Chemical | Hazard | Shelf",
        "Acetone (flammable) | B2",
        "Report spills at once.",
    ]


def test_docx_text_in_content_controls_text_boxes_and_tracked_changes(tmp_path: Path) -> None:
    """What python-docx's own paragraphs miss is read: a content control (templates, forms)
    at body or run level, a text box (once, though Word stores it twice), a tracked insertion;
    a tracked deletion and a field's code are not the document's text."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    w = nsdecls("w")
    mc = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
    document = docx.Document()
    document.add_paragraph("The harbour crane is serviced in May.")
    body = document.element.body
    body.insert(len(body) - 1, parse_xml(
        f"<w:sdt {w}><w:sdtContent><w:p><w:r><w:t>The depot budget is 4 million.</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    ))  # fmt: skip
    p = document.add_paragraph("Owner: ")
    p._p.append(parse_xml(f"<w:sdt {w}><w:sdtContent><w:r><w:t>Ann Lee</w:t></w:r></w:sdtContent></w:sdt>"))
    p._p.append(parse_xml(f'<w:ins {w} w:id="1" w:author="a"><w:r><w:t>, site lead</w:t></w:r></w:ins>'))
    p._p.append(parse_xml(f'<w:del {w} w:id="2" w:author="a"><w:r><w:delText> (acting)</w:delText></w:r></w:del>'))
    p._p.append(parse_xml(f"<w:r {w}><w:instrText> PAGEREF _Toc1 </w:instrText></w:r>"))
    box = "<w:txbxContent><w:p><w:r><w:t>The deadline is Friday.</w:t></w:r></w:p></w:txbxContent>"
    body.insert(len(body) - 1, parse_xml(
        f"<w:p {w} {mc}><w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing>{box}</w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict>{box}</w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    ))  # fmt: skip
    once = "<w:p><w:r><w:t>Crews meet at the gate.</w:t></w:r></w:p>"
    body.insert(len(body) - 1, parse_xml(
        f"<mc:AlternateContent {w} {mc}><mc:Choice Requires=\"w14\">{once}</mc:Choice>"
        f"<mc:Fallback>{once}</mc:Fallback></mc:AlternateContent>"
    ))  # fmt: skip
    assert saved_paragraphs(document, tmp_path / "plan.docx") == [
        "The harbour crane is serviced in May.",
        "The depot budget is 4 million.",
        "Owner: Ann Lee, site lead",
        "The deadline is Friday.",
        "Crews meet at the gate.",
    ]


def test_docx_footnotes_and_endnotes_follow_the_text(tmp_path: Path) -> None:
    """python-docx reads neither notes part: each note is a paragraph after the text, the
    separator lines Word keeps among the footnotes are not."""
    import docx
    from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    document = docx.Document()
    document.add_paragraph("The depot figures come from the harbour survey.")
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    for kind, content_type, reltype, text in (
        ("footnote", CONTENT_TYPE.WML_FOOTNOTES, RELATIONSHIP_TYPE.FOOTNOTES, "Survey of May 2001, page 4."),
        ("endnote", CONTENT_TYPE.WML_ENDNOTES, RELATIONSHIP_TYPE.ENDNOTES, "Figures rounded to the ton."),
    ):
        blob = (
            f'<w:{kind}s {w}><w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
            f'<w:{kind} w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:{kind}></w:{kind}s>'
        ).encode()
        part = Part(PackURI(f"/word/{kind}s.xml"), content_type, blob, document.part.package)
        document.part.relate_to(part, reltype)
    assert saved_paragraphs(document, tmp_path / "figures.docx") == [
        "The depot figures come from the harbour survey.",
        "Survey of May 2001, page 4.",
        "Figures rounded to the ton.",
    ]


def test_docx_comments_headers_and_footers_follow_the_text(tmp_path: Path) -> None:
    """A reviewer's comment, the page header and the footer are read after the text (and
    notes); a header line that two sections repeat is read once."""
    import docx

    document = docx.Document()
    para = document.add_paragraph("The depot budget is 4 million.")
    document.add_comment(para.runs, text="Check this against the harbour survey.", author="Ann Lee")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Harbour Authority - confidential"
    section.footer.paragraphs[0].text = "Prepared by the planning office"
    second = document.add_section()
    second.header.is_linked_to_previous = False
    second.header.paragraphs[0].text = "Harbour Authority - confidential"  # the same line again
    document.add_paragraph("Crews meet at the gate.")
    assert saved_paragraphs(document, tmp_path / "budget.docx") == [
        "The depot budget is 4 million.",
        "Crews meet at the gate.",
        "Check this against the harbour survey.",
        "Harbour Authority - confidential",
        "Prepared by the planning office",
    ]


def test_odt_headings_lists_tables(tmp_path: Path) -> None:
    from odf import dc, table, text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text="Minutes"))
    document.text.addElement(text.H(outlinelevel=1, text="Board meeting"))
    para = text.P(text="Present: Ada")
    para.addElement(text.S(c=3))
    para.addText("and Grace.")
    document.text.addElement(para)
    items = text.List()
    for entry in ("Budget approved.", "Next meeting in May."):
        item = text.ListItem()
        item.addElement(text.P(text=entry))
        items.addElement(item)
    document.text.addElement(items)
    grid = table.Table(name="Votes")
    row = table.TableRow()
    for value in ("Yes", "4"):
        cell = table.TableCell()
        cell.addElement(text.P(text=value))
        row.addElement(cell)
    grid.addElement(row)
    document.text.addElement(grid)
    path = tmp_path / "minutes.odt"
    document.save(str(path))
    doc = one(path)
    assert doc.kind == "odt" and doc.title == "Minutes"
    assert doc.text.split("\n\n") == [
        "Board meeting",
        "Present: Ada   and Grace.",
        "Budget approved.",
        "Next meeting in May.",
        "Yes | 4",
    ]


def test_odt_frames_footnotes_and_cells_of_several_paragraphs_keep_words_apart(tmp_path: Path) -> None:
    """A text box anchored in a paragraph and a footnote are blocks of their own after it,
    and a cell's paragraphs are joined by spaces: their words were glued ("note1Footnote")."""
    from odf import draw, table, text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    anchor = text.P(text="The site plan is attached.")
    frame, box = draw.Frame(width="5cm", height="2cm", anchortype="paragraph"), draw.TextBox()
    box.addElement(text.P(text="The deadline is Friday."))
    frame.addElement(box)
    anchor.addElement(frame)
    document.text.addElement(anchor)
    cited = text.P(text="Figures come from the survey")
    note, note_body = text.Note(noteclass="footnote", id="n1"), text.NoteBody()
    note.addElement(text.NoteCitation(text="1"))
    note_body.addElement(text.P(text="Survey of May 2001."))
    note.addElement(note_body)
    cited.addElement(note)
    document.text.addElement(cited)
    grid, row = table.Table(name="Crew"), table.TableRow()
    for lines in (("Ann Lee", "site lead"), ("Bo Chen",)):
        cell = table.TableCell()
        for line in lines:
            cell.addElement(text.P(text=line))
        row.addElement(cell)
    grid.addElement(row)
    document.text.addElement(grid)
    assert saved_paragraphs(document, tmp_path / "plan.odt") == [
        "The site plan is attached.",
        "The deadline is Friday.",
        "Figures come from the survey",
        "Survey of May 2001.",
        "Ann Lee site lead | Bo Chen",
    ]


def write_epub(path: Path, title: str, chapters: list[tuple[str, str, str]], toc: list | None = None) -> None:
    """An EPUB of ``chapters`` ((title, file name, XHTML), spine in this order) with its table
    of contents (default: the chapters themselves), also for tests/test_sections.py."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"test-{title.lower().replace(' ', '-')}")
    book.set_title(title)
    book.set_language("en")
    items = []
    for name, file_name, content in chapters:
        item = epub.EpubHtml(title=name, file_name=file_name)
        item.content = content
        book.add_item(item)
        items.append(item)
    book.toc = toc if toc is not None else items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book)


def test_epub_chapters_in_spine_order(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    write_epub(
        path,
        "Two Chapters",
        [  # file names sort the other way on purpose
            ("One", "b_first.xhtml", "<html><body><h1>Chapter one</h1><p>It was a dark night.</p></body></html>"),
            ("Two", "a_second.xhtml", "<html><body><h1>Chapter two</h1><p>Morning came.</p></body></html>"),
        ],
    )
    doc = one(path)
    assert doc.kind == "epub" and doc.title == "Two Chapters"
    assert doc.text.split("\n\n") == ["Chapter one", "It was a dark night.", "Chapter two", "Morning came."]


def test_rtf_paragraphs_and_escapes(tmp_path: Path) -> None:
    path = tmp_path / "letter.rtf"
    path.write_text(
        r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Arial;}}{\info{\title Letter to Ren\'e9}}"
        "\n"
        r"\f0\fs24 Dear Ren\'e9,\par Thank you for the \b caf\'e9\b0  visit.\par\par Greetings from \u8364? land.\par}",
        encoding="ascii",
    )
    doc = one(path)
    assert doc.kind == "rtf" and doc.title == "Letter to René"
    assert doc.text.split("\n\n") == ["Dear René,", "Thank you for the café visit.", "Greetings from € land."]


@pytest.mark.parametrize("name", ["broken.docx", "broken.odt", "broken.epub", "broken.rtf"])
def test_corrupt_office_files(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 not really a zip archive" if name != "broken.rtf" else b"plain words")
    with pytest.raises(ExtractionError) as err:
        extract(path)
    assert err.value.path == str(path)
    assert err.value.reason.startswith("corrupt ")


# --------------------------------------------------------------------------- limits and unreadable files


def test_size_limit_refuses_without_reading(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 50 * 1024 * 1024
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000, encoding="ascii")  # 5,000 bytes
    with pytest.raises(ExtractionError) as err:
        extract(path, max_bytes=4096)
    assert err.value.reason == "file too large (4.9 KB > 4.0 KB limit)"
    assert one(path, max_bytes=8192).text.startswith("word word")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    with pytest.raises(ExtractionError) as err:
        extract(path)
    assert str(err.value) == f"{path}: No such file or directory"


def test_file_deleted_between_walk_and_extract(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first", encoding="utf-8")
    (tmp_path / "b.txt").write_text("second", encoding="utf-8")
    found = [p for p in walk(tmp_path) if isinstance(p, Path)]
    assert [p.name for p in found] == ["a.txt", "b.txt"]
    os.remove(found[1])
    assert one(found[0]).text == "first"
    items = list(iter_extract(found[1]))
    assert len(items) == 1 and isinstance(items[0], ExtractionError)
    assert str(items[0]) == f"{found[1]}: No such file or directory"


def test_unreadable_paths(tmp_path: Path) -> None:
    """A folder named like a file, a FIFO (opening it would block), and a chmod 000 file.

    chmod 000 does not stop root (CAP_DAC_OVERRIDE) from reading, so that last case is only
    checked when this process is actually refused.
    """
    folder = tmp_path / "x.txt"
    folder.mkdir()
    with pytest.raises(ExtractionError, match=r"x\.txt: is a folder, not a file or mail store"):
        extract(folder)

    for name in ("pipe.txt", "pipe"):  # with and without extension (mbox sniffing must not open it)
        fifo = tmp_path / name
        os.mkfifo(fifo)
        with pytest.raises(ExtractionError, match=rf"{name}: not a regular file"):
            extract(fifo)

    locked = tmp_path / "locked.txt"
    locked.write_text("secret", encoding="utf-8")
    locked.chmod(0)
    try:
        try:
            locked.read_bytes()
        except PermissionError:
            with pytest.raises(ExtractionError, match=r"locked\.txt: Permission denied"):
                extract(locked)
    finally:
        locked.chmod(0o644)


# --------------------------------------------------------------------------- attachments (bytes)


def test_extract_bytes_by_name_mime_and_content() -> None:
    pdf = minimal_pdf([["Invoice total 42 EUR."]])
    by_name = extract_bytes(
        pdf, "invoice.pdf", key="m#1/attachment/1:invoice.pdf", path="/mail", parent_key="m#1"
    )
    assert by_name[0].text == "Invoice total 42 EUR." and by_name[0].parent_key == "m#1"
    by_mime = extract_bytes(pdf, "", key="k", path="/mail", content_type="application/pdf")
    assert by_mime[0].kind == "pdf"
    by_content = extract_bytes(pdf, "scan.bin", key="k", path="/mail")
    assert by_content[0].kind == "pdf"
    with pytest.raises(ExtractionError, match="k: file too large"):
        extract_bytes(pdf, "invoice.pdf", key="k", path="/mail", max_bytes=10)


# --------------------------------------------------------------------------- the sample corpus


def test_every_sample_extracts_with_blank_line_paragraphs() -> None:
    kinds = set()
    for unit in walk(SAMPLES):
        assert isinstance(unit, Path), unit
        for item in iter_extract(unit):
            assert isinstance(item, Document), item
            kinds.add(item.kind)
            assert item.text.strip()
            assert "\n\n\n" not in item.text
    assert kinds == {"text", "markdown", "html", "pdf", "docx", "odt", "epub", "rtf", "email"}


def test_sample_questions_point_at_their_sentences() -> None:
    questions = [json.loads(line) for line in (SAMPLES / "questions.jsonl").read_text().splitlines()]
    assert len(questions) >= 10
    for q in questions:
        docs = extract(SAMPLES / q["file"])
        if "message_id" in q:
            docs = [d for d in docs if d.fields.get("message_id") == q["message_id"]]
        text = "\n\n".join(d.text for d in docs)
        assert q["sentence"] in text, q
        assert q["answer"] in squash(q["sentence"]), q


def test_sample_html_hides_navigation_and_script() -> None:
    doc = one(SAMPLES / "documents" / "warsaw.html")
    assert "console.log" not in doc.text and "Home | Articles" not in doc.text
    assert html.unescape("Warsaw") == doc.title


def test_a_pdf_answer_says_which_page_it_is_on(tmp_path: Path) -> None:
    """Issue 39, item 3: the PDF reader records where each page starts in the text (pages
    without text have none), the catalog keeps it, and an answer carries its page — in
    ``sparcdesk ask --json`` too; a text file's answer has none."""
    import json
    import subprocess
    import sys

    from engine.api.facade import Engine
    from engine.ingest.documents import PAGES

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(
        minimal_pdf(
            [
                ["Chapter one explains how to unpack the espresso machine."],
                [],  # a blank page: it counts, but holds no text
                ["The descaling cycle takes twenty minutes and needs citric acid."],
            ]
        )
    )
    (docs / "note.txt").write_text("The descaling cycle of the old kettle took an hour.\n", encoding="utf-8")
    doc = extract(docs / "manual.pdf")[0]
    assert doc.fields[PAGES].startswith("3|0:1,")  # three pages, the text starts on page 1
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([docs])
        answers = e.ask("How long does descaling with citric acid take?")
        pdf = next(a for a in answers if a.kind == "pdf")
        assert "twenty minutes" in pdf.best.sentence and (pdf.page, pdf.pages) == (3, 3)
        assert all(a.page is None for a in answers if a.kind != "pdf")
        first = e.ask("How do I unpack the espresso machine?")
        assert next(a for a in first if a.kind == "pdf").page == 1
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "ask", "--home", str(tmp_path / "home"), "--json",
         "How long does descaling with citric acid take?"],
        capture_output=True, text=True, check=True, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert next(a for a in data["answers"] if a["kind"] == "pdf")["page"] == 3
