"""Drive the real window through its main states and save a PNG of each.

Run by ``scripts/screenshots.sh`` under Xvfb (any Qt platform works, ``offscreen`` too).
Uses a fresh engine home and settings file in a temporary folder, the shipped model and
the built-in sample corpus, so the pictures show exactly what a new user sees:

    01-first-run.png        no sources yet: the sample corpus is offered
    02-indexing.png         the samples being indexed (progress, rate, ETA, pause/stop)
    03-ready.png            indexed: example questions to click
    04-results-preview.png  a question, answers with the sentence in bold, the preview
    05-email-result.png     an e-mail answer (sender, recipients, subject, date), filters open
    06-sources.png          the Sources dialog with counts, the file that failed and the one
                            skipped (a format that is not read: found by its name only)
    07-query-syntax.png     a field, a phrase and an exclusion in the search box
    08-no-answer.png        nothing answers: said above the closest matches
    09-narrow.png           680 px wide (half of a 1366-px screen) with filters and preview
    10-email-filters.png    the sender filter by part of a name, a date range typed as months
    11-mail-store-kind.png  File > Add mail store: Maildir / folder of .eml, or mbox file
    12-live-results.png     a watched deletion: the results follow, the preview says it is gone
    17-selfcheck-menu.png   Index ▸ Measure now done: the menu shows search on your files
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOC_QUESTION = "Who introduced plague to Europe?"
MAIL_QUESTION = "When will Enron North America employees begin using XMS?"
NARROW_QUESTION = "What did Tesla do in December 1878?"  # its document outlives the live-results step


def spin(ms: int) -> None:
    """Run the Qt event loop for ``ms`` milliseconds."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


@dataclass
class Shots:
    """What every step shares: the options, the work folder, its copy of the samples, the
    application (held, so it lives as long as the steps), the backend and its window, and the
    answers that came since the last question."""

    args: argparse.Namespace
    work: Path
    samples: Path
    app: Any
    backend: Any
    window: Any
    got: list = field(default_factory=list)

    def wait_for(self, cond: Callable[[], bool], what: str) -> None:
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() - t0 > self.args.timeout:
                raise TimeoutError(f"timed out waiting for {what}")
            spin(30)

    def shot(self, widget: Any, name: str) -> None:
        spin(150)  # let layouts and repaints settle
        path = self.args.out / name
        if not widget.grab().save(str(path)):
            raise OSError(f"could not write {path}")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")

    def ask(self, question: str, ready: Callable[[], bool], what: str, settle_ms: int = 0) -> None:
        """Type ``question``, run it and wait until answers came and ``ready()`` holds."""
        self.got.clear()
        self.window.search.setText(question)
        self.window.run_search()
        self.wait_for(lambda: bool(self.got) and ready(), what)
        if settle_ms:
            spin(settle_ms)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--timeout", type=float, default=180.0)
    return ap.parse_args(argv)


def copy_samples(work: Path) -> Path:
    """A copy of the samples (a corrupt file and a skipped one join it after the first-run
    shot), and a fresh engine home, both under ``work``."""
    samples = work / "samples"
    shutil.copytree(ROOT / "samples", samples)
    os.environ["SPARCDESK_SAMPLES"] = str(samples)
    os.environ["SPARCDESK_HOME"] = str(work / "home")
    return samples


