"""Plain functions that turn engine records into text for the window (no widgets here).

Kept apart from the widgets so they can be tested without a display, and so the result
list, the preview and the status bar describe a document the same way.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable
from datetime import date, datetime, timezone
from pathlib import Path

from engine.ingest.mail import people_of

KIND_LABELS: dict[str, str] = {
    "text": "Text",
    "markdown": "Markdown",
    "html": "Web page",
    "pdf": "PDF",
    "docx": "Word document",
    "odt": "OpenDocument text",
    "epub": "EPUB book",
    "rtf": "Rich text",
    "xlsx": "Excel workbook",
    "ods": "OpenDocument spreadsheet",
    "pptx": "PowerPoint presentation",
    "odp": "OpenDocument presentation",
    "other": "Other file (name only)",
    "email": "E-mail",
    "image": "Picture (read by OCR)",
}

# Short labels drawn on the document icons.
KIND_BADGES: dict[str, str] = {
    "text": "TXT",
    "markdown": "MD",
    "html": "HTML",
    "pdf": "PDF",
    "docx": "DOC",
    "odt": "ODT",
    "epub": "EPUB",
    "rtf": "RTF",
    "xlsx": "XLS",
    "ods": "ODS",
    "pptx": "PPT",
    "odp": "ODP",
    "other": "FILE",
    "email": "",
    "image": "IMG",
}

_WS = re.compile(r"\s+")


def kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind.upper() if kind else "Document")


def collapse(text: str) -> str:
    """Whitespace runs to one space, trimmed (PDF and e-mail sentences keep line breaks)."""
    return _WS.sub(" ", text).strip()


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            return datetime.combine(date.fromisoformat(value[:10]), datetime.min.time())
        except ValueError:
            return None
    if dt.tzinfo is not None:
        dt = dt.astimezone()  # local time for display
    return dt


def format_date(value: str | None, with_time: bool = False) -> str:
    """``2001-04-05T14:34:00+00:00`` -> ``5 Apr 2001`` (``5 Apr 2001 16:34`` local with time)."""
    dt = parse_iso(value)
    if dt is None:
        return value or ""
    day = f"{dt.day} {dt.strftime('%b %Y')}"
    return f"{day} {dt.strftime('%H:%M')}" if with_time else day


def format_when(value: str | None, now: datetime | None = None) -> str:
    """A past moment as ``just now``, ``5 min ago``, ``3 h ago`` or a date."""
    dt = parse_iso(value)
    if dt is None:
        return value or "never"
    now = now or datetime.now(timezone.utc).astimezone()
    if dt.tzinfo is None:
        dt = dt.astimezone()
    secs = (now - dt).total_seconds()
    if secs < 0:
        return format_date(value, with_time=True)
    if secs < 60:
        return "just now"
    if secs < 3600:
        return f"{int(secs // 60)} min ago"
    if secs < 86400:
        return f"{int(secs // 3600)} h ago"
    return format_date(value, with_time=True)


def format_count(n: int | float) -> str:
    return f"{int(n):,}"


def format_duration(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:  # None or NaN
        return "…"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def display_folder(path: str) -> str:
    """The folder holding a document, with the home folder shortened to ``~``."""
    folder = str(Path(path).parent) if path else ""
    home = str(Path.home())
    if folder == home:
        return "~"
    if folder.startswith(home + os.sep):
        return "~" + folder[len(home) :]
    return folder


def display_title(answer) -> str:
    if answer.kind == "email":
        return answer.fields.get("subject") or answer.title or "(no subject)"
    return answer.title or Path(answer.path).name or answer.doc_key


def short_people(value: str, limit: int = 3, keep: Iterable[str] = ()) -> str:
    """``a, b, c, d, e`` -> ``a, b, c +2``.

    A person holding one of the words ``keep`` (the question's words that a header line
    answering it matched) is shown also when the list runs past ``limit``: an address
    question's answer may be the 20th recipient. The others shown are the first ones, in
    the list's order."""
    people = people_of(value)  # '"Kim, Soo-jin" <sj@x.org>' is one person
    if len(people) <= limit:
        return ", ".join(people)
    words = {w.lower() for w in keep if w.strip()}
    wanted = [i for i, p in enumerate(people) if words and any(w in p.lower() for w in words)][:limit]
    shown = sorted(wanted + [i for i in range(len(people)) if i not in wanted][: limit - len(wanted)])
    return ", ".join(people[i] for i in shown) + f" +{len(people) - limit}"


