"""The Sources dialog: folders and mail stores being indexed, their counts, their failures.

Add a folder or a mail store (a Maildir, a folder of .eml files or an mbox file, checked
before it is added), remove one, edit its exclusion
patterns, update the index; below, the files that could not be read and those skipped
because their format is not read (found by their name only), with why (for the selected
source, or all of them).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.format import format_count, format_when
from app.icons import kind_icon

MAIL_FILTER = "Mailboxes (*.mbox *.mbx *.mbs mbox Inbox INBOX *.eml *.pst *.ost *.msg);;All files (*)"
MAIL_FOLDER_CHOICE = "Maildir or folder of .eml…"
MBOX_CHOICE = "mbox or Outlook file…"

SOURCE_COLUMNS = ("Source", "Files", "Sentences", "Errors", "Last updated", "Excluded")
ERROR_COLUMNS = ("File", "Reason", "When")


def choose_folder(parent: QWidget, start: str) -> str:
    return QFileDialog.getExistingDirectory(parent, "Add a folder to search", start)


#: How many entries of a picked folder are looked at for e-mail before it is refused.
MAIL_SCAN_LIMIT = 2000


def _looks_like_mail(path: str) -> bool:
    """A file holding one e-mail: an .eml, or a file named otherwise (an Enron "1.") whose
    first bytes are mail headers."""
    if path.lower().endswith((".eml", ".emlx", ".msg")):  # .emlx: Apple Mail's; .msg: Outlook's, one message each
        return True
    if not os.path.isfile(path):  # never open a FIFO: it would block
        return False
    from engine.ingest.extract import sniff_kind

    try:
        with open(path, "rb") as handle:
            return sniff_kind(handle.read(4096)) == "email"
    except OSError:
        return False


def mail_store_problem(path: str) -> str:
    """Why ``path`` is not a mail store sparcdesk reads ('' when it is one): a Maildir (or a
    folder of Maildirs), a folder holding e-mail files, or an mbox or .eml file."""
    from engine.ingest.walk import is_maildir, is_mbox, is_outlook_store

    p = Path(path)
    if not os.path.lexists(p):
        return f"{path} does not exist."
    if p.is_dir():
        if is_maildir(p):
            return ""
        seen = 0
        for root, dirs, files in os.walk(p):
            dirs.sort()
            if any(is_maildir(Path(root) / d) for d in dirs):
                return ""
            for name in sorted(files):
                if _looks_like_mail(os.path.join(root, name)):
                    return ""
                seen += 1
            seen += len(dirs)
            if seen > MAIL_SCAN_LIMIT:
                break
        return (
            f"{path} is not a mail store: it is not a Maildir (no cur and new folders) and holds no"
            " e-mail files (.eml, .emlx, .msg, or files that start with mail headers). To search the files of an"
            " ordinary folder, use File ▸ Add folder."
        )
    if is_mbox(p) or is_outlook_store(p) or _looks_like_mail(str(p)):
        return ""
    return (
        f"{path} is not an mbox file or an Outlook data file: its name ends in neither .mbox, .pst nor"
        " .ost and its first line does not start with “From ”. For a Maildir or a folder of .eml files, choose that kind of mail store."
    )


def choose_mail_store(parent: QWidget, start: str) -> str:
    """Ask which kind of mail store, pick it with a folder or a file dialog, and check it is
    one; '' when cancelled or refused (the refusal says why)."""
    box = QMessageBox(parent)
    box.setObjectName("mailStoreKind")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Add a mail store")
    box.setText("Which kind of mail store?")
    box.setInformativeText(
        "A Maildir (a folder with cur and new folders, as kept by mutt, Dovecot or offlineimap), a"
        " folder of .eml files or Apple Mail's folder (~/Library/Mail: .emlx files) is picked as a"
        " folder; an mbox file (Thunderbird, Apple Mail or Google Takeout exports) or an Outlook data"
        " file (.pst, .ost) as a file."
    )
    folder_btn = box.addButton(MAIL_FOLDER_CHOICE, QMessageBox.ButtonRole.AcceptRole)
    mbox_btn = box.addButton(MBOX_CHOICE, QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    if clicked is folder_btn:
        path = QFileDialog.getExistingDirectory(parent, "Add a Maildir or a folder of e-mail files", start)
    elif clicked is mbox_btn:
        path, _ = QFileDialog.getOpenFileName(parent, "Add an mbox or Outlook file", start, MAIL_FILTER)
    else:
        return ""
    if not path:
        return ""
    problem = mail_store_problem(path)
    if problem:
        QMessageBox.warning(parent, "Not a mail store", problem)
        return ""
    return path


class SourcesDialog(QDialog):
    add_requested = Signal(str, list)  # path, exclude
    remove_requested = Signal(str)
    exclusions_requested = Signal(str, list)
    update_requested = Signal()

    def __init__(self, parent: QWidget | None = None, start_dir: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sourcesDialog")
        self.setWindowTitle("Sources — sparcdesk")
        self.resize(900, 560)
        self.start_dir = start_dir or str(Path.home())
        self._sources: list = []
        self._errors: list = []

        self.table = QTableWidget(0, len(SOURCE_COLUMNS))
        self.table.setObjectName("sourcesTable")
        self.table.setHorizontalHeaderLabels(SOURCE_COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, len(SOURCE_COLUMNS)):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.doubleClicked.connect(lambda _i: self._edit_exclusions())

        self.add_folder_btn = QPushButton("Add &folder…")
        self.add_mail_btn = QPushButton("Add &mail store…")
        self.add_mail_btn.setToolTip("A Maildir, a folder of .eml files or an mbox file")
        self.exclude_btn = QPushButton("&Exclusions…")
        self.exclude_btn.setToolTip("Files and folders to leave out: patterns as in .gitignore, one per line")
        self.remove_btn = QPushButton("&Remove")
        self.update_btn = QPushButton("&Update index")
        self.add_folder_btn.clicked.connect(self._add_folder)
        self.add_mail_btn.clicked.connect(self._add_mail)
        self.exclude_btn.clicked.connect(self._edit_exclusions)
        self.remove_btn.clicked.connect(self._remove)
        self.update_btn.clicked.connect(self.update_requested)
        buttons = QVBoxLayout()
        for b in (self.add_folder_btn, self.add_mail_btn, self.exclude_btn, self.remove_btn, self.update_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)

        top = QWidget()
        top_layout = QHBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.table, 1)
        top_layout.addLayout(buttons)

        self.errors_label = QLabel("Files that could not be read")
        self.errors_table = QTableWidget(0, len(ERROR_COLUMNS))
        self.errors_table.setObjectName("errorsTable")
        self.errors_table.setHorizontalHeaderLabels(ERROR_COLUMNS)
        self.errors_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.errors_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.errors_table.verticalHeader().hide()
        eh = self.errors_table.horizontalHeader()
        eh.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        eh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        eh.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.errors_table.setColumnWidth(0, 380)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.errors_label)
        bl.addWidget(self.errors_table)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(close)
        self._selection_changed()

    # ------------------------------------------------------------------ data

    def selected_source(self):
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        return self._sources[rows[0].row()] if rows[0].row() < len(self._sources) else None

    def set_sources(self, sources: list) -> None:
        selected = self.selected_source()
        self._sources = list(sources)
        self.table.setRowCount(len(self._sources))
        for r, s in enumerate(self._sources):
            name = QTableWidgetItem(
                kind_icon("email" if s.kind in ("mailstore", "mbox", "maildir", "email") else "text"), s.path
            )
            name.setToolTip(f"{s.path}\n{'Mail store' if s.kind == 'mailstore' else 'Folder'}")
            cells = [
                name,
                QTableWidgetItem(format_count(s.files)),
                QTableWidgetItem(format_count(s.sentences)),
                QTableWidgetItem(format_count(s.errors)),
                QTableWidgetItem(format_when(s.last_indexed)),
                QTableWidgetItem(", ".join(s.exclude) if s.exclude else ""),
            ]
            for c in (1, 2, 3):
                cells[c].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if s.last_indexed:
                cells[4].setToolTip(s.last_indexed)
            for c, item in enumerate(cells):
                self.table.setItem(r, c, item)
            if selected is not None and s.path == selected.path:
                self.table.selectRow(r)
        if selected is None and len(self._sources) == 1:
            self.table.selectRow(0)
        self._selection_changed()

    def set_errors(self, errors: list) -> None:
        self._errors = list(errors)
        self._fill_errors()

    def _fill_errors(self) -> None:
        src = self.selected_source()
        errors = self._errors
        if src is not None:
            root = src.path.rstrip("/\\")
            errors = [
                e
                for e in errors
                if e.path == root
                or e.path.startswith(root + "/")
                or e.path.startswith(root + "\\")
                or e.path.startswith(root + "#")
            ]
        self.errors_table.setRowCount(len(errors))
        for r, e in enumerate(errors):
            items = [
                QTableWidgetItem(e.path),
                QTableWidgetItem(e.reason),
                QTableWidgetItem(format_when(e.when)),
            ]
            items[0].setToolTip(e.path)
            items[1].setToolTip(e.reason)
            for c, item in enumerate(items):
                self.errors_table.setItem(r, c, item)
        where = f" in {src.path}" if src is not None else ""
        # the engine's one definition (FileError.kind), as the status bar and `sparcdesk status`
        kinds = [getattr(e, "kind", "skipped" if getattr(e, "skipped", False) else "unreadable") for e in errors]
        failed, skipped, noted = (kinds.count(k) for k in ("unreadable", "skipped", "note"))
        parts = []
        if failed:
            parts.append(f"{format_count(failed)} could not be read")
        if skipped:
            parts.append(f"{format_count(skipped)} skipped (format not read; found by their name)")
        if noted:
            parts.append(f"{format_count(noted)} read with a note")
        self.errors_label.setText(
            f"Files{where}: {', '.join(parts)}" if parts else f"No files failed or were skipped{where}."
        )

    def _selection_changed(self) -> None:
        has = self.selected_source() is not None
        self.remove_btn.setEnabled(has)
        self.exclude_btn.setEnabled(has)
        self._fill_errors()

    # ------------------------------------------------------------------ actions

    def _add_folder(self) -> None:
        path = choose_folder(self, self.start_dir)
        if path:
            self.start_dir = path
            self.add_requested.emit(path, [])

    def _add_mail(self) -> None:
        path = choose_mail_store(self, self.start_dir)
        if path:
            self.start_dir = str(Path(path).parent)
            self.add_requested.emit(path, [])

    def _remove(self) -> None:
        src = self.selected_source()
        if src is None:
            return
        answer = QMessageBox.question(
            self,
            "Remove source",
            f"Stop searching {src.path}?\n\nIts {format_count(src.files)} files leave the index; the files themselves are not touched.",
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.remove_requested.emit(src.path)

    def _edit_exclusions(self) -> None:
        src = self.selected_source()
        if src is None:
            return
        text, ok = QInputDialog.getMultiLineText(
            self,
            "Exclusions",
            f"Leave out files and folders of {src.path} matching these patterns\n"
            "(one per line, as in .gitignore: *.log, drafts/, private/**, !keep.txt):",
            "\n".join(src.exclude),
        )
        if ok:
            patterns = [line.strip() for line in text.splitlines() if line.strip()]
            if patterns != list(src.exclude):
                self.exclusions_requested.emit(src.path, patterns)