def open_window(args: argparse.Namespace, work: Path, samples: Path) -> Shots:
    """The application, a backend on the fresh home and its shown main window, started."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.backend import Backend
    from app.main import APP, ORG, make_engine_factory
    from app.qtcompat import install_none_guard
    from app.window import MainWindow

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    install_none_guard()
    print(f"Qt platform: {app.platformName()}; home: {work / 'home'}")

    settings = QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("index/watch", True)
    settings.setValue("model/auto_adapt", False)  # screenshots of the indexed samples, not of an adaptation
    backend = Backend(make_engine_factory())
    window = MainWindow(backend, settings)
    window.resize(args.width, args.height)
    window.show()
    backend.start()
    return Shots(args, work, samples, app, backend, window)


def shot_first_run(s: Shots) -> None:
    """01: no sources yet; 15: a question before anything is indexed."""
    window = s.window
    s.wait_for(lambda: s.backend.is_ready and window._sources_known, "the engine")
    s.shot(window, "01-first-run.png")
    # a question before anything is indexed: the welcome page stays, saying so (issue 36, item 2)
    window.search.setText("Who won Super Bowl 50?")
    window.run_search()
    s.wait_for(lambda: window.statusBar().currentMessage().startswith("Nothing is indexed"), "the nothing-indexed line")
    s.shot(window, "15-nothing-indexed.png")
    window.search.clear()


def add_failing_files(samples: Path) -> None:
    """One corrupt file, so the Sources dialog has a failure to show, and one in a format that
    is not read (Word 97-2003), listed as skipped and found by its name; added after the
    first-run shot, whose welcome page counts the samples as shipped."""
    (samples / "documents" / "draft-notes.pdf").write_bytes(b"%PDF-1.4\nunfinished download\n")
    (samples / "documents" / "roadmap-2001.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))


def shot_indexing(s: Shots) -> None:
    """02: the samples being indexed, grabbed while the run is past its first files and well
    before the end; 03: the ready page."""
    from PySide6.QtCore import QTimer

    window, backend = s.window, s.backend
    captured: list[bool] = []

    def grab_indexing() -> None:
        window.grab().save(str(s.args.out / "02-indexing.png"))
        print("wrote 02-indexing.png")

    def on_progress(p) -> None:
        if (
            not captured
            and p.files_total
            and 2 <= p.files_done <= p.files_total - 6
            and p.phase == "indexing"
        ):
            captured.append(True)
            QTimer.singleShot(120, grab_indexing)  # after the status bar has laid out the new text

    backend.progress.connect(on_progress)
    window.welcome.samples_btn.click()
    finished: list = []
    backend.index_finished.connect(lambda final, err: finished.append((final, err)))
    s.wait_for(lambda: bool(finished), "the samples to be indexed")
    backend.progress.disconnect(on_progress)
    if not captured:
        print("warning: indexing ended before a mid-run progress report; no 02-indexing.png")
    s.wait_for(lambda: window.stack.currentWidget() is window.message, "the ready page")
    s.shot(window, "03-ready.png")


def shot_results(s: Shots) -> None:
    """04: a question, its answers and the preview; 05: an e-mail answer, filters open."""
    window = s.window
    s.ask(DOC_QUESTION, lambda: bool(window.preview.hits), "answers and the preview")
    s.shot(window, "04-results-preview.png")

    window.act_filters.setChecked(True)
    window.filters.set_kinds(["email"])
    # the filter change re-runs the question once more: settle
    s.ask(
        MAIL_QUESTION,
        lambda: bool(window.preview.hits) and window.preview.answer.kind == "email",
        "an e-mail answer",
        400,
    )
    s.shot(window, "05-email-result.png")


def shot_query_notices(s: Shots) -> None:
    """07: the query syntax; 08: no answer; 13: a dropped phrase; 16: a quoted reply."""
    window = s.window
    # The query syntax (engine/search/query.py): a field, an exclusion and ranking words.
    window.filters.set_kinds(None)
    window.act_filters.setChecked(False)
    s.ask(
        'type:email from:skilling "energy crisis" California -Organizational',
        lambda: bool(window.preview.hits),
        "answers to the query syntax",
        400,
    )
    s.shot(window, "07-query-syntax.png")

    # A question nothing indexed answers: said above the closest matches.
    s.ask("What is the capital of Australia?", window.no_answer.isVisible, "the no-answer banner", 300)
    s.shot(window, "08-no-answer.png")

    # A pasted question whose quoted phrase no document holds: dropped, and said so.
    s.ask(
        'What did the "Great Plague of Europe" do to the population?',
        window.no_answer.isVisible,
        "the dropped-phrase notice",
        300,
    )
    s.shot(window, "13-phrase-dropped.png")

    # A reply previewed whole, the message it quotes in grey below its own words (issue 36,
    # item 1: "see below for web site for directions" had nothing below).
    s.ask(
        "Where is the Trading Track dinner tomorrow night?",
        lambda: bool(window.preview.hits) and window.preview.quoted,
        "a reply previewed with its quote",
        400,
    )
    s.shot(window, "16-quoted-reply.png")


def shot_email_filters(s: Shots) -> None:
    """10: the e-mail filters: a sender by part of a name, a custom date range typed as months."""
    window = s.window
    window.act_filters.setChecked(True)
    s.ask("California energy crisis", lambda: True, "answers for the e-mail filters")
    s.wait_for(lambda: window.filters.sender_model.rowCount() > 0, "the senders of the catalog")
    s.got.clear()
    window.filters.sender.setText("skil")
    window.filters.date_from.setText("2000-06")
    window.filters.date_to.setText("2001-06")
    window.filters.date_from.editingFinished.emit()
    window.filters.date_to.editingFinished.emit()
    s.wait_for(lambda: bool(s.got) and bool(window.preview.hits), "answers within the e-mail filters")
    spin(400)
    s.shot(window, "10-email-filters.png")
    window.filters.reset()
    window.act_filters.setChecked(False)


def shot_mail_store_kind(s: Shots) -> None:
    """11: File > Add mail store: which kind of store (the box is grabbed, then cancelled)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    def grab_kind_box() -> None:
        box = QApplication.activeModalWidget()
        if box is None or box.objectName() != "mailStoreKind":
            QTimer.singleShot(30, grab_kind_box)
            return
        s.shot(box, "11-mail-store-kind.png")
        box.reject()

    QTimer.singleShot(0, grab_kind_box)
    s.window.act_add_mail.trigger()


