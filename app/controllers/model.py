"""The model as the window shows it: Adapt to my documents (asked, or automatic; the self-check
decides whether the adapted model goes live), Restore previous model, how well search works on
the user's files (Index ▸ Measure now), the notice that the index is rebuilt for a new model,
and how a job whose end needs the counts after it ended (an adaptation, a restore, an exclusion
change, a removal)."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QMessageBox

from app.controllers.base import Controller
from app.format import format_count, rebuild_notice
from app.jobs import JobOutcome
from app.views.main_window import ADAPT_TIP
from engine.cli.selfcheck import measured_line, when

#: Masked-LM steps of "Adapt to my documents" (SPARC.md §3 default); tests lower it.
ADAPT_STEPS = 500
#: With Index ▸ Adapt automatically on, the window adapts once this many sentences are indexed.
AUTO_ADAPT_MIN_SENTENCES = 5000
#: Off by default: with the shipped model, adaptation lowers the out-of-domain mean, and the
#: measured best configuration is the model as shipped with IDF and the BM25 hybrid
#: (docs/ood.md, "Every combination"; those two are engine.search.defaults).
AUTO_ADAPT_DEFAULT = False
#: What adapting measured, with the shipped model, on collections with known answers
#: (``sparcdesk-train ood``, docs/ood.md "Every combination", sparc-tiny 0.3.0 through the
#: app's index: as shipped -> +emb; tests/test_app_polish.py checks them against that table).
#: Shown before adapting, beside what decides on the user's own files: the self-check.
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
        return (
            f"Its gain was not measured for the model in use ({model} {version}) on collections"
            " with known answers: on your own files the self-check measures it."
        )
    sets = ", ".join(f"{k} {a:.2f} → {b:.2f}" for k, (a, b) in ADAPT_MEASURED_MRR.items())
    before, after = ADAPT_MEASURED_DEFAULT_SEARCH
    return (
        f"Measured with this model ({model} {version}, docs/ood.md), adapting to a collection's own "
        f"text changed the neural ranking's MRR: {sets}. With the default search (rare words "
        f"weighted, keywords combined) the mean over five collections went from {before:.2f} to "
        f"{after:.2f}. Those are other collections: on your own files the self-check measures it."
    )


def selfcheck_text(latest: dict | None) -> str:
    """'Search on your files: hit@1 88% (measured 2026-11-28 13:00 on 179 pseudo-questions)'."""
    return f"Search on your files: {measured_line(latest) if latest else 'not measured yet'}"


def selfcheck_details(latest: dict | None) -> str:
    """The tooltip of that line: the interval, MRR@10, the figures per kind, the model."""
    if not latest:
        return "Index ▸ Measure now asks questions made from your files and counts how often the right file comes first"
    lo, hi = latest.get("hit1_ci") or (0, 0)
    kinds = "; ".join(
        f"{k}: {int(f['questions'])} questions, hit@1 {f['hit1']:.0f}%" for k, f in (latest.get("by_kind") or {}).items()
    )
    return (
        f"hit@1 {latest.get('hit1', 0):.0f}% (95% interval {lo:.0f}–{hi:.0f}), MRR@10 {latest.get('mrr10', 0):.0f},"
        f" with {latest.get('model', 'the model in use')} on {when(str(latest.get('measured', '')))}. {kinds}"
    )


def switch_text(switch: dict) -> str:
    """An adaptation's self-check in plain words: both figures and why it switched or not."""
    before, after = switch.get("before") or {}, switch.get("after") or {}
    figures = (
        f"on {int(after.get('questions', 0))} questions from your files, the right file came first for"
        f" {float(before.get('hit1', 0)):.0f}% → {float(after.get('hit1', 0)):.0f}% of them"
    )
    if not after.get("questions"):  # a few one-line notes: nothing to ask
        figures = "your files hold too little text with labels to measure the search on"
    # (the decision is taken on MRR@10: where in the list the right file comes, not only first)
    if switch.get("always"):
        return f"Switched as asked, whatever the self-check found: {figures}."
    if switch.get("switch"):
        return f"The self-check found it better: {figures}, and its place in the results improved by more than the measuring error."
    return (
        f"The self-check did not find it better: {figures}, and its place in the results did not improve"
        f" by more than the measuring error; the adapted model is kept in {switch.get('bundle')}."
    )


