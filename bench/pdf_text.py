"""Text-PDF extraction, the reader's against the alternatives, on the same PDFs: is the text
layer read faster another way, and is it the same words?

The PDFs are SQuAD v1.1 dev's paragraphs (the corpus of ``bench/indexing.py``), ``--per-pdf``
paragraphs to a file, written by ``bench/pdfs.py`` (Helvetica, wrapped lines, about one
page per five paragraphs). Timed, each over every PDF after one warm-up file:

* ``reader``: ``engine.ingest.readers.pdf.read_pdf`` as it indexes (pypdf's layout mode, plain
  mode for a multi-column page, paragraphs guessed per page, pages cleaned and joined);
* ``pypdf-plain``: pypdf's plain mode and the same per-page paragraph guess and cleaning;
* ``pdfium``: pypdfium2 (PDFium), already installed to render scanned pages for OCR, with
  the same per-page paragraph guess and cleaning.

Words: each extractor's ``\\w+`` words against the words written (the paragraphs as the
font encodes them). Prints a table; ``--json`` writes the figures.

    .venv/bin/python bench/pdf_text.py --pdfs 200 --per-pdf 5
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.indexing import squad_paragraphs  # noqa: E402
from bench.pdfs import printable, text_pdf  # noqa: E402
from engine.ingest.readers.common import clean, join_paragraphs  # noqa: E402
from engine.ingest.readers.pdf import pdf_paragraphs, read_pdf  # noqa: E402

_WORD = re.compile(r"\w+")


def _pages_text(pages: list[str]) -> str:
    """Pages' paragraphs guessed and cleaned, one blank line apart (as the reader joins them)."""
    return "\n\n".join(p for p in (clean(join_paragraphs([pdf_paragraphs(t)])) for t in pages) if p)


def by_reader(data: bytes) -> str:
    return read_pdf(data, "bench.pdf")[0]


def by_pypdf_plain(data: bytes) -> str:
    import pypdf

    return _pages_text([page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(data)).pages])


def by_pdfium(data: bytes) -> str:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        texts = []
        for page in document:
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
            textpage.close()
            page.close()
        return _pages_text(texts)
    finally:
        document.close()


EXTRACTORS: dict[str, Callable[[bytes], str]] = {"reader": by_reader, "pypdf-plain": by_pypdf_plain, "pdfium": by_pdfium}


def reader_at(rev: str) -> Callable[[bytes], str]:
    """``read_pdf`` as the module was at git revision ``rev`` (e.g. before issue 39 added
    pages and OCR), run beside today's helpers: the same PDFs timed both ways in one run."""
    import subprocess
    import types

    source = subprocess.run(
        ["git", "show", f"{rev}:engine/ingest/readers/pdf.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType(f"pdf_at_{rev}")
    exec(compile(source, f"{rev}:engine/ingest/readers/pdf.py", "exec"), module.__dict__)  # noqa: S102
    return lambda data: module.read_pdf(data, "bench.pdf")[0]


def corpus(n_pdfs: int, per_pdf: int) -> list[tuple[bytes, list[str]]]:
    """``n_pdfs`` PDFs of ``per_pdf`` SQuAD paragraphs each, and each one's words as written."""
    paragraphs = (p["context"] for p in squad_paragraphs())
    out = []
    for _ in range(n_pdfs):
        chunk = list(itertools.islice(paragraphs, per_pdf))
        out.append((text_pdf(chunk), _WORD.findall(printable(" ".join(chunk)))))
    return out


def measure(pdfs: list[tuple[bytes, list[str]]]) -> dict[str, dict]:
    """Seconds, PDFs/s and pages/s of each extractor, and how many files' words are exactly
    the words written (and the words in all that differ, by count)."""
    import pypdf

    pages = sum(len(pypdf.PdfReader(io.BytesIO(d)).pages) for d, _ in pdfs)
    out: dict[str, dict] = {}
    for name, extract in EXTRACTORS.items():
        extract(pdfs[0][0])  # imports and first-use costs out of the timing
        t0 = time.perf_counter()
        texts = [extract(data) for data, _ in pdfs]
        seconds = time.perf_counter() - t0
        same = sum(_WORD.findall(text) == words for text, (_, words) in zip(texts, pdfs, strict=True))
        off = sum(abs(len(_WORD.findall(text)) - len(words)) for text, (_, words) in zip(texts, pdfs, strict=True))
        out[name] = {
            "seconds": round(seconds, 3),
            "pdfs_per_s": round(len(pdfs) / seconds, 1),
            "pages_per_s": round(pages / seconds, 1),
            "files_same_words": same,
            "word_count_difference": off,
        }
    return {"pdfs": len(pdfs), "pages": pages, "extractors": out}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdfs", type=int, default=200, help="PDF files (default 200)")
    ap.add_argument("--per-pdf", type=int, default=5, help="SQuAD paragraphs per PDF (default 5)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--before", default=None, help="also time the reader at this git revision (e.g. 4c753a9)")
    args = ap.parse_args(argv)
    if args.before:
        EXTRACTORS[f"reader@{args.before}"] = reader_at(args.before)
    import os

    load = os.getloadavg()
    result = measure(corpus(args.pdfs, args.per_pdf))
    result["load_avg_before"] = [round(x, 2) for x in load]
    print(f"{result['pdfs']} PDFs, {result['pages']} pages; load average before {load[0]:.2f}")
    print(f"{'extractor':<12} {'seconds':>8} {'PDFs/s':>8} {'pages/s':>8}  same words")
    for name, r in result["extractors"].items():
        print(
            f"{name:<12} {r['seconds']:>8.2f} {r['pdfs_per_s']:>8.1f} {r['pages_per_s']:>8.1f}"
            f"  {r['files_same_words']}/{result['pdfs']} files (word count off by {r['word_count_difference']})"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
