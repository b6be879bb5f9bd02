"""The window's text helpers: snippets, offsets into the preview, progress lines (no display needed)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

pytest.importorskip("PySide6")

from app.format import collapse, format_duration, locate, passage_html, qt_offset, short_people, snippet  # noqa: E402
from app.progress import progress_percent, progress_text  # noqa: E402


@dataclass
class H:
    passage: str
    start: int
    end: int
    highlights: list = field(default_factory=list)


@dataclass
class P:
    phase: str = "indexing"
    files_done: int = 0
    files_total: int = 0
    sentences_done: int = 0
    rate: float = 0.0
    eta_s: float | None = None
    current: str | None = None


def test_qt_offset_counts_utf16_units():
    text = "a😀b — c"
    assert qt_offset(text, 0) == 0
    assert qt_offset(text, 2) == 3  # the emoji is two UTF-16 units
    assert qt_offset(text, len(text)) == len(text.encode("utf-16-le")) // 2


def test_locate_prefers_the_hint_and_survives_line_breaks():
    text = "One. Two words here. Three. Two words here. End."
    second = text.rindex("Two")
    assert locate(text, "Two words here.", hint=second) == (second, second + len("Two words here."))
    assert locate(text, "Two words here.", hint=0)[0] == text.index("Two")
    pdf = "Intro.\nThe Norse religion\nand language changed. Done."
    start, end = locate(pdf, "The Norse religion and language changed.", hint=None)
    assert pdf[start:end] == "The Norse religion\nand language changed."
    assert locate(text, "", hint=0) is None


def test_snippet_cuts_long_context_at_spaces_and_bolds_the_sentence():
    before = " ".join(f"w{i}" for i in range(200))
    passage = before + " The answer is here. " + " ".join(f"z{i}" for i in range(200))
    s = passage.index("The answer")
    e = s + len("The answer is here.")
    b, sent, a = snippet(passage, s, e, context=40)
    assert b.startswith("…") and len(b) <= 42 and a.endswith("…") and len(a) <= 42
    assert sent == "The answer is here."
    html = passage_html(H(passage, s, e, [(s + 4, s + 10)]), context=40)
    assert "<b>The </b>" in html and "answer</span></b>" in html
    assert collapse("a \n b\t c") == "a b c"


def test_people_and_durations_are_short():
    assert short_people("a@x, b@x, c@x, d@x, e@x", 3) == "a@x, b@x, c@x +2"
    # a person the question named stays in view, in the list's order, whatever their place
    assert short_people("a@x, b@x, c@x, Dana <d@x>, e@x", 3, ["dana"]) == "a@x, b@x, Dana <d@x> +2"
    assert short_people("a@x, b@x, c@x, Dana <d@x>, e@x", 3, ["Zed"]) == "a@x, b@x, c@x +2"
    assert (
        format_duration(42) == "42 s"
        and format_duration(125) == "2 min 05 s"
        and format_duration(None) == "…"
    )


def test_progress_line_and_percent():
    p = P(files_done=3, files_total=12, sentences_done=1234, rate=56.7, eta_s=75)
    assert progress_percent(p) == 25
    line = progress_text(p)
    assert (
        "3 of 12 files" in line
        and "1,234 sentences" in line
        and "57 sentences/s" in line
        and "1 min 15 s" in line
    )
    assert progress_percent(P(phase="done", files_done=12, files_total=12)) == 100
    assert progress_percent(P(phase="done")) == 100


def test_a_model_jobs_indexing_says_what_it_is():
    """Issue 36, item 10: adaptation's re-encoding read "Indexing · 0 of 231 files"."""
    p = P(phase="indexing", files_done=0, files_total=231, sentences_done=0, rate=None, eta_s=None)
    assert progress_text(p).startswith("Indexing · 0 of 231 files")  # an ordinary run
    adapt = progress_text(p, context="adapt")
    assert adapt.startswith("Re-encoding your documents with the adapted model · 0 of 231 files")
    assert progress_text(p, context="restore").startswith("Going back to the previous model · 0 of 231")
    # paused, or done, it says that instead
    assert progress_text(p, paused=True, context="adapt").startswith(("Paused", "Pausing…"))
    assert progress_text(P(phase="done", files_done=231, files_total=231), context="adapt").startswith("Done")


def test_a_paused_adaptation_says_paused():
    from engine.common.progress import AdaptProgress

    p = AdaptProgress("training", 107, 500, 2.5, 60.0, 220.0)
    assert "about" in progress_text(p) and "paused" not in progress_text(p)
    assert progress_text(p, paused=True) == "Adapting the model · step 107 of 500 · paused"


def test_an_apple_mail_folder_is_a_mail_store(tmp_path):
    """File ▸ Add mail store takes ~/Library/Mail: its .emlx files are e-mail (the first line
    is a byte count, so the headers are not where a sniff looks)."""
    from app.sources import mail_store_problem

    messages = tmp_path / "Mail" / "V10" / "ACCOUNT" / "INBOX.mbox" / "UUID" / "Data" / "Messages"
    messages.mkdir(parents=True)
    (messages / "101.emlx").write_bytes(b"31\nFrom: a@example.org\nSubject: s\n\nx\n<plist/>\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("plain", encoding="utf-8")
    assert mail_store_problem(str(tmp_path / "Mail")) == ""
    assert mail_store_problem(str(tmp_path / "notes")).startswith(f"{tmp_path / 'notes'} is not a mail store")
