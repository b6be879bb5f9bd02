"""What the window does with a found document: open it, show it in its folder, copy its path
or its answer sentence, and say why when the desktop cannot."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from PySide6.QtCore import QProcess, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMenu

from app.controllers.base import Controller
from app.format import collapse


def no_opener_reason(path: str, folder: bool = False) -> str:
    """Why the desktop could not open ``path``, as far as can be told from here."""
    if sys.platform.startswith("linux"):
        if shutil.which("xdg-open") is None:
            return (
                "xdg-open is not installed, so there is no file manager or application to hand it to "
                "(on Debian or Ubuntu: sudo apt-get install xdg-utils). Copy the path to open it yourself."
            )
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return "there is no desktop session to open it in. Copy the path to open it yourself."
    if folder:
        return "no file manager is set up for folders. Copy the path to open it yourself."
    ext = Path(path).suffix or "this kind of"
    return f"no application is set up to open {ext} files. Copy the path to open it yourself."


class FilesController(Controller):
    """Open, reveal, copy."""

    def open_current(self) -> None:
        a = self.window.current_answer()
        if a is None:
            return
        if getattr(a, "page", None) and Path(a.path).exists() and open_at_page(a.path, a.page):
            self.say(f"Opened {Path(a.path).name} at page {a.page}", 3000)
            return
        self.open_path(a.path)

    def reveal_current(self) -> None:
        a = self.window.current_answer()
        if a is not None:
            self.reveal_path(a.path)

    def open_path(self, path: str) -> None:
        if not Path(path).exists():
            self.open_failed(path, f"{path} no longer exists: it was moved or deleted since it was indexed.")
            return
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
            self.open_failed(path, f"{Path(path).name} could not be opened: {no_opener_reason(path)}")
        else:
            if self.window.banner.path == path:
                self.window.banner.dismiss()
            self.say(f"Opened {Path(path).name}", 3000)

    def reveal_path(self, path: str) -> None:
        p = Path(path)
        if not p.exists():
            self.open_failed(path, f"{path} no longer exists: it was moved or deleted since it was indexed.")
            return
        # Select the file where the platform can; else open its folder with the usual handler.
        if sys.platform == "darwin" and QProcess.startDetached("open", ["-R", str(p)]):
            return
        if sys.platform == "win32" and QProcess.startDetached("explorer", [f"/select,{p}"]):
            return
        folder = p if p.is_dir() else p.parent
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
            self.open_failed(path, f"Its folder could not be shown: {no_opener_reason(str(folder), folder=True)}")

    def open_failed(self, path: str, why: str) -> None:
        """Say why in the banner (it stays, unlike a status message) and offer Copy path."""
        self.window.banner.show_notice(why, path=path, warning=True)
        self.say(why, 8000)

    def copy_current_path(self) -> None:
        a = self.window.current_answer()
        if a is not None:
            QGuiApplication.clipboard().setText(a.path)
            self.say(f"Copied {a.path}", 3000)

    def copy_sentence(self) -> None:
        a = self.window.current_answer()
        if a is not None:
            QGuiApplication.clipboard().setText(collapse(a.best.sentence))
            self.say("Answer sentence copied", 2000)

    def results_menu(self, pos) -> None:
        """Right-click on a result: what the Search menu does with it."""
        w = self.window
        if not w.results.indexAt(pos).isValid():
            return
        menu = QMenu(w.results)
        menu.addActions([w.act_open, w.act_reveal])
        menu.addSeparator()
        menu.addActions([w.act_copy, w.act_copy_path])
        menu.popup(w.results.viewport().mapToGlobal(pos))


#: Viewers that open a PDF at a page, with their option (Linux): Evince's and Okular's.
PAGE_VIEWERS = (("evince", "--page-index={page}"), ("okular", "--page={page}"))


def open_at_page(path: str, page: int) -> bool:
    """Open ``path`` at ``page`` in a viewer that takes a page: on Linux Evince
    (``--page-index``) or Okular (``--page``) when installed; elsewhere (macOS Preview, the
    Windows default handler take no page from the command line) False, and the caller opens
    the file as usual."""
    if not sys.platform.startswith("linux"):
        return False
    for viewer, option in PAGE_VIEWERS:
        if shutil.which(viewer) and QProcess.startDetached(viewer, [option.format(page=page), path]):
            return True
    return False
