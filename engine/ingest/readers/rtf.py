"""RTF, by striprtf: each ``\\par`` a paragraph, the code page from ``\\ansicpg``."""

from __future__ import annotations

import re

from engine.ingest.documents import ExtractionError
from engine.ingest.readers.common import Extracted, clean, join_paragraphs

_RTF_TITLE = re.compile(r"\{\\title\s+([^{}]*)\}")


def read_rtf(data: bytes, where: str) -> Extracted:
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip().startswith(b"{\\rtf"):
        raise ExtractionError(where, "corrupt RTF: no {\\rtf header")
    source = data.decode("latin-1")
    try:
        # RTF is 7-bit; \'xx escapes carry the code page, which striprtf reads from \ansicpg.
        text = rtf_to_text(source, errors="ignore")
        match = _RTF_TITLE.search(source)
        title = (
            rtf_to_text("{\\rtf1\\ansi " + match.group(1) + "}", errors="ignore").strip() if match else None
        )
    except Exception as exc:
        raise ExtractionError(where, f"corrupt RTF: {type(exc).__name__}: {exc}") from None
    # Each \par becomes one newline: in RTF a line break is a paragraph.
    paragraphs = text.replace("\r\n", "\n").split("\n")
    return clean(join_paragraphs(paragraphs)), title or None, {}


def looks_like_rtf(head: bytes) -> bool:
    return head.lstrip().startswith(b"{\\rtf")
