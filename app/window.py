"""The main window: search field, filters, result list, preview, indexing status.

Keyboard first: Ctrl+L / Ctrl+F focus the search field, Enter runs the question, Down
moves into the results, Up/Down walk them (the preview follows), Enter or Ctrl+O opens the
document, Ctrl+Shift+O shows it in its folder, F3 / Shift+F3 step through the hits in the
preview, Esc goes back to the search field. All engine work goes through
:class:`app.backend.Backend`, which runs it on worker threads.

The window is its view (:class:`app.views.main_window.MainWindowView`: widgets, actions,
menus) and six controllers (:mod:`app.controllers`: search, files, sources, indexing, model,
help). :class:`MainWindow` creates them, wires the view's and the backend's signals to them,
keeps the settings, and answers for the attributes callers reach on the window (each lives
on one controller: see the delegations below).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Signal

from app.backend import Backend
from app.controllers.files import FilesController, no_opener_reason
from app.controllers.help import HelpController
from app.controllers.indexing import IndexingController
from app.controllers.model import (
    ADAPT_MEASURED_DEFAULT_SEARCH,
    ADAPT_MEASURED_MODEL,
    ADAPT_MEASURED_MRR,
    ADAPT_STEPS,
    AUTO_ADAPT_DEFAULT,
    AUTO_ADAPT_MIN_SENTENCES,
    ModelController,
    adaptation_forecast,
    adaptation_outcome,
)
from app.controllers.search import (
    HISTORY_SIZE,
    LIVE_REFRESH_MS,
    NOTHING_INDEXED,
    SearchController,
    default_filters_type,
)
from app.controllers.sources import SourcesController
from app.views.main_window import (
    ADAPT_TIP,
    NARROW_WIDTH,
    PREVIEW_MIN_WIDTH,
    RESTORE_TIP,
    RESULTS_MIN_WIDTH,
    MainWindowView,
    PageStack,
    SearchField,
)
from engine.ingest.walk import OCR_SETTING
from engine.search.defaults import DEFAULT_HYBRID, DEFAULT_IDF

__all__ = [
    "ADAPT_MEASURED_DEFAULT_SEARCH",
    "ADAPT_MEASURED_MODEL",
    "ADAPT_MEASURED_MRR",
    "ADAPT_STEPS",
    "ADAPT_TIP",
    "AUTO_ADAPT_DEFAULT",
    "AUTO_ADAPT_MIN_SENTENCES",
    "HISTORY_SIZE",
    "LIVE_REFRESH_MS",
    "NARROW_WIDTH",
    "NOTHING_INDEXED",
    "PREVIEW_MIN_WIDTH",
    "RESTORE_TIP",
    "RESULTS_MIN_WIDTH",
    "MainWindow",
    "PageStack",
    "SearchField",
    "adaptation_forecast",
    "adaptation_outcome",
    "default_filters_type",
    "no_opener_reason",
]


class _On:
    """A window attribute that lives on one of its controllers: read and written there
    (``window.sources`` is ``window.sources_controller.sources``)."""

    def __init__(self, controller: str, name: str) -> None:
        self.controller = controller
        self.name = name

    def __get__(self, window: Any, owner: Any = None) -> Any:
        if window is None:
            return self
        return getattr(getattr(window, self.controller), self.name)

    def __set__(self, window: Any, value: Any) -> None:
        setattr(getattr(window, self.controller), self.name, value)


class MainWindow(MainWindowView):
    #: The results on screen were refreshed after a change of the index (the new SearchResult).
    results_refreshed = Signal(object)

    # ---- asking (SearchController)
    run_search = _On("search_controller", "run_search")
    ask = _On("search_controller", "ask")
    show_more = _On("search_controller", "show_more")
    current_filters = _On("search_controller", "current_filters")
    last_result = _On("search_controller", "last_result")
    top = _On("search_controller", "top")
    _searching = _On("search_controller", "searching")
    _show_refreshed = _On("search_controller", "show_refreshed")
    # ---- open, reveal, copy (FilesController)
    open_current = _On("files_controller", "open_current")
    open_path = _On("files_controller", "open_path")
    reveal_current = _On("files_controller", "reveal_current")
    reveal_path = _On("files_controller", "reveal_path")
    copy_current_path = _On("files_controller", "copy_current_path")
    copy_sentence = _On("files_controller", "copy_sentence")
    _results_menu = _On("files_controller", "results_menu")
    # ---- sources (SourcesController)
    sources = _On("sources_controller", "sources")
    errors = _On("sources_controller", "errors")
    last_dir = _On("sources_controller", "last_dir")
    add_folder = _On("sources_controller", "add_folder")
    add_mail_store = _On("sources_controller", "add_mail_store")
    add_source = _On("sources_controller", "add_source")
    index_samples = _On("sources_controller", "index_samples")
    remove_source = _On("sources_controller", "remove_source")
    set_exclusions = _On("sources_controller", "set_exclusions")
    show_sources = _On("sources_controller", "show_sources")
    _sources_known = _On("sources_controller", "sources_known")
    _sources_dialog = _On("sources_controller", "sources_dialog")
    # ---- indexing and watching (IndexingController)
    update_index = _On("indexing_controller", "update_index")
    stop_indexing = _On("indexing_controller", "stop_indexing")
    _update_watch_label = _On("indexing_controller", "update_watch_label")
    # ---- the model (ModelController)
    adapt_model = _On("model_controller", "adapt_model")
    restore_model = _On("model_controller", "restore_model")
    adapt_steps = _On("model_controller", "adapt_steps")
    auto_adapt_min_sentences = _On("model_controller", "auto_adapt_min_sentences")
    model_state = _On("model_controller", "model_state")
    last_status = _On("model_controller", "last_status")
    _pending_report = _On("model_controller", "pending_report")
    _report_outcome = _On("model_controller", "report_outcome")
    _model_rebuild = _On("model_controller", "model_rebuild")
    # ---- help (HelpController)
    show_shortcuts = _On("help_controller", "show_shortcuts")
    show_syntax = _On("help_controller", "show_syntax")
    log_file = _On("help_controller", "log_file")
    open_log_file = _On("help_controller", "open_log_file")
    about_text = _On("help_controller", "about_text")
    show_about = _On("help_controller", "show_about")

    def __init__(self, backend: Backend, settings: QSettings, filters_type: Any = None) -> None:
        super().__init__()
        self.backend = backend
        self.settings = settings
        self.search_controller = SearchController(self, filters_type)
        self.files_controller = FilesController(self)
        self.sources_controller = SourcesController(self)
        self.indexing_controller = IndexingController(self)
        self.model_controller = ModelController(self)
        self.help_controller = HelpController(self)
        self._wire_widgets()
        self._wire_actions()
        self._connect_backend()
        self._restore_settings()
        self.show_message("Opening the index…", "Loading the model and the catalog.")

    # ================================================================== wiring

    def _wire_widgets(self) -> None:
        """The view's widgets to the controllers (the order of two slots on one signal is
        the order the window always had)."""
        asking, files, sources, indexing = (
            self.search_controller,
            self.files_controller,
            self.sources_controller,
            self.indexing_controller,
        )
        self.search.returnPressed.connect(asking.run_search)
        self.ask_btn.clicked.connect(asking.run_search)
        self.filters.changed.connect(asking.filters_changed)
        self.results.selectionModel().currentChanged.connect(asking.current_changed)
        self.results.open_requested.connect(files.open_current)
        self.results.customContextMenuRequested.connect(files.results_menu)
        self.welcome.samples_requested.connect(sources.index_samples)
        self.welcome.add_folder_requested.connect(sources.add_folder)
        self.welcome.add_mail_requested.connect(sources.add_mail_store)
        self.message.question_clicked.connect(asking.ask)
        # after the view's own (the stack's geometry, the preview's visibility)
        self.stack.currentChanged.connect(lambda _i: self.no_answer.setVisible(asking.no_answer_shown()))
        self.preview.open_requested.connect(files.open_path)
        self.preview.reveal_requested.connect(files.reveal_path)
        self.indicator.pause_toggled.connect(indexing.pause_toggled)
        self.indicator.pause_toggled.connect(self.act_pause.setChecked)
        self.indicator.stop_clicked.connect(indexing.stop_indexing)
        self.summary.linkActivated.connect(lambda _href: sources.show_sources())
        self.more_btn.clicked.connect(asking.show_more)

    def _wire_actions(self) -> None:
        """The menus' actions to the controllers (the view wires those that only move focus
        or show and hide its own panes)."""
        asking, files, sources = self.search_controller, self.files_controller, self.sources_controller
        indexing, models, helping = self.indexing_controller, self.model_controller, self.help_controller
        for act, slot in (
            (self.act_add_folder, sources.add_folder),
            (self.act_add_mail, sources.add_mail_store),
            (self.act_sources, sources.show_sources),
            (self.act_samples, sources.index_samples),
            (self.act_open, files.open_current),
            (self.act_reveal, files.reveal_current),
            (self.act_copy, files.copy_sentence),
            (self.act_copy_path, files.copy_current_path),
            (self.act_more, asking.show_more),
            (self.act_update, indexing.update_index),
            (self.act_stop, indexing.stop_indexing),
            (self.act_adapt, models.adapt_model),
            (self.act_restore, models.restore_model),
            (self.act_measure, models.measure_search),
            (self.act_shortcuts, helping.show_shortcuts),
            (self.act_syntax, helping.show_syntax),
            (self.act_about, helping.show_about),
            (self.act_log, helping.open_log_file),
        ):
            act.triggered.connect(slot)
        for act, slot in (
            (self.act_hybrid, asking.options_changed),
            (self.act_idf, asking.options_changed),
            (self.act_filters, asking.toggle_filters),
            (self.act_watch, indexing.watch_toggled),
            (self.act_ocr, indexing.ocr_toggled),
        ):
            act.toggled.connect(slot)

    def _connect_backend(self) -> None:
        b = self.backend
        asking, sources, indexing, models = (
            self.search_controller,
            self.sources_controller,
            self.indexing_controller,
            self.model_controller,
        )
        b.ready.connect(sources.engine_ready)
        b.engine_failed.connect(sources.engine_failed)
        b.answers_ready.connect(asking.show_answers)
        b.search_failed.connect(asking.search_failed)
        b.document_ready.connect(lambda _r, key, text: self.preview.set_text(key, text))
        b.document_failed.connect(lambda _r, key, msg: self.preview.set_error(key, msg))
        b.sources_changed.connect(sources.sources_changed)
        b.errors_changed.connect(sources.errors_changed)
        b.indexing_changed.connect(indexing.indexing_changed)
        b.progress.connect(self.indicator.set_progress)
        b.progress.connect(indexing.progress_refresh)
        b.index_finished.connect(indexing.index_finished)
        b.action_failed.connect(indexing.action_failed)
        b.watch_event.connect(indexing.watch_event)
        b.watching_changed.connect(indexing.watching_changed)
        b.status_changed.connect(models.status_changed)
        b.job_finished.connect(models.job_finished)
        b.mail_catalog_ready.connect(self.filters.set_mail_catalog)
        b.model_rebuild.connect(models.model_rebuild)
        b.selfcheck_ready.connect(models.selfcheck_ready)
        b.selfcheck_failed.connect(models.selfcheck_failed)
        # every change of the index: results on screen and the e-mail filters follow it
        b.index_finished.connect(lambda _final, _error: asking.index_changed())
        b.watch_event.connect(lambda _event: asking.index_changed())

    # ================================================================== settings

    def _restore_settings(self) -> None:
        s = self.settings
        geom = s.value("window/geometry")
        if isinstance(geom, QByteArray) and not geom.isEmpty():
            self.restoreGeometry(geom)
        split = s.value("window/splitter")
        if isinstance(split, QByteArray) and not split.isEmpty():
            self.splitter.restoreState(split)
        self.history.setStringList(s.value("search/history", [], list) or [])
        self.act_hybrid.setChecked(_bool(s.value("search/hybrid", DEFAULT_HYBRID)))
        self.act_idf.setChecked(_bool(s.value("search/idf", DEFAULT_IDF)))
        self.act_auto_adapt.setChecked(_bool(s.value("model/auto_adapt", AUTO_ADAPT_DEFAULT)))
        self.act_filters.setChecked(_bool(s.value("view/filters", False)))
        self.filters.setVisible(self.act_filters.isChecked())
        self.act_preview.setChecked(_bool(s.value("view/preview", True)))
        self.sync_preview()
        self.act_watch.blockSignals(True)
        self.act_watch.setChecked(_bool(s.value("index/watch", True)))
        self.act_watch.blockSignals(False)
        ocr = _bool(s.value("index/ocr", True))
        os.environ[OCR_SETTING] = "1" if ocr else "0"  # the indexing process starts with it
        self.act_ocr.blockSignals(True)
        self.act_ocr.setChecked(ocr)
        self.act_ocr.blockSignals(False)
        self.top = int(s.value("search/top", 20))
        self.last_dir = str(s.value("paths/last_dir", str(Path.home())))
        self.indexing_controller.update_watch_label(False)

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/splitter", self.splitter.saveState())
        s.setValue("search/hybrid", self.act_hybrid.isChecked())
        s.setValue("search/idf", self.act_idf.isChecked())
        s.setValue("model/auto_adapt", self.act_auto_adapt.isChecked())
        s.setValue("search/top", self.top)
        s.setValue("search/history", self.history.stringList())
        s.setValue("view/filters", self.act_filters.isChecked())
        s.setValue("view/preview", self.act_preview.isChecked())
        s.setValue("index/watch", self.act_watch.isChecked())
        s.setValue("paths/last_dir", self.last_dir)
        s.sync()

    # ================================================================== window events

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() and all(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile() and Path(url.toLocalFile()).exists():
                self.sources_controller.add_source(url.toLocalFile())
        event.acceptProposedAction()

    def closeEvent(self, event) -> None:
        self.save_settings()
        if self.sources_controller.sources_dialog is not None:
            self.sources_controller.sources_dialog.close()
        self.statusBar().showMessage("Closing…")
        self.backend.shutdown()
        super().closeEvent(event)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes")
    return bool(value)
