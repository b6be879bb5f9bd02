"""The result list: one row per document, the answer sentence in bold inside its passage.

A plain QListView over :class:`ResultsModel`, painted by :class:`ResultDelegate` with a
QTextDocument per row (rich text, wrapped to the view's width), so Up/Down, Page Up/Down,
Home/End and the selection behave like any Qt list.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QAbstractTextDocumentLayout, QColor, QKeyEvent, QPalette, QTextDocument
from PySide6.QtWidgets import QAbstractItemView, QListView, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from app.format import collapse, display_title, meta_line, result_html
from app.icons import kind_icon

AnswerRole = Qt.ItemDataRole.UserRole + 1

ICON = 32
PAD = 8


class ResultsModel(QAbstractListModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._answers: list = []

    def set_answers(self, answers: list) -> None:
        self.beginResetModel()
        self._answers = list(answers)
        self.endResetModel()

    def answers(self) -> list:
        return list(self._answers)

    def answer(self, row: int):
        return self._answers[row] if 0 <= row < len(self._answers) else None

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._answers)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        a = self._answers[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{display_title(a)} — {collapse(a.best.sentence)}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{a.path}\n{meta_line(a)}\nscore {a.score:.3g}"  # the document's, which orders the list
        if role == Qt.ItemDataRole.DecorationRole:
            return kind_icon(a.kind)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{display_title(a)}. {meta_line(a)}. {collapse(a.best.sentence)}"
        if role == AnswerRole:
            return a
        return None


class ResultDelegate(QStyledItemDelegate):
    """Icon at the left, then title, meta line and passage as rich text.

    Each row's QTextDocument is built once per width and reused by sizeHint and paint
    (building and laying one out is the costly part of showing results). The selected row
    keeps its text colours on a tinted background with an accent bar, so one document
    serves both states.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._docs: dict[tuple[int, int], QTextDocument] = {}

    def clear_cache(self) -> None:
        self._docs.clear()

    def _document(self, option: QStyleOptionViewItem, index: QModelIndex, width: int) -> QTextDocument:
        answer = index.data(AnswerRole)
        width = max(50, width)
        key = (id(answer), width)
        doc = self._docs.get(key)
        if doc is not None:
            return doc
        pal = option.palette
        text = pal.color(QPalette.ColorRole.Text)
        muted = pal.color(QPalette.ColorRole.PlaceholderText).name()
        accent = pal.color(QPalette.ColorRole.Link).name()
        doc = QTextDocument()
        doc.setDocumentMargin(0)
        doc.setDefaultFont(option.font)
        doc.setDefaultStyleSheet(f"body {{ color: {text.name()}; }}")
        doc.setHtml(f"<body>{result_html(answer, muted=muted, accent=accent)}</body>")
        doc.setTextWidth(width)
        if len(self._docs) > 400:
            self._docs.clear()
        self._docs[key] = doc
        return doc

    def _text_width(self, option: QStyleOptionViewItem) -> int:
        view = option.widget
        width = option.rect.width()
        if view is not None and hasattr(view, "viewport"):
            width = view.viewport().width()
        return width - ICON - 3 * PAD

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        width = self._text_width(option)
        doc = self._document(option, index, width)
        return QSize(width + ICON + 3 * PAD, max(ICON, int(doc.size().height())) + 2 * PAD)

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        rect: QRect = option.rect
        pal = option.palette
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hover = bool(option.state & QStyle.StateFlag.State_MouseOver)
        painter.save()
        if selected or hover:
            tint = QColor(pal.color(QPalette.ColorRole.Highlight))
            tint.setAlphaF(0.16 if selected else 0.06)
            painter.fillRect(rect, tint)
        if selected:
            painter.fillRect(
                QRect(rect.left(), rect.top(), 4, rect.height()), pal.color(QPalette.ColorRole.Highlight)
            )
        kind_icon(index.data(AnswerRole).kind).paint(
            painter, QRect(rect.left() + PAD, rect.top() + PAD, ICON, ICON)
        )
        width = self._text_width(option)
        doc = self._document(option, index, width)
        painter.translate(rect.left() + ICON + 2 * PAD, rect.top() + PAD)
        painter.setClipRect(QRect(0, 0, width, rect.height() - PAD))
        ctx = QAbstractTextDocumentLayout.PaintContext()
        ctx.palette = pal
        doc.documentLayout().draw(painter, ctx)
        painter.restore()
        # a thin separator between results
        painter.save()
        painter.setPen(pal.color(QPalette.ColorRole.Midlight))
        painter.drawLine(rect.left() + PAD, rect.bottom(), rect.right() - PAD, rect.bottom())
        painter.restore()


class ResultsView(QListView):
    """The list; Enter opens the current result, Up at the first row goes back to the search field."""

    open_requested = Signal()
    leave_up = Signal()
    type_ahead = Signal(str)  # printable keys typed in the list go to the search field

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("results")
        self.delegate = ResultDelegate(self)
        self.setItemDelegate(self.delegate)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(False)
        self.setWordWrap(True)
        self.setMouseTracking(True)
        self.setAccessibleName("Results")
        self.doubleClicked.connect(lambda _i: self.open_requested.emit())

    def setModel(self, model) -> None:
        super().setModel(model)
        model.modelAboutToBeReset.connect(self.delegate.clear_cache)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.open_requested.emit()
            return
        if key == Qt.Key.Key_Up and self.currentIndex().row() <= 0:
            self.leave_up.emit()
            return
        text = event.text()
        mods = event.modifiers() & ~Qt.KeyboardModifier.ShiftModifier & ~Qt.KeyboardModifier.KeypadModifier
        if text and text.isprintable() and not text.isspace() and mods == Qt.KeyboardModifier.NoModifier:
            self.type_ahead.emit(text)
            return
        super().keyPressEvent(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # row heights depend on the width: ask the view to recompute them
        self.scheduleDelayedItemsLayout()