def adaptation_outcome(outcome: JobOutcome, status: dict, switch: dict | None = None) -> str:
    """How an adaptation ended, from the job, the engine's status right after it and the
    self-check's decision (``switch``, None when none was made: the first index, or an
    adaptation told to switch whatever it found): which model answers now, why, and in plain
    words what adaptation learned (its masked-word loss as a perplexity: among how many words a
    hidden word was as hard to guess)."""
    live = (status.get("generation") or {}).get("model") or "the model"
    adapted = "+adapted" in live
    which = f"the adapted model ({live})" if adapted else f"the shipped model ({live})"
    if outcome.outcome == "done" and switch and not switch.get("switch"):
        return f"Adaptation done, and {which} stays in use. {switch_text(switch)}"
    if outcome.outcome == "done" and adapted:
        info = (status.get("adapted_model") or {}).get("adaptation") or {}
        first, last, n = info.get("loss_first"), info.get("loss_last"), info.get("sentences")
        gain = ""
        if first is not None and last is not None and n:
            before, after = math.exp(min(float(first), 50.0)), math.exp(min(float(last), 50.0))
            gain = (
                f" It learned the words of your {format_count(int(n))} sentences: a hidden word of"
                f" your text was as hard to guess as a pick among {before:,.0f} words before and"
                f" {after:,.0f} after."
            )
        measured = f" {switch_text(switch)}" if switch else " Index ▸ Measure now measures your searches with it."
        return f"Adapted model in use: {live}.{measured}{gain} Index ▸ Restore previous model goes back."
    if outcome.outcome == "done":
        return (
            f"Adaptation trained, but its index is not complete: {which} still answers. "
            "Index ▸ Update index completes it."
        )
    if outcome.outcome == "failed":
        return f"Adaptation failed ({outcome.error}); {which} is still in use."
    return f"Adaptation cancelled; {which} is still in use."


