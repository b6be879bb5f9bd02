"""The main window's view: the search bar, the filter panel, the pages (welcome, message,
results), the preview, the banners, the status bar, the actions and the menus.

It builds and lays out; what a click or an engine signal does is the controllers'
(:mod:`app.controllers`), which :class:`app.window.MainWindow` wires to these widgets. The
few methods here only move focus and switch pages.
"""

from __future__ import annotations

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QCompleter,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.filters import FilterPanel
from app.icons import app_icon
from app.preview import PreviewPane
from app.progress import IndexingIndicator
from app.qtcompat import install_none_guard
from app.results import ResultsModel, ResultsView
from app.statusbar import Banner, StatusBar
from app.welcome import MessagePage, WelcomePage

ADAPT_TIP = "Tune the model to the words of your own documents, on this computer, then re-encode them"
RESTORE_TIP = "Go back to the model and index used before the last adaptation"
MEASURE_TIP = (
    "Ask a few hundred questions made from your files' own subjects, headings and titles (their"
    " answers are known) and count how often the right file comes first"
)
#: Half of a 1366-px screen: the window fits it with filters, results and preview shown.
NARROW_WIDTH = 680
RESULTS_MIN_WIDTH = 180
PREVIEW_MIN_WIDTH = 200


class PageStack(QStackedWidget):
    """A stacked widget as wide as its current page needs (QStackedWidget asks for the
    widest page's minimum, so the welcome page held the results list wide)."""

    def __init__(self) -> None:
        super().__init__()
        self.currentChanged.connect(lambda _i: self.updateGeometry())

    def minimumSizeHint(self):  # noqa: N802 (Qt's name)
        page = self.currentWidget()
        if page is None:
            return super().minimumSizeHint()
        return page.minimumSizeHint().expandedTo(page.minimumSize())


class SearchField(QLineEdit):
    """The question box: Enter runs, Down/Up go to the results (``results_requested``), Esc clears."""

    #: Down or Page Down with no completion shown: the window moves into the results.
    results_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("search")
        self.setPlaceholderText("Ask a question or type keywords   (Ctrl+L)")
        self.setClearButtonEnabled(True)
        self.setAccessibleName("Search")
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        self.setFont(font)
        self.setMinimumHeight(32)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        popup = self.completer() is not None and self.completer().popup().isVisible()
        if not popup and key in (Qt.Key.Key_Down, Qt.Key.Key_PageDown):
            self.results_requested.emit()
            return
        if not popup and key == Qt.Key.Key_Escape and self.text():
            self.clear()
            return
        super().keyPressEvent(event)


