"""Text PDFs written by hand for the benchmarks (``bench/indexing.py --corpus pdf``,
``bench/pdf_text.py``): paragraphs set in Helvetica 10 pt, wrapped at spaces, a blank line
between paragraphs, a new page every ``LINES_PER_PAGE`` lines. No PDF library is needed (the
project reads PDFs; it does not write them), and the text layer is exactly the words given:
characters outside Windows-1252 (the font's encoding) become "?"."""

from __future__ import annotations

import textwrap

#: Characters per printed line (Helvetica 10 pt across 468 pt of a Letter page).
LINE_CHARS = 90
LINES_PER_PAGE = 56


def printable(text: str) -> str:
    """``text`` as the PDF's text layer holds it: what Windows-1252 cannot encode is "?"."""
    return text.encode("cp1252", errors="replace").decode("cp1252")


def _lines(paragraphs: list[str]) -> list[str]:
    out: list[str] = []
    for paragraph in paragraphs:
        if out:
            out.append("")
        out += textwrap.wrap(" ".join(paragraph.split()), LINE_CHARS) or [""]
    return out


def _content(lines: list[str]) -> bytes:
    def esc(s: bytes) -> bytes:
        return s.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")

    ops = b" ".join(b"(" + esc(line.encode("cp1252", errors="replace")) + b") Tj T*" if line else b"T*" for line in lines)
    return b"BT /F1 10 Tf 72 740 Td 12 TL " + ops + b" ET"


def text_pdf(paragraphs: list[str], title: str | None = None) -> bytes:
    """A valid PDF whose text layer is ``paragraphs`` (see the module docstring)."""
    lines = _lines(paragraphs)
    pages = [lines[i : i + LINES_PER_PAGE] for i in range(0, max(1, len(lines)), LINES_PER_PAGE)]
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    info = printable(title).encode("cp1252").replace(b"(", b"[").replace(b")", b"]") if title else None
    return write_pdf([_content(page) for page in pages], font, info)


def write_pdf(streams: list[bytes], font: bytes, title: bytes | None = None) -> bytes:
    """A PDF of one page per content stream (Letter size, its text in font ``F1``, the
    object ``font``) and, with ``title`` (the bytes of a PDF string, escaped already), that
    title in its Info dictionary: catalog 1, page tree 2, font 3, then each page and its
    stream, the Info last; the cross-reference table and trailer after them."""
    objects: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 3: font}
    kids, n = [], 4
    for stream in streams:
        objects[n] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            + f" /Contents {n + 1} 0 R >>".encode()
        )
        objects[n + 1] = f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
        kids.append(n)
        n += 2
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    info = None
    if title is not None:
        info, n = n, n + 1
        objects[info] = b"<< /Title (" + title + b") >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {n}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[k]:010d} 00000 n \n".encode() for k in range(1, n))
    trailer = f"<< /Size {n} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
