"""Asking: the question as asked, the answers on screen, "More results", the pages around
them (welcome, invitation, no answers), the notice above the results, and the live refresh
that asks again when the index changes under them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer

from app.controllers.base import Controller
from app.jobs import SearchResult
from app.welcome import sample_questions
from engine.search.query import absent_notice, relaxed_notice

#: The status line for a question asked before anything is indexed (the welcome page stays).
NOTHING_INDEXED = "Nothing is indexed yet: add a folder or a mail store, or try the sample documents"
HISTORY_SIZE = 50
#: When the index changes under the results on screen (an indexing run ends, a watched file
#: changes, a source is removed, an adaptation goes live), the question is asked again after
#: this many ms without a further change, keeping the selection where its document remains.
LIVE_REFRESH_MS = 500


def default_filters_type():
    from engine.api.facade import SearchFilters

    return SearchFilters


class SearchController(Controller):
    """The question and its answers."""

    def __init__(self, window: Any, filters_type: Any = None) -> None:
        super().__init__(window)
        self._filters_type = filters_type
        self.last_result: SearchResult | None = None
        self.last_query: str | None = None
        self.asked: dict[str, Any] | None = None  # the last question as asked, for live refresh
        self._live_request = 0  # the backend request of a live refresh in flight
        self._restoring = False  # the results are being replaced by a live refresh
        self.searching = False
        self._more_row: int | None = None
        self.top = 20  # the settings' search/top (MainWindow._restore_settings)
        self._filter_timer = QTimer(self, singleShot=True, interval=250)
        self._filter_timer.timeout.connect(self._rerun_for_filters)
        self._live_timer = QTimer(self, singleShot=True, interval=LIVE_REFRESH_MS)
        self._live_timer.timeout.connect(self._index_settled)

    # ================================================================== pages

    def show_notice(self, result: SearchResult) -> None:
        """The line above the results: the phrases dropped and the no-answer decision of the
        answers on screen (a live refresh may change either)."""
        notice = [relaxed_notice(result.relaxed)] if result.relaxed else []
        if result.absent:
            notice.append(absent_notice(result.absent))
        if not result.answered:
            notice.append("Nothing in your files answers this question. The closest matches are below.")
        self.window.no_answer.setText(" ".join(notice))
        self.window.no_answer.setVisible(self.no_answer_shown())

    def no_answer_shown(self) -> bool:
        r = self.last_result
        return bool(
            r
            and r.answers
            and (not r.answered or r.relaxed or r.absent)
            and self.window.stack.currentWidget() is self.window.results
        )

    def idle_page(self) -> None:
        """Welcome page without sources; otherwise an invitation to ask (with examples for the samples)."""
        w = self.window
        if not self.backend.is_ready:
            return
        if not w.sources_controller.sources and not self.backend.indexing:
            w.stack.setCurrentWidget(w.welcome)
            return
        if self.last_query:
            return
        examples = sample_questions() if w.sources_controller.has_samples() else []
        if self.backend.indexing:
            w.show_message(
                "Indexing…",
                "You can ask already; answers come from what has been indexed so far.",
                examples,
            )
        else:
            w.show_message("Ask a question", "Type a question or a few keywords above and press Enter.", examples)

    # ================================================================== asking

    def ask(self, question: str) -> None:
        self.window.search.setText(question)
        self.run_search()

    def current_filters(self) -> Any:
        w = self.window
        values = w.filters.values() if w.act_filters.isChecked() else None
        if not values:
            return None
        cls = self._filters_type or default_filters_type()
        return cls(**values)

    def run_search(self) -> None:
        w = self.window
        question = w.search.text().strip()
        if not self.backend.is_ready:
            return
        # this search brings the results up to date; the e-mail filters still follow the index
        if self._live_timer.isActive():
            self._live_timer.stop()
            QTimer.singleShot(0, self.backend.load_mail_catalog)  # queued after the question
        self._live_request = 0
        if not question:
            self.last_query = None
            self.asked = None
            w.model.set_answers([])
            w.preview.clear()
            self.idle_page()
            return
        if w.banner.isVisible() and w.banner.warning and question != self.last_query:
            w.banner.dismiss()  # what went wrong before this question (issue 36, item 10)
        self.last_query = question
        self._remember(question)
        self.searching = True
        self.say("Searching…")
        self.asked = {
            "question": question,
            "filters": self.current_filters(),
            "top": self.top,
            "idf": w.act_idf.isChecked(),
            "hybrid": w.act_hybrid.isChecked(),
        }
        self.backend.ask(**self.asked)

    def show_more(self) -> None:
        """Ask the same search again for ``top`` more documents; the selection stays where it
        is, and the list grows below it."""
        if self.asked is None or self.searching or not self.backend.is_ready:
            return
        self._more_row = max(0, self.window.results.currentIndex().row())
        self.asked = {**self.asked, "top": self.window.model.rowCount() + self.top}
        self.searching = True
        self.say("Searching for more…")
        self.backend.ask(**self.asked)

    def _remember(self, question: str) -> None:
        history = self.window.history
        items = [q for q in history.stringList() if q != question]
        history.setStringList([question, *items][:HISTORY_SIZE])

    # ================================================================== answers

    def show_answers(self, result: SearchResult) -> None:
        w = self.window
        # a source being removed has left the results already, even if the index still has it
        result.answers = [a for a in result.answers if not self.backend.is_removed(a.path)]
        live, self._live_request = result.request == self._live_request, 0
        if live and result.answers and w.stack.currentWidget() is w.results:
            self.show_refreshed(result)
            w.results_refreshed.emit(result)
            return
        self.searching = False
        self.last_result = result
        answers = result.answers
        w.model.set_answers(answers)
        mode = "hybrid" if result.hybrid else "neural"
        where = w.filters.describe() if self.current_filters() is not None else ""
        where = f" ({where})" if where else ""
        if not answers:
            self._show_no_answers(result, where)
            return
        w.stack.setCurrentWidget(w.results)
        self.show_notice(result)
        more_row, self._more_row = self._more_row, None
        if more_row is not None:  # "More results": the list grew below the selection
            w.results.setCurrentIndex(w.model.index(min(more_row, len(answers) - 1), 0))
        else:
            w.results.setCurrentIndex(w.model.index(0, 0))
            w.results.scrollToTop()
        full = self.asked is not None and len(answers) >= int(self.asked.get("top", self.top))
        w.more_btn.setVisible(full)
        w.act_more.setEnabled(full)
        n = len(answers)
        found = f"{n} document{'s' if n != 1 else ''}" if result.answered else f"No answer · {n} closest matches"
        self.say(f"{found}{where} · {result.seconds * 1000:.0f} ms · {mode}")
        if live:
            w.results_refreshed.emit(result)

    def _show_no_answers(self, result: SearchResult, where: str) -> None:
        """The page for a search without answers: nothing indexed yet, still indexing, or none found."""
        w = self.window
        w.preview.clear()
        if not w.sources_controller.sources and not self.backend.indexing:
            # nothing to search yet: the welcome page (samples, add a folder) stays on screen
            w.stack.setCurrentWidget(w.welcome)
            self.say(NOTHING_INDEXED)
            return
        if self.backend.indexing and not result.absent:
            w.show_message(
                "Still indexing", "Answers will appear here as your files are indexed; the question is asked again."
            )
            self.say("Still indexing · results will appear")
            return
        hint = "Try other words"
        if where:
            hint += ", or loosen the filters"
        relaxed = relaxed_notice(result.relaxed, found=False)
        absent = absent_notice(result.absent, found=False)
        if absent and not relaxed:
            w.show_message("No answers found", absent + " Check the spelling, or try other words.")
        else:
            w.show_message("No answers found", (relaxed + " " if relaxed else "") + hint + ".")
        self.say(f"No answers{where} · {result.seconds * 1000:.0f} ms")

    def search_failed(self, req: int, message: str) -> None:
        if req == self._live_request:  # a live refresh: the results on screen stay
            self._live_request = 0
            self.say(f"Could not refresh the results: {message}", 8000)
            return
        self.searching = False
        self.window.model.set_answers([])
        self.window.preview.clear()
        self.window.show_message("The search failed", message)
        self.say("Search failed", 5000)

    def current_changed(self, current, _previous) -> None:
        if self._restoring:  # a live refresh places the selection and the preview itself
            return
        answer = self.window.model.answer(current.row()) if current.isValid() else None
        if answer is None:
            self.window.preview.clear()
            return
        self.window.preview.show_answer(answer)
        self.backend.load_document(answer.doc_key)

    # ================================================================== filters and options

    def filters_changed(self) -> None:
        self._filter_timer.start()

    def _rerun_for_filters(self) -> None:
        if self.last_query and self.window.search.text().strip() == self.last_query:
            self.run_search()

    def toggle_filters(self, on: bool) -> None:
        self.window.filters.setVisible(on)
        if self.window.filters.values():
            self._filter_timer.start()

    def options_changed(self, _on: bool) -> None:
        if self.last_query:
            self.run_search()

    # ================================================================== live results

    def index_changed(self) -> None:
        """The index changed (debounced): the e-mail filters and the results on screen follow."""
        self._live_timer.start()

    def _index_settled(self) -> None:
        self.backend.load_mail_catalog()
        if self.asked is None or self.last_query is None or self.searching or not self.backend.is_ready:
            return
        self._live_request = self.backend.ask(**self.asked)

    def show_refreshed(self, result: SearchResult) -> None:
        """New answers to the question on screen: the selected document stays selected where
        it was in the view, and its preview where it was scrolled; one that is gone is said
        so in the preview. Focus stays where the user has it."""
        w = self.window
        previous = w.current_answer()
        self.last_result = result
        self._restoring = True
        try:
            row = self._replace_keeping_place(result, previous)
        finally:
            self._restoring = False
        self.show_notice(result)
        if row >= 0:
            answer = result.answers[row]
            w.preview.refresh_answer(answer)
            self.backend.load_document(answer.doc_key)
        elif previous is not None:
            w.preview.show_gone(previous)
        n = len(result.answers)
        self.say(f"Results updated: the index changed · {n} document{'s' if n != 1 else ''}", 5000)

    def _replace_keeping_place(self, result: SearchResult, previous: Any) -> int:
        """Put ``result``'s answers in the list with ``previous`` selected where it was on
        screen; returns its new row (-1 when it is gone)."""
        view, model = self.window.results, self.window.model
        index = view.currentIndex()
        old_top = view.visualRect(index).top() if index.isValid() else None
        bar = view.verticalScrollBar()
        scroll = bar.value()
        model.set_answers(result.answers)
        view.doItemsLayout()
        keys = [a.doc_key for a in result.answers]
        row = keys.index(previous.doc_key) if previous is not None and previous.doc_key in keys else -1
        if row >= 0:
            auto = view.hasAutoScroll()
            view.setAutoScroll(False)
            view.setCurrentIndex(model.index(row, 0))
            view.setAutoScroll(auto)
            if old_top is not None:
                bar.setValue(bar.value() + view.visualRect(model.index(row, 0)).top() - old_top)
        else:
            bar.setValue(scroll)
        if scroll == 0:
            # the user had not scrolled: the top of the list, where a new best answer
            # lands, stays in sight even if the selected one moves below it (issue 36)
            bar.setValue(0)
        return row
