"""Words found in no file are reported as such (issue 36, item 6): `xyzzyq` listed 20
documents, each with a bold "best" sentence; `coldplay halftime` 7 documents holding neither."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_pipeline import write
from test_robustness import _env

from engine.api.facade import Engine

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("absent")
    write(base / "docs" / "owls.txt", "Owls hunt at night over the fields. Their flight is silent.")
    write(base / "docs" / "bats.txt", "Bats sleep upside down in caves during the day.")
    with Engine(home=base / "home", threads=1) as e:
        e.index([base / "docs"])
    return base / "home"


def test_a_word_no_file_holds_gives_no_answers_and_says_so(home: Path) -> None:
    with Engine(home=home, threads=1) as e:
        for q in ("xyzzyq", "coldplay halftime", "what is xyzzyq?"):
            answers = e.ask(q)
            assert list(answers) == [] and answers.absent, q
        assert e.ask("coldplay halftime").absent == ("coldplay", "halftime")


def test_words_that_are_held_still_rank(home: Path) -> None:
    with Engine(home=home, threads=1) as e:
        answers = e.ask("owls")
        assert answers and answers.absent == ()
        partly = e.ask("owls xyzzyq")  # one word held: its matches, and the other named
        assert partly and Path(partly[0].path).name == "owls.txt" and partly.absent == ("xyzzyq",)
        assert e.ask("where do bats sleep?").absent == ()  # a question's frame words are not "absent"


def test_the_command_line_names_the_absent_word(home: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "ask", "xyzzyq"], env=_env(home), cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0 and "No document contains xyzzyq." in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "ask", "xyzzyq", "--json"], env=_env(home), cwd=ROOT, capture_output=True, text=True
    )
    data = json.loads(r.stdout)
    assert data["answers"] == [] and data["absent"] == ["xyzzyq"]
