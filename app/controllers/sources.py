"""The folders and mail stores the window searches: adding (menus, the welcome page, a drop,
the samples), removing, their exclusions, the Sources dialog, the counts in the status
bar, and the engine opening (sources added before it was open are added then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QMessageBox

from app.controllers.base import Controller
from app.format import format_count
from app.sources import SourcesDialog, choose_folder, choose_mail_store
from app.welcome import sample_questions, samples_dir


class SourcesController(Controller):
    """Sources, their files that failed, and the Sources dialog."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.sources: list = []
        self.errors: list = []
        self.sources_known = False
        #: folders added before the engine was open (a click on the welcome page's samples
        #: button in the first second): added when it is ready, not lost (issue 36, item 2)
        self.pending_sources: list[tuple[str, list[str]]] = []
        self.sources_dialog: SourcesDialog | None = None
        self.files_before: dict[str, int] = {}  # a source's files before its exclusions changed
        self.last_dir = str(Path.home())  # the settings' paths/last_dir (MainWindow._restore_settings)

    # ================================================================== engine events

    @Slot()
    def engine_ready(self) -> None:
        w = self.window
        self.say("Ready", 3000)
        self.backend.load_mail_catalog()
        # Files changed while the app was closed, and a run cut short by quitting, are
        # caught up with at start: by the watch (it indexes every source first), or else by
        # resuming the interrupted run.
        if w.act_watch.isChecked():
            self.backend.set_watch(True)  # indexes every source first: a rebuild included
            self.backend.check_rebuild()
        else:
            self.backend.catch_up()
        pending, self.pending_sources = self.pending_sources, []
        for path, exclude in pending:
            self.add_source(path, exclude)

    @Slot(str)
    def engine_failed(self, message: str) -> None:
        self.window.show_message("The index could not be opened", message)
        self.window.search.setEnabled(False)
        self.pending_sources = []

    def sources_changed(self, sources: list) -> None:
        w = self.window
        first = not self.sources_known
        self.sources_known = True
        self.sources = list(sources)
        w.filters.set_sources(self.sources)
        if self.sources_dialog is not None:
            self.sources_dialog.set_sources(self.sources)
        self.update_summary()
        w.summary.setToolTip("\n".join(s.path for s in self.sources) or "Add a folder with File ▸ Add folder")
        has_samples = self.has_samples()
        w.act_samples.setVisible(not has_samples)  # one click adds them; then it has done its job
        w.act_samples.setEnabled(not has_samples)
        if first or w.stack.currentWidget() is not w.results:
            w.search_controller.idle_page()
        if first:
            w.focus_search()

    def update_summary(self) -> None:
        """The catalog's counts when idle. While indexing the indicator's count is the only
        one (the catalog's lags behind the run and the two disagreed): the summary keeps
        only the link to the unreadable files."""
        summary = self.window.summary
        errors = sum(s.errors for s in self.sources)
        link = f'<a href="sources">{format_count(errors)} unreadable</a>' if errors else ""
        if self.backend.indexing:
            summary.setText(link)
            return
        files = sum(s.files for s in self.sources)
        sentences = sum(s.sentences for s in self.sources)
        text = f"{format_count(files)} files · {format_count(sentences)} sentences"
        summary.setText((f"{text} · {link}" if link else text) if self.sources else "No sources")

    def errors_changed(self, errors: list) -> None:
        self.errors = list(errors)
        if self.sources_dialog is not None:
            self.sources_dialog.set_errors(self.errors)

    def has_samples(self) -> bool:
        root = samples_dir()
        if root is None:
            return False
        root_s = str(root.resolve())
        return any(str(Path(s.path).resolve()).startswith(root_s) for s in self.sources)

    # ================================================================== adding and removing

    def add_folder(self) -> None:
        path = choose_folder(self.window, self.last_dir)
        if path:
            self.last_dir = path
            self.add_source(path)

    def add_mail_store(self) -> None:
        path = choose_mail_store(self.window, self.last_dir)
        if path:
            self.last_dir = str(Path(path).parent)
            self.add_source(path)

    def add_source(self, path: str, exclude: list[str] | None = None) -> None:
        if not self.backend.is_ready:
            self.pending_sources.append((path, exclude or []))
            self.say(f"Opening the index; {path} is added as soon as it is open…")
            return
        self.say(f"Adding {path}…", 3000)
        self.backend.add_source(Path(path), exclude or [])

    def index_samples(self) -> None:
        if self.has_samples():
            return
        root = samples_dir()
        if root is None:
            QMessageBox.information(
                self.window, "Samples", "The sample corpus is not installed with this copy of sparcdesk."
            )
            return
        self.add_source(str(root))
        self.window.act_samples.setEnabled(False)  # until the source list says whether they are added
        self.window.show_message(
            "Indexing the sample documents…",
            "This takes well under a minute. You can ask already:",
            sample_questions(),
        )

    def remove_source(self, path: str) -> None:
        """The source leaves the lists and the results now; the backend stops its indexing
        and deletes its documents (said when done)."""
        w = self.window
        self.backend.remove_source(Path(path))
        self.sources_changed([s for s in self.sources if s.path != path])
        self.errors = [e for e in self.errors if not self.backend.is_removed(e.path)]
        if self.sources_dialog is not None:
            self.sources_dialog.set_errors(self.errors)
        answers = w.model.answers()
        kept = [a for a in answers if not self.backend.is_removed(a.path)]
        if len(kept) != len(answers):
            current = w.current_answer()
            w.model.set_answers(kept)
            if current is not None and current in kept:
                w.results.setCurrentIndex(w.model.index(kept.index(current), 0))
            elif kept:
                w.results.setCurrentIndex(w.model.index(0, 0))
            else:
                w.preview.clear()
                w.search_controller.last_query = None
                w.search_controller.idle_page()
        self.say(f"Removing {path}…")

    def set_exclusions(self, path: str, patterns: list) -> None:
        before = next((s.files for s in self.sources if s.path == path), None)
        if before is not None:
            self.files_before[str(Path(path))] = before
        self.backend.set_exclusions(Path(path), patterns)

    def show_sources(self) -> None:
        if self.sources_dialog is None:
            dlg = SourcesDialog(self.window, self.last_dir)
            dlg.add_requested.connect(lambda p, ex: self.add_source(p, ex))
            dlg.remove_requested.connect(self.remove_source)
            dlg.exclusions_requested.connect(self.set_exclusions)
            dlg.update_requested.connect(self.window.indexing_controller.update_index)
            self.sources_dialog = dlg
        self.sources_dialog.set_sources(self.sources)
        self.sources_dialog.set_errors(self.errors)
        self.sources_dialog.show()
        self.sources_dialog.raise_()
        self.sources_dialog.activateWindow()
        self.backend.refresh()
