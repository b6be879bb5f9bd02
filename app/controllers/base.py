"""What every controller of the main window has: its window (the view it reads and
changes), the backend it asks, the settings."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject


class Controller(QObject):
    """One concern of the main window. It is a child of the window (it lives and dies with
    it) and reaches the other controllers through the window (``window.search_controller``…)."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.backend = window.backend
        self.settings = window.settings

    def say(self, text: str, timeout: int = 0) -> None:
        """A line in the status bar (for ``timeout`` ms; 0: until the next one)."""
        self.window.statusBar().showMessage(text, timeout)
