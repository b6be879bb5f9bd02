"""A reply's quoted history is searchable (issue 36, item 1).

A sender's words often survive only quoted in the reply that followed (Jason Wolfe's own
messages in the Enron sample exist only as "-----Original Message-----" blocks in 12
replies). The reply keeps them after its own words; search ranks them, and drops them when
the quoted message is indexed itself, so a thread does not answer twice with the same words.
"""

from __future__ import annotations

from pathlib import Path

from test_mail import message, write_eml

from engine.api.facade import Engine
from engine.ingest.extract import extract
from engine.ingest.mail import QUOTED_AT

ORIGINAL = (
    "The lighthouse keeper repainted the lantern room in cobalt blue.\n\n"
    "Sunday might be better for the harbour tour.\n"
)
REPLY = (
    "Thanks, see you on Sunday then.\n\n"
    "-----Original Message-----\n"
    "From: Jason Wolfe [mailto:jason.wolfe@example.org]\n"
    "Sent: Friday, March 23, 2001 1:46 PM\n"
    "To: Josh Breeden\n"
    "Subject: harbour tour\n\n" + ORIGINAL
)


def _reply(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    msg = message(subject="RE: harbour tour", body=REPLY, From="Josh Breeden <josh@example.org>", Message_ID="<r1@x>")
    return write_eml(folder, msg, "reply.eml")


def _original(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    msg = message(subject="harbour tour", body=ORIGINAL, From="Jason Wolfe <jason.wolfe@example.org>", Message_ID="<o1@x>")
    return write_eml(folder, msg, "original.eml")


def test_the_quote_follows_the_reply_and_names_its_sender(tmp_path: Path) -> None:
    doc = extract(_reply(tmp_path))[0]
    at = int(doc.fields[QUOTED_AT])
    assert doc.text[:at].strip() == "Thanks, see you on Sunday then."
    quoted = doc.text[at:]
    assert "From: Jason Wolfe" in quoted and "cobalt blue" in quoted
    assert "Original Message" not in doc.text


def test_a_message_without_a_quote_is_as_before(tmp_path: Path) -> None:
    doc = extract(_original(tmp_path))[0]
    assert QUOTED_AT not in doc.fields
    assert doc.text == ORIGINAL.strip()


def test_words_found_only_in_a_quote_find_the_reply(tmp_path: Path) -> None:
    reply = _reply(tmp_path / "mail")
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([tmp_path / "mail"])
        answers = e.ask("what colour did the keeper paint the lantern room?")
        assert answers and answers[0].path == str(reply)
        assert "cobalt blue" in answers[0].best.sentence


def test_a_reply_does_not_answer_by_a_quote_whose_message_is_indexed(tmp_path: Path) -> None:
    original = _original(tmp_path / "mail")
    reply = _reply(tmp_path / "mail")
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([tmp_path / "mail"])
        answers = e.ask("what colour did the keeper paint the lantern room?")
        assert answers[0].path == str(original)
        # the reply may still be listed (its own words), never by the quoted sentence
        for a in answers:
            if a.path == str(reply):
                assert "cobalt" not in a.best.sentence


def test_a_quote_bomb_keeps_a_bounded_history(tmp_path: Path) -> None:
    """450 KB of "Original Message" blocks (the campaign's quote bomb): the history stops at
    MAX_QUOTED_CHARS, newest first, so the message costs a few hundred sentences at most."""
    from bench.hostile import _quote_blocks
    from engine.ingest.mail import MAX_QUOTED_CHARS

    (tmp_path / "bomb.eml").write_text(_quote_blocks(450_000))
    doc = extract(tmp_path / "bomb.eml")[0]
    at = int(doc.fields[QUOTED_AT])
    assert doc.text[:at].strip() == "Top reply."
    assert 0 < len(doc.text) - at <= MAX_QUOTED_CHARS
    assert "Reply number 0 says hello." in doc.text  # the newest quoted message is kept
    assert "quoted history past" in doc.fields["note"]  # said in status
