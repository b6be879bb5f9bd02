"""The benchmarks' text PDFs (bench/pdfs.py): the PDF reader reads back the words written,
over several pages, and a character the font cannot encode is the "?" the check expects."""

from __future__ import annotations

import re

from bench.pdf_text import EXTRACTORS
from bench.pdfs import printable, text_pdf
from engine.ingest.documents import PAGES
from engine.ingest.readers.pdf import read_pdf

WORDS = re.compile(r"\w+")


def test_a_written_pdf_reads_back_as_its_words_on_several_pages() -> None:
    paragraphs = [f"Paragraph {i} tells how the descaling cycle ran on day {i}, at noon." * 6 for i in range(40)]
    paragraphs.append("Łódź has a letter outside Windows-1252; café has none.")
    data = text_pdf(paragraphs, title="Manual")
    text, title, notes = read_pdf(data, "manual.pdf")
    assert title == "Manual" and int(notes[PAGES].split("|")[0]) > 1  # more than one page
    written = WORDS.findall(printable(" ".join(paragraphs)))
    assert "café" in written and "Łódź" not in written  # "?ód?"
    for name, extract in EXTRACTORS.items():
        assert WORDS.findall(extract(data)) == written, name