def shot_live_results(s: Shots) -> None:
    """12: the selected document is deleted while watched; the list follows and the preview
    says it is gone, without Enter."""
    window = s.window
    s.got.clear()
    window.search.setText(DOC_QUESTION)
    window.run_search()
    s.wait_for(lambda: bool(s.got) and bool(window.preview.hits), "answers to delete one of")
    gone = window.current_answer()
    refreshed: list = []
    window.results_refreshed.connect(refreshed.append)
    Path(gone.path).unlink()
    s.wait_for(lambda: bool(refreshed), "the results to follow the deletion")
    spin(300)
    s.shot(window, "12-live-results.png")


def shot_narrow(s: Shots) -> None:
    """09: half of a 1366-px screen, filters and preview shown (the window's minimum fits it)."""
    window = s.window
    s.got.clear()
    window.act_filters.setChecked(True)
    window.resize(680, s.args.height)
    window.search.setText(NARROW_QUESTION)
    window.run_search()
    s.wait_for(lambda: bool(s.got) and bool(window.preview.hits) and window.width() == 680, "the narrow window")
    spin(400)
    s.shot(window, "09-narrow.png")
    window.act_filters.setChecked(False)
    window.resize(s.args.width, s.args.height)


def shot_sources(s: Shots) -> None:
    """06: the Sources dialog with counts, the file that failed and the one skipped."""
    s.window.show_sources()
    dialog = s.window._sources_dialog
    s.wait_for(lambda: dialog.table.rowCount() > 0 and dialog.errors_table.rowCount() > 1, "the sources dialog")
    s.shot(dialog, "06-sources.png")
    dialog.close()


def shot_new_model(s: Shots) -> None:
    """14: an index built by the previous default model (0.3.0), opened by this version: the
    window rebuilds it for 0.4.0 and says once why (issue 34); shot while the rebuild runs."""
    from PySide6.QtCore import QSettings

    from app.backend import Backend
    from app.main import make_engine_factory
    from app.window import MainWindow
    from engine.api.facade import Engine

    work, args = s.work, s.args
    old_home, old_docs = work / "home-0.3.0", work / "docs-0.3.0"
    old_docs.mkdir()
    for name in ("kenya.txt", "super-bowl-50.txt", "steam-engine.md", "warsaw.html"):
        shutil.copy(s.samples / "documents" / name, old_docs / name)
    with Engine(home=old_home, bundle_dir=ROOT / "assets" / "sparc-tiny-0.3.0") as old:
        old.add_source(old_docs)
        old.index()
    upgraded_settings = QSettings(str(work / "settings-upgrade.ini"), QSettings.Format.IniFormat)
    upgraded_settings.setValue("model/auto_adapt", False)
    backend2 = Backend(make_engine_factory(home=old_home))
    window2 = MainWindow(backend2, upgraded_settings)
    window2.resize(args.width, args.height)
    window2.show()
    backend2.start()
    s.wait_for(lambda: backend2.is_ready and window2.banner.isVisible(), "the new-model notice")
    window2.search.setText("Who won Super Bowl 50?")
    window2.run_search()
    s.wait_for(lambda: bool(window2.model.rowCount()), "answers from the old index while it is rebuilt")
    s.shot(window2, "14-new-model.png")
    s.wait_for(lambda: not backend2.indexing, "the rebuild")
    window2.close()


def shot_selfcheck(s: Shots) -> None:
    """Index ▸ Measure now, then the Index menu open on the figure it measured (issue 38)."""
    window = s.window
    done: list = []
    s.backend.selfcheck_ready.connect(done.append)
    s.wait_for(lambda: window.act_measure.isEnabled(), "Measure now enabled")
    window.act_measure.trigger()
    s.wait_for(lambda: bool(done) and "hit@1" in window.act_selfcheck.text(), "the self-check's figure")
    menu = window.index_menu
    bar = window.menuBar()
    menu.popup(bar.mapToGlobal(bar.actionGeometry(menu.menuAction()).bottomLeft()))
    spin(300)
    s.shot(menu, "17-selfcheck-menu.png")
    menu.hide()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sparcdesk-shots-"))
    samples = copy_samples(work)
    s = open_window(args, work, samples)
    shot_first_run(s)
    add_failing_files(samples)
    shot_indexing(s)
    s.backend.answers_ready.connect(s.got.append)
    s.window.search.setFocus()
    shot_results(s)
    shot_selfcheck(s)
    shot_query_notices(s)
    shot_email_filters(s)
    shot_mail_store_kind(s)
    shot_live_results(s)
    shot_narrow(s)
    shot_sources(s)
    s.window.close()
    shot_new_model(s)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
