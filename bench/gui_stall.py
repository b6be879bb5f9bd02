"""How long does the window's event loop stall while a folder is being indexed?

Writes SQuAD v1.1 dev paragraphs (``../shared/data/squad/dev-v1.1.json.gz``) as text files
(five paragraphs a file) until about ``--sentences`` sentences, opens the real main window
on a fresh engine home, adds the folder as a source through the window (exactly what the
Add folder action does) and, while it is indexed, ticks a QTimer every 5 ms on the GUI
thread and records the gaps between ticks. A user-like load runs at the same time: every
``--ask-every`` seconds a question is asked through the search field, its results are
painted and the first one is previewed.

The longest gap minus the 5 ms period is the worst stall a user could feel (typing,
scrolling, repainting). Target: <= 100 ms. Prints a summary and writes JSON to
``bench/results/gui_stall.json``. Skips (exit 0, ``"skipped"`` in the JSON) when the data
is absent.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui_stall.py [--sentences 10000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

DATA = Path(os.environ.get("SPARCDESK_DATA", ROOT.parent / "shared" / "data"))
SQUAD_DEV = DATA / "squad" / "dev-v1.1.json.gz"
TARGET_MS = 100.0
TICK_MS = 5

QUESTIONS = [
    "Which NFL team represented the AFC at Super Bowl 50?",
    "What was the Norman religion?",
    "Who introduced plague to Europe?",
    "What is the term for the arrangement of two unpaired electrons in dioxygen?",
    "Where does the Rhine river flow into the North Sea?",
    "What did Tesla do in December 1878?",
]


def write_corpus(folder: Path, target_sentences: int, per_file: int = 5) -> tuple[int, int, int]:
    """SQuAD dev paragraphs as .txt files; returns (files, paragraphs, sentences)."""
    from engine.ingest.segment import split_sentences

    with gzip.open(SQUAD_DEV, "rt", encoding="utf-8") as f:
        data = json.load(f)
    paragraphs = [p["context"] for article in data["data"] for p in article["paragraphs"]]
    folder.mkdir(parents=True, exist_ok=True)
    sentences = files = used = 0
    batch: list[str] = []
    for para in paragraphs:
        batch.append(para.strip())
        used += 1
        sentences += len(split_sentences(para))
        if len(batch) == per_file:
            files += 1
            (folder / f"squad-dev-{files:04d}.txt").write_text("\n\n".join(batch) + "\n", encoding="utf-8")
            batch = []
        if sentences >= target_sentences:
            break
    if batch:
        files += 1
        (folder / f"squad-dev-{files:04d}.txt").write_text("\n\n".join(batch) + "\n", encoding="utf-8")
    return files, used, sentences


class GapMeter:
    """A 5 ms QTimer on the GUI thread; records the time between consecutive ticks."""

    def __init__(self) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.gaps: list[float] = []
        self.ends: list[float] = []  # perf_counter time at the end of each gap
        self.worst_at: float = 0.0
        self._last: float | None = None
        self._t0 = time.perf_counter()
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            gap = now - self._last
            if not self.gaps or gap > max(self.gaps):
                self.worst_at = now - self._t0
            self.gaps.append(gap)
            self.ends.append(now)
        self._last = now

    def start(self) -> None:
        self._last = None
        self._t0 = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def summary(self) -> dict:
        ms = sorted(g * 1000 for g in self.gaps)
        if not ms:
            return {"ticks": 0}

        def pct(q: float) -> float:
            return round(ms[min(len(ms) - 1, int(q * len(ms)))], 2)

        return {
            "ticks": len(ms),
            "max_gap_ms": round(ms[-1], 2),
            "max_stall_ms": round(ms[-1] - TICK_MS, 2),
            "worst_at_s": round(self.worst_at, 2),
            "median_gap_ms": round(statistics.median(ms), 2),
            "p99_gap_ms": pct(0.99),
            "p999_gap_ms": pct(0.999),
            "gaps_over_50ms": sum(1 for g in ms if g > 50),
            "gaps_over_100ms": sum(1 for g in ms if g > 100),
        }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=10_000)
    ap.add_argument("--ask-every", type=float, default=2.0, help="seconds between questions (0: none)")
    ap.add_argument("--threads", type=int, default=None, help="encoder threads (engine default when unset)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gui_stall.json")
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for the corpus and the engine home (temp)"
    )
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument(
        "--in-process", action="store_true", help="index on a thread of the GUI process (the old way)"
    )
    return ap.parse_args(argv)


def spin(ms: int) -> None:
    """Run the Qt event loop for ``ms`` milliseconds."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def open_window(work: Path, home: Path, args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The application, a backend on a fresh engine home and the shown main window (folder
    watching and automatic adaptation off: indexing alone is measured)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.backend import Backend
    from app.main import make_engine_factory
    from app.window import MainWindow

    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("index/watch", False)
    settings.setValue("model/auto_adapt", False)  # measure indexing alone
    backend = Backend(make_engine_factory(home=home, threads=args.threads), index_in_process=args.in_process)
    window = MainWindow(backend, settings)
    window.resize(1280, 800)
    window.show()
    return app, backend, window


