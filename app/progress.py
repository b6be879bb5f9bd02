"""The indexing indicator in the status bar: files and sentences done, rate, ETA, pause, stop."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QStyle, QToolButton, QWidget

from app.format import format_count, format_duration
from app.statusbar import ElidedLabel
from engine.common.progress import AdaptProgress


def progress_percent(p) -> int:
    """0-100 from files done / total (adaptation: steps done / steps); 100 when the run
    reports completion."""
    if isinstance(p, AdaptProgress):
        return max(0, min(100, round(100 * p.step / max(p.steps, 1))))
    total = getattr(p, "files_total", 0) or 0
    done = getattr(p, "files_done", 0) or 0
    if total <= 0:
        return 100 if getattr(p, "phase", "") in ("done", "finished", "complete") else 0
    return max(0, min(100, round(100 * done / total)))


#: What an indexing run is doing when it is part of a model job (``IndexingIndicator.context``):
#: the re-encoding after an adaptation read "Indexing · 0 of 231 files" (issue 36, item 10).
CONTEXTS = {
    "adapt": "Re-encoding your documents with the adapted model",
    "restore": "Going back to the previous model",
}


def progress_text(p, paused: bool = False, context: str | None = None) -> str:
    """One line for the indicator. ``paused`` (the user paused; the run may not have
    stopped yet): "Paused" or "Pausing…" with what is done, no rate and no time left.
    ``context``: a key of ``CONTEXTS`` naming the model job an indexing run belongs to."""
    if isinstance(p, AdaptProgress):
        if p.phase == "vocabulary":
            return "Adapting the model · learning new words from your documents"
        bits = [f"Adapting the model · step {format_count(p.step)} of {format_count(p.steps)}"]
        if paused:  # training waits between steps until resumed
            return " · ".join([*bits, "paused"])
        if p.eta_s is not None and p.step < p.steps:
            bits.append(f"about {format_duration(p.eta_s)} left")
        bits.append("then your documents are re-encoded")
        return " · ".join(bits)
    phase = (getattr(p, "phase", "") or "indexing").replace("_", " ")
    halted = paused or phase == "paused"
    if halted:
        phase = "paused" if phase == "paused" else "pausing…"
    bits = [phase[:1].upper() + phase[1:]]
    if context in CONTEXTS and not halted and phase in ("scanning", "indexing", "committing"):
        bits = [CONTEXTS[context]]
    if p.files_total:
        bits.append(f"{format_count(p.files_done)} of {format_count(p.files_total)} files")
    elif p.files_done:
        bits.append(f"{format_count(p.files_done)} files")
    bits.append(f"{format_count(p.sentences_done)} sentences")
    if halted or phase in ("done", "cancelled"):  # no rate or time left for a run at rest
        return " · ".join(bits)
    if p.rate:
        bits.append(f"{p.rate:,.0f} sentences/s")
    if p.eta_s is not None and p.files_done < p.files_total:
        bits.append(f"about {format_duration(p.eta_s)} left")
    return " · ".join(bits)


class IndexingIndicator(QWidget):
    pause_toggled = Signal(bool)
    stop_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("indexing")
        #: the model job ("adapt", "restore") the running indexing belongs to, else None
        self.context: str | None = None
        self.label = ElidedLabel(min_chars=12)  # shrinks before the status message does
        self.label.setObjectName("indexingLabel")
        self.bar = QProgressBar()
        self.bar.setObjectName("indexingBar")
        self.bar.setRange(0, 100)
        self.bar.setFixedWidth(110)
        self.bar.setTextVisible(True)
        self.pause_btn = QToolButton()
        self.pause_btn.setObjectName("pauseButton")
        self.pause_btn.setCheckable(True)
        self.pause_btn.setAutoRaise(True)
        self.stop_btn = QToolButton()
        self.stop_btn.setObjectName("stopButton")
        self.stop_btn.setAutoRaise(True)
        self.stop_btn.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaStop))
        self.stop_btn.setToolTip("Stop indexing (what is done so far stays searchable)")
        self.pause_btn.toggled.connect(self._pause_toggled)
        self.stop_btn.clicked.connect(self.stop_clicked)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        layout.addWidget(self.pause_btn)
        layout.addWidget(self.stop_btn)
        self.last = None
        self._pause_toggled(False)

    def _pause_toggled(self, paused: bool) -> None:
        icon = QStyle.StandardPixmap.SP_MediaPlay if paused else QStyle.StandardPixmap.SP_MediaPause
        self.pause_btn.setIcon(self.style().standardIcon(icon))
        self.pause_btn.setToolTip("Resume indexing" if paused else "Pause indexing")
        self.pause_btn.setText("Resume" if paused else "Pause")
        if self.last is not None:
            self.set_progress(self.last)
        self.pause_toggled.emit(paused)

    def set_paused(self, paused: bool) -> None:
        self.pause_btn.setChecked(paused)

    def set_progress(self, p) -> None:
        self.last = p
        self.label.setText(progress_text(p, paused=self.pause_btn.isChecked(), context=self.context))
        self.update_range()
        self.bar.setValue(progress_percent(p))
        self.bar.setFormat("%p%")

    def start(self) -> None:
        self.last = None
        self.label.setText("Starting…")
        self.bar.setValue(0)
        self.bar.setRange(0, 0)  # busy until the first progress report
        self.show()

    def update_range(self) -> None:
        if self.bar.maximum() == 0:
            self.bar.setRange(0, 100)

    def finish(self) -> None:
        self.set_paused(False)
        self.bar.setRange(0, 100)
        self.hide()
