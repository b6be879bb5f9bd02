"""The filter panel: folder, file type, date (presets, or a range typed as a year, a month or
a day), and for e-mail sender (part of a name or address, suggested from every indexed
sender) and mailbox (labelled apart when two share a name).

Every change emits ``changed`` (debounced by the window, which re-runs the current
question). :meth:`FilterPanel.values` returns the keyword arguments of
``engine.api.facade.SearchFilters``, or None when nothing restricts the search.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from PySide6.QtCore import QDate, QSignalBlocker, QStringListModel, Qt, Signal
from PySide6.QtWidgets import (
    QCalendarWidget,
    QCheckBox,
    QComboBox,
    QCompleter,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QScrollArea,
    QStyle,
    QVBoxLayout,
    QWidget,
    QWidgetAction,
)

from app.format import KIND_LABELS
from app.icons import kind_icon

ANY_FOLDER = "Everywhere"
OTHER_FOLDER = "Other folder…"
#: The date filter's choices: (label, key); ``custom`` is a range typed or picked.
DATE_PRESETS = (
    ("Any time", "any"),
    ("Last week", "week"),
    ("Last month", "month"),
    ("Last year", "year"),
    ("Custom range", "custom"),
)


class FilterPanel(QScrollArea):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("filters")
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self._last_dir = str(Path.home())
        inner = QWidget()
        layout = QVBoxLayout(inner)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self._folder_box())
        layout.addWidget(self._kinds_box())
        layout.addWidget(self._dates_box())
        layout.addWidget(self._mail_box())

        self.reset_btn = QPushButton("&Reset filters")
        self.reset_btn.clicked.connect(self.reset)
        layout.addWidget(self.reset_btn)
        layout.addStretch(1)
        self.setWidget(inner)
        self.setMinimumWidth(inner.minimumSizeHint().width() + 16)  # + the vertical scroll bar

    def _folder_box(self) -> QGroupBox:
        """The folder a document must be under."""
        box = QGroupBox("&Folder")
        self.folder = QComboBox()
        self.folder.setObjectName("folderFilter")
        self.folder.setToolTip("Only documents under this folder")
        self.folder.addItem(ANY_FOLDER, None)
        self.folder.addItem(OTHER_FOLDER, "__other__")
        self.folder.activated.connect(self._folder_activated)
        QVBoxLayout(box).addWidget(self.folder)
        return box

    def _kinds_box(self) -> QGroupBox:
        """The file types, with All / Documents / Mail."""
        box = QGroupBox("File &type")
        grid = QGridLayout(box)
        grid.setVerticalSpacing(2)
        self.kind_boxes: dict[str, QCheckBox] = {}
        for i, (kind, label) in enumerate(KIND_LABELS.items()):
            cb = QCheckBox(label)
            cb.setIcon(kind_icon(kind))
            cb.setChecked(True)
            cb.toggled.connect(self.changed)
            self.kind_boxes[kind] = cb
            grid.addWidget(cb, i, 0)
        row = QHBoxLayout()
        all_btn = QPushButton("All")
        all_btn.setFlat(True)
        all_btn.clicked.connect(lambda: self.set_kinds(None))
        docs_btn = QPushButton("Documents")
        docs_btn.setFlat(True)
        docs_btn.setToolTip("Everything but e-mail")
        docs_btn.clicked.connect(lambda: self.set_kinds([k for k in KIND_LABELS if k != "email"]))
        mail_btn = QPushButton("Mail")
        mail_btn.setFlat(True)
        mail_btn.setToolTip("Only e-mail")
        mail_btn.clicked.connect(lambda: self.set_kinds(["email"]))
        for b in (all_btn, docs_btn, mail_btn):
            b.setMinimumWidth(b.fontMetrics().horizontalAdvance(b.text()) + 16)  # narrow windows
            row.addWidget(b)
        grid.addLayout(row, len(KIND_LABELS), 0)
        return box

    def _dates_box(self) -> QGroupBox:
        """Dates: a preset, or a range typed (a year, a month or a day) or picked."""
        box = QGroupBox("&Date")
        grid = QGridLayout(box)
        self.date_preset = QComboBox()
        self.date_preset.setObjectName("datePreset")
        for label, key in DATE_PRESETS:
            self.date_preset.addItem(label, key)
        self.date_preset.setToolTip("Only documents modified, or e-mail sent, in this period")
        self.date_preset.currentIndexChanged.connect(self._preset_changed)
        self.date_from = DateField(end=False)
        self.date_from.setObjectName("dateFrom")
        self.date_to = DateField(end=True)
        self.date_to.setObjectName("dateTo")
        for field in (self.date_from, self.date_to):
            field.typed.connect(self._date_typed)
        self.date_error = QLabel()
        self.date_error.setObjectName("dateError")
        self.date_error.setWordWrap(True)
        self.date_error.setStyleSheet("color: #c62828;")
        self.date_error.hide()
        grid.addWidget(self.date_preset, 0, 0, 1, 2)
        grid.addWidget(QLabel("From"), 1, 0)
        grid.addWidget(self.date_from, 1, 1)
        grid.addWidget(QLabel("To"), 2, 0)
        grid.addWidget(self.date_to, 2, 1)
        grid.addWidget(self.date_error, 3, 0, 1, 2)
        grid.setColumnStretch(1, 1)
        return box

    def _mail_box(self) -> QGroupBox:
        """E-mail: the sender (part of a name or address, suggested) and the mailbox."""
        box = QGroupBox("&E-mail")
        grid = QGridLayout(box)
        self.sender = QLineEdit()
        self.sender.setObjectName("senderFilter")
        self.sender.setPlaceholderText("name or address")
        self.sender.setClearButtonEnabled(True)
        self.sender.setToolTip(
            "Only messages from senders whose name or address holds this (e.g. a surname);"
            " suggestions come from every indexed message"
        )
        self.sender_model = QStringListModel(self)
        completer = QCompleter(self.sender_model, self.sender)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setMaxVisibleItems(12)
        completer.activated.connect(lambda _t: self.changed.emit())
        self.sender.setCompleter(completer)
        self.mailbox = QComboBox()
        self.mailbox.setObjectName("mailboxFilter")
        self.mailbox.setEditable(True)
        self.mailbox.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.mailbox.lineEdit().setPlaceholderText("any")
        self.mailbox.lineEdit().setClearButtonEnabled(True)
        self.mailbox.setToolTip(
            "Only messages from this mailbox (a Maildir, an mbox file or a folder of e-mail files);"
            " mailboxes of the same name show the folder they are in"
        )
        self.sender.editingFinished.connect(self.changed)
        self.sender.textChanged.connect(lambda t: not t and self.changed.emit())
        self.mailbox.lineEdit().editingFinished.connect(self.changed)
        self.mailbox.activated.connect(lambda _i: self.changed.emit())
        # a chosen label is shown from its start ("Documents (fischer-m)", not "uments
        # (fischer-m)" scrolled to its end; issue 36, item 10), whole in the tooltip
        self.mailbox.currentTextChanged.connect(self._show_mailbox_start)
        self.mailbox.lineEdit().textChanged.connect(lambda t: not t and self.changed.emit())
        grid.addWidget(QLabel("Sender"), 0, 0)
        grid.addWidget(self.sender, 0, 1)
        grid.addWidget(QLabel("Mailbox"), 1, 0)
        grid.addWidget(self.mailbox, 1, 1)
        grid.setColumnStretch(1, 1)
        return box

    # ------------------------------------------------------------------ folder

    def set_sources(self, sources: list) -> None:
        """Offer each source folder (and any folder picked before) in the folder box."""
        current = self.folder.currentData()
        known = {self.folder.itemData(i) for i in range(self.folder.count())}
        for s in sources:
            folder = s.path if Path(s.path).is_dir() else str(Path(s.path).parent)
            if folder not in known:
                self.folder.insertItem(self.folder.count() - 1, folder, folder)
                known.add(folder)
        with QSignalBlocker(self.folder):
            i = self.folder.findData(current)
            self.folder.setCurrentIndex(max(0, i))

    def _folder_activated(self, index: int) -> None:
        if self.folder.itemData(index) == "__other__":
            path = QFileDialog.getExistingDirectory(self, "Search only in folder", self._last_dir)
            if not path:
                self.folder.setCurrentIndex(0)
                return
            self.set_folder(path)
            return
        self.changed.emit()

    def set_folder(self, path: str | None) -> None:
        if path is None:
            self.folder.setCurrentIndex(0)
        else:
            self._last_dir = path
            i = self.folder.findData(path)
            if i < 0:
                i = self.folder.count() - 1
                self.folder.insertItem(i, path, path)
            self.folder.setCurrentIndex(i)
        self.changed.emit()

    # ------------------------------------------------------------------ kinds, mail

    def set_kinds(self, kinds: list[str] | None) -> None:
        for kind, cb in self.kind_boxes.items():
            with QSignalBlocker(cb):
                cb.setChecked(kinds is None or kind in kinds)
        self.changed.emit()

    def set_mail_catalog(self, senders: list, mailboxes: list) -> None:
        """Offer every indexed sender (``engine.api.facade.SenderInfo``, most messages first) and
        mailbox (``MailboxInfo``, labelled apart when names repeat), not only those seen in
        results."""
        self.sender_model.setStringList([s.label for s in senders])
        # the line edit's own signals too: refilling the list is no change of the filter
        with QSignalBlocker(self.mailbox), QSignalBlocker(self.mailbox.lineEdit()):
            text = self.mailbox.currentText()
            self.mailbox.clear()
            for m in mailboxes:
                self.mailbox.addItem(m.label, m.path)
                self.mailbox.setItemData(
                    self.mailbox.count() - 1,
                    f"{m.path}\n{m.messages:,} message{'s' if m.messages != 1 else ''}",
                    Qt.ItemDataRole.ToolTipRole,
                )
            self.mailbox.setEditText(text)
        # the list opens as wide as its longest label, whatever the panel's width
        view = self.mailbox.view()
        view.setMinimumWidth(view.sizeHintForColumn(0) + view.verticalScrollBar().sizeHint().width() + 8)

    def _show_mailbox_start(self, text: str) -> None:
        self.mailbox.lineEdit().setCursorPosition(0)
        self.mailbox.lineEdit().setToolTip(text)

    # ------------------------------------------------------------------ dates

    def _preset_changed(self, _index: int) -> None:
        """Show the preset's range in the fields (typing there makes it a custom range)."""
        key = self.date_preset.currentData()
        if key != "custom":
            lo, _hi = preset_range(key, dt.date.today())
            self.date_from.show_date(lo)
            self.date_to.show_date(None)
            self.date_error.hide()
        self.changed.emit()

    def _date_typed(self) -> None:
        """A date typed or picked: a custom range; a date that does not parse is said and ignored."""
        problems = [f.problem() for f in (self.date_from, self.date_to) if f.problem()]
        self.date_error.setText("; ".join(problems))
        self.date_error.setVisible(bool(problems))
        custom = self.date_preset.findData("custom")
        if self.date_preset.currentIndex() != custom:
            with QSignalBlocker(self.date_preset):
                self.date_preset.setCurrentIndex(custom)
        self.changed.emit()

    def set_date_preset(self, key: str) -> None:
        """Choose a preset by key (``any``, ``week``, ``month``, ``year``, ``custom``)."""
        self.date_preset.setCurrentIndex(max(0, self.date_preset.findData(key)))

    def date_range(self) -> tuple[dt.date | None, dt.date | None]:
        """The dates the filter keeps, inclusive (None: open-ended)."""
        key = self.date_preset.currentData()
        if key == "custom":
            return self.date_from.date(), self.date_to.date()
        return preset_range(key, dt.date.today())

    # ------------------------------------------------------------------ values

    def values(self) -> dict | None:
        """Keyword arguments for ``SearchFilters``, or None when no filter is set."""
        kw: dict = {}
        folder = self.folder.currentData()
        if folder and folder != "__other__":
            kw["folder"] = folder
        checked = [k for k, cb in self.kind_boxes.items() if cb.isChecked()]
        if checked and len(checked) < len(self.kind_boxes):
            kw["kinds"] = checked
        date_from, date_to = self.date_range()
        if date_from is not None:
            kw["date_from"] = date_from
        if date_to is not None:
            kw["date_to"] = date_to
        if self.sender.text().strip():
            kw["sender"] = self.sender.text().strip()
        if self.mailbox.currentText().strip():
            kw["mailbox"] = self.mailbox.currentText().strip()
        return kw or None

    def describe(self) -> str:
        """A short summary of the active filters for the status line ('' when none)."""
        kw = self.values() or {}
        parts = []
        if "folder" in kw:
            parts.append(f"in {Path(kw['folder']).name or kw['folder']}")
        if "kinds" in kw:
            parts.append(", ".join(KIND_LABELS.get(k, k) for k in kw["kinds"]))
        if self.date_preset.currentData() not in ("any", "custom"):
            parts.append(self.date_preset.currentText().lower())
        elif "date_from" in kw or "date_to" in kw:
            parts.append(f"{kw.get('date_from', '…')} – {kw.get('date_to', '…')}")
        if "sender" in kw:
            parts.append(f"from {kw['sender']}")
        if "mailbox" in kw:
            parts.append(f"mailbox {kw['mailbox']}")
        return "; ".join(parts)

    def reset(self) -> None:
        blockers = [
            QSignalBlocker(w) for w in (self.folder, self.date_preset, self.sender, self.mailbox)
        ]
        self.folder.setCurrentIndex(0)
        self.date_preset.setCurrentIndex(0)
        self.date_from.show_date(None)
        self.date_to.show_date(None)
        self.date_error.hide()
        self.sender.clear()
        self.mailbox.setEditText("")
        del blockers
        self.set_kinds(None)  # emits changed once


