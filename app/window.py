"""The main window: search field, filters, result list, preview, indexing status.

Keyboard first: Ctrl+L / Ctrl+F focus the search field, Enter runs the question, Down
moves into the results, Up/Down walk them (the preview follows), Enter or Ctrl+O opens the
document, Ctrl+Shift+O shows it in its folder, F3 / Shift+F3 step through the hits in the
preview, Esc goes back to the search field. All engine work goes through
:class:`app.backend.Backend`, which runs it on worker threads.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QMessageBox

from app.backend import Backend, JobOutcome, SearchResult
from app.controllers.files import FilesController, no_opener_reason
from app.controllers.help import HelpController
from app.format import format_count, format_duration, rebuild_notice
from app.sources import SourcesDialog, choose_folder, choose_mail_store
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
from app.welcome import sample_questions, samples_dir
from engine.search.defaults import DEFAULT_HYBRID, DEFAULT_IDF
from engine.search.query import absent_notice, relaxed_notice

__all__ = [
    "NARROW_WIDTH",
    "PREVIEW_MIN_WIDTH",
    "RESTORE_TIP",
    "RESULTS_MIN_WIDTH",
    "PageStack",
    "SearchField",
    "no_opener_reason",
]

#: Masked-LM steps of "Adapt to my documents" (SPARC.md §3 default); tests lower it.
ADAPT_STEPS = 500
#: The status line for a question asked before anything is indexed (the welcome page stays).
NOTHING_INDEXED = "Nothing is indexed yet: add a folder or a mail store, or try the sample documents"
#: With Index ▸ Adapt automatically on, the window adapts once this many sentences are indexed.
AUTO_ADAPT_MIN_SENTENCES = 5000
#: Off by default: with the shipped model, adaptation lowers the out-of-domain mean, and the
#: measured best configuration is the model as shipped with IDF and the BM25 hybrid
#: (docs/ood.md, "Every combination"; those two are engine.search.defaults).
AUTO_ADAPT_DEFAULT = False
HISTORY_SIZE = 50
#: What adapting measured, with the shipped model, on collections with known answers
#: (``sparcdesk-train ood``, docs/ood.md "Every combination", sparc-tiny 0.3.0 through the
#: app's index: as shipped -> +emb; tests/test_app.py checks them against that table). Shown before adapting: the
#: user's own files have no questions with known answers, so their gain is not measured.
ADAPT_MEASURED_MODEL = ("sparc-tiny", "0.3.0")
ADAPT_MEASURED_MRR = {  # SPARC alone, MRR (nDCG@10 for CISI and TIME)
    "RelationExtraction": (91.16, 94.33),
    "SQuAD": (74.32, 76.76),
    "FaQuAD": (72.87, 77.66),
    "TIME": (62.57, 64.75),
    "CISI": (23.84, 26.52),
    "e-mail": (60.59, 50.65),
}
#: The default search (IDF + BM25 hybrid): out-of-domain mean without -> with adaptation.
ADAPT_MEASURED_DEFAULT_SEARCH = (67.19, 64.26)


def adaptation_forecast(model: str, version: str) -> str:
    """What adapting is measured to gain with this model, or that it was not measured."""
    if (model, version.split("+")[0]) != ADAPT_MEASURED_MODEL:  # "0.3.0+<content hash>"
        return f"Its gain was not measured for the model in use ({model} {version})."
    sets = ", ".join(f"{k} {a:.2f} → {b:.2f}" for k, (a, b) in ADAPT_MEASURED_MRR.items())
    before, after = ADAPT_MEASURED_DEFAULT_SEARCH
    return (
        f"Measured with this model ({model} {version}, docs/ood.md), adapting to a collection's own "
        f"text changed the neural ranking's MRR: {sets}. With the default search (rare words "
        f"weighted, keywords combined) the mean over five collections went from {before:.2f} to "
        f"{after:.2f}. Your own files have no questions with known answers, so the gain on them "
        "cannot be measured here."
    )


def adaptation_outcome(outcome: JobOutcome, status: dict) -> str:
    """How an adaptation ended, from the job and the engine's status right after it: which
    model answers now and, in plain words, what adaptation measured on the user's text (its
    masked-word loss as a perplexity: among how many words a hidden word was as hard to guess)."""
    live = (status.get("generation") or {}).get("model") or "the model"
    adapted = "+adapted" in live
    which = f"the adapted model ({live})" if adapted else f"the shipped model ({live})"
    if outcome.outcome == "done" and adapted:
        info = (status.get("adapted_model") or {}).get("adaptation") or {}
        first, last, n = info.get("loss_first"), info.get("loss_last"), info.get("sentences")
        gain = ""
        if first is not None and last is not None and n:
            before, after = math.exp(min(float(first), 50.0)), math.exp(min(float(last), 50.0))
            gain = (
                f" It learned the words of your {format_count(int(n))} sentences: a hidden word of"
                f" your text was as hard to guess as a pick among {before:,.0f} words before and"
                f" {after:,.0f} after. Whether your searches find better answers is not measured"
                " (your files have no questions with known answers)."
            )
        return f"Adapted model in use: {live}.{gain} Index ▸ Restore previous model goes back."
    if outcome.outcome == "done":
        return (
            f"Adaptation trained, but its index is not complete: {which} still answers. "
            "Index ▸ Update index completes it."
        )
    if outcome.outcome == "failed":
        return f"Adaptation failed ({outcome.error}); {which} is still in use."
    return f"Adaptation cancelled; {which} is still in use."


#: When the index changes under the results on screen (an indexing run ends, a watched file
#: changes, a source is removed, an adaptation goes live), the question is asked again after
#: this many ms without a further change, keeping the selection where its document remains.
LIVE_REFRESH_MS = 500


def default_filters_type():
    from engine.api.facade import SearchFilters

    return SearchFilters


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

    # ---- open, reveal, copy (FilesController)
    open_current = _On("files_controller", "open_current")
    open_path = _On("files_controller", "open_path")
    reveal_current = _On("files_controller", "reveal_current")
    reveal_path = _On("files_controller", "reveal_path")
    copy_current_path = _On("files_controller", "copy_current_path")
    copy_sentence = _On("files_controller", "copy_sentence")
    _results_menu = _On("files_controller", "results_menu")
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
        self._filters_type = filters_type
        self.sources: list = []
        self.errors: list = []
        self.last_result: SearchResult | None = None
        self._last_query: str | None = None
        self._asked: dict[str, Any] | None = None  # the last question as asked, for live refresh
        self._live_request = 0  # the backend request of a live refresh in flight
        self._restoring = False  # the results are being replaced by a live refresh
        self._searching = False
        self._sources_known = False
        #: folders added before the engine was open (a click on the welcome page's samples
        #: button in the first second): added when it is ready, not lost (issue 36, item 2)
        self._pending_sources: list[tuple[str, list[str]]] = []
        self._more_row: int | None = None
        self._index_started_at = 0.0
        self._sources_dialog: SourcesDialog | None = None
        self._last_outcome: JobOutcome | None = None
        self._pending_report: JobOutcome | None = None  # said once the counts after it arrive
        self._files_before: dict[str, int] = {}  # a source's files before its exclusions changed
        self.adapt_steps = ADAPT_STEPS
        self.auto_adapt_min_sentences = AUTO_ADAPT_MIN_SENTENCES
        self.model_state: dict = {}
        self.last_status: dict = {}
        self._indexed_sentences = 0
        self._model_job = False
        self._filter_timer = QTimer(self, singleShot=True, interval=250)
        self._filter_timer.timeout.connect(self._rerun_for_filters)
        self._live_timer = QTimer(self, singleShot=True, interval=LIVE_REFRESH_MS)
        self._live_timer.timeout.connect(self._index_settled)
        tip = f"Adapt the model once {AUTO_ADAPT_MIN_SENTENCES:,} sentences are indexed"
        self.act_auto_adapt.setToolTip(tip)
        self.act_auto_adapt.setStatusTip(tip)
        self.files_controller = FilesController(self)
        self.help_controller = HelpController(self)

        self._wire_widgets()
        self._wire_actions()
        self._connect_backend()
        self._restore_settings()
        self.show_message("Opening the index…", "Loading the model and the catalog.")

    # ================================================================== wiring

    def _wire_widgets(self) -> None:
        """The view's widgets to the window's slots (the order of two slots on one signal is
        the order the window always had)."""
        self.search.returnPressed.connect(self.run_search)
        self.ask_btn.clicked.connect(self.run_search)
        self.filters.changed.connect(self._filters_changed)
        self.results.selectionModel().currentChanged.connect(self._current_changed)
        self.results.open_requested.connect(self.open_current)
        self.results.customContextMenuRequested.connect(self._results_menu)
        self.welcome.samples_requested.connect(self.index_samples)
        self.welcome.add_folder_requested.connect(self.add_folder)
        self.welcome.add_mail_requested.connect(self.add_mail_store)
        self.message.question_clicked.connect(self.ask)
        # after the view's own (the stack's geometry, the preview's visibility)
        self.stack.currentChanged.connect(lambda _i: self.no_answer.setVisible(self._no_answer_shown()))
        self.preview.open_requested.connect(self.open_path)
        self.preview.reveal_requested.connect(self.reveal_path)
        self.indicator.pause_toggled.connect(self._pause_toggled)
        self.indicator.pause_toggled.connect(self.act_pause.setChecked)
        self.indicator.stop_clicked.connect(self.stop_indexing)
        self.summary.linkActivated.connect(lambda _href: self.show_sources())
        self.more_btn.clicked.connect(self.show_more)

    def _wire_actions(self) -> None:
        """The menus' actions to the window's slots (the view wires those that only move
        focus or show and hide its own panes)."""
        for act, slot in (
            (self.act_add_folder, self.add_folder),
            (self.act_add_mail, self.add_mail_store),
            (self.act_sources, self.show_sources),
            (self.act_samples, self.index_samples),
            (self.act_open, self.open_current),
            (self.act_reveal, self.reveal_current),
            (self.act_copy, self.copy_sentence),
            (self.act_copy_path, self.copy_current_path),
            (self.act_more, self.show_more),
            (self.act_update, self.update_index),
            (self.act_stop, self.stop_indexing),
            (self.act_adapt, self.adapt_model),
            (self.act_restore, self.restore_model),
            (self.act_shortcuts, self.show_shortcuts),
            (self.act_syntax, self.show_syntax),
            (self.act_about, self.show_about),
            (self.act_log, self.open_log_file),
        ):
            act.triggered.connect(slot)
        for act, slot in (
            (self.act_hybrid, self._options_changed),
            (self.act_idf, self._options_changed),
            (self.act_filters, self._toggle_filters),
            (self.act_watch, self._watch_toggled),
        ):
            act.toggled.connect(slot)

    def _connect_backend(self) -> None:
        b = self.backend
        b.ready.connect(self._engine_ready)
        b.engine_failed.connect(self._engine_failed)
        b.answers_ready.connect(self._show_answers)
        b.search_failed.connect(self._search_failed)
        b.document_ready.connect(lambda _r, key, text: self.preview.set_text(key, text))
        b.document_failed.connect(lambda _r, key, msg: self.preview.set_error(key, msg))
        b.sources_changed.connect(self._sources_changed)
        b.errors_changed.connect(self._errors_changed)
        b.indexing_changed.connect(self._indexing_changed)
        b.progress.connect(self.indicator.set_progress)
        b.progress.connect(self._progress_refresh)
        b.index_finished.connect(self._index_finished)
        b.action_failed.connect(self._action_failed)
        b.watch_event.connect(self._watch_event)
        b.watching_changed.connect(self._watching_changed)
        b.status_changed.connect(self._status_changed)
        b.job_finished.connect(self._job_finished)
        b.mail_catalog_ready.connect(self.filters.set_mail_catalog)
        b.model_rebuild.connect(self._model_rebuild)
        # every change of the index: results on screen and the e-mail filters follow it
        b.index_finished.connect(lambda _final, _error: self._index_changed())
        b.watch_event.connect(lambda _event: self._index_changed())

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
        self.top = int(s.value("search/top", 20))
        self.last_dir = str(s.value("paths/last_dir", str(Path.home())))
        self._update_watch_label(False)

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

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() and all(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile() and Path(url.toLocalFile()).exists():
                self.add_source(url.toLocalFile())
        event.acceptProposedAction()


    def closeEvent(self, event) -> None:
        self.save_settings()
        if self._sources_dialog is not None:
            self._sources_dialog.close()
        self.statusBar().showMessage("Closing…")
        self.backend.shutdown()
        super().closeEvent(event)

    # ================================================================== pages

    def _show_notice(self, result: SearchResult) -> None:
        """The line above the results: the phrases dropped and the no-answer decision of the
        answers on screen (a live refresh may change either)."""
        notice = [relaxed_notice(result.relaxed)] if result.relaxed else []
        if result.absent:
            notice.append(absent_notice(result.absent))
        if not result.answered:
            notice.append("Nothing in your files answers this question. The closest matches are below.")
        self.no_answer.setText(" ".join(notice))
        self.no_answer.setVisible(self._no_answer_shown())

    def _no_answer_shown(self) -> bool:
        r = self.last_result
        return bool(
            r
            and r.answers
            and (not r.answered or r.relaxed or r.absent)
            and self.stack.currentWidget() is self.results
        )


    def _idle_page(self) -> None:
        """Welcome page without sources; otherwise an invitation to ask (with examples for the samples)."""
        if not self.backend.is_ready:
            return
        if not self.sources and not self.backend.indexing:
            self.stack.setCurrentWidget(self.welcome)
            return
        if self._last_query:
            return
        examples = sample_questions() if self._has_samples() else []
        if self.backend.indexing:
            self.show_message(
                "Indexing…",
                "You can ask already; answers come from what has been indexed so far.",
                examples,
            )
        else:
            self.show_message(
                "Ask a question", "Type a question or a few keywords above and press Enter.", examples
            )

    def _has_samples(self) -> bool:
        root = samples_dir()
        if root is None:
            return False
        root_s = str(root.resolve())
        return any(str(Path(s.path).resolve()).startswith(root_s) for s in self.sources)

    # ================================================================== engine events

    @Slot()
    def _engine_ready(self) -> None:
        self.statusBar().showMessage("Ready", 3000)
        self.backend.load_mail_catalog()
        # Files changed while the app was closed, and a run cut short by quitting, are
        # caught up with at start: by the watch (it indexes every source first), or else by
        # resuming the interrupted run.
        if self.act_watch.isChecked():
            self.backend.set_watch(True)  # indexes every source first: a rebuild included
            self.backend.check_rebuild()
        else:
            self.backend.catch_up()
        pending, self._pending_sources = self._pending_sources, []
        for path, exclude in pending:
            self.add_source(path, exclude)

    @Slot(object)
    def _model_rebuild(self, rebuild: Any) -> None:
        """Say once (per new model) why the index is being rebuilt and how long it takes."""
        if self.settings.value("model/rebuild_explained", "", str) == rebuild.new:
            return
        self.settings.setValue("model/rebuild_explained", rebuild.new)
        title, text = rebuild_notice(rebuild.old, rebuild.new, rebuild.sentences)
        self.banner.show_notice(f"{title}. {text}")  # stays above the results until closed
        self.statusBar().showMessage(title, 15000)

    @Slot(str)
    def _engine_failed(self, message: str) -> None:
        self.show_message("The index could not be opened", message)
        self.search.setEnabled(False)
        self._pending_sources = []

    def _sources_changed(self, sources: list) -> None:
        first = not self._sources_known
        self._sources_known = True
        self.sources = list(sources)
        self.filters.set_sources(self.sources)
        if self._sources_dialog is not None:
            self._sources_dialog.set_sources(self.sources)
        self._update_summary()
        self.summary.setToolTip(
            "\n".join(s.path for s in self.sources) or "Add a folder with File ▸ Add folder"
        )
        has_samples = self._has_samples()
        self.act_samples.setVisible(not has_samples)  # one click adds them; then it has done its job
        self.act_samples.setEnabled(not has_samples)
        if first or self.stack.currentWidget() is not self.results:
            self._idle_page()
        if first:
            self.focus_search()

    def _update_summary(self) -> None:
        """The catalog's counts when idle. While indexing the indicator's count is the only
        one (the catalog's lags behind the run and the two disagreed): the summary keeps
        only the link to the unreadable files."""
        errors = sum(s.errors for s in self.sources)
        link = f'<a href="sources">{format_count(errors)} unreadable</a>' if errors else ""
        if self.backend.indexing:
            self.summary.setText(link)
            return
        files = sum(s.files for s in self.sources)
        sentences = sum(s.sentences for s in self.sources)
        text = f"{format_count(files)} files · {format_count(sentences)} sentences"
        self.summary.setText((f"{text} · {link}" if link else text) if self.sources else "No sources")

    def _errors_changed(self, errors: list) -> None:
        self.errors = list(errors)
        if self._sources_dialog is not None:
            self._sources_dialog.set_errors(self.errors)

    # ================================================================== searching

    def ask(self, question: str) -> None:
        self.search.setText(question)
        self.run_search()

    def current_filters(self) -> Any:
        values = self.filters.values() if self.act_filters.isChecked() else None
        if not values:
            return None
        cls = self._filters_type or default_filters_type()
        return cls(**values)

    def run_search(self) -> None:
        question = self.search.text().strip()
        if not self.backend.is_ready:
            return
        # this search brings the results up to date; the e-mail filters still follow the index
        if self._live_timer.isActive():
            self._live_timer.stop()
            QTimer.singleShot(0, self.backend.load_mail_catalog)  # queued after the question
        self._live_request = 0
        if not question:
            self._last_query = None
            self._asked = None
            self.model.set_answers([])
            self.preview.clear()
            self._idle_page()
            return
        if self.banner.isVisible() and self.banner.warning and question != self._last_query:
            self.banner.dismiss()  # what went wrong before this question (issue 36, item 10)
        self._last_query = question
        self._remember(question)
        self._searching = True
        self.statusBar().showMessage("Searching…")
        self._asked = {
            "question": question,
            "filters": self.current_filters(),
            "top": self.top,
            "idf": self.act_idf.isChecked(),
            "hybrid": self.act_hybrid.isChecked(),
        }
        self.backend.ask(**self._asked)

    def show_more(self) -> None:
        """Ask the same search again for ``top`` more documents; the selection stays where it
        is, and the list grows below it."""
        if self._asked is None or self._searching or not self.backend.is_ready:
            return
        self._more_row = max(0, self.results.currentIndex().row())
        self._asked = {**self._asked, "top": self.model.rowCount() + self.top}
        self._searching = True
        self.statusBar().showMessage("Searching for more…")
        self.backend.ask(**self._asked)

    def _remember(self, question: str) -> None:
        items = [q for q in self.history.stringList() if q != question]
        self.history.setStringList([question, *items][:HISTORY_SIZE])

    def _show_answers(self, result: SearchResult) -> None:
        # a source being removed has left the results already, even if the index still has it
        result.answers = [a for a in result.answers if not self.backend.is_removed(a.path)]
        live, self._live_request = result.request == self._live_request, 0
        if live and result.answers and self.stack.currentWidget() is self.results:
            self._show_refreshed(result)
            self.results_refreshed.emit(result)
            return
        self._searching = False
        self.last_result = result
        answers = result.answers
        self.model.set_answers(answers)
        mode = "hybrid" if result.hybrid else "neural"
        where = self.filters.describe() if self.current_filters() is not None else ""
        where = f" ({where})" if where else ""
        if not answers and not self.sources and not self.backend.indexing:
            # nothing to search yet: the welcome page (samples, add a folder) stays on screen
            self.preview.clear()
            self.stack.setCurrentWidget(self.welcome)
            self.statusBar().showMessage(NOTHING_INDEXED)
            return
        if not answers and self.backend.indexing and not result.absent:
            self.preview.clear()
            self.show_message(
                "Still indexing", "Answers will appear here as your files are indexed; the question is asked again."
            )
            self.statusBar().showMessage("Still indexing · results will appear")
            return
        if not answers:
            self.preview.clear()
            hint = "Try other words"
            if where:
                hint += ", or loosen the filters"
            relaxed = relaxed_notice(result.relaxed, found=False)
            absent = absent_notice(result.absent, found=False)
            if absent and not relaxed:
                self.show_message("No answers found", absent + " Check the spelling, or try other words.")
            else:
                self.show_message("No answers found", (relaxed + " " if relaxed else "") + hint + ".")
            self.statusBar().showMessage(f"No answers{where} · {result.seconds * 1000:.0f} ms")
            return
        self.stack.setCurrentWidget(self.results)
        self._show_notice(result)
        more_row, self._more_row = self._more_row, None
        if more_row is not None:  # "More results": the list grew below the selection
            self.results.setCurrentIndex(self.model.index(min(more_row, len(answers) - 1), 0))
        else:
            self.results.setCurrentIndex(self.model.index(0, 0))
            self.results.scrollToTop()
        full = self._asked is not None and len(answers) >= int(self._asked.get("top", self.top))
        self.more_btn.setVisible(full)
        self.act_more.setEnabled(full)
        n = len(answers)
        found = f"{n} document{'s' if n != 1 else ''}" if result.answered else f"No answer · {n} closest matches"
        self.statusBar().showMessage(f"{found}{where} · {result.seconds * 1000:.0f} ms · {mode}")
        if live:
            self.results_refreshed.emit(result)

    # ================================================================== live results

    def _index_changed(self) -> None:
        """The index changed (debounced): the e-mail filters and the results on screen follow."""
        self._live_timer.start()

    def _index_settled(self) -> None:
        self.backend.load_mail_catalog()
        if self._asked is None or self._last_query is None or self._searching or not self.backend.is_ready:
            return
        self._live_request = self.backend.ask(**self._asked)

    def _show_refreshed(self, result: SearchResult) -> None:
        """New answers to the question on screen: the selected document stays selected where
        it was in the view, and its preview where it was scrolled; one that is gone is said
        so in the preview. Focus stays where the user has it."""
        view = self.results
        previous = self.current_answer()
        index = view.currentIndex()
        old_top = view.visualRect(index).top() if index.isValid() else None
        bar = view.verticalScrollBar()
        scroll = bar.value()
        self.last_result = result
        self._restoring = True
        try:
            self.model.set_answers(result.answers)
            view.doItemsLayout()
            keys = [a.doc_key for a in result.answers]
            row = keys.index(previous.doc_key) if previous is not None and previous.doc_key in keys else -1
            if row >= 0:
                auto = view.hasAutoScroll()
                view.setAutoScroll(False)
                view.setCurrentIndex(self.model.index(row, 0))
                view.setAutoScroll(auto)
                if old_top is not None:
                    bar.setValue(bar.value() + view.visualRect(self.model.index(row, 0)).top() - old_top)
            else:
                bar.setValue(scroll)
            if scroll == 0:
                # the user had not scrolled: the top of the list, where a new best answer
                # lands, stays in sight even if the selected one moves below it (issue 36)
                bar.setValue(0)
        finally:
            self._restoring = False
        self._show_notice(result)
        if row >= 0:
            answer = result.answers[row]
            self.preview.refresh_answer(answer)
            self.backend.load_document(answer.doc_key)
        elif previous is not None:
            self.preview.show_gone(previous)
        n = len(result.answers)
        self.statusBar().showMessage(
            f"Results updated: the index changed · {n} document{'s' if n != 1 else ''}", 5000
        )

    def _search_failed(self, req: int, message: str) -> None:
        if req == self._live_request:  # a live refresh: the results on screen stay
            self._live_request = 0
            self.statusBar().showMessage(f"Could not refresh the results: {message}", 8000)
            return
        self._searching = False
        self.model.set_answers([])
        self.preview.clear()
        self.show_message("The search failed", message)
        self.statusBar().showMessage("Search failed", 5000)

    def _filters_changed(self) -> None:
        self._filter_timer.start()

    def _rerun_for_filters(self) -> None:
        if self._last_query and self.search.text().strip() == self._last_query:
            self.run_search()

    def _toggle_filters(self, on: bool) -> None:
        self.filters.setVisible(on)
        if self.filters.values():
            self._filter_timer.start()

    def _options_changed(self, _on: bool) -> None:
        if self._last_query:
            self.run_search()

    def _current_changed(self, current, _previous) -> None:
        if self._restoring:  # a live refresh places the selection and the preview itself
            return
        answer = self.model.answer(current.row()) if current.isValid() else None
        if answer is None:
            self.preview.clear()
            return
        self.preview.show_answer(answer)
        self.backend.load_document(answer.doc_key)


    # ================================================================== sources and indexing

    def add_folder(self) -> None:
        path = choose_folder(self, self.last_dir)
        if path:
            self.last_dir = path
            self.add_source(path)

    def add_mail_store(self) -> None:
        path = choose_mail_store(self, self.last_dir)
        if path:
            self.last_dir = str(Path(path).parent)
            self.add_source(path)

    def add_source(self, path: str, exclude: list[str] | None = None) -> None:
        if not self.backend.is_ready:
            self._pending_sources.append((path, exclude or []))
            self.statusBar().showMessage(f"Opening the index; {path} is added as soon as it is open…")
            return
        self.statusBar().showMessage(f"Adding {path}…", 3000)
        self.backend.add_source(Path(path), exclude or [])

    def index_samples(self) -> None:
        if self._has_samples():
            return
        root = samples_dir()
        if root is None:
            QMessageBox.information(
                self, "Samples", "The sample corpus is not installed with this copy of sparcdesk."
            )
            return
        self.add_source(str(root))
        self.act_samples.setEnabled(False)  # until the source list says whether they are added
        self.show_message(
            "Indexing the sample documents…",
            "This takes well under a minute. You can ask already:",
            sample_questions(),
        )

    def remove_source(self, path: str) -> None:
        """The source leaves the lists and the results now; the backend stops its indexing
        and deletes its documents (said when done)."""
        self.backend.remove_source(Path(path))
        self._sources_changed([s for s in self.sources if s.path != path])
        self.errors = [e for e in self.errors if not self.backend.is_removed(e.path)]
        if self._sources_dialog is not None:
            self._sources_dialog.set_errors(self.errors)
        answers = self.model.answers()
        kept = [a for a in answers if not self.backend.is_removed(a.path)]
        if len(kept) != len(answers):
            current = self.current_answer()
            self.model.set_answers(kept)
            if current is not None and current in kept:
                self.results.setCurrentIndex(self.model.index(kept.index(current), 0))
            elif kept:
                self.results.setCurrentIndex(self.model.index(0, 0))
            else:
                self.preview.clear()
                self._last_query = None
                self._idle_page()
        self.statusBar().showMessage(f"Removing {path}…")

    def set_exclusions(self, path: str, patterns: list) -> None:
        before = next((s.files for s in self.sources if s.path == path), None)
        if before is not None:
            self._files_before[str(Path(path))] = before
        self.backend.set_exclusions(Path(path), patterns)

    def show_sources(self) -> None:
        if self._sources_dialog is None:
            dlg = SourcesDialog(self, self.last_dir)
            dlg.add_requested.connect(lambda p, ex: self.add_source(p, ex))
            dlg.remove_requested.connect(self.remove_source)
            dlg.exclusions_requested.connect(self.set_exclusions)
            dlg.update_requested.connect(self.update_index)
            self._sources_dialog = dlg
        self._sources_dialog.set_sources(self.sources)
        self._sources_dialog.set_errors(self.errors)
        self._sources_dialog.show()
        self._sources_dialog.raise_()
        self._sources_dialog.activateWindow()
        self.backend.refresh()

    def _status_changed(self, status: dict) -> None:
        """Enable Adapt once something is indexed and Restore while a previous model is kept."""
        self.last_status = status  # Help > About, Help > Open log file
        self.model_state = dict(status.get("adapted_model") or {})
        self._indexed_sentences = int(status.get("sentences") or 0)
        busy = self.backend.indexing
        self.act_adapt.setEnabled(bool(status.get("sentences")) and not busy)
        self.act_restore.setEnabled(bool(self.model_state.get("previous")) and not busy)
        name = self.model_state.get("name")
        if name:
            self.act_adapt.setStatusTip(f"{ADAPT_TIP} (model in use: {name})")
        self._report_outcome(status)

    def _job_finished(self, outcome: JobOutcome) -> None:
        """Jobs whose end needs the counts after it are reported by ``_report_outcome``."""
        self._last_outcome = outcome
        if outcome.kind == "remove" and outcome.outcome == "done":
            self.statusBar().showMessage(f"Removed {outcome.path}: its documents left the index", 10000)
        elif (outcome.kind == "adapt" and outcome.outcome != "dropped") or (
            outcome.kind in ("restore", "exclusions") and outcome.outcome == "done"
        ):
            self._pending_report = outcome

    def _report_outcome(self, status: dict) -> None:
        """Say how a restore, an exclusion change or an adaptation ended, with the counts
        and the model of the status that follows it."""
        o, self._pending_report = self._pending_report, None
        if o is None:
            return
        if o.kind == "adapt":
            self.banner.show_notice(adaptation_outcome(o, status), warning=o.outcome != "done", topic="adaptation")
            self.statusBar().showMessage(self.banner.text(), 15000)
        elif o.kind == "restore":
            self.banner.dismiss(topic="adaptation")  # "Adapted model in use" is no longer true
            live = (status.get("generation") or {}).get("model") or ""
            self.statusBar().showMessage(
                f"Previous model restored ({live}): {format_count(int(status.get('files_ok') or 0))} files, "
                f"{format_count(int(status.get('sentences') or 0))} sentences searchable",
                15000,
            )
        elif o.kind == "exclusions":
            src = next((s for s in self.sources if s.path == o.path), None)
            if src is None:
                return
            before = self._files_before.pop(o.path, None)
            left = f"; {format_count(before - src.files)} files left out" if before and before > src.files else ""
            self.statusBar().showMessage(
                f"Exclusions of {o.path} applied: {format_count(src.files)} files, "
                f"{format_count(src.sentences)} sentences indexed{left}",
                15000,
            )

    def adapt_model(self) -> None:
        if not self.backend.is_ready:
            return
        files = sum(s.files for s in self.sources)
        again = " It replaces the current adaptation." if self.model_state.get("adapted") else ""
        model = self.last_status.get("model") or {}
        name = str(model.get("name", "")).removesuffix("+adapted")
        answer = QMessageBox.question(
            self,
            "Adapt to my documents",
            f"sparcdesk will learn the vocabulary of your {format_count(files)} indexed files on this "
            "computer (nothing leaves it; a few minutes on a laptop), then re-encode them. Answers keep "
            "coming from the current index until the new one is complete, and Index ▸ Restore previous "
            f"model undoes it.{again}\n\n{adaptation_forecast(name, str(model.get('version', '')))}",
            QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Ok:
            self._start_adaptation()

    def _start_adaptation(self) -> None:
        self.act_adapt.setEnabled(False)
        self._model_job = True
        self.indicator.context = "adapt"
        self.banner.dismiss(topic="adaptation")  # the last adaptation's outcome is not this one's
        self.backend.adapt_model(steps=self.adapt_steps)

    def restore_model(self) -> None:
        if self.backend.is_ready:
            self.act_restore.setEnabled(False)
            self._model_job = True
            self.indicator.context = "restore"
            self.backend.restore_model()

    def _maybe_adapt_automatically(self, final: Any) -> None:
        """After an indexing run: adapt if the user left it on, this home never adapted nor
        restored, and enough text is indexed for adaptation to pay off."""
        if not self.act_auto_adapt.isChecked() or not self.model_state:
            return
        if self.model_state.get("adapted") or self.model_state.get("previous"):
            return
        if max(self._indexed_sentences, final.sentences_done) < self.auto_adapt_min_sentences:
            return
        self.statusBar().showMessage(
            "Adapting the model to your documents (Index ▸ Stop to skip; Index ▸ Adapt automatically to turn off)",
            15000,
        )
        self._start_adaptation()

    def update_index(self) -> None:
        if self.backend.is_ready:
            self.backend.update_index()

    def stop_indexing(self) -> None:
        self.backend.cancel_indexing()
        self.indicator.label.setText("Stopping…")

    def _pause_toggled(self, paused: bool) -> None:
        self.backend.set_paused(paused)

    def _indexing_changed(self, busy: bool) -> None:
        self.act_pause.setEnabled(busy)
        self.act_stop.setEnabled(busy)
        if busy:
            self._index_started_at = time.monotonic()
            self.indicator.start()
        else:
            self.indicator.finish()
            self.act_pause.setChecked(False)
            self._idle_page()
        self._update_summary()

    def _progress_refresh(self, _p: Any) -> None:
        """Keep the counts in the status bar moving while a long run indexes (every few seconds)."""
        now = time.monotonic()
        if now - getattr(self, "_last_progress_refresh", 0.0) >= 3.0:
            self._last_progress_refresh = now
            self.backend.refresh()

    def _index_finished(self, final: Any, error: str) -> None:
        model_job, self._model_job = self._model_job, False
        self.indicator.context = None
        if error:
            return
        if final is not None:
            self.indicator.set_progress(final)
            secs = time.monotonic() - self._index_started_at
            o = self._last_outcome
            if o is not None and (o.reason == "removal" or o.kind in ("remove", "restore", "exclusions", "adapt")):
                return  # said by _job_finished / _report_outcome, with the counts that are real
            if final.phase == "cancelled":
                self.statusBar().showMessage(
                    f"Indexing stopped after {format_count(final.files_done)} of {format_count(final.files_total)} "
                    "files; what was done is searchable (Index ▸ Update index to go on)",
                    10000,
                )
                return
            self.statusBar().showMessage(
                f"Index up to date: {format_count(final.files_done)} files, "
                f"{format_count(final.sentences_done)} sentences in {format_duration(secs)}",
                8000,
            )
            if not model_job:
                self._maybe_adapt_automatically(final)

    def _action_failed(self, what: str, message: str) -> None:
        self.statusBar().showMessage(f"{what} failed: {message}", 15000)
        if what.startswith("Watching"):
            return  # the status line says it; the Watch action unchecks itself
        # not modal: a background failure must not block the window
        box = QMessageBox(
            QMessageBox.Icon.Warning, "sparcdesk", f"{what} failed.", QMessageBox.StandardButton.Ok, self
        )
        box.setInformativeText(message)
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()

    # ================================================================== watching

    def _watch_toggled(self, on: bool) -> None:
        self.backend.set_watch(on)

    def _watching_changed(self, on: bool) -> None:
        self.act_watch.blockSignals(True)
        self.act_watch.setChecked(on)
        self.act_watch.blockSignals(False)
        self._update_watch_label(on)

    def _update_watch_label(self, on: bool) -> None:
        self.watch_label.setText("● Watching" if on else "")
        self.watch_label.setToolTip("Changed files are re-indexed automatically" if on else "")

    def _watch_event(self, event: Any) -> None:
        self.backend.refresh()
        changed = list(event) if isinstance(event, (list, tuple)) else []
        if len(changed) == 1:
            what = Path(str(changed[0])).name
        elif changed:
            what = f"{len(changed)} files"
        else:
            what = "changed files"
        self.statusBar().showMessage(f"Index updated: {what}", 6000)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes")
    return bool(value)
