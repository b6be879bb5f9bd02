"""The Help menu: keyboard shortcuts, the search syntax, the log file, About."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from app.controllers.base import Controller
from app.controllers.files import no_opener_reason
from app.controllers.model import selfcheck_text

#: Help ▸ Keyboard shortcuts: (keys, what they do).
SHORTCUTS = (
    ("Ctrl+L, Ctrl+F", "Go to the search field"),
    ("Enter", "Ask (in the search field) / open the document (in the results)"),
    ("Down, Up", "Move through the results; the preview follows"),
    ("Esc", "Back to the search field; in it, clear it"),
    ("Ctrl+O", "Open the document"),
    ("Ctrl+Shift+O", "Show the document in its folder"),
    ("F3, Shift+F3", "Next / previous hit in the preview"),
    ("Ctrl+Shift+C", "Copy the answer sentence"),
    ("Ctrl+H", "Hybrid ranking on/off"),
    ("Ctrl+Shift+F", "Show or hide the filters"),
    ("F9", "Show or hide the preview"),
    ("F5", "Update the index"),
    ("Ctrl+Shift+N", "Add a folder"),
    ("Ctrl+Shift+S", "Sources"),
)


class HelpController(Controller):
    """What the Help menu shows."""

    def show_shortcuts(self) -> None:
        table = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>" for k, v in SHORTCUTS)
        QMessageBox.information(self.window, "Keyboard shortcuts", f"<table>{table}</table>")

    def show_syntax(self) -> None:
        """The search box's syntax (engine.search.query, shared with ``sparcdesk ask``)."""
        from engine.search.query import SYNTAX_HELP

        table = "".join(
            f"<tr><td><b>{html.escape(k)}</b>&nbsp;&nbsp;</td><td>{html.escape(v)}</td></tr>" for k, v in SYNTAX_HELP
        )
        QMessageBox.information(
            self.window,
            "Search syntax",
            "<p>Type a question or words; these narrow the documents that compete:</p>"
            f"<table>{table}</table><p>Words outside quotes rank the answers.</p>",
        )

    def log_file(self) -> Path:
        """The window's log file (engine.home.logs): under the engine's home once it is open."""
        from engine.home import logs

        return logs.log_path(self.window.model_controller.last_status.get("home"))

    def open_log_file(self) -> None:
        path = self.log_file()
        if not path.exists():
            self.say(f"No log file yet ({path})", 5000)
        elif not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            # no program opens it (a machine without a desktop's file handlers): the path, to
            # copy, is what the user needs, not a word about its folder (issue 36, item 8)
            self.window.files_controller.open_failed(
                str(path), f"The log file is {path} ({no_opener_reason(str(path))})"
            )

    def about_text(self) -> str:
        from engine import __version__
        from engine.cli.main import version_text

        status = self.window.model_controller.last_status
        model = status.get("model") or {}
        in_use = f"{model.get('name', '')} {model.get('version', '')}".strip() or "(opening…)"
        checked = selfcheck_text((status.get("selfcheck") or {}).get("latest"))
        escape = html.escape
        return (
            f"<b>sparcdesk {escape(__version__)}</b><br>Private desktop search and question answering "
            "with SPARC sparse neural retrieval. Everything runs on this computer.<br><br>"
            f"Model in use: {escape(in_use)}<br>{escape(checked)} (Index ▸ Measure now)<br>"
            f"{escape(version_text())}<br>"
            f"Data folder: {escape(str(status.get('home', '')))}<br>"
            f"Log file: {escape(str(self.log_file()))}"
        )

    def show_about(self) -> None:
        QMessageBox.about(self.window, "About sparcdesk", self.about_text())