def snippet_window(passage: str, start: int, end: int, context: int = 240) -> tuple[int, int]:
    """The part of ``passage`` to show: about ``context`` characters either side of the
    sentence ``[start, end)``, cut at spaces."""
    n = len(passage)
    start = max(0, min(start, n))
    end = max(start, min(end, n))
    lo, hi = 0, n
    if start > context:
        cut = passage.find(" ", start - context, start)
        lo = cut + 1 if cut >= 0 else start - context
    if n - end > context:
        cut = passage.rfind(" ", end, end + context)
        hi = cut if cut > end else end + context
    return lo, hi


def snippet(passage: str, start: int, end: int, context: int = 240) -> tuple[str, str, str]:
    """(before, sentence, after) of the shown window, whitespace collapsed, ``…`` where cut."""
    lo, hi = snippet_window(passage, start, end, context)
    start, end = max(lo, min(start, hi)), max(lo, min(end, hi))
    before = ("…" if lo > 0 else "") + collapse(passage[lo:start])
    after = collapse(passage[end:hi]) + ("…" if hi < len(passage) else "")
    return before.strip(), collapse(passage[start:end]), after.strip()


def passage_html(hit, context: int = 240, mark: str = "#fff0a0") -> str:
    """The hit's passage as HTML: the answer sentence in bold, question words (the hit's
    ``highlights``, when the engine gives them) on a ``mark`` background."""
    passage = hit.passage
    lo, hi = snippet_window(passage, hit.start, hit.end, context)
    marks = sorted(
        (max(lo, a), min(hi, b)) for a, b in (getattr(hit, "highlights", None) or []) if b > lo and a < hi
    )
    cuts = {lo, hi, max(lo, min(hit.start, hi)), max(lo, min(hit.end, hi))}
    for a, b in marks:
        cuts.update((a, b))
    points = sorted(cuts)
    out: list[str] = ["…" if lo > 0 else ""]
    for a, b in zip(points, points[1:], strict=False):
        piece = _WS.sub(" ", passage[a:b])
        if not piece:
            continue
        piece = html.escape(piece)
        if any(ma <= a and b <= mb for ma, mb in marks) and piece.strip():
            piece = f'<span style="background-color:{mark}">{piece}</span>'
        if hit.start <= a and b <= hit.end:
            piece = f"<b>{piece}</b>"
        out.append(piece)
    if hi < len(passage):
        out.append("…")
    return "".join(out).strip()


def attachment_origin(fields: dict) -> str:
    """The message an attachment came with, as the list and the preview name it:
    "“Site visit” from ann@x.org"."""
    origin = f"“{fields.get('subject') or 'a message'}”"
    return origin + (" from " + short_people(fields["from"], 1) if fields.get("from") else "")


def meta_line(answer) -> str:
    """Type, folder and date for a file (and the message it came with for an attachment);
    sender, recipients, mailbox and date for e-mail."""
    f = answer.fields or {}
    if answer.kind == "email":
        bits = []
        if f.get("from"):
            bits.append("From " + f["from"])
        if f.get("to"):
            bits.append("to " + short_people(f["to"]))
        if f.get("cc"):
            bits.append("cc " + short_people(f["cc"], 2))
        head = " ".join(bits)
        tail = [format_date(f.get("date") or answer.date, with_time=True)]
        if f.get("mailbox"):
            tail.append(f["mailbox"])
        return " · ".join(x for x in [head, *tail] if x)
    if f.get("attachment_of"):
        bits = [kind_label(answer.kind), "attached to " + attachment_origin(f), format_date(answer.date)]
    else:
        bits = [kind_label(answer.kind), display_folder(answer.path), format_date(answer.date)]
    if getattr(answer, "page", None):  # a PDF's answer: its page (issue 39)
        bits.insert(1, page_text(answer))
    if getattr(answer, "section", None):  # a DOCX/ODT/EPUB answer: the heading it is under
        bits.insert(1, section_text(answer))
    return " · ".join(b for b in bits if b)


def section_text(answer) -> str:
    """'under "Installation"' for an answer under a heading, else ''."""
    section = getattr(answer, "section", None)
    return f"under \u201c{section}\u201d" if section else ""


