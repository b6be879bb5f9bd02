"""A DOCX/ODT/EPUB (and Markdown, HTML) answer names the heading it is under (issue 39), as a
PDF answer names its page: the readers record where each heading starts in the text
(``engine.ingest.documents.SECTIONS``), the catalog keeps it (schema step 7), an answer carries
``section``; ``sparcdesk ask`` prints it and ``--json`` has it. Real files, written here with
the libraries the readers use."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from test_extract import write_epub

from engine.catalog.schema import MIGRATIONS, SCHEMA_VERSION
from engine.catalog.store import Catalog, DocumentRow
from engine.ingest.documents import SECTIONS, Document, section_at
from engine.ingest.extract import extract
from engine.ingest.readers.common import heading_starts

QUESTION = "How long does descaling with citric acid take?"


def one(path: Path) -> Document:
    docs = extract(path)
    assert len(docs) == 1, docs
    return docs[0]


def headings_of(doc: Document) -> list[str]:
    """The headings a document's SECTIONS field names, each checked to start where it says."""
    starts = json.loads(doc.fields[SECTIONS])
    for offset, heading in starts:
        assert " ".join(doc.text[offset:].split("\n\n", 1)[0].split()) == heading
    return [h for _, h in starts]


def manual_docx(path: Path) -> Path:
    """A Word manual: text before any heading (that names the second heading's words), then
    "Unpacking" (Heading 1) and "Descaling the machine" (a style of its own based on Heading 2)."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    document.add_paragraph("This manual covers the espresso machine; descaling the machine comes last.")
    document.add_heading("Unpacking", 1)
    document.add_paragraph("Lift the espresso machine out of its box and keep the foam parts.")
    style = document.styles.add_style("Manual Step", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Heading 2"]
    document.add_paragraph("Descaling the machine", style="Manual Step")
    document.add_paragraph("The descaling cycle takes twenty minutes and needs citric acid.")
    document.save(str(path))
    return path


def test_docx_headings_are_recorded_where_they_start(tmp_path: Path) -> None:
    """Word's heading styles (and a style based on one) are headings; the same words in the
    text before the heading are not taken for it; the text itself is as before."""
    doc = one(manual_docx(tmp_path / "manual.docx"))
    assert headings_of(doc) == ["Unpacking", "Descaling the machine"]
    assert doc.text.split("\n\n")[0].endswith("descaling the machine comes last.")
    assert section_at(doc.fields[SECTIONS], 0) is None  # before the first heading: none
    assert section_at(doc.fields[SECTIONS], doc.text.index("twenty minutes")) == "Descaling the machine"
    assert section_at(doc.fields[SECTIONS], doc.text.index("foam parts")) == "Unpacking"


def test_a_document_without_headings_has_no_sections(tmp_path: Path) -> None:
    """Bold or large text is not a heading; a plain text file has none either."""
    import docx

    document = docx.Document()
    document.add_paragraph().add_run("Descaling").bold = True
    document.add_paragraph("The descaling cycle takes twenty minutes.")
    document.save(str(tmp_path / "plain.docx"))
    (tmp_path / "note.txt").write_text("Descaling\n\nThe cycle takes an hour.\n", encoding="utf-8")
    assert SECTIONS not in one(tmp_path / "plain.docx").fields
    assert SECTIONS not in one(tmp_path / "note.txt").fields


def test_a_heading_is_found_as_a_paragraph_of_its_own() -> None:
    """Only a whole paragraph is a heading's place; one not found (inside a table row) is left
    out and the next is still found."""
    text = "See Setup below.\n\nA | Setup | B\n\nIntro\n\nSetup\n\nWords."
    intro, setup = text.index("Intro"), text.index("\n\nSetup") + 2
    assert heading_starts(text, ["Intro", "Missing", "Setup"]) == [(intro, "Intro"), (setup, "Setup")]
    assert heading_starts(text, []) == []


def test_odt_epub_markdown_and_html_headings(tmp_path: Path) -> None:
    """ODT's text:h, EPUB's chapter headings (a chapter opening without one is named by the
    table of contents), Markdown's and HTML's h1-h6."""
    from ebooklib import epub
    from odf import text
    from odf.opendocument import OpenDocumentText

    odt = OpenDocumentText()
    for element in (text.P(text="Minutes of May."), text.H(outlinelevel=1, text="Budget"),
                    text.P(text="Approved."), text.H(outlinelevel=2, text="Next meeting"), text.P(text="In June.")):
        odt.text.addElement(element)  # fmt: skip
    odt.save(str(tmp_path / "minutes.odt"))
    assert headings_of(one(tmp_path / "minutes.odt")) == ["Budget", "Next meeting"]

    write_epub(
        tmp_path / "book.epub",
        "A Book",
        [
            ("Night", "one.xhtml", "<html><body><h1>Chapter one</h1><p>It was a dark night.</p></body></html>"),
            ("The Morning After", "two.xhtml", "<html><body><p>Morning came.</p><h2>At noon</h2><p>Lunch.</p></body></html>"),
        ],
        toc=[epub.Link("one.xhtml", "Night", "one"), epub.Link("two.xhtml", "The Morning After", "two")],
    )
    doc = one(tmp_path / "book.epub")
    starts = json.loads(doc.fields[SECTIONS])
    assert [h for _, h in starts] == ["Chapter one", "The Morning After", "At noon"]
    assert doc.text[starts[1][0] :].startswith("Morning came.")  # the chapter's start
    assert section_at(doc.fields[SECTIONS], doc.text.index("Lunch")) == "At noon"

    (tmp_path / "notes.md").write_text("Intro line.\n\n# Setup\n\nRun it.\n\n## Use it\n\nAsk.\n", encoding="utf-8")
    assert headings_of(one(tmp_path / "notes.md")) == ["Setup", "Use it"]
    page = "<html><body><h1>Recipes</h1><p>Bread.</p><h3>Rye <em>bread</em></h3><p>Sour.</p></body></html>"
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    assert headings_of(one(tmp_path / "page.html")) == ["Recipes", "Rye bread"]


def test_an_answer_names_its_section_in_the_cli_and_json(tmp_path: Path, capsys) -> None:
    """The real engine: the answer under the second heading names it, a text file's answer
    names none; ``sparcdesk ask`` prints it on the location line and ``--json`` has it."""
    from engine.api.facade import Engine
    from engine.cli.main import main

    docs = tmp_path / "docs"
    docs.mkdir()
    manual_docx(docs / "manual.docx")
    (docs / "kettle.txt").write_text("The descaling cycle of the old kettle took an hour.\n", encoding="utf-8")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([docs])
        answers = e.ask(QUESTION)
        word = next(a for a in answers if a.kind == "docx")
        assert "twenty minutes" in word.best.sentence and word.section == "Descaling the machine"
        assert all(a.section is None for a in answers if a.kind != "docx")
        unpack = next(a for a in e.ask("Where do the foam parts go when unpacking?") if a.kind == "docx")
        assert "foam parts" in unpack.best.sentence and unpack.section == "Unpacking"
    assert main(["ask", "--home", str(home), "--json", QUESTION]) == 0
    data = json.loads(capsys.readouterr().out)
    by_kind = {a["kind"]: a for a in data["answers"]}
    assert by_kind["docx"]["section"] == "Descaling the machine" and by_kind["text"]["section"] is None
    assert main(["ask", "--home", str(home), QUESTION]) == 0
    out = capsys.readouterr().out
    assert f'in: {docs / "manual.docx"}, under "Descaling the machine"' in out
    assert f"in: {docs / 'kettle.txt'}  (modified" in out


def test_a_catalog_from_before_sections_upgrades_in_place(tmp_path: Path) -> None:
    """A schema-6 catalog gains the column on open, its rows kept (no headings until read
    again); a row written after holds its headings."""
    path = tmp_path / "catalog.sqlite"
    with sqlite3.connect(path) as con:
        for step in MIGRATIONS[:6]:
            for sql in step.statements:
                con.execute(sql)
        con.execute("PRAGMA user_version = 6")
        con.execute(
            "INSERT INTO documents (key, path, kind, title, n_sentences, pages)"
            " VALUES ('/a.pdf', '/a.pdf', 'pdf', 'A', 3, '2|0:1')"
        )
    assert MIGRATIONS[6].version == 7 and "sections" in MIGRATIONS[6].statements[0]
    with Catalog(path) as cat:
        assert cat.schema_version() == SCHEMA_VERSION
        assert cat.get_document("/a.pdf") == DocumentRow("/a.pdf", "/a.pdf", "pdf", "A", None, 3, "2|0:1", "")
        row = DocumentRow("/b.docx", "/b.docx", "docx", "B", None, 2, "", '[[0, "Intro"]]')
        cat.replace_documents("/b.docx", [row])
        assert cat.get_document("/b.docx") == row


def test_headings_leave_the_index_digest_as_it_was(tmp_path: Path) -> None:
    """A file indexed before headings were read keeps its vectors when read again: SECTIONS is
    not in the document's digest; any other field still is."""
    from engine.indexer.prepare import document_digest

    doc = one(manual_docx(tmp_path / "manual.docx"))
    without = Document(doc.key, doc.path, doc.kind, doc.title, doc.text, {k: v for k, v in doc.fields.items() if k != SECTIONS})
    assert document_digest(doc) == document_digest(without)
    dated = Document(doc.key, doc.path, doc.kind, doc.title, doc.text, {**doc.fields, "title": "Other"})
    assert document_digest(dated) != document_digest(doc)


def test_a_page_whose_heading_is_its_title_names_no_section(tmp_path: Path) -> None:
    """A Markdown page whose one heading is its own title: the answer says nothing more by
    "under" (the title is shown already); under a second heading it names that one."""
    from engine.api.facade import Engine

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(
        "# Kettle care\n\nThe descaling cycle of the kettle takes twenty minutes.\n\n"
        "## Storage\n\nKeep the kettle in a dry cupboard with its lid open.\n",
        encoding="utf-8",
    )
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([docs])
        first = e.ask("How long does descaling the kettle take?")[0]
        assert "twenty minutes" in first.best.sentence and first.title == "Kettle care"
        assert first.section is None
        stored = e.ask("Where should the kettle be kept?")[0]
        assert "dry cupboard" in stored.best.sentence and stored.section == "Storage"
