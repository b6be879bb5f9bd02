"""The preview pane: the document's text, scrolled to the answer sentence and highlighted.

The header names the document (and, for e-mail, its sender, recipients, subject and date);
buttons open it or show it in its folder; Previous/Next hit step through the document's
matching sentences (the best one and the others the engine returned for it), in reading
order.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QPalette, QTextCharFormat, QTextCursor, QTextOption
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QStyle,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.format import (
    attachment_origin,
    collapse,
    display_title,
    format_date,
    kind_label,
    locate,
    page_text,
    qt_offset,
    short_people,
)
from app.icons import kind_icon

BEST_COLOR = QColor("#ffd54f")  # the hit being looked at
OTHER_COLOR = QColor("#fff3c4")  # the document's other hits
QUOTED_COLOR = QColor("#6e6e6e")  # a reply's quoted history: shown whole, dimmed below its own words
MAX_PREVIEW_CHARS = 1_000_000  # longer documents are previewed around the answer
NO_TEXT = (
    "No text of this file is indexed: it is empty, could not be read, or is in a format that is"
    " not read (Sources lists why). It was found by its name."
)
NO_ATTACHMENT_TEXT = (
    "No text of this attachment is indexed: it is empty or in a format that is not read (a"
    " picture, an archive). It was found by its name; Open shows the message it came with."
)
REFLOW_KINDS = ("pdf", "email")  # hard-wrapped text: joined into paragraphs for reading

_HARD_BREAK = re.compile(r"(?<=[^\n]{40})\n(?=[^\s>\-*•\d])")


def reflow(text: str) -> str:
    """Join hard-wrapped lines (a line break after a long line, before ordinary text) with a
    space. One character for one, so offsets into the text stay valid; blank lines, short
    lines (signatures, addresses), quotes and list items keep their breaks."""
    return _HARD_BREAK.sub(" ", text)


def _breakable(text: str) -> str:
    """A path may wrap after its separators (a zero-width space), so a narrow preview wraps
    it instead of cutting the header off at its right edge (the tooltip has it whole)."""
    return re.sub(r"([/\\@._-])", "\\1\u200b", text)


@dataclass
class HitSpan:
    start: int  # Qt positions (UTF-16) in the shown text
    end: int
    best: bool
    score: float


class PreviewPane(QWidget):
    open_requested = Signal(str)  # path
    reveal_requested = Signal(str)  # path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preview")
        self.answer = None
        self.doc_key: str | None = None
        self.hits: list[HitSpan] = []
        self.current = -1
        self.partial: tuple[int, int, int] | None = None  # (shown from, to, of total) for long texts
        self.quoted = False  # a reply's quoted history is shown (dimmed)
        #: Set by :meth:`refresh_answer`: (scroll position, start of the hit looked at) to keep
        #: when the refreshed text arrives.
        self._keep_place: tuple[int, int] | None = None

        head = self._build_header()
        bar = self._build_bar()
        self._build_text()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 0)
        layout.addLayout(head)
        layout.addLayout(bar)
        layout.addWidget(self.text, 1)
        self.clear()

    def _build_header(self) -> QHBoxLayout:
        """The file icon, the title and the meta line beside it."""
        self.icon = QLabel()
        self.icon.setFixedSize(32, 32)
        self.title = QLabel()
        self.title.setObjectName("previewTitle")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title.setFont(font)
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta = QLabel()
        self.meta.setObjectName("previewMeta")
        self.meta.setWordWrap(True)
        self.meta.setTextFormat(Qt.TextFormat.RichText)
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)

        head = QHBoxLayout()
        head.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        titles = QVBoxLayout()
        titles.setSpacing(2)
        titles.addWidget(self.title)
        titles.addWidget(self.meta)
        head.addLayout(titles, 1)
        return head

    def _build_bar(self) -> QHBoxLayout:
        """Previous / next hit, the hit count, Open and Show in folder."""
        style = self.style()
        self.prev_btn = self._button(
            "Previous hit", style.standardIcon(QStyle.StandardPixmap.SP_ArrowUp), "Shift+F3"
        )
        self.next_btn = self._button("Next hit", style.standardIcon(QStyle.StandardPixmap.SP_ArrowDown), "F3")
        self.hit_label = QLabel()
        self.hit_label.setObjectName("hitLabel")
        self.hit_label.setMinimumWidth(1)  # shrinks (cut) in a narrow preview rather than widen it
        self.open_btn = self._button(
            "Open", style.standardIcon(QStyle.StandardPixmap.SP_DialogOpenButton), "Ctrl+O"
        )
        self.open_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.reveal_btn = self._button(
            "Show in folder", style.standardIcon(QStyle.StandardPixmap.SP_DirOpenIcon), "Ctrl+Shift+O"
        )
        self.reveal_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.prev_btn.clicked.connect(self.previous_hit)
        self.next_btn.clicked.connect(self.next_hit)
        self.open_btn.clicked.connect(lambda: self.answer and self.open_requested.emit(self.answer.path))
        self.reveal_btn.clicked.connect(lambda: self.answer and self.reveal_requested.emit(self.answer.path))

        bar = QHBoxLayout()
        bar.addWidget(self.prev_btn)
        bar.addWidget(self.next_btn)
        bar.addWidget(self.hit_label)
        bar.addStretch(1)
        bar.addWidget(self.open_btn)
        bar.addWidget(self.reveal_btn)
        return bar

    def _build_text(self) -> None:
        """The document's text, read-only."""
        self.text = QPlainTextEdit()
        self.text.setObjectName("previewText")
        self.text.setReadOnly(True)
        self.text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.text.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.text.setAccessibleName("Document preview")
        body = QFont(self.text.font())
        body.setPointSizeF(body.pointSizeF() * 1.05)
        self.text.setFont(body)
        self.text.document().setDocumentMargin(10)

    #: Narrower than this, Open and Show in folder show their icons only (tooltips keep the words).
    COMPACT_WIDTH = 330

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        style = (
            Qt.ToolButtonStyle.ToolButtonIconOnly
            if event.size().width() < self.COMPACT_WIDTH
            else Qt.ToolButtonStyle.ToolButtonTextBesideIcon
        )
        for b in (self.open_btn, self.reveal_btn):
            if b.toolButtonStyle() != style:
                b.setToolButtonStyle(style)
        self.icon.setVisible(style == Qt.ToolButtonStyle.ToolButtonTextBesideIcon)  # its room to the header

    def _button(self, text: str, icon, shortcut_hint: str) -> QToolButton:
        b = QToolButton()
        b.setText(text)
        b.setIcon(icon)
        b.setToolTip(f"{text} ({shortcut_hint})")
        b.setAutoRaise(True)
        return b

    # ------------------------------------------------------------------ content

    def clear(self, message: str = "") -> None:
        self.answer = None
        self.doc_key = None
        self._keep_place = None
        self.hits = []
        self.current = -1
        self.partial = None
        self.quoted = False
        self.icon.clear()
        self.title.setText("")
        self.meta.setText("")
        self.text.setExtraSelections([])
        self.text.setPlainText("")
        self.text.setPlaceholderText(message or "Select a result to preview it here.")
        self._update_buttons()

    def refresh_answer(self, answer) -> None:
        """The document shown, in refreshed results: new header and hits, and the text (which
        follows with :meth:`set_text`) kept where it is scrolled and at the hit looked at."""
        if self.answer is None or answer.doc_key != self.doc_key:
            self.show_answer(answer)
            return
        looked_at = self.hits[self.current].start if 0 <= self.current < len(self.hits) else -1
        self._keep_place = (self.text.verticalScrollBar().value(), looked_at)
        self.answer = answer
        self.title.setText(display_title(answer))
        self.meta.setText(self._meta_html(answer))
        self._update_buttons()

    def show_gone(self, answer) -> None:
        """The document that was selected is no longer among the results."""
        self.clear(
            f"“{display_title(answer)}” is no longer among the results: it was deleted, changed, "
            "or its source was removed. Select another result."
        )

    def show_answer(self, answer) -> None:
        """Show the header at once; the text follows with :meth:`set_text`."""
        self.answer = answer
        self.doc_key = answer.doc_key
        self._keep_place = None
        self.hits = []
        self.current = -1
        self.partial = None
        self.quoted = False
        self.icon.setPixmap(kind_icon(answer.kind).pixmap(32, 32))
        self.title.setText(display_title(answer))
        self.meta.setText(self._meta_html(answer))
        f = answer.fields or {}
        self.meta.setToolTip(
            "\n".join(f"{k.title()}: {f[k]}" for k in ("from", "to", "cc", "bcc") if f.get(k))
            if answer.kind == "email"
            else answer.path
        )
        self.text.setExtraSelections([])
        self.text.setPlainText("")
        self.text.setPlaceholderText("Loading…")
        self._update_buttons()

    def _meta_html(self, a) -> str:
        f = a.fields or {}
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        rows: list[tuple[str, str]] = []
        answer_row = ""
        if a.kind == "email":
            # the answer is this header line ("Who sent ...?", an address): marked as a hit is,
            # and the people in it that the question named are shown however long the list
            answer_key = getattr(a.best, "field", "") or ""
            for label, key in (("From", "from"), ("To", "to"), ("Cc", "cc"), ("Bcc", "bcc")):
                if f.get(key):
                    named = [a.best.passage[s:e] for s, e in a.best.highlights] if key == answer_key else []
                    rows.append((label, short_people(f[key], 6, named)))
                    answer_row = label if key == answer_key else answer_row
            rows.append(("Date", format_date(f.get("date") or a.date, with_time=True)))
            answer_row = "Date" if answer_key == "date" else answer_row  # "When was it sent?"
            if f.get("mailbox"):
                rows.append(("Mailbox", f["mailbox"]))
        else:
            rows.append(("Type", kind_label(a.kind)))
            if getattr(a, "page", None):
                rows.append(("Page", page_text(a).removeprefix("page ")))
            if getattr(a, "section", None):
                rows.append(("Section", a.section))
            if f.get("attachment_of"):  # which message it came with, not only the file holding it
                rows.append(("Attached to", attachment_origin(f)))
            if a.date:
                rows.append(("Modified" if not f.get("attachment_of") else "Date", format_date(a.date, with_time=True)))
        rows.append(("File" if a.kind != "email" else "Stored in", _breakable(a.path)))
        # byte-identical copies of the file elsewhere: one answer, every place it is
        rows += [("Same file at", _breakable(path)) for path in a.copies]
        mark = f'<span style="background:{BEST_COLOR.name()}; color:#000000; font-weight:bold">{{}}</span>'
        cells = "".join(
            f'<tr><td style="color:{muted}; padding-right:8px">{html.escape(k)}</td>'
            f"<td>{mark.format(html.escape(v)) if k == answer_row else html.escape(v)}</td></tr>"
            for k, v in rows
            if v
        )
        return f"<table cellspacing=0 cellpadding=0>{cells}</table>"

    def set_text(self, doc_key: str, text: str) -> None:
        """The document's text arrived: show it, mark the hits and go to the best one.

        A very long document is shown as a window of ``MAX_PREVIEW_CHARS`` around the best
        hit, so that laying it out never freezes the window.
        """
        if self.answer is None or doc_key != self.doc_key:
            return
        spans = self._hits(text, self.answer)
        lo, hi = 0, len(text)
        if len(text) > MAX_PREVIEW_CHARS:
            centre = next((sp[0] for sp in spans if sp[2]), self.answer.doc_start)
            lo = max(0, min(centre - MAX_PREVIEW_CHARS // 2, len(text) - MAX_PREVIEW_CHARS))
            hi = lo + MAX_PREVIEW_CHARS
            lo = text.rfind("\n", 0, lo) + 1 if lo else 0
        shown = reflow(text[lo:hi]) if self.answer.kind in REFLOW_KINDS else text[lo:hi]
        self.partial = (lo, hi, len(text)) if (lo, hi) != (0, len(text)) else None
        empty = NO_ATTACHMENT_TEXT if (self.answer.fields or {}).get("attachment_of") else NO_TEXT
        self.text.setPlaceholderText("" if text.strip() else empty)
        self.text.setPlainText(shown)
        self.quoted = self._dim_quoted(shown, lo)
        self.hits = [
            HitSpan(qt_offset(shown, a - lo), qt_offset(shown, b - lo), best, score)
            for a, b, best, score in spans
            if lo <= a and b <= hi
        ]
        # A header line that answers (marked in the header) is not in the text: no hit of the
        # text is looked at first, or one of them would read as the answer.
        in_header = bool(getattr(self.answer.best, "field", "")) and not any(sp[2] for sp in spans)
        self.current = next((i for i, h in enumerate(self.hits) if h.best), 0 if self.hits and not in_header else -1)
        keep, self._keep_place = self._keep_place, None
        if keep is None:
            self._show_current()
            return
        scroll, looked_at = keep
        self.current = next((i for i, h in enumerate(self.hits) if h.start == looked_at), self.current)
        self._show_current(move=False)
        self.text.verticalScrollBar().setValue(scroll)

    def _dim_quoted(self, shown: str, lo: int) -> bool:
        """Grey from where a reply's quoted history starts (the catalog's ``quoted_at``) to
        the end: the earlier messages stay readable and searchable, and do not read as what
        this message says (issue 36, item 1). True when some of it is shown."""
        try:
            at = int((self.answer.fields or {}).get("quoted_at") or -1) - lo
        except (TypeError, ValueError):
            return False
        if at < 0 or at >= len(shown):
            return False
        cur = QTextCursor(self.text.document())
        cur.setPosition(qt_offset(shown, at))
        cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        fmt = QTextCharFormat()
        fmt.setForeground(QUOTED_COLOR)
        cur.mergeCharFormat(fmt)
        return True

    def set_error(self, doc_key: str, message: str) -> None:
        if doc_key != self.doc_key:
            return
        self.text.setPlainText("")
        self.text.setPlaceholderText(f"The text of this document could not be shown.\n\n{message}")

    @staticmethod
    def _hits(text: str, answer) -> list[tuple[int, int, bool, float]]:
        """(start, end, is_best, score) of the answer's sentences in ``text``, in reading order."""
        spans: list[tuple[int, int, bool, float]] = []
        best = locate(text, answer.best.sentence, answer.doc_start, answer.best.passage, answer.best.start)
        if best is not None:
            spans.append((best[0], best[1], True, answer.best.score))
        for hit in answer.others:
            where = locate(text, hit.sentence, None, hit.passage, hit.start)
            if where is None or any(sp[0] == where[0] for sp in spans):
                continue
            spans.append((where[0], where[1], False, hit.score))
        spans.sort()
        return spans

    # ------------------------------------------------------------------ navigation

    def next_hit(self) -> None:
        if self.hits:
            self.current = (self.current + 1) % len(self.hits)
            self._show_current()

    def previous_hit(self) -> None:
        if self.hits:
            self.current = (self.current - 1) % len(self.hits) if self.current >= 0 else len(self.hits) - 1
            self._show_current()

    def highlighted_text(self) -> str:
        """The text of the hit being looked at ('' when none), whitespace collapsed."""
        if not (0 <= self.current < len(self.hits)):
            return ""
        h = self.hits[self.current]
        cur = QTextCursor(self.text.document())
        cur.setPosition(h.start)
        cur.setPosition(h.end, QTextCursor.MoveMode.KeepAnchor)
        return collapse(cur.selectedText().replace("\u2029", "\n"))

    def _show_current(self, move: bool = True) -> None:
        """Mark the hits (the one looked at strongest); ``move``: scroll to that one."""
        doc = self.text.document()
        selections = []
        for i, h in enumerate(self.hits):
            sel = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setBackground(BEST_COLOR if i == self.current else OTHER_COLOR)
            fmt.setForeground(QColor("#000000"))
            if i == self.current:
                fmt.setFontWeight(QFont.Weight.Bold)
            sel.format = fmt
            cur = QTextCursor(doc)
            cur.setPosition(min(h.start, doc.characterCount() - 1))
            cur.setPosition(min(h.end, doc.characterCount() - 1), QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cur
            selections.append(sel)
        self.text.setExtraSelections(selections)
        if move and 0 <= self.current < len(self.hits):
            h = self.hits[self.current]
            cur = QTextCursor(doc)
            cur.setPosition(min(h.start, doc.characterCount() - 1))
            self.text.setTextCursor(cur)
            self.text.centerCursor()
        self._update_buttons()

    def _update_buttons(self) -> None:
        has = self.answer is not None
        self.open_btn.setEnabled(has)
        self.reveal_btn.setEnabled(has)
        many = len(self.hits) > 1 or (bool(self.hits) and self.current < 0)
        self.prev_btn.setEnabled(many)
        self.next_btn.setEnabled(many)
        n = len(self.hits)
        if self.hits and self.current >= 0:
            # the pane opens on the best hit, which need not be the first in the text: say so,
            # or "Hit 3 of 4" reads as if the first two were skipped (issue 36, item 10)
            best = "Best hit" if self.hits[self.current].best else "Hit"
            label = f"{best} {self.current + 1} of {n}"
        else:  # the answer is a header line: the text's hits are still there to go through
            label = f"{n} more hit{'s' if n != 1 else ''} in the text" if self.hits else ""
        if self.quoted:
            label += f"{' · ' if label else ''}the messages it quotes in grey"
        if self.partial is not None:
            lo, hi, total = self.partial
            label += f"{' · ' if label else ''}showing characters {lo:,}–{hi:,} of {total:,}"
        self.hit_label.setText(label)