def page_text(answer) -> str:
    """"page 14 of 30" for a paged document's answer, else ''."""
    page, pages = getattr(answer, "page", None), getattr(answer, "pages", None)
    if not page:
        return ""
    return f"page {page} of {pages}" if pages else f"page {page}"


def result_html(answer, muted: str = "#666", accent: str = "#1a55a8", context: int = 240) -> str:
    """One result for the list: title line, meta line, passage with the sentence in bold."""
    title = html.escape(display_title(answer))
    meta = html.escape(meta_line(answer))
    body = passage_html(answer.best, context)
    more = ""
    if answer.others:
        n = len(answer.others)
        more = f' <span style="color:{muted}">(+{n} more hit{"s" if n > 1 else ""})</span>'
    return (
        f'<div style="font-size:large; color:{accent}"><b>{title}</b></div>'
        f'<div style="color:{muted}">{meta}</div>'
        f'<div style="margin-top:3px">{body}{more}</div>'
    )


def qt_offset(text: str, index: int) -> int:
    """A Python str index as a Qt text position (UTF-16 code units)."""
    index = max(0, min(index, len(text)))
    prefix = text[:index]
    if prefix.isascii():
        return index
    return len(prefix.encode("utf-16-le")) // 2


def locate(
    text: str, sentence: str, hint: int | None = None, passage: str | None = None, start: int = 0
) -> tuple[int, int] | None:
    """Where ``sentence`` lies in ``text`` (Python indices), preferring the spot nearest ``hint``.

    Falls back to whitespace-insensitive matching, then to the passage position.
    """
    if not sentence:
        return None
    if hint is not None and text[hint : hint + len(sentence)] == sentence:
        return hint, hint + len(sentence)
    found = _find_nearest(text, sentence, hint)
    if found is not None:
        return found, found + len(sentence)
    # whitespace differences (line breaks inside PDF sentences, collapsed spaces)
    words = sentence.split()
    if words:
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
        best = None
        for m in pattern.finditer(text):
            if best is None or (hint is not None and abs(m.start() - hint) < abs(best.start() - hint)):
                best = m
            if hint is None:
                break
        if best is not None:
            return best.start(), best.end()
    if passage:
        p = _find_nearest(text, passage, hint)
        if p is not None:
            return p + start, p + start + len(sentence)
    if hint is not None and 0 <= hint < len(text):
        return hint, min(len(text), hint + len(sentence))
    return None


def _find_nearest(text: str, needle: str, hint: int | None) -> int | None:
    first = text.find(needle)
    if first < 0:
        return None
    if hint is None:
        return first
    best, pos = first, first
    while True:
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return best
        if abs(pos - hint) < abs(best - hint):
            best = pos
        elif pos > hint:
            return best


#: Sentences per second the default model (sparc-tiny 0.4.0) indexes at end to end on a 2-core
#: CPU: 97.0 in ``python -m bench.model_cost`` (``bench/results/model-cost-20261127-230016.json``,
#: docs/training.md): the forecast of a rebuild.
REBUILD_RATE = 97.0


def _model_label(model: str) -> str:
    """"sparc-tiny 0.4.0+1a2b3c" -> "sparc-tiny 0.4.0"."""
    return model.split("+", 1)[0]


def rebuild_notice(old: str, new: str, sentences: int) -> tuple[str, str]:
    """Title and text of what the window says once when the index is rebuilt for another
    model: why, how long, and that search goes on meanwhile."""
    old_l, new_l = _model_label(old), _model_label(new)
    why = f"This version of sparcdesk searches with {new_l}; your index was built with {old_l}."
    if old_l.startswith("sparc-tiny 0.3") and new_l.startswith("sparc-tiny 0.4"):
        why += " The new model's index is about five times smaller."
    eta = format_duration(sentences / REBUILD_RATE) if sentences else "a few minutes"
    text = (
        f"{why} Your {format_count(sentences)} indexed sentences are encoded again in the "
        f"background: about {eta} on a 2-core laptop (the bar below shows the time left). "
        "Search keeps answering from the current index until the new one is complete; "
        "pause or stop it from the bar, and it goes on where it stopped."
    )
    return "Rebuilding the index for a new search model", text