def wait_ready(backend: Any) -> bool:
    """Start the backend and wait (at most 120 s) until its engine is open."""
    opened = time.perf_counter()
    backend.start()
    while not backend.is_ready:
        spin(50)
        if time.perf_counter() - opened > 120:
            print("the engine did not open within 120 s")
            return False
    print(f"engine open in {time.perf_counter() - opened:.1f} s")
    return True


def measure_idle() -> GapMeter:
    """The event loop's gaps over 2 s with nothing to do."""
    idle = GapMeter()
    idle.start()
    spin(2000)
    idle.stop()
    print(f"idle loop: max gap {idle.summary()['max_gap_ms']} ms")
    return idle


def index_under_load(window: Any, backend: Any, corpus: Path, args: argparse.Namespace) -> dict:
    """Add ``corpus`` through the window and, until it is indexed (or ``--timeout``), meter
    the event loop while a question is asked every ``--ask-every`` seconds; the meter, the
    end of indexing, the answer times, the (asked, answered) times and the elapsed seconds."""
    from PySide6.QtCore import QTimer

    meter = GapMeter()
    finished: dict = {}
    answers: list[float] = []
    backend.index_finished.connect(lambda final, err: finished.update(final=final, error=err))
    backend.answers_ready.connect(lambda r: answers.append(r.seconds))
    asker = QTimer()
    q = iter(QUESTIONS * 1000)
    searches: list[list[float]] = []  # [asked, answered] perf_counter times

    def ask_next() -> None:
        searches.append([time.perf_counter(), float("inf")])
        window.ask(next(q))

    def answered(_r) -> None:
        if searches:
            searches[-1][1] = time.perf_counter()

    asker.timeout.connect(ask_next)
    backend.answers_ready.connect(answered)

    meter.start()
    t0 = time.perf_counter()
    window.add_source(str(corpus))
    if args.ask_every > 0:
        asker.start(int(args.ask_every * 1000))
    while not finished and time.perf_counter() - t0 < args.timeout:
        spin(100)
    asker.stop()
    elapsed = time.perf_counter() - t0
    spin(300)  # let the last results paint
    meter.stop()
    return {"meter": meter, "finished": finished, "answers": answers, "searches": searches, "elapsed": elapsed}


def attribute_gaps(meter: GapMeter, searches: list[list[float]]) -> list[int]:
    """Gaps over 50 ms while a question was being answered (or its results drawn, +0.3 s),
    and the others."""
    during = [0, 0]
    for end, gap in zip(meter.ends, meter.gaps, strict=True):
        if gap > 0.05:
            start = end - gap
            busy = any(a <= end and start <= b + 0.3 for a, b in searches)
            during[0 if busy else 1] += 1
    return during