def preset_range(key: str, today: dt.date) -> tuple[dt.date | None, dt.date | None]:
    """The (from, to) of a date preset, counted back from ``today`` (to is open: today)."""
    q = QDate(today.year, today.month, today.day)
    start = {"week": q.addDays(-7), "month": q.addMonths(-1), "year": q.addYears(-1)}.get(key)
    return (_pydate(start) if start is not None else None), None


def _pydate(d: QDate) -> dt.date:
    return dt.date(d.year(), d.month(), d.day())


class DateField(QLineEdit):
    """A date typed as a year, a month or a day (2001, 2001-05, 2001-05-14; the forms of the
    search box's ``after:``/``before:``) or picked on a calendar. ``end``: a year or month
    means its last day (a "To" field), else its first."""

    typed = Signal()  # the user typed (and left the field or pressed Enter) or picked a date

    def __init__(self, end: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.end = end
        self.setPlaceholderText("today" if end else "e.g. 2001 or 2001-05")
        self.setToolTip("A year (2001), a month (2001-05) or a day (2001-05-14)")
        self.setClearButtonEnabled(True)
        pick = self.addAction(
            self.style().standardIcon(QStyle.StandardPixmap.SP_FileDialogDetailedView),
            QLineEdit.ActionPosition.TrailingPosition,
        )
        pick.setToolTip("Pick a day on a calendar")
        pick.triggered.connect(self._pick)
        self._shown = ""
        self.editingFinished.connect(self._finished)

    def date(self) -> dt.date | None:
        """The date the text stands for (None when empty or not a date)."""
        from engine.search.query import parse_date

        text = self.text().strip()
        return parse_date(text, end=self.end) if text else None

    def problem(self) -> str:
        """Why the text is not a date ('' when it is one, or empty)."""
        text = self.text().strip()
        if not text or self.date() is not None:
            return ""
        return f"“{text}” is not a date: type a year (2001), a month (2001-05) or a day (2001-05-14)"

    def show_date(self, day: dt.date | None) -> None:
        """Show ``day`` (a preset's) without it counting as typed."""
        self._shown = day.isoformat() if day else ""
        with QSignalBlocker(self):
            self.setText(self._shown)
        self._mark()

    def _finished(self) -> None:
        if self.text().strip() != self._shown:
            self._shown = self.text().strip()
            self._mark()
            self.typed.emit()

    def _mark(self) -> None:
        self.setStyleSheet("QLineEdit { border: 1px solid #c62828; }" if self.problem() else "")

    def _pick(self) -> None:
        menu = QMenu(self)
        calendar = QCalendarWidget(menu)
        day = self.date() or dt.date.today()
        calendar.setSelectedDate(QDate(day.year, day.month, day.day))
        action = QWidgetAction(menu)
        action.setDefaultWidget(calendar)
        menu.addAction(action)

        def chosen(d: QDate) -> None:
            menu.close()
            self.setText(_pydate(d).isoformat())
            self._finished()

        calendar.clicked.connect(chosen)
        calendar.activated.connect(chosen)
        menu.exec(self.mapToGlobal(self.rect().bottomLeft()))
