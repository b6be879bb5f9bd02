"""What spreadsheet and presentation readers share (XLSX and PPTX in ``office``, ODS and ODP
in ``opendocument``): a sheet or slide is one paragraph, a line per row or text paragraph
(``engine.ingest.documents.LINE_KINDS``), and a spreadsheet is read within a budget."""

from __future__ import annotations

#: A spreadsheet is read up to this many cells (empty ones count: reading them is the cost)
#: and this many characters of cell text; the rest is left out, with a note in status.
MAX_TABLE_CELLS = 200_000
MAX_TABLE_CHARS = 2_000_000


class TableBudget:
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


def one_line(text: str) -> str:
    """One cell or text paragraph on one line, its whitespace collapsed."""
    return " ".join(text.split())


def sheet_paragraph(name: str, lines: list[str]) -> str:
    """A sheet (or slide) as one paragraph: its name as a heading line, then its lines."""
    lines = [x for x in lines if x]
    if not lines:
        return ""
    return "\n".join([one_line(name), *lines] if name and name.strip() else lines)