def make_result(run: dict, idle: GapMeter, corpus_counts: tuple[int, int, int], args: argparse.Namespace, app: Any) -> dict:
    """The JSON result of one run (``run`` from :func:`index_under_load`)."""
    finished, answers, elapsed = run["finished"], run["answers"], run["elapsed"]
    files, paragraphs, sentences = corpus_counts
    final = finished.get("final")
    stall = run["meter"].summary()
    stall["gaps_over_50ms_during_a_search"], stall["gaps_over_50ms_otherwise"] = attribute_gaps(
        run["meter"], run["searches"]
    )
    return {
        "benchmark": "gui_stall",
        "target_max_stall_ms": TARGET_MS,
        "passed": bool(final) and stall.get("max_stall_ms", 1e9) <= TARGET_MS,
        "indexing": {
            "files": getattr(final, "files_done", None),
            "files_total": getattr(final, "files_total", None),
            "sentences": getattr(final, "sentences_done", None),
            "seconds": round(elapsed, 1),
            "error": finished.get("error", "timeout" if not finished else ""),
        },
        "indexing_in": "gui process (thread)" if args.in_process else "child process (nice 10)",
        "corpus": {"files": files, "paragraphs": paragraphs, "sentences_estimated": sentences},
        "event_loop_while_indexing": stall,
        "event_loop_idle": idle.summary(),
        "load_during_run": {
            "questions_answered": len(answers),
            "ask_every_s": args.ask_every,
            "median_answer_ms": round(statistics.median(answers) * 1000, 1) if answers else None,
        },
        "machine": {  # the harness adds the platform, Python, CPUs ...
            "loadavg_1m_at_end": round(harness.load()[0], 2) if harness.load() else None,
            "qt_platform": app.platformName(),
        },
    }


def print_summary(result: dict, elapsed: float, out: Path) -> None:
    stall = result["event_loop_while_indexing"]
    print(
        f"indexed {result['indexing']['files']} files / {result['indexing']['sentences']} sentences in {elapsed:.1f} s; "
        f"{result['load_during_run']['questions_answered']} questions answered meanwhile"
    )
    print(
        f"event loop while indexing: max gap {stall.get('max_gap_ms')} ms (stall {stall.get('max_stall_ms')} ms, "
        f"at {stall.get('worst_at_s')} s), p99 {stall.get('p99_gap_ms')} ms, "
        f">50 ms: {stall.get('gaps_over_50ms')} ({stall.get('gaps_over_50ms_during_a_search')} while a question "
        f"was answered), >100 ms: {stall.get('gaps_over_100ms')}"
    )
    print(f"{'PASS' if result['passed'] else 'FAIL'} (target <= {TARGET_MS:.0f} ms) -> {out}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    if not SQUAD_DEV.is_file():
        msg = f"SKIP: {SQUAD_DEV} is absent (the shared data folder is not mounted)"
        print(msg)
        harness.write_json(args.out, {"skipped": msg})
        return 0
    recorder = harness.Run("gui_stall", argv)

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = args.work or Path(tempfile.mkdtemp(prefix="sparcdesk-stall-"))
    corpus, home = work / "corpus", work / "home"
    t = time.perf_counter()
    files, paragraphs, sentences = write_corpus(corpus, args.sentences)
    print(
        f"corpus: {files} files, {paragraphs} paragraphs, ~{sentences} sentences ({time.perf_counter() - t:.1f} s)"
    )

    app, backend, window = open_window(work, home, args)
    if not wait_ready(backend):
        return 2
    idle = measure_idle()
    run = index_under_load(window, backend, corpus, args)
    result = make_result(run, idle, (files, paragraphs, sentences), args, app)
    window.close()
    recorder.save("gui_stall", result, path=args.out)
    print_summary(result, run["elapsed"], args.out)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
