"""E-mail filters by part of a sender and by mailboxes that share a name (issue 15.4).

A real home indexes real mail files: two Enron ``all_documents`` folders of the shipped
sample data's layout (one per person, so both mailboxes are called ``all_documents``) and an
mbox file whose senders have display names. ``Engine.senders`` lists every sender in the
catalog, ``Engine.mailboxes`` labels the two ``all_documents`` apart, and ``Engine.ask``
filters by a name part, by a label, and within a folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api.facade import Engine, SearchFilters, mailbox_labels

ROOT = Path(__file__).resolve().parents[1]
ENRON = ROOT.parent / "shared" / "data" / "email" / "maildir-sample" / "test-small"

CREW_MBOX = """\
From ingrid@halcyon.example Mon Jan  1 00:00:00 2001
From: Ingrid Solvang <i.solvang@halcyon.example>
To: crew@halcyon.example
Subject: Hull inspection
Date: Mon, 14 May 2001 10:00:00 +0000
Message-ID: <hull-1@halcyon.example>

The hull of the research ship Halcyon was inspected in the dry dock at Tromso.

From bo@halcyon.example Mon Jan  1 00:00:00 2001
From: Bo Lindqvist <bo.l@halcyon.example>
To: crew@halcyon.example
Subject: Galley supplies
Date: Tue, 15 May 2001 10:00:00 +0000
Message-ID: <galley-1@halcyon.example>

The galley of the research ship Halcyon ran out of cardamom and coffee on the voyage.
"""


def write_mail(root: Path) -> Path:
    """Two same-named Enron mailboxes (real messages) and an mbox with named senders."""
    if not ENRON.is_dir():
        pytest.skip(f"the Enron sample is not here: {ENRON} (see /work/shared/data/README.md)")
    for person, names in (("fischer-m", ["1.", "2."]), ("wolfe-j", ["13.", "37.", "97."])):
        box = root / person / "all_documents"
        box.mkdir(parents=True)
        for name in names:
            (box / name).write_bytes((ENRON / person / "all_documents" / name).read_bytes())
    (root / "crew.mbox").write_text(CREW_MBOX, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def mail_engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("mail-filters")
    mail = write_mail(base / "mail")
    engine = Engine(home=base / "home")
    engine.add_source(mail)
    final = engine.index()
    assert final.files_done == final.files_total == 6
    yield engine, mail
    engine.close()


def test_senders_come_from_the_catalog_with_names_and_counts(mail_engine):
    engine, _ = mail_engine
    senders = {s.address: s for s in engine.senders()}
    assert {"mark.fisher@enron.com", "lane.capron@ci.boston.ma.us", "i.solvang@halcyon.example"} <= set(senders)
    assert senders["i.solvang@halcyon.example"].label == "Ingrid Solvang <i.solvang@halcyon.example>"
    assert senders["mark.fisher@enron.com"].label == "mark.fisher@enron.com"  # no display name
    assert all(s.messages >= 1 for s in senders.values())
    # a part of a name or of an address, any case
    assert [s.address for s in engine.senders("SOLV")] == ["i.solvang@halcyon.example"]
    assert {s.address for s in engine.senders("halcyon")} == {"i.solvang@halcyon.example", "bo.l@halcyon.example"}
    assert engine.senders("nobody-by-this-name") == []


def test_same_named_mailboxes_are_labelled_apart_and_filter_alone(mail_engine):
    engine, mail = mail_engine
    boxes = {m.label: m for m in engine.mailboxes()}
    assert set(boxes) == {"all_documents (fischer-m)", "all_documents (wolfe-j)", "crew.mbox"}
    wolfe = boxes["all_documents (wolfe-j)"]
    assert (wolfe.name, wolfe.path, wolfe.kind, wolfe.messages) == (
        "all_documents",
        str(mail / "wolfe-j" / "all_documents"),
        "folder",
        3,
    )
    assert boxes["crew.mbox"].kind == "mbox" and boxes["crew.mbox"].messages == 2

    question = "vacation disclaimer distribution research ship"
    both = engine.ask(question, top=20, filters=SearchFilters(mailbox="all_documents"))
    assert {Path(a.path).parent.parent.name for a in both} == {"fischer-m", "wolfe-j"}
    for label, person in (("all_documents (wolfe-j)", "wolfe-j"), ("all_documents (fischer-m)", "fischer-m")):
        answers = engine.ask(question, top=20, filters=SearchFilters(mailbox=label))
        assert answers and {Path(a.path).parent.parent.name for a in answers} == {person}, label
    # the mailbox's path means it too; a folder filter outside it leaves nothing
    by_path = engine.ask(question, top=20, filters=SearchFilters(mailbox=wolfe.path))
    assert by_path and {Path(a.path).parent.parent.name for a in by_path} == {"wolfe-j"}
    outside = SearchFilters(mailbox="all_documents (wolfe-j)", folder=str(mail / "fischer-m"))
    assert engine.ask(question, top=20, filters=outside) == []


def test_sender_filter_takes_a_name_part(mail_engine):
    engine, _ = mail_engine
    question = "What happened to the research ship Halcyon?"
    everyone = engine.ask(question, top=20)
    assert {a.fields.get("from") for a in everyone} >= {
        "Ingrid Solvang <i.solvang@halcyon.example>",
        "Bo Lindqvist <bo.l@halcyon.example>",
    }
    only = engine.ask(question, top=20, filters=SearchFilters(sender="solvang"))
    assert [a.fields["from"] for a in only] == ["Ingrid Solvang <i.solvang@halcyon.example>"]
    crew = engine.ask(question, top=20, filters=SearchFilters(sender="Halcyon"))
    assert {a.fields["from"] for a in crew} == {
        "Ingrid Solvang <i.solvang@halcyon.example>",
        "Bo Lindqvist <bo.l@halcyon.example>",
    }
    # an exact known address stays exact; an unknown name matches nothing
    exact = engine.ask(question, top=20, filters=SearchFilters(sender="bo.l@halcyon.example"))
    assert [a.fields["from"] for a in exact] == ["Bo Lindqvist <bo.l@halcyon.example>"]
    assert engine.ask(question, top=20, filters=SearchFilters(sender="zebediah")) == []


def test_mailbox_labels_use_as_many_parent_folders_as_needed():
    labels = mailbox_labels(
        [
            ("inbox", "/home/a/work/inbox"),
            ("inbox", "/home/b/work/inbox"),
            ("sent", "/home/a/sent"),
            ("Inbox", "/srv/x/Inbox"),
        ]
    )
    assert labels[("inbox", "/home/a/work/inbox")] == "inbox (a/work)"
    assert labels[("inbox", "/home/b/work/inbox")] == "inbox (b/work)"
    assert labels[("Inbox", "/srv/x/Inbox")] == "Inbox (x)"
    assert labels[("sent", "/home/a/sent")] == "sent"
