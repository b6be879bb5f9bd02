"""Every file accounted for (issue 15, item 2): spreadsheets and presentations are read,
every file is found by its name, and a format that is not read is listed as skipped with
its reason (status, CLI) and still found by its name.

Real files written here (the .xlsx and .pptx with openpyxl and python-pptx, the .ods and
.odp with odfpy), indexed by the real engine with the shipped model.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from test_pipeline import assert_complete, census

from engine.api.facade import Engine
from engine.catalog.store import Catalog
from engine.cli.main import main as cli_main
from engine.index.sentences import SentenceIndex
from engine.indexer import prepare, run
from engine.ingest import formats
from engine.ingest.documents import UnsupportedFormat
from engine.ingest.extract import extract, iter_extract
from engine.ingest.segment import passages_of

openpyxl = pytest.importorskip("openpyxl")
pptx = pytest.importorskip("pptx")


# --------------------------------------------------------------------------- files


def make_xlsx(path: Path) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Harbour budget"
    sheet.append(["Item", "Cost", "Owner"])
    sheet.append(["Dredging the north basin", 418000.0, "Mirela Vostok"])
    sheet.append([])
    sheet.append(["Opening", dt.datetime(2025, 5, 12), "The ferry terminal reopens after the dredging."])
    notes = book.create_sheet("Notes")
    notes["B2"] = "The quay crane needs\nnew cables."
    book.properties.title = "Harbour works"
    book.save(path)
    return path


def make_pptx(path: Path) -> Path:
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Lighthouse restoration"
    body = slide.placeholders[1].text_frame
    body.text = "Keeper Alvar Nyström repaints the lantern room in June"
    body.add_paragraph().text = "Budget approved by the council"
    slide.notes_slide.notes_text_frame.text = "Mention the storm damage to the gallery railing."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Timeline"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (r, c), text in {(0, 0): "Phase", (0, 1): "Month", (1, 0): "Scaffolding", (1, 1): "April"}.items():
        table.cell(r, c).text = text
    deck.save(path)
    return path


def make_ods(path: Path) -> Path:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Stores")
    for values in (["Part", "Count"], ["Brass valves for the pumping station", "37"]):
        row = TableRow()
        for v in values:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=v))
            row.addElement(cell)
        table.addElement(row)
    filler = TableRow(numberrowsrepeated=1048000)  # empty rows to the sheet's end, as LibreOffice writes
    filler.addElement(TableCell(numbercolumnsrepeated=1024))
    table.addElement(filler)
    doc.spreadsheet.addElement(table)
    doc.save(str(path))
    return path


def make_odp(path: Path) -> Path:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="pl")
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    page = Page(name="p1", masterpagename=master)
    frame = Frame(width="20cm", height="4cm", x="1cm", y="1cm")
    box = TextBox()
    for text in ("Tide gauge", "The tide gauge at Pier 4 was calibrated in 1931."):
        box.addElement(P(text=text))
    frame.addElement(box)
    page.addElement(frame)
    doc.presentation.addElement(page)
    doc.save(str(path))
    return path


# --------------------------------------------------------------------------- extraction


def test_spreadsheets_and_presentations_are_read(tmp_path: Path) -> None:
    (x,) = extract(make_xlsx(tmp_path / "works.xlsx"))
    assert (x.kind, x.title) == ("xlsx", "Harbour works")
    # a sheet is a paragraph: its name, then a line per row (non-empty cells joined)
    assert x.text.split("\n\n") == [
        "Harbour budget\nItem | Cost | Owner\nDredging the north basin | 418000 | Mirela Vostok\n"
        "Opening | 2025-05-12 | The ferry terminal reopens after the dredging.",
        "Notes\nThe quay crane needs new cables.",
    ]
    (p,) = extract(make_pptx(tmp_path / "deck.pptx"))
    assert p.kind == "pptx"
    slides = p.text.split("\n\n")
    assert slides[0].split("\n") == [
        "Lighthouse restoration",
        "Keeper Alvar Nyström repaints the lantern room in June",
        "Budget approved by the council",
        "Mention the storm damage to the gallery railing.",  # the speaker notes
    ]
    assert slides[1].split("\n") == ["Timeline", "Phase | Month", "Scaffolding | April"]
    (o,) = extract(make_ods(tmp_path / "stores.ods"))
    assert o.kind == "ods" and o.text == "Stores\nPart | Count\nBrass valves for the pumping station | 37"
    (d,) = extract(make_odp(tmp_path / "gauge.odp"))
    assert d.kind == "odp" and d.text == "Tide gauge\nThe tide gauge at Pier 4 was calibrated in 1931."

    # each line is a sentence of its own, a sheet or slide is a passage
    passages = passages_of(x.text, x.kind)
    assert [[s.text for s in passage] for passage in passages][1] == [
        "Notes",
        "The quay crane needs new cables.",
    ]


def test_a_huge_sheet_is_cut_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = openpyxl.Workbook()
    for i in range(50):
        book.active.append([f"row {i}", i, i * 2])
    book.save(tmp_path / "big.xlsx")
    monkeypatch.setattr(formats, "MAX_TABLE_CELLS", 30)
    (doc,) = extract(tmp_path / "big.xlsx")
    assert doc.text.count("\n") < 12 and doc.text.splitlines()[1] == "row 0 | 0 | 0"
    assert "large spreadsheet: only the first 30 cells" in doc.fields["note"]


def test_formats_that_are_not_read_are_unsupported_not_failed(tmp_path: Path) -> None:
    old = tmp_path / "plan.doc"
    old.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    blob = tmp_path / "capture.dat"
    blob.write_bytes(bytes(range(256)) * 8)
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"PK\x03\x04 not really a workbook")
    (err,) = list(iter_extract(old))
    assert isinstance(err, UnsupportedFormat) and "save it as .docx" in err.reason
    (err,) = list(iter_extract(blob))
    assert isinstance(err, UnsupportedFormat) and "(.dat)" in err.reason
    (err,) = list(iter_extract(broken))  # a supported format that is damaged: a failure
    assert not isinstance(err, UnsupportedFormat) and err.reason.startswith("corrupt XLSX")


# --------------------------------------------------------------------------- indexed and asked


@pytest.fixture(scope="module")
def office_home(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats")
    docs = base / "docs"
    docs.mkdir()
    make_xlsx(docs / "harbour-costs.xlsx")
    make_pptx(docs / "lighthouse-deck.pptx")
    make_ods(docs / "stores.ods")
    make_odp(docs / "tide.odp")
    (docs / "roadmap.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    (docs / "scan-of-contract.pdf").write_bytes(b"%PDF-1.4\nthis is not really a PDF\n")
    (docs / "minutes.txt").write_text(
        "The harbour committee met on Tuesday. The committee agreed to repaint the lighthouse.\n",
        encoding="utf-8",
    )
    home = base / "home"
    with Engine(home=home, threads=1) as e:
        e.add_source(docs)
        p = e.index()
        assert p.phase == "done" and p.files_done == 7
    return home, docs


def ask(home: Path, *args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["ask", *args, "--json", "--home", str(home)]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("question", "file", "sentence"),
    [
        ("Who is responsible for dredging the north basin?", "harbour-costs.xlsx", "Mirela Vostok"),
        ("When does the ferry terminal reopen?", "harbour-costs.xlsx", "ferry terminal reopens"),
        ("Who repaints the lantern room?", "lighthouse-deck.pptx", "Alvar Nyström"),
        ("What should the speaker mention about the storm?", "lighthouse-deck.pptx", "storm damage"),
        ("When does the scaffolding phase happen?", "lighthouse-deck.pptx", "Scaffolding | April"),
        ("How much does dredging the north basin cost?", "harbour-costs.xlsx", "418000"),
        ("How many brass valves for the pumping station?", "stores.ods", "Brass valves"),
        ("When was the tide gauge calibrated?", "tide.odp", "calibrated in 1931"),
    ],
)
def test_spreadsheets_and_presentations_are_found_by_their_text(
    office_home, question, file, sentence
) -> None:
    home, docs = office_home
    first = ask(home, question)["answers"][0]
    assert first["path"] == str(docs / file)
    # the cell text itself is read and shown: the answer's sentence, or (sparc-tiny 0.4.0
    # ranks a table's header row "Phase | Month" above its "Scaffolding | April" row) the
    # passage around it
    assert sentence in first["best"]["sentence"] or sentence in first["best"]["passage"]


def test_a_file_not_read_is_listed_as_skipped_and_found_by_name(office_home) -> None:
    home, docs = office_home
    roadmap = str(docs / "roadmap.doc")
    with Engine(home=home, threads=1) as e:
        st = e.status()
        assert st["files"] == 7 and st["files_skipped"] == 1 and st["files_error"] == 1
        reasons = {x.path: x for x in e.errors()}
        assert reasons[roadmap].skipped
        assert reasons[roadmap].reason.startswith("skipped: Word 97-2003 document (.doc) is not supported")
        assert "save it as .docx" in reasons[roadmap].reason
        broken = reasons[str(docs / "scan-of-contract.pdf")]
        assert not broken.skipped and broken.reason.startswith("corrupt PDF")
        assert (broken.kind, reasons[roadmap].kind) == ("unreadable", "skipped")
        census(e)  # the catalog knows every sentence the index holds, name lines included
        assert_complete(e, [docs / "harbour-costs.xlsx", docs / "lighthouse-deck.pptx", docs / "minutes.txt"])

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["status", "--home", str(home)]) == 0
    text = out.getvalue()
    problems, skipped = text.split("could not be read (1):")[1].split("skipped (1):")
    assert roadmap in skipped and "save it as .docx to search its text" in skipped
    assert "scan-of-contract.pdf" in problems and "corrupt PDF" in problems

    # found by its name: a word of it, the name: field, its extension
    for query in ("roadmap", "name:roadmap", "ext:doc"):
        answers = ask(home, query)["answers"]
        assert answers[0]["path"] == roadmap, query
        assert answers[0]["best"]["sentence"] == "roadmap.doc" and answers[0]["best"]["field"] == "name"
    assert [a["path"] for a in ask(home, "name:roadmap")["answers"]] == [roadmap]
    # so is a file that could not be read, and a file that was read
    assert ask(home, "name:contract")["answers"][0]["path"] == str(docs / "scan-of-contract.pdf")
    assert ask(home, "lighthouse deck")["answers"][0]["path"] == str(docs / "lighthouse-deck.pptx")


def test_a_name_line_does_not_answer_when_a_sentence_does(office_home) -> None:
    """The minutes mention the harbour and the lighthouse; its name line is never the answer
    shown while one of its sentences matches."""
    home, docs = office_home
    for answer in ask(home, "Who agreed to repaint the lighthouse?")["answers"]:
        if answer["path"] == str(docs / "minutes.txt"):
            assert answer["best"]["field"] == "" and "repaint the lighthouse" in answer["best"]["sentence"]
            break
    else:
        raise AssertionError("minutes.txt not found")


def test_an_index_from_before_name_lines_gains_them_without_re_encoding(tmp_path, monkeypatch) -> None:
    """An index of records version 2 (no file name lines): the next run adds each file's
    name line alone; the text's sentences keep their vectors (same sentence ids)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "otters.txt").write_text(
        "Sea otters hold hands while they sleep. They use tools.\n", encoding="utf-8"
    )
    (docs / "owls.md").write_text(
        "# Owls\n\nBarn owls hunt by sound in complete darkness.\n", encoding="utf-8"
    )
    home = tmp_path / "home"
    with monkeypatch.context() as m:  # the indexer as it was: records "2", no name lines
        for module in (prepare, run):
            m.setattr(module, "RECORDS_VERSION", "2")
            m.setattr(module, "has_name_line", lambda doc: False)
        with Engine(home=home, threads=1) as e:
            e.add_source(docs)
            assert e.index().sentences_done == 4
    cat = Catalog(home / "catalog.sqlite")
    index_dir = Path(cat.active_generation().index_dir)
    cat.close()
    with SentenceIndex.open(index_dir) as ix:
        assert ix.records_version == "2"
        before = {k: ix.document_sentence_ids(str(docs / k)) for k in ("otters.txt", "owls.md")}

    with Engine(home=home, threads=1) as e:
        p = e.index()
        assert (p.files_done, p.sentences_done) == (2, 2)  # a name line each, nothing re-encoded
        census(e)
        assert e.ask("name:otters")[0].path == str(docs / "otters.txt")
        assert e.index().sentences_done == 0  # and the next run has nothing to do
    with SentenceIndex.open(index_dir) as ix:
        assert ix.records_version == prepare.RECORDS_VERSION
        for key, ids in before.items():
            now = ix.document_sentence_ids(str(docs / key))
            assert set(ids) < set(now) and len(now) == len(ids) + 1
            (new,) = set(now) - set(ids)
            assert ix.get([new])[new]["field"] == "name" and ix.get([new])[new]["text"] == key
