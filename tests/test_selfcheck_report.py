"""Issue 38's "show it": the self-check as the terminal and the window report it, on real homes
(samples/ indexed by ``sparcdesk demo``, and a one-document home adapted for real).

``sparcdesk selfcheck`` (text and ``--json``, an empty home refused), ``sparcdesk status``'s
line before and after measuring, ``sparcdesk adapt``'s decision (kept, then ``--always``).
The window's Index ▸ Measure now and its adaptation notice are in tests/test_app_polish.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import copied_home, demo_samples
from test_answers import indexed

from engine.api.facade import Engine
from engine.cli import selfcheck as cli_selfcheck
from engine.cli.main import main
from engine.cli.model import adapt_ending

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``sparcdesk ARGV``: its exit code, stdout and stderr."""
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture
def samples_home() -> Path:
    """This test's own copy of the sample corpus's home (the self-check writes to it)."""
    return copied_home(demo_samples() / "home", "selfcheck-samples")


def test_selfcheck_prints_its_figures_and_status_shows_them(samples_home: Path, capsys) -> None:
    """Not measured, then measured: the text, the JSON, the status line and status --json agree."""
    home = ["--home", str(samples_home), "--threads", "1", "-q"]
    code, out, _ = run(capsys, "status", *home)
    assert code == 0
    assert "search on your files: not measured yet (sparcdesk selfcheck)" in out
    assert "last adaptation" not in out

    code, text, _ = run(capsys, "selfcheck", *home)
    assert code == 0
    lines = text.splitlines()
    m = re.fullmatch(
        r"search on your files: hit@1 (\d+)% \((\d+)–(\d+)\), MRR@10 (\d+) on (\d+) pseudo-questions from your files",
        lines[0],
    )
    assert m, lines[0]
    saved = Engine(home=samples_home, threads=1)
    try:
        latest = saved.last_selfcheck()["latest"]
    finally:
        saved.close()
    assert int(m.group(1)) == round(latest["hit1"]) and int(m.group(5)) == latest["questions"] > 0
    kinds = [ln.split(":")[0].strip() for ln in lines[1:-1]]
    assert sorted(kinds) == sorted(latest["by_kind"]) and set(kinds) <= {"subject", "heading", "title", "sentence"}
    assert re.fullmatch(
        r"measured \d{4}-\d\d-\d\d \d\d:\d\d in [\d.]+ s with sparc-tiny \S+ \([\d,]+ sentences indexed, seed 13\)",
        lines[-1],
    ), lines[-1]

    code, out, _ = run(capsys, "status", *home)
    day = latest["measured"][:10]
    assert f"search on your files: hit@1 {latest['hit1']:.0f}% (measured {day} " in out
    assert f" on {latest['questions']} pseudo-questions)" in out

    # another sample, as JSON: the same fields the engine keeps, now the latest
    code, out, _ = run(capsys, "selfcheck", "--json", "--questions", "30", "--seed", "5", *home)
    assert code == 0
    data = json.loads(out)
    assert data["seed"] == 5 and 0 < data["questions"] <= 30 and len(data["ranks"]) == data["questions"]
    assert 0 <= data["hit1_ci"][0] <= data["hit1"] <= data["hit1_ci"][1] <= 100
    code, out, _ = run(capsys, "status", "--json", *home)
    assert json.loads(out)["selfcheck"]["latest"] == data


def test_selfcheck_on_an_empty_home_says_what_to_do(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "selfcheck", "--home", str(tmp_path / "home"), "--threads", "1")
    assert code == 1 and out == ""
    assert err.strip() == "sparcdesk: nothing is indexed yet: add a folder first (sparcdesk index PATH), then measure"


def test_the_default_number_of_questions_is_the_engines() -> None:
    from engine.search import selfcheck

    assert cli_selfcheck.QUESTIONS == selfcheck.QUESTIONS


def test_adapt_says_the_self_checks_decision_and_always_switches(tmp_path: Path, capsys) -> None:
    """One document: every pseudo-question finds it with either model, so the adapted one is
    not better and the current model stays (its bundle kept); ``--always`` switches anyway."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "documents" / "kenya.txt", docs)
    home = tmp_path / "home"
    indexed(home, docs).close()
    opts = ["--home", str(home), "--threads", "1", "-q", "--steps", "3"]

    code, out, _ = run(capsys, "adapt", *opts)
    assert code == 0
    with Engine(home=home, threads=1) as eng:
        switch = eng.last_selfcheck()["switch"]
        live = eng.status()["generation"]["model"]
    assert switch["switch"] is False and "+adapted" not in live
    kept = Path(switch["bundle"])
    assert kept.parent == home / "models" and kept.is_dir()
    assert out.startswith(f"adapted model: {kept}\n")
    assert (
        f"self-check on your files: hit@1 {switch['before']['hit1']:.0f}% → {switch['after']['hit1']:.0f}% (MRR@10 "
        in out
    )
    assert "): kept the current model (the adapted one is not better by more than the interval)" in out
    assert f"the adapted model is kept in {kept}; 'sparcdesk adapt --always'" in out

    code, out, _ = run(capsys, "status", "--home", str(home))
    lo, hi = switch["comparison"]["ci"]
    assert (
        f"last adaptation: hit@1 {switch['before']['hit1']:.0f}% → {switch['after']['hit1']:.0f}% "
        f"(MRR@10 {switch['comparison']['before']:.1f} → {switch['comparison']['after']:.1f}, "
        f"difference {switch['comparison']['diff']:+.1f}, interval [{lo:.1f}, {hi:.1f}]): kept the current model"
    ) in out

    # the same decision, had it switched: what adapt would have said
    switched = adapt_ending(False, {**switch, "switch": True})
    assert switched.endswith(f"the adapted model answers now; 'sparcdesk restore' goes back to {switch['previous_bundle']}")
    assert "): switched\n" in switched

    code, out, _ = run(capsys, "adapt", "--always", *opts)
    assert code == 0
    assert "): switched (--always: whatever the self-check found)\n" in out  # what it found, still said
    assert out.rstrip().endswith("the adapted model answers now; 'sparcdesk restore' goes back to " + switch["previous_bundle"])
    with Engine(home=home, threads=1) as eng:
        assert eng.status()["generation"]["model"].startswith("sparc-tiny+adapted")


def test_a_decision_without_pseudo_questions_says_there_was_nothing_to_measure() -> None:
    """A home of one-line notes offers no pseudo-question: the decision (kept, as an
    interval of nothing is never above 0) says why in words, not as '0% → 0%'."""
    from app.controllers.model import switch_text
    from engine.cli.selfcheck import switch_line

    empty = {"questions": 0, "hit1": 0.0, "mrr10": 0.0}
    kept = {"before": empty, "after": empty, "comparison": {"before": 0, "after": 0, "diff": 0, "ci": [0, 0]},
            "switch": False, "bundle": "/home/x/models/a"}  # fmt: skip
    line = switch_line(kept)
    assert line.startswith("nothing in your files to measure with") and "0%" not in line
    text = switch_text(kept)
    assert "too little text with labels" in text and "0%" not in text
    measured = {**kept, "before": {"questions": 40, "hit1": 50.0}, "after": {"questions": 40, "hit1": 55.0}}
    assert "50% → 55%" in switch_line(measured)  # (must not fire with questions)