class MainWindowView(QMainWindow):
    """The widgets, actions and menus of the main window, built and laid out (no slots of
    the controllers are connected here)."""

    def __init__(self) -> None:
        super().__init__()
        install_none_guard()
        self.setWindowTitle("sparcdesk")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)  # drop a folder or mail store on the window to add it
        self.setStatusBar(StatusBar(self))
        self.resize(1280, 800)
        self._build_search_bar()
        self._build_panes()
        self._build_central()
        self._build_status_bar()
        self._build_actions()
        self._build_menus()

    # ================================================================== widgets

    def _build_search_bar(self) -> None:
        self.search = SearchField()
        self.search.results_requested.connect(lambda: self.focus_results(step=1))
        self.history = QStringListModel()  # the settings fill it (MainWindow._restore_settings)
        completer = QCompleter(self.history, self.search)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.search.setCompleter(completer)

        style = self.style()
        self.ask_btn = QToolButton()
        self.ask_btn.setText("Ask")
        self.ask_btn.setObjectName("askButton")
        self.ask_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.ask_btn.setToolTip("Search (Enter)")
        self.filters_btn = QToolButton()
        self.filters_btn.setText("Filters")
        self.filters_btn.setCheckable(True)
        self.filters_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.filters_btn.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_FileDialogDetailedView))
        self.options_btn = QToolButton()
        self.options_btn.setText("Options")
        self.options_btn.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.options_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.options_btn.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_FileDialogContentsView))

        top = QWidget()
        top.setObjectName("searchBar")
        row = QHBoxLayout(top)
        row.setContentsMargins(8, 6, 8, 6)
        row.addWidget(self.search, 1)
        row.addWidget(self.ask_btn)
        row.addWidget(self.filters_btn)
        row.addWidget(self.options_btn)
        self.search_bar = top

    def _build_panes(self) -> None:
        self.filters = FilterPanel()

        self.model = ResultsModel(self)
        self.results = ResultsView()
        self.results.setModel(self.model)
        self.results.leave_up.connect(self.focus_search)
        self.results.type_ahead.connect(self._type_ahead)

        self.welcome = WelcomePage()
        self.message = MessagePage()

        self.stack = PageStack()
        self.stack.addWidget(self.welcome)
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.results)
        self.stack.currentChanged.connect(lambda _i: self.sync_preview())

        self.preview = PreviewPane()

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(self.filters)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(self.preview)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setStretchFactor(2, 1)
        self.splitter.setCollapsible(1, False)
        self.splitter.setSizes([230, 520, 530])
        # Each pane's minimum fits NARROW_WIDTH with all three shown (the filters' own is
        # its widest row); the results keep enough room to read a title.
        self.results.setMinimumWidth(RESULTS_MIN_WIDTH)
        self.preview.setMinimumWidth(PREVIEW_MIN_WIDTH)

    def _build_central(self) -> None:
        central = QWidget()
        col = QVBoxLayout(central)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.search_bar)
        # The engine's decision that nothing indexed answers the question: said above the
        # closest matches, which stay listed (and marked as such) below it.
        self.no_answer = QLabel()
        self.no_answer.setObjectName("noAnswer")
        self.no_answer.setWordWrap(True)
        self.no_answer.setContentsMargins(12, 6, 12, 6)
        self.no_answer.setStyleSheet("QLabel#noAnswer { background: palette(alternate-base); font-weight: 600; }")
        self.no_answer.hide()
        col.addWidget(self.no_answer)
        # What must not be missed (an Open that failed, how an adaptation ended): wraps, stays.
        self.banner = Banner()
        col.addWidget(self.banner)
        col.addWidget(self.splitter, 1)
        self.setCentralWidget(central)

    def _build_status_bar(self) -> None:
        self.indicator = IndexingIndicator()
        self.indicator.hide()
        self.summary = QLabel()
        self.summary.setObjectName("summary")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.watch_label = QLabel()
        self.watch_label.setObjectName("watchLabel")
        sb = self.statusBar()
        # results stopped at the number asked for: one click asks for more of the same search
        self.more_btn = QPushButton("More results")
        self.more_btn.setObjectName("moreResults")
        self.more_btn.setFlat(True)
        self.more_btn.setToolTip("Show the next results of this search (Ctrl+M)")
        self.more_btn.hide()
        sb.addPermanentWidget(self.more_btn)
        sb.addPermanentWidget(self.indicator)
        sb.addPermanentWidget(self.summary)
        sb.addPermanentWidget(self.watch_label)

    # ================================================================== actions and menus

    def _action(self, text: str, shortcut=None, tip: str | None = None, checkable: bool = False) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            if isinstance(shortcut, (list, tuple)):
                act.setShortcuts([QKeySequence(s) for s in shortcut])
            else:
                act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setToolTip(tip)
            act.setStatusTip(tip)
        act.setCheckable(checkable)
        self.addAction(act)
        return act

    def _build_actions(self) -> None:
        """Every action with its text, shortcut and tip (declarative: one entry each); what
        triggers do is wired by the window to its controllers."""
        A = self._action
        self.act_add_folder = A("Add &folder…", "Ctrl+Shift+N", "Index a folder and search it")
        self.act_add_mail = A("Add &mail store…", None, "Index a Maildir, a folder of .eml files or an mbox file")
        self.act_sources = A("&Sources…", "Ctrl+Shift+S", "Folders and mail stores, counts, failed files")
        self.act_samples = A("Add the s&ample documents", None, "Index the built-in sample corpus")
        self.act_quit = A("&Quit", QKeySequence.StandardKey.Quit)
        self.act_focus = A("&Find", ["Ctrl+L", "Ctrl+F"], "Go to the search field")
        self.act_open = A("&Open document", "Ctrl+O", "Open with its usual application")
        self.act_reveal = A("Show in fo&lder", "Ctrl+Shift+O", "Show the file in its folder")
        self.act_next_hit = A("&Next hit", QKeySequence.StandardKey.FindNext)
        self.act_prev_hit = A("Pre&vious hit", QKeySequence.StandardKey.FindPrevious)
        self.act_copy = A("&Copy answer sentence", "Ctrl+Shift+C")
        self.act_copy_path = A("Copy &path", "Ctrl+Alt+C", "Copy the document's full path to the clipboard")
        self.act_more = A("Show &more results", "Ctrl+M", "The next results of the same search (issue 36)")
        self.act_more.setEnabled(False)
        self.act_back = A("Back to search", "Esc")
        self.act_back.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.results.addAction(self.act_back)
        self.preview.addAction(self.act_back)
        self.removeAction(self.act_back)
        self.act_hybrid = A(
            "&Hybrid ranking (neural + keywords)",
            "Ctrl+H",
            "Combine the neural scores with keyword (BM25) matching",
            checkable=True,
        )
        self.act_idf = A("&Weight rare words (IDF)", None, "Weigh rare question words more", checkable=True)
        self.act_filters = A("&Filters", "Ctrl+Shift+F", "Show the filter panel", checkable=True)
        self.act_preview = A("&Preview", "F9", "Show the preview pane", checkable=True)
        self.act_update = A("&Update index now", "F5", "Re-read changed files of all sources")
        self.act_pause = A("&Pause indexing", None, checkable=True)
        self.act_stop = A("&Stop indexing")
        self.act_watch = A("&Watch for changes", None, "Re-index files as they change", checkable=True)
        self.act_ocr = A(
            "Read pictures and scanned pages (&OCR)",
            None,
            "Read the words of pictures (.png, .jpg, .tiff) and of PDF pages without a text layer;"
            " slow (several seconds a page); from the next indexing run on",
            checkable=True,
        )
        self.act_adapt = A("&Adapt to my documents…", None, ADAPT_TIP)
        self.act_adapt.setEnabled(False)
        self.act_restore = A("&Restore previous model", None, RESTORE_TIP)
        self.act_restore.setEnabled(False)
        # its tip names the controller's threshold (ModelController)
        self.act_auto_adapt = A("Adapt au&tomatically", checkable=True)
        # the latest self-check, as a line of the menu (ModelController sets its text)
        self.act_selfcheck = A("Search on your files: not measured yet", None, MEASURE_TIP)
        self.act_selfcheck.setEnabled(False)
        self.act_measure = A("&Measure now", None, MEASURE_TIP)
        self.act_measure.setEnabled(False)
        self.act_shortcuts = A("&Keyboard shortcuts", QKeySequence.StandardKey.HelpContents)
        self.act_syntax = A("&Search syntax")
        self.act_about = A("&About sparcdesk")
        self.act_log = A("Open &log file", None, "The log to send with a problem report")
        self.act_pause.setEnabled(False)
        self.act_stop.setEnabled(False)
        # the view's own wiring: the preview steps through its hits, Esc and Find focus the field
        self.act_next_hit.triggered.connect(self.preview.next_hit)
        self.act_prev_hit.triggered.connect(self.preview.previous_hit)
        self.act_focus.triggered.connect(self.focus_search)
        self.act_back.triggered.connect(self.focus_search)
        self.act_quit.triggered.connect(self.close)
        self.act_preview.toggled.connect(lambda _on: self.sync_preview())
        self.act_pause.toggled.connect(self.indicator.set_paused)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        m = mb.addMenu("&File")
        m.addActions([self.act_add_folder, self.act_add_mail, self.act_sources, self.act_samples])
        m.addSeparator()
        m.addAction(self.act_quit)
        m = mb.addMenu("&Search")
        m.addActions([self.act_focus, self.act_open, self.act_reveal, self.act_copy, self.act_copy_path])
        m.addSeparator()
        m.addActions([self.act_next_hit, self.act_prev_hit, self.act_more])
        m.addSeparator()
        m.addActions([self.act_hybrid, self.act_idf])
        m = mb.addMenu("&View")
        m.addActions([self.act_filters, self.act_preview])
        m = mb.addMenu("&Index")
        m.setToolTipsVisible(True)
        m.addActions([self.act_update, self.act_pause, self.act_stop])
        m.addSeparator()
        m.addActions([self.act_watch, self.act_ocr])
        m.addSeparator()
        m.addActions([self.act_adapt, self.act_auto_adapt, self.act_restore])
        m.addSeparator()
        m.addActions([self.act_selfcheck, self.act_measure])
        self.index_menu = m
        m = mb.addMenu("&Help")
        m.addActions([self.act_syntax, self.act_shortcuts, self.act_log, self.act_about])

        options = QMenu(self)
        options.setToolTipsVisible(True)
        options.addActions([self.act_hybrid, self.act_idf])
        options.addSeparator()
        options.addActions([self.act_watch, self.act_ocr, self.act_sources])
        options.addSeparator()
        options.addAction(self.act_adapt)
        self.options_btn.setMenu(options)
        self.results.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.filters_btn.setDefaultAction(self.act_filters)
        self.filters_btn.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.filters_btn.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_FileDialogDetailedView))

    # ================================================================== focus and pages

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _type_ahead(self, text: str) -> None:
        self.search.setFocus(Qt.FocusReason.OtherFocusReason)
        self.search.deselect()
        self.search.end(False)
        self.search.insert(text)

    def focus_results(self, step: int = 1) -> None:
        if self.model.rowCount() == 0 or self.stack.currentWidget() is not self.results:
            return
        self.results.setFocus(Qt.FocusReason.OtherFocusReason)
        row = self.results.currentIndex().row()
        row = 0 if row < 0 else min(self.model.rowCount() - 1, row + (step if row >= 0 and step > 1 else 0))
        self.results.setCurrentIndex(self.model.index(row, 0))

    def current_answer(self):
        """The answer selected in the results (None when none is)."""
        idx = self.results.currentIndex()
        return self.model.answer(idx.row()) if idx.isValid() else None

    def show_message(self, title: str, text: str = "", examples: list[str] | None = None) -> None:
        self.message.show_message(title, text, examples)
        self.stack.setCurrentWidget(self.message)

    def sync_preview(self) -> None:
        """The preview shows beside results only (and when the user wants it)."""
        self.preview.setVisible(self.act_preview.isChecked() and self.stack.currentWidget() is self.results)

    def event(self, event) -> bool:
        """Status tips (menus, hovered actions) go through the message area that elides,
        not QStatusBar's own painting, which clipped them."""
        if event.type() == event.Type.StatusTip:
            self.statusBar().showMessage(event.tip())
            return True
        return super().event(event)