class ModelController(Controller):
    """Adapt, restore, the rebuild notice, and the reports of jobs that change the index."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.adapt_steps = ADAPT_STEPS
        #: switch to the adapted model whatever the self-check finds (tests; ``adapt --always``)
        self.adapt_always = False
        #: when the switch decision on record at an adaptation's start was measured: a newer one is its own
        self.switch_seen: str | None = None
        self.measuring = False  # Index ▸ Measure now is running
        self.auto_adapt_min_sentences = AUTO_ADAPT_MIN_SENTENCES
        self.model_state: dict = {}
        self.last_status: dict = {}  # Help > About, Help > Open log file
        self.indexed_sentences = 0
        self.model_job = False  # the index lane's run is an adaptation's or a restore's
        self.last_outcome: JobOutcome | None = None
        self.pending_report: JobOutcome | None = None  # said once the counts after it arrive
        tip = f"Adapt the model once {AUTO_ADAPT_MIN_SENTENCES:,} sentences are indexed"
        window.act_auto_adapt.setToolTip(tip)
        window.act_auto_adapt.setStatusTip(tip)

    # ================================================================== engine events

    def status_changed(self, status: dict) -> None:
        """Enable Adapt once something is indexed and Restore while a previous model is kept."""
        w = self.window
        self.last_status = status
        self.model_state = dict(status.get("adapted_model") or {})
        self.indexed_sentences = int(status.get("sentences") or 0)
        busy = self.backend.indexing
        w.act_adapt.setEnabled(bool(status.get("sentences")) and not busy)
        w.act_restore.setEnabled(bool(self.model_state.get("previous")) and not busy)
        self.show_selfcheck((status.get("selfcheck") or {}).get("latest"))
        name = self.model_state.get("name")
        if name:
            w.act_adapt.setStatusTip(f"{ADAPT_TIP} (model in use: {name})")
        self.report_outcome(status)

    def job_finished(self, outcome: JobOutcome) -> None:
        """Jobs whose end needs the counts after it are reported by ``report_outcome``."""
        self.last_outcome = outcome
        if outcome.kind == "remove" and outcome.outcome == "done":
            self.say(f"Removed {outcome.path}: its documents left the index", 10000)
        elif (outcome.kind == "adapt" and outcome.outcome != "dropped") or (
            outcome.kind in ("restore", "exclusions") and outcome.outcome == "done"
        ):
            self.pending_report = outcome

    def report_outcome(self, status: dict) -> None:
        """Say how a restore, an exclusion change or an adaptation ended, with the counts
        and the model of the status that follows it."""
        o, self.pending_report = self.pending_report, None
        if o is None:
            return
        banner = self.window.banner
        if o.kind == "adapt":
            switch = (status.get("selfcheck") or {}).get("switch")
            if not switch or switch.get("measured") == self.switch_seen:
                switch = None  # an earlier adaptation's decision: this one made none
            text = adaptation_outcome(o, status, switch)
            banner.show_notice(text, warning=o.outcome != "done", topic="adaptation")
            self.say(banner.text(), 15000)
        elif o.kind == "restore":
            banner.dismiss(topic="adaptation")  # "Adapted model in use" is no longer true
            live = (status.get("generation") or {}).get("model") or ""
            self.say(
                f"Previous model restored ({live}): {format_count(int(status.get('files_ok') or 0))} files, "
                f"{format_count(int(status.get('sentences') or 0))} sentences searchable",
                15000,
            )
        elif o.kind == "exclusions":
            sources = self.window.sources_controller
            src = next((s for s in sources.sources if s.path == o.path), None)
            if src is None:
                return
            before = sources.files_before.pop(o.path, None)
            left = f"; {format_count(before - src.files)} files left out" if before and before > src.files else ""
            self.say(
                f"Exclusions of {o.path} applied: {format_count(src.files)} files, "
                f"{format_count(src.sentences)} sentences indexed{left}",
                15000,
            )

    @Slot(object)
    def model_rebuild(self, rebuild: Any) -> None:
        """Say once (per new model) why the index is being rebuilt and how long it takes."""
        if self.settings.value("model/rebuild_explained", "", str) == rebuild.new:
            return
        self.settings.setValue("model/rebuild_explained", rebuild.new)
        title, text = rebuild_notice(rebuild.old, rebuild.new, rebuild.sentences)
        self.window.banner.show_notice(f"{title}. {text}")  # stays above the results until closed
        self.say(title, 15000)

    # ================================================================== adapt and restore

    def adapt_model(self) -> None:
        if not self.backend.is_ready:
            return
        files = sum(s.files for s in self.window.sources_controller.sources)
        again = " It replaces the current adaptation." if self.model_state.get("adapted") else ""
        model = self.last_status.get("model") or {}
        name = str(model.get("name", "")).removesuffix("+adapted")
        latest = (self.last_status.get("selfcheck") or {}).get("latest")
        now = f" {selfcheck_text(latest)}." if latest else ""
        answer = QMessageBox.question(
            self.window,
            "Adapt to my documents",
            f"sparcdesk will learn the vocabulary of your {format_count(files)} indexed files on this "
            "computer (nothing leaves it; a few minutes on a laptop), then re-encode them. Answers keep "
            "coming from the current index meanwhile. Then the self-check measures the gain on your own "
            "files (questions made from their subjects, headings and titles, asked of both models), and "
            "the adapted model is used only if it finds the right file more often, by more than the "
            f"measuring error; Index ▸ Restore previous model undoes it.{now}{again}\n\n"
            f"{adaptation_forecast(name, str(model.get('version', '')))}",
            QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Ok:
            self.start_adaptation()

    def start_adaptation(self) -> None:
        w = self.window
        w.act_adapt.setEnabled(False)
        self.model_job = True
        w.indicator.context = "adapt"
        w.banner.dismiss(topic="adaptation")  # the last adaptation's outcome is not this one's
        self.switch_seen = ((self.last_status.get("selfcheck") or {}).get("switch") or {}).get("measured")
        self.backend.adapt_model(steps=self.adapt_steps, always=self.adapt_always)

    def restore_model(self) -> None:
        if self.backend.is_ready:
            self.window.act_restore.setEnabled(False)
            self.model_job = True
            self.window.indicator.context = "restore"
            self.backend.restore_model()

    def maybe_adapt_automatically(self, final: Any) -> None:
        """After an indexing run: adapt if the user left it on, this home never adapted nor
        restored (nor had an adaptation the self-check kept out of use: it would be kept out
        again after every run), and enough text is indexed for adaptation to pay off."""
        if not self.window.act_auto_adapt.isChecked() or not self.model_state:
            return
        if self.model_state.get("adapted") or self.model_state.get("previous"):
            return
        if (self.last_status.get("selfcheck") or {}).get("switch"):
            return
        if max(self.indexed_sentences, final.sentences_done) < self.auto_adapt_min_sentences:
            return
        self.say(
            "Adapting the model to your documents (Index ▸ Stop to skip; Index ▸ Adapt automatically to turn off)",
            15000,
        )
        self.start_adaptation()

    # ================================================================== the self-check

    def show_selfcheck(self, latest: dict | None) -> None:
        """The latest self-check as the Index menu's line; Measure now once something is indexed."""
        w = self.window
        w.act_selfcheck.setText(selfcheck_text(latest))
        w.act_selfcheck.setToolTip(selfcheck_details(latest))
        w.act_measure.setEnabled(bool(self.indexed_sentences) and not self.measuring)

    def measure_search(self) -> None:
        """Index ▸ Measure now: the self-check on the query lane (a few seconds)."""
        if not self.backend.is_ready or self.measuring:
            return
        self.measuring = True
        self.window.act_measure.setEnabled(False)
        self.say("Measuring search on your files…")
        self.backend.measure_search()

    @Slot(object)
    def selfcheck_ready(self, latest: dict) -> None:
        self.measuring = False
        self.last_status.setdefault("selfcheck", {})["latest"] = latest
        self.show_selfcheck(latest)
        self.say(selfcheck_text(latest), 15000)

    @Slot(str)
    def selfcheck_failed(self, message: str) -> None:
        self.measuring = False
        self.show_selfcheck((self.last_status.get("selfcheck") or {}).get("latest"))
        self.say(f"Could not measure search on your files: {message}", 15000)
