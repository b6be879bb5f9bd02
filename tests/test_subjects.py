"""A message named by its subject (issue 37): subjects are kept in one normal form, made at
indexing time, and a question's candidate subjects are put in the same form before the
catalog is asked for them (``engine.common.subjects.normal_subject``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_answers import indexed, write_eml

from engine.catalog.store import Catalog
from engine.common.subjects import normal_subject
from engine.search.intent import parse


@pytest.fixture(scope="module")
def mail_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with three indexed messages, one with a German subject, one a reply
    forwarded through a mail server that tags it."""
    root = tmp_path_factory.mktemp("subjects")
    mail = root / "mail"
    mail.mkdir()
    write_eml(mail / "preise.eml", "Jana Vogel <jana.vogel@example.de>", "Team <team@example.de>",
              "Änderung der Preise", "Ab Juni gilt die neue Liste.\n")  # fmt: skip
    write_eml(mail / "budget.eml", "Ann Tully <ann.tully@corp.example>", "Bob Ray <bob.ray@corp.example>",
              "AW: [EXTERNAL] RE:  Budget für Mai", "Wir bleiben im Rahmen.\n", day=2)  # fmt: skip
    write_eml(mail / "lunch.eml", "Bob Ray <bob.ray@corp.example>", "Ann Tully <ann.tully@corp.example>",
              "Lunch on Friday", "Noon at the usual place.\n", day=3)  # fmt: skip
    with indexed(root / "home", mail):
        pass
    return root / "home"


def _named(home: Path, question: str) -> list[str]:
    """The files of the messages the catalog finds by the subjects ``question`` may name."""
    with Catalog(home / "catalog.sqlite") as cat:
        return sorted(
            Path(k.split("#", 1)[0]).name
            for k in cat.messages_with_subject(parse(question).subject_candidates())
        )


def test_a_subject_with_capitals_sqlite_does_not_fold_is_found_typed_in_lower_case(mail_home: Path) -> None:
    assert _named(mail_home, "Wer hat die Mail über änderung der preise geschickt?") == ["preise.eml"]
    assert _named(mail_home, "ÄNDERUNG DER PREISE") == ["preise.eml"]


def test_a_subject_that_differs_by_its_markers_is_found(mail_home: Path) -> None:
    assert _named(mail_home, "Who sent the e-mail about budget für mai?") == ["budget.eml"]
    assert _named(mail_home, "Fwd: lunch on friday") == ["lunch.eml"]


def test_an_unrelated_subject_is_not_found(mail_home: Path) -> None:
    assert _named(mail_home, "Who sent the e-mail about the prices?") == []
    assert _named(mail_home, "änderung der preisliste") == []  # not the same subject
    assert _named(mail_home, "lunch on") == []  # part of a subject names no message by it


def test_the_normal_form_leaves_markers_tags_case_and_spacing_out() -> None:
    assert normal_subject("RE: AW:  Änderung der Preise") == "änderung der preise"
    assert normal_subject("[EXTERNAL] Re[2]: Fwd: Straße") == "strasse"
    assert normal_subject("SV: where are you?") == "where are you"
    assert normal_subject("回复：会议安排") == "会议安排"
    # words that start like a marker are words
    assert normal_subject("Resume: Regarding the budget") == "resume: regarding the budget"
    assert normal_subject("Re:") == ""
