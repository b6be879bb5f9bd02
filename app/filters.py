"""The filter panel: folder, file type, date range, and for e-mail sender and mailbox.

Every change emits ``changed`` (debounced by the window, which re-runs the current
question). :meth:`FilterPanel.values` returns the keyword arguments of
``engine.api.facade.SearchFilters``, or None when nothing restricts the search.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from PySide6.QtCore import QDate, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDateEdit,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.format import KIND_LABELS
from app.icons import kind_icon

ANY_FOLDER = "Everywhere"
OTHER_FOLDER = "Other folder…"


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

        # folder
        box = QGroupBox("&Folder")
        self.folder = QComboBox()
        self.folder.setObjectName("folderFilter")
        self.folder.setToolTip("Only documents under this folder")
        self.folder.addItem(ANY_FOLDER, None)
        self.folder.addItem(OTHER_FOLDER, "__other__")
        self.folder.activated.connect(self._folder_activated)
        QVBoxLayout(box).addWidget(self.folder)
        layout.addWidget(box)

        # kinds
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
            row.addWidget(b)
        grid.addLayout(row, len(KIND_LABELS), 0)
        layout.addWidget(box)

        # dates
        box = QGroupBox("&Date")
        grid = QGridLayout(box)
        self.from_check = QCheckBox("From")
        self.to_check = QCheckBox("To")
        today = QDate.currentDate()
        self.date_from = QDateEdit(today.addYears(-1))
        self.date_to = QDateEdit(today)
        for check, edit in ((self.from_check, self.date_from), (self.to_check, self.date_to)):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setEnabled(False)
            check.toggled.connect(edit.setEnabled)
            check.toggled.connect(self.changed)
            edit.dateChanged.connect(lambda _d, c=check: c.isChecked() and self.changed.emit())
        grid.addWidget(self.from_check, 0, 0)
        grid.addWidget(self.date_from, 0, 1)
        grid.addWidget(self.to_check, 1, 0)
        grid.addWidget(self.date_to, 1, 1)
        grid.setColumnStretch(1, 1)
        layout.addWidget(box)

        # mail
        box = QGroupBox("&E-mail")
        grid = QGridLayout(box)
        self.sender = QLineEdit()
        self.sender.setObjectName("senderFilter")
        self.sender.setPlaceholderText("address")
        self.sender.setClearButtonEnabled(True)
        self.sender.setToolTip("Only messages from this address")
        self.mailbox = QComboBox()
        self.mailbox.setObjectName("mailboxFilter")
        self.mailbox.setEditable(True)
        self.mailbox.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.mailbox.lineEdit().setPlaceholderText("any")
        self.mailbox.lineEdit().setClearButtonEnabled(True)
        self.mailbox.setToolTip("Only messages from this mailbox (mbox file or Maildir folder)")
        self.sender.editingFinished.connect(self.changed)
        self.sender.textChanged.connect(lambda t: not t and self.changed.emit())
        self.mailbox.lineEdit().editingFinished.connect(self.changed)
        self.mailbox.activated.connect(lambda _i: self.changed.emit())
        self.mailbox.lineEdit().textChanged.connect(lambda t: not t and self.changed.emit())
        self._senders: set[str] = set()
        self._mailboxes: set[str] = set()
        grid.addWidget(QLabel("Sender"), 0, 0)
        grid.addWidget(self.sender, 0, 1)
        grid.addWidget(QLabel("Mailbox"), 1, 0)
        grid.addWidget(self.mailbox, 1, 1)
        grid.setColumnStretch(1, 1)
        layout.addWidget(box)

        self.reset_btn = QPushButton("&Reset filters")
        self.reset_btn.clicked.connect(self.reset)
        layout.addWidget(self.reset_btn)
        layout.addStretch(1)
        self.setWidget(inner)
        self.setMinimumWidth(inner.sizeHint().width() + 16)

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

    def learn(self, answers: list) -> None:
        """Remember senders and mailboxes seen in results, for completion."""
        for a in answers:
            if a.kind != "email":
                continue
            f = a.fields or {}
            if f.get("from"):
                self._senders.add(f["from"])
            if f.get("mailbox") and f["mailbox"] not in self._mailboxes:
                self._mailboxes.add(f["mailbox"])
                with QSignalBlocker(self.mailbox):
                    text = self.mailbox.currentText()
                    self.mailbox.addItem(f["mailbox"])
                    self.mailbox.setEditText(text)
        completer = QCompleter(sorted(self._senders), self.sender)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.sender.setCompleter(completer)

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
        if self.from_check.isChecked():
            kw["date_from"] = _pydate(self.date_from.date())
        if self.to_check.isChecked():
            kw["date_to"] = _pydate(self.date_to.date())
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
        if "date_from" in kw or "date_to" in kw:
            parts.append(f"{kw.get('date_from', '…')} – {kw.get('date_to', '…')}")
        if "sender" in kw:
            parts.append(f"from {kw['sender']}")
        if "mailbox" in kw:
            parts.append(f"mailbox {kw['mailbox']}")
        return "; ".join(parts)

    def reset(self) -> None:
        blockers = [
            QSignalBlocker(w)
            for w in (self.folder, self.from_check, self.to_check, self.sender, self.mailbox)
        ]
        self.folder.setCurrentIndex(0)
        self.from_check.setChecked(False)
        self.to_check.setChecked(False)
        self.date_from.setEnabled(False)
        self.date_to.setEnabled(False)
        self.sender.clear()
        self.mailbox.setEditText("")
        del blockers
        self.set_kinds(None)  # emits changed once


def _pydate(d: QDate) -> dt.date:
    return dt.date(d.year(), d.month(), d.day())
