"""The window's watch indexes in the indexing child process, not the GUI process (issue 14,
item 3): the window's process watches and shows what happened; the child writes the index
(it used to run every watch batch inside the GUI process, against the child-process design
that keeps the window responsive)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from test_app import WAIT_MS, open_window, type_question  # noqa: E402, F401

from engine.home import writelock  # noqa: E402


def test_watch_batches_are_indexed_in_the_child_process(qtbot, open_window, tmp_path, monkeypatch):  # noqa: F811
    folder = tmp_path / "journal"
    folder.mkdir()
    page = folder / "diary.txt"
    page.write_text("Monday. The weather in Brelmouth was grey and windy all day.\n", encoding="utf-8")
    window = open_window(tmp_path / "home", watch=True)
    with qtbot.waitSignal(window.backend.index_finished, timeout=WAIT_MS * 3):
        window.add_source(str(folder))
    qtbot.waitUntil(lambda: not window.backend.indexing, timeout=WAIT_MS * 3)

    # Every time this process takes the home's writer lock from now on.
    taken: list[str] = []
    acquire = writelock._acquire_file

    def spy(home, held, task, deadline):  # type: ignore[no-untyped-def]
        taken.append(task)
        return acquire(home, held, task, deadline)

    monkeypatch.setattr(writelock, "_acquire_file", spy)
    busy: list[bool] = []
    window.backend.indexing_changed.connect(busy.append)

    with (
        qtbot.waitSignal(window.backend.watch_event, timeout=WAIT_MS * 2) as blocker,
        page.open("a", encoding="utf-8") as f,
    ):
        f.write("\nTuesday. The lighthouse of Karvask is painted vermilion and white.\n")
    assert str(page) in blocker.args[0]
    assert taken == [], f"the GUI process wrote the index itself: {taken}"
    assert busy[:1] == [True]  # the status bar's indicator showed the batch running
    assert "Index updated: diary.txt" in window.statusBar().currentMessage()
    answers = type_question(qtbot, window, "What colour is the lighthouse of Karvask painted?").answers
    assert answers and "vermilion" in answers[0].best.sentence and answers[0].path == str(page)
