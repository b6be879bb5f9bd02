"""Indexing and watching as the window shows them: Update, Pause, Stop, the indicator, how a
run ended, a failed background action, the Watch toggle and its label."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.controllers.base import Controller
from app.format import format_count, format_duration
from engine.ingest.walk import OCR_SETTING


class IndexingController(Controller):
    """The index lane's runs and the watch, seen from the window."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.index_started_at = 0.0
        self._last_progress_refresh = 0.0

    def update_index(self) -> None:
        if self.backend.is_ready:
            self.backend.update_index()

    def stop_indexing(self) -> None:
        self.backend.cancel_indexing()
        self.window.indicator.label.setText("Stopping…")

    def pause_toggled(self, paused: bool) -> None:
        self.backend.set_paused(paused)

    def indexing_changed(self, busy: bool) -> None:
        w = self.window
        w.act_pause.setEnabled(busy)
        w.act_stop.setEnabled(busy)
        if busy:
            self.index_started_at = time.monotonic()
            w.indicator.start()
        else:
            w.indicator.finish()
            w.act_pause.setChecked(False)
            w.search_controller.idle_page()
        w.sources_controller.update_summary()

    def progress_refresh(self, _p: Any) -> None:
        """Keep the counts in the status bar moving while a long run indexes (every few seconds)."""
        now = time.monotonic()
        if now - self._last_progress_refresh >= 3.0:
            self._last_progress_refresh = now
            self.backend.refresh()

    def index_finished(self, final: Any, error: str) -> None:
        w = self.window
        models = w.model_controller
        model_job, models.model_job = models.model_job, False
        w.indicator.context = None
        if error or final is None:
            return
        w.indicator.set_progress(final)
        secs = time.monotonic() - self.index_started_at
        o = models.last_outcome
        if o is not None and (o.reason == "removal" or o.kind in ("remove", "restore", "exclusions", "adapt")):
            return  # said by job_finished / report_outcome (ModelController), with the counts that are real
        if final.phase == "cancelled":
            self.say(
                f"Indexing stopped after {format_count(final.files_done)} of {format_count(final.files_total)} "
                "files; what was done is searchable (Index ▸ Update index to go on)",
                10000,
            )
            return
        self.say(
            f"Index up to date: {format_count(final.files_done)} files, "
            f"{format_count(final.sentences_done)} sentences in {format_duration(secs)}",
            8000,
        )
        if not model_job:
            models.maybe_adapt_automatically(final)

    def action_failed(self, what: str, message: str) -> None:
        self.say(f"{what} failed: {message}", 15000)
        if what.startswith("Watching"):
            return  # the status line says it; the Watch action unchecks itself
        # not modal: a background failure must not block the window
        box = QMessageBox(
            QMessageBox.Icon.Warning, "sparcdesk", f"{what} failed.", QMessageBox.StandardButton.Ok, self.window
        )
        box.setInformativeText(message)
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()

    # ================================================================== watching

    def watch_toggled(self, on: bool) -> None:
        self.backend.set_watch(on)

    def ocr_toggled(self, on: bool) -> None:
        """Index ▸ Read pictures and scanned pages (OCR): the indexing process reads the
        setting from the environment it starts with (``engine.ingest.walk.OCR_SETTING``)."""
        os.environ[OCR_SETTING] = "1" if on else "0"
        self.settings.setValue("index/ocr", on)
        self.say("Pictures and scanned pages are read from the next indexing run on" if on else "Pictures and scanned pages are found by their names only", 5000)

    def watching_changed(self, on: bool) -> None:
        act = self.window.act_watch
        act.blockSignals(True)
        act.setChecked(on)
        act.blockSignals(False)
        self.update_watch_label(on)

    def update_watch_label(self, on: bool) -> None:
        self.window.watch_label.setText("● Watching" if on else "")
        self.window.watch_label.setToolTip("Changed files are re-indexed automatically" if on else "")

    def watch_event(self, event: Any) -> None:
        self.backend.refresh()
        changed = list(event) if isinstance(event, (list, tuple)) else []
        if len(changed) == 1:
            what = Path(str(changed[0])).name
        elif changed:
            what = f"{len(changed)} files"
        else:
            what = "changed files"
        self.say(f"Index updated: {what}", 6000)
