"""The no-answer decision's two other ways in (issue 37, item 4: calibrated on the notes users
keep, bench.no_answer): an English question whose first document stands far above the rest,
and a question in another language whose document holds some of its words with a high match.
Each fires on a real note and stays off where its conditions are not met."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from engine.api.facade import Engine
from engine.search.decision import lead
from engine.search.results import Answer, Answers, Hit
from engine.search.settings import DEFAULT, SearchSettings

NOTES = {
    "trees.txt": "City ordinances protect saplings during their first three years. Removing one requires a "
    "permit from the parks department, and the fine is two hundred dollars.",
    "library.txt": "The central library opens at eight in the morning and closes at ten at night. Books can be "
    "returned through the slot by the side door.",
    "car.txt": "The garage replaced the brake pads and the rear tyres. The invoice came to four hundred and "
    "twelve euros, paid by card.",
    "taxes.txt": "The tax return is due on the last day of July. Receipts for the home office go in the blue "
    "folder on the shelf.",
    "recipe.txt": "For the lentil soup, fry the onions first, then add the lentils, cumin and two litres of "
    "stock. Simmer for forty minutes.",
    "nota.txt": "A biblioteca central da universidade abre às oito horas e fecha às vinte e duas horas.",
    "receita.txt": "Para a sopa de lentilhas, refogue a cebola, junte as lentilhas, o cominho e dois litros de "
    "caldo, e deixe cozinhar quarenta minutos.",
}

#: Only the usual corner decides: match and coverage both at their thresholds.
CORNER_ONLY = SearchSettings(standout_lead=None, foreign_low_coverage=None)


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("notes")
    (root / "docs").mkdir()
    for name, text in NOTES.items():
        (root / "docs" / name).write_text(text + "\n", encoding="utf-8")
    eng = Engine(home=root / "home", threads=1)
    eng.index([root / "docs"])
    yield eng
    eng.close()


def test_a_paraphrase_of_the_one_note_that_stands_out_is_answered(notes: Engine) -> None:
    question = "Which laws protect young trees?"  # the note says "ordinances", "saplings"
    answers = notes.ask(question)
    assert Path(answers[0].path).name == "trees.txt"
    assert answers.lead >= DEFAULT.standout_lead  # no other note comes close
    assert answers.coverage < DEFAULT.answer_coverage  # the usual corner refuses it ...
    assert not notes.ask(question, settings=CORNER_ONLY).answered
    assert answers.answered  # ... standing out answers it


def test_standing_out_is_not_enough_without_some_match_or_a_wide_enough_lead(notes: Engine) -> None:
    museum = notes.ask("What time does the museum open?")  # no note is about a museum
    assert Path(museum[0].path).name == "library.txt" and museum.lead >= DEFAULT.standout_lead
    assert museum.match < DEFAULT.standout_match and not museum.answered
    question = "Which laws protect young trees?"
    wider = replace(DEFAULT, standout_lead=notes.ask(question).lead + 0.1)
    assert not notes.ask(question, settings=wider).answered


def test_a_foreign_question_with_some_of_its_words_and_a_high_match_is_answered(notes: Engine) -> None:
    question = "Quanto tempo a sopa deve cozinhar?"  # "cozinhar" is in the note, "tempo" is not
    answers = notes.ask(question)
    assert Path(answers[0].path).name == "receita.txt"
    assert DEFAULT.foreign_low_coverage <= answers.coverage < DEFAULT.foreign_coverage
    assert answers.answered and not notes.ask(question, settings=CORNER_ONLY).answered
    assert not notes.ask(question, settings=replace(DEFAULT, foreign_match=answers.match + 0.01)).answered


def test_a_foreign_question_whose_document_holds_too_few_of_its_words_is_refused(notes: Engine) -> None:
    answers = notes.ask("Quais livros a biblioteca empresta aos alunos?")
    assert Path(answers[0].path).name == "nota.txt"
    assert answers.coverage < DEFAULT.foreign_low_coverage and not answers.answered


def _answer(score: float) -> Answer:
    hit = Hit(sentence="s", score=score, passage="s", start=0, end=1)
    return Answer(doc_key="k", path="p", kind="text", title="t", date=None, fields={}, best=hit, others=[], doc_start=0, score=score)


def test_the_lead_is_the_log_of_the_first_score_over_the_next() -> None:
    assert lead(Answers([_answer(3.0), _answer(1.0)])) == pytest.approx(math.log(3.0))
    assert lead(Answers([_answer(2.0)])) == math.inf  # nothing else matched
    assert lead(Answers([_answer(0.0), _answer(0.0)])) == 0.0


def test_one_answer_asked_for_is_decided_as_ten_are(notes: Engine) -> None:
    question = "Which laws protect young trees?"
    one, ten = notes.ask(question, top=1), notes.ask(question)
    assert len(one) == 1 and one.lead == ten.lead and one.answered == ten.answered


def test_a_home_of_a_few_files_has_nothing_to_stand_out_from(tmp_path: Path) -> None:
    """In a home of four notes, any question some words of which one of them holds would
    "stand out": the rule needs ``STANDOUT_AMONG`` documents."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("trees.txt", "library.txt", "car.txt", "taxes.txt"):
        (docs / name).write_text(NOTES[name] + "\n", encoding="utf-8")
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([docs])
        answers = e.ask("Which laws protect young trees?")
        assert Path(answers[0].path).name == "trees.txt" and answers.lead >= DEFAULT.standout_lead
        assert answers.coverage >= DEFAULT.standout_coverage and answers.match >= DEFAULT.standout_match
        assert not answers.answered
