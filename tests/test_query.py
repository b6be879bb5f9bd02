"""The search box's syntax (engine/search/query.py): parsed once, used by the CLI and the window.

One CLI test per form over the indexed samples (real files, shipped model), plus the parser
on its own for the cases that must stay words.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from test_search import SAMPLES, sample_home

from engine.cli.main import main as cli_main
from engine.search.query import Clause, parse, parse_date, relaxed_notice


def ask_json(query: str, top: int = 10) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["ask", "--home", str(sample_home()), "--json", "--top", str(top), query]) == 0
    return json.loads(out.getvalue())


def ask(query: str, top: int = 10) -> list[dict]:
    return ask_json(query, top)["answers"]


def names(answers: list[dict]) -> list[str]:
    return [Path(a["path"]).name for a in answers]


def full_text(answer: dict) -> str:
    from engine.api.facade import Engine

    with Engine(home=sample_home(), threads=1) as e:
        return e.document_text(answer["doc_key"])


# --------------------------------------------------------------------------- the parser


def test_parser_takes_the_forms_apart() -> None:
    q = parse(
        '"triplet state" oxygen -ozone from:"ann lee" OR to:bob ext:.PDF type:Email dir:/x after:2001-05 before:2002'
    )
    assert q.text == "triplet state oxygen"
    assert q.required == [
        [Clause("body", "triplet state")],
        [Clause("from", "ann lee"), Clause("to", "bob")],
        [Clause("ext", "pdf")],
        [Clause("kind", "email")],
    ]
    assert q.excluded == [Clause("body", "ozone")]
    assert q.folder == "/x"
    assert q.date_from == dt.date(2001, 5, 1) and q.date_to == dt.date(2002, 12, 31)


@pytest.mark.parametrize(
    "text",
    [
        "What is 2 - 1?",
        "Who sent Termination Letters -DRAFT-?",
        "re: budget",
        "http://example.org",
        "OR",
        'an "unclosed quote',
        "after:someday",
        "a OR",
    ],
)
def test_what_is_not_syntax_stays_words(text: str) -> None:
    q = parse(text)
    assert not q.required and not q.excluded and q.date_from is None
    assert q.text.replace('"', "").split() == [w for w in text.replace('"', "").split() if w != "OR"]


def test_dates_take_a_year_a_month_or_a_day() -> None:
    assert parse_date("2001") == dt.date(2001, 1, 1) and parse_date("2001", end=True) == dt.date(2001, 12, 31)
    assert parse_date("2000-02", end=True) == dt.date(2000, 2, 29)
    assert parse_date("2001-05-14") == dt.date(2001, 5, 14)
    assert parse_date("2001-13") is None and parse_date("May 2001") is None


# --------------------------------------------------------------------------- each form through the CLI


def test_quoted_phrase_keeps_only_documents_with_the_phrase() -> None:
    loose = ask("Catholic Church")
    exact = ask_json('"Catholic Church"')
    assert len(loose) > 1 and names(exact["answers"]) == ["martin-luther.odt"]
    assert exact["relaxed"] == []
    assert "Catholic Church" in " ".join(full_text(exact["answers"][0]).split())


def test_phrase_with_stopwords_matches_in_place() -> None:
    assert names(ask('"the Black Death"')) == ["black-death.html"]
    # the stopword keeps its place: one word between, so no document holds the phrase and
    # it is dropped (said so); its words still rank
    loose = ask_json('"Black the Death"')
    assert loose["relaxed"] == ["Black the Death"]
    assert names(loose["answers"])[0] == "black-death.html"


def test_phrases_no_document_holds_are_dropped_and_said_so() -> None:
    both = ask_json('"Martin Luther" "Nikola Tesla" father')  # no document holds both
    assert both["relaxed"] == ["Martin Luther", "Nikola Tesla"]
    assert relaxed_notice(both["relaxed"]) == (
        'No document holds "Martin Luther" and "Nikola Tesla" as asked: showing matches without them.'
    )
    assert {"martin-luther.odt", "nikola-tesla.docx"} <= set(names(both["answers"]))
    # the phrases go, a field restriction stays
    mail = ask_json('"Enron energy xyzzyq" from:skilling')
    assert mail["relaxed"] == ["Enron energy xyzzyq"]
    assert mail["answers"] and all("skilling" in a["fields"]["from"] for a in mail["answers"])
    assert ask_json("from:kitchen") == {
        "question": "from:kitchen",
        "answered": False,
        "relaxed": [],
        "absent": [],
        "answers": [],
    }
    # dropped, and still nothing: said so
    none = ask_json('"Catholic Church" from:kitchen')
    assert none["relaxed"] == ["Catholic Church"] and none["answers"] == []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["ask", "--home", str(sample_home()), '"Catholic Church" from:kitchen']) == 0
    assert out.getvalue().startswith('No document holds "Catholic Church", and nothing matches without it either.')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["ask", "--home", str(sample_home()), '"Black the Death"']) == 0
    text = out.getvalue()
    assert text.startswith('No document holds "Black the Death": showing matches without it.')
    assert "black-death.html" in text


def test_exclusion_removes_documents_with_the_word() -> None:
    with_normans = names(ask("religion"))
    assert "normans.pdf" in with_normans
    without = names(ask("religion -Normans"))
    assert without and "normans.pdf" not in without
    assert names(ask("religion -xyzzyq")) == with_normans  # a word no document holds excludes nothing
    assert "martin-luther.odt" not in names(ask('Luther religion -"Catholic Church"'))


def test_or_between_phrases_takes_either() -> None:
    either = names(ask('"Martin Luther" OR "Nikola Tesla" father'))
    assert set(either) == {"martin-luther.odt", "nikola-tesla.docx"}


def test_from_field_matches_a_sender_name_or_address_part() -> None:
    answers = ask("from:skilling")
    assert answers and all("skilling" in a["fields"]["from"] for a in answers)
    assert ask("from:kitchen") == []  # Louise Kitchen only receives


def test_to_field_matches_recipients() -> None:
    answers = ask("to:kitchen")
    assert answers and all(a["kind"] == "email" for a in answers)
    assert all("kitchen" in (a["fields"].get("to", "") + a["fields"].get("cc", "")) for a in answers)


def test_subject_field() -> None:
    answers = ask("subject:energy")
    assert answers and all("energy" in a["fields"]["subject"].lower() for a in answers)


def test_ext_and_type_fields() -> None:
    assert set(names(ask("ext:pdf religion"))) == {"normans.pdf"}
    kinds = {a["kind"] for a in ask("type:email energy")}
    assert kinds == {"email"}


def test_dir_field_restricts_to_a_folder() -> None:
    # "energy" is in the mail and in documents outside it (the filter must drop those)
    assert any(not a["path"].startswith(str(SAMPLES / "mail")) for a in ask("energy"))
    answers = ask(f"dir:{SAMPLES / 'mail'} energy")
    assert answers and all(a["path"].startswith(str(SAMPLES / "mail")) for a in answers)


def test_date_fields() -> None:
    answers = ask("date:2000-12 gas")
    assert answers and all(a["date"].startswith("2000-12") for a in answers)
    before = ask("before:2002 energy")
    assert before and all(a["date"] < "2002" for a in before)
    after = ask("after:2001-04 energy")
    assert after and all(a["date"] >= "2001-04" for a in after)
