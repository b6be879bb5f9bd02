"""The status bar's message area and the notice banner.

QStatusBar paints a temporary message in whatever room its permanent widgets leave, cut
off without a sign (while indexing, the indicator left it a few characters). Here the
message is an :class:`ElidedLabel` that takes the room first: a long message ends in "…"
and its full text is the tooltip. What must not be missed (an Open that failed, how an
adaptation ended) goes to the :class:`Banner` above the results, which wraps and stays
until it is closed.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStatusBar,
    QStyle,
    QToolButton,
    QWidget,
)


class ElidedLabel(QLabel):
    """A one-line label that shrinks to ``min_chars`` characters and elides the rest; the
    full text is ``text()`` and, while cut, the tooltip."""

    def __init__(
        self,
        parent: QWidget | None = None,
        mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
        min_chars: int = 8,
    ) -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._min_chars = min_chars
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._full = text or ""
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        """What is painted (the full text or its elided form)."""
        return super().text()

    def is_elided(self) -> bool:
        return super().text() != self._full

    def sizeHint(self) -> QSize:  # noqa: N802
        fm = self.fontMetrics()
        m = self.contentsMargins()
        return QSize(fm.horizontalAdvance(self._full) + m.left() + m.right() + 2, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        fm = self.fontMetrics()
        width = fm.horizontalAdvance("x" * self._min_chars) if self._full else 0
        return QSize(min(width, self.sizeHint().width()), super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        m = self.contentsMargins()
        width = self.width() - m.left() - m.right()
        shown = self.fontMetrics().elidedText(self._full, self._mode, max(width, 0)) if self._full else ""
        if shown != super().text():
            super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")


class StatusBar(QStatusBar):
    """QStatusBar whose messages live in an :class:`ElidedLabel` that keeps the room first
    (``showMessage``, ``currentMessage`` and ``clearMessage`` as in Qt)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = ElidedLabel(self, min_chars=24)
        self.message.setObjectName("statusMessage")
        self.addWidget(self.message, 1)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.clearMessage)

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802
        self.message.setText(text)
        if timeout > 0:
            self._timer.start(timeout)
        else:
            self._timer.stop()
        self.messageChanged.emit(text)

    def clearMessage(self) -> None:  # noqa: N802
        self._timer.stop()
        if self.message.text():
            self.message.setText("")
            self.messageChanged.emit("")

    def currentMessage(self) -> str:  # noqa: N802
        return self.message.text()


class Banner(QFrame):
    """A notice above the results that wraps and stays until closed, with "Copy path"
    when it is about a file."""

    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.path: str | None = None
        self.warning = False
        self.topic: str | None = None
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.copy_btn = QToolButton()
        self.copy_btn.setObjectName("copyPathButton")
        self.copy_btn.setText("Copy path")
        self.copy_btn.setToolTip("Copy the file's full path to the clipboard")
        self.copy_btn.clicked.connect(self.copy_path)
        self.close_btn = QToolButton()
        self.close_btn.setObjectName("bannerClose")
        self.close_btn.setAutoRaise(True)
        self.close_btn.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton))
        self.close_btn.setToolTip("Close this notice")
        self.close_btn.clicked.connect(lambda: self.dismiss())  # not dismiss(checked)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addWidget(self.copy_btn, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.close_btn, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_notice(
        self, text: str, path: str | None = None, warning: bool = False, topic: str | None = None
    ) -> None:
        """``topic``: what the notice is about ("adaptation"), so that what changes it (a
        restore, a new adaptation) can close it."""
        self.path = path
        self.topic = topic
        #: an orange notice of something that went wrong (a file that would not open, an
        #: adaptation cancelled): it is about the moment, and a new question closes it
        self.warning = warning
        self.label.setText(text)
        self.copy_btn.setVisible(path is not None)
        colour = "#fde2c4" if warning else "palette(alternate-base)"
        style = f"QFrame#banner {{ background: {colour}; border-bottom: 1px solid palette(mid); }}"
        if warning:  # dark text on the light warning colour, whatever the theme
            style += " QLabel#bannerText { color: #000000; }"
        self.setStyleSheet(style)
        self.show()

    def text(self) -> str:
        return self.label.text()

    def copy_path(self) -> None:
        if self.path is not None:
            QGuiApplication.clipboard().setText(self.path)

    def dismiss(self, topic: str | None = None) -> None:
        """Close the notice (with ``topic``: only a notice about that)."""
        if topic is not None and (self.topic != topic or not self.isVisible()):
            return
        self.hide()
        self.path = None
        self.topic = None
        self.closed.emit()
