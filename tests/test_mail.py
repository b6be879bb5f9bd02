"""E-mail extraction on the real Enron maildir sample and on messages built with the stdlib.

What matters: headers decoded into fields, only new text indexed (quotes and signatures
removed, forwarded content kept), attachments as their own Documents, and one bad message
never stopping an mbox or Maildir.
"""

from __future__ import annotations

import io
import mailbox
from email.message import EmailMessage
from pathlib import Path

import pytest

from engine.ingest.documents import EMAIL_FIELDS, Document, ExtractionError
from engine.ingest.extract import extract, iter_extract
from engine.ingest.mail import QUOTED_AT, addresses, clean_body, iter_mailbox, people_of
from engine.ingest.walk import source_kind

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
ENRON = ROOT.parent / "shared" / "data" / "email" / "maildir-sample" / "test-small"
needs_enron = pytest.mark.skipif(
    not ENRON.is_dir(), reason=f"Enron maildir sample not found at {ENRON} (shared data absent)"
)


def docx_bytes(*paragraphs: str) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def message(subject: str = "Budget", body: str = "Hello.", **headers: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = headers.pop("From", "Ada Lovelace <ada@example.org>")
    msg["To"] = headers.pop("To", "grace@example.org")
    msg["Subject"] = subject
    msg["Date"] = headers.pop("Date", "Tue, 01 May 2001 02:55:00 -0700")
    msg["Message-ID"] = headers.pop("Message_ID", "<m1@example.org>")
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(body)
    return msg


def write_eml(tmp_path: Path, msg: EmailMessage | bytes, name: str = "msg.eml") -> Path:
    path = tmp_path / name
    path.write_bytes(msg if isinstance(msg, bytes) else msg.as_bytes())
    return path


# --------------------------------------------------------------------------- real Enron messages


@needs_enron
@pytest.mark.needs_data
def test_every_enron_message_extracts() -> None:
    files = sorted(p for p in ENRON.rglob("*") if p.is_file())
    assert len(files) == 199
    for path in files:
        docs = extract(path)
        assert len(docs) == 1 and docs[0].kind == "email", path
        assert set(EMAIL_FIELDS) <= set(docs[0].fields), path
        assert docs[0].fields["date"].endswith("+00:00"), path


@needs_enron
@pytest.mark.needs_data
def test_enron_reply_keeps_its_quote_after_its_own_words() -> None:
    doc = extract(ENRON / "wolfe-j" / "all_documents" / "13.")[0]
    assert doc.title == "RE: FW: Your March Vacation"
    assert doc.fields["from"] == "lane.capron@ci.boston.ma.us"
    assert doc.fields["date"] == "2000-12-13T10:41:00+00:00"  # 02:41 PST
    assert doc.fields["message_id"] == "19071531.1075851756602.JavaMail.evans@thyme"
    assert doc.fields["thread"] == doc.fields["message_id"]  # no References / In-Reply-To
    assert doc.fields["mailbox"] == "all_documents"
    assert "I think Buchanan is capable of similar achievement" in doc.text
    # the quoted message comes after the reply's own words (QUOTED_AT), its marker line gone
    at = int(doc.fields[QUOTED_AT])
    assert "ski trip" not in doc.text[:at] and "ski trip" in doc.text[at:]
    assert "I think Buchanan is capable of similar achievement" in doc.text[:at]
    assert "Original Message" not in doc.text


@needs_enron
@pytest.mark.needs_data
def test_enron_lotus_forward_keeps_content_and_its_people() -> None:
    doc = extract(ENRON / "fischer-m" / "all_documents" / "1.")[0]
    assert "The data on\nthis disk is intended for the exclusive use of NREL" in doc.text
    # who wrote the forwarded note (Lotus Notes: the line above its date) and who got it
    assert "From: Hollis Kimbrough\n\nTo: Mark Fisher/EWC/Enron@Enron\n\n" in doc.text
    for header in ("Forwarded by", "04/10/2001", "Subject:", "cc:"):
        assert header not in doc.text


@needs_enron
@pytest.mark.needs_data
def test_enron_rfc2047_subject_in_unusual_charset() -> None:
    doc = extract(ENRON / "wolfe-j" / "all_documents" / "180.")[0]
    assert doc.title.startswith("Mind") and "Eye Madness - April 24" in doc.title
    assert "=?" not in doc.title


@needs_enron
@pytest.mark.needs_data
def test_enron_outlook_signoff_removed() -> None:
    doc = extract(ENRON / "wolfe-j" / "all_documents" / "14.")[0]
    assert doc.text.startswith("FYI....")
    assert "Please respond with your thoughts on this subject." in doc.text
    assert "3-9353" not in doc.text  # 'Thank you,\nDawn\n3-9353' is a sign-off


# --------------------------------------------------------------------------- built messages


def test_fields_and_rfc2047_headers(tmp_path: Path) -> None:
    raw = (
        b"From: =?iso-8859-1?q?Ren=E9_Dupont?= <rene@example.fr>\r\n"
        b"To: =?utf-8?b?Sm9zw6k=?= <jose@example.es>, bob@example.com\r\n"
        b"Cc: carol@example.com\r\n"
        b"Bcc: Dora Eng <dora@example.com>\r\n"
        b"Subject: =?utf-8?q?Caf=C3=A9_menu_for_Fr?= =?utf-8?q?iday?=\r\n"
        b"Date: Fri, 03 Mar 2023 18:30:00 +0100\r\n"
        b"Message-ID: <c3@example.fr>\r\n"
        b"In-Reply-To: <b2@example.es>\r\n"
        b"References: <a1@example.com> <b2@example.es>\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
        b"The menu is attached.\r\n"
    )
    doc = extract(write_eml(tmp_path, raw))[0]
    assert doc.title == "Café menu for Friday"
    assert doc.fields == {
        "from": "René Dupont <rene@example.fr>",
        "to": "José <jose@example.es>, bob@example.com",
        "cc": "carol@example.com",
        "bcc": "Dora Eng <dora@example.com>",
        "date": "2023-03-03T17:30:00+00:00",
        "subject": "Café menu for Friday",
        "message_id": "c3@example.fr",
        "in_reply_to": "b2@example.es",
        "references": "a1@example.com b2@example.es",
        "thread": "a1@example.com",
        "mailbox": tmp_path.name,
    }
    assert doc.text == "The menu is attached."


def test_address_headers_the_parser_finds_invalid_keep_every_person(tmp_path: Path) -> None:
    """Outlook separates recipients with semicolons; the standard parser reads such a list
    as its first person and drops the rest. Every person is kept, a "Last, First" name stays
    one person, and headers that parse cleanly (a group, a quoted semicolon) keep their
    parsed text."""
    team = [f"Person{i} Surname{i} <p{i}@corp.example>" for i in range(12)]
    raw = (
        "From: Eric Ellwanger <eric@corp.example>\r\n"
        f"To: Long, Julie <julie.long@corp.example>; {'; '.join(team)};\r\n"
        " 'franz.grunenberg@corp.example'; Martine Poels\r\n"
        "Cc: =?utf-8?q?J=C3=BCrgen_Beck?= <jb@corp.example>; Thompson, Laverne\r\n"
        "Bcc: Team: a@corp.example, b@corp.example;\r\n"
        "Subject: March Madness\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\n"
        "Brackets are due Friday.\r\n"
    ).encode()
    doc = extract(write_eml(tmp_path, raw))[0]
    to = people_of(doc.fields["to"])
    assert to == ['"Long, Julie" <julie.long@corp.example>', *team, "'franz.grunenberg@corp.example'", "Martine Poels"]
    assert "p11@corp.example" in addresses(doc.fields["to"])
    assert people_of(doc.fields["cc"]) == ["Jürgen Beck <jb@corp.example>", '"Thompson, Laverne"']
    # other headers the parser finds invalid lose people or addresses too: read as written
    raw = (
        b"From: Ann Lee [ann.lee@corp.example]\r\nTo: bo@corp.example (Bo Chen), <cy@corp.example> Cy Diaz\r\n"
        b"Subject: s\r\n\r\nBody.\r\n"
    )
    fields = extract(write_eml(tmp_path, raw, "odd.eml"))[0].fields
    assert (fields["from"], fields["to"]) == (
        "Ann Lee [ann.lee@corp.example]", "bo@corp.example (Bo Chen), <cy@corp.example> Cy Diaz"
    )
    for header in ("Team: a@corp.example, b@corp.example;", '"Lee; Ann" <ann@corp.example>, bob@corp.example'):
        raw = f"From: x@corp.example\r\nTo: {header}\r\nSubject: s\r\n\r\nBody.\r\n".encode()
        assert extract(write_eml(tmp_path, raw, "group.eml"))[0].fields["to"] == header


def test_apple_mail_emlx_is_a_message_of_its_mailbox(tmp_path: Path) -> None:
    """An Apple Mail ``.emlx`` (the message's length on its first line, the message, then a
    property list of flags) is an e-mail with its headers, in the mailbox its ``NAME.mbox``
    folder names; the flags are not its text. One without the length line is read whole."""
    raw = bytes(message(subject="Crane schedule", body="The harbour crane arrives on Thursday.")).replace(b"\r\n", b"\n")
    plist = b'<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>flags</key><integer>8590195713</integer></dict></plist>\n'
    folder = tmp_path / "Mail" / "V10" / "ACCOUNT" / "Work.mbox" / "UUID" / "Data" / "0" / "1" / "Messages"
    folder.mkdir(parents=True)
    (folder / "101.emlx").write_bytes(str(len(raw)).encode() + b"\n" + raw + plist)
    (folder / "102.partial.emlx").write_bytes(raw.replace(b"<m1@", b"<m2@"))  # no length line
    docs = [d for name in ("101.emlx", "102.partial.emlx") for d in extract(folder / name)]
    assert [(d.kind, d.title, d.fields["mailbox"], d.text) for d in docs] == [
        ("email", "Crane schedule", "Work", "The harbour crane arrives on Thursday."),
    ] * 2
    assert docs[0].fields["from"] == "Ada Lovelace <ada@example.org>" and docs[1].fields["message_id"] == "m2@example.org"
    assert source_kind(folder / "101.emlx") == "mailstore"  # added alone, it is mail, as an .eml is


def test_thread_falls_back_to_in_reply_to_then_own_id(tmp_path: Path) -> None:
    reply = message(In_Reply_To="<parent@x>")
    assert extract(write_eml(tmp_path, reply))[0].fields["thread"] == "parent@x"
    alone = message(Date="not a date at all")
    doc = extract(write_eml(tmp_path, alone, "alone.eml"))[0]
    assert doc.fields["thread"] == "m1@example.org"
    assert doc.fields["date"] == ""  # unparsable Date: empty, not an error


def test_plain_preferred_over_html(tmp_path: Path) -> None:
    msg = message(body="Plain version of the agenda.")
    msg.add_alternative("<html><body><p>HTML version of the agenda.</p></body></html>", subtype="html")
    doc = extract(write_eml(tmp_path, msg))[0]
    assert doc.text == "Plain version of the agenda."


def test_html_only_body_is_converted_and_its_quote_kept_after_it(tmp_path: Path) -> None:
    msg = message(subject="Re: Agenda")
    msg.set_content(
        "<html><body><p>Agreed, see you <b>Monday</b>.</p><p>Second point.</p>"
        '<div class="gmail_quote">On Sun, Ada wrote:<blockquote>Old agenda text.</blockquote></div>'
        "</body></html>",
        subtype="html",
    )
    doc = extract(write_eml(tmp_path, msg))[0]
    at = int(doc.fields[QUOTED_AT])  # the quote follows the reply's own words, its marker gone
    assert doc.text[:at].strip() == "Agreed, see you Monday.\n\nSecond point."
    assert doc.text[at:] == "Old agenda text."


def test_quoted_reply_and_signature_removed(tmp_path: Path) -> None:
    body = (
        "Thursday works for me.\n\n"
        "Let me book the room.\n\n"
        "-- \nAda Lovelace\nAnalytical Engines Ltd\n\n"
        "On Wed, 2 Mar 2023 at 10:00, Grace Hopper <grace@example.org> wrote:\n"
        "> Can we meet on Thursday?\n"
        "> The compiler demo is ready.\n"
    )
    doc = extract(write_eml(tmp_path, message(subject="Re: Meeting", body=body)))[0]
    assert doc.text == "Thursday works for me.\n\nLet me book the room."


def test_outlook_original_message_and_signoff_removed() -> None:
    body = (
        "Numbers attached, two corrections on page 3.\n\n"
        "Best regards,\nJohn\n\n"
        "-----Original Message-----\n"
        "From: Smith, Jane\nSent: Monday, March 6, 2023 9:00 AM\nTo: Doe, John\n"
        "Subject: Q1 numbers\n\nPlease send the Q1 numbers.\n"
    )
    assert clean_body(body) == "Numbers attached, two corrections on page 3."


def test_interleaved_quotes_removed_but_answers_kept() -> None:
    body = "> Is the server up?\nYes, since noon.\n> And the backup?\nRunning tonight.\n"
    assert clean_body(body) == "Yes, since noon.\nRunning tonight."


def test_forward_keeps_forwarded_content_and_the_people_of_its_headers(tmp_path: Path) -> None:
    body = (
        "FYI, see below.\n\n"
        "---------- Forwarded message ---------\n"
        "From: Supplier <sales@supplier.example>\n"
        "Date: Mon, 6 Mar 2023 at 09:00\n"
        "Subject: Price list\n"
        "To: Ada <ada@example.org>\n\n"
        "Prices rise by 4 percent from April.\n"
    )
    doc = extract(write_eml(tmp_path, message(subject="Fwd: Price list", body=body)))[0]
    assert doc.text == (
        "FYI, see below.\n\nFrom: Supplier <sales@supplier.example>\n\nTo: Ada <ada@example.org>\n\n"
        "Prices rise by 4 percent from April."
    )

    outlook = "See the note from legal.\n\n-----Original Message-----\nFrom: Legal\nSent: today\nTo: All\nSubject: Policy\n\nNew retention policy applies from May.\n"
    assert (
        clean_body(outlook, forwarded=True)
        == "See the note from legal.\n\nFrom: Legal\n\nTo: All\n\nNew retention policy applies from May."
    )
    assert clean_body(outlook, forwarded=False) == "See the note from legal."


def test_enron_lotus_forward_marker_spanning_two_lines() -> None:
    body = (
        "FYI\n---------------------- Forwarded by Ina Rangel/HOU/ECT on 12/06/2000 09:54 AM \n"
        "---------------------------\n\n\n"
        "Ina Rangel\n11/28/2000 04:56 PM\n"
        "To: Keith Holst/HOU/ECT@ect, Phillip K Allen/HOU/ECT@ECT, Mike \nGrigsby/HOU/ECT@ECT\ncc:  \n\n"
        "Subject: West Desk Christmas Dinner\n\n"
        "The dinner is at 7 pm at the Rainforest Cafe.\n"
    )
    assert clean_body(body) == (
        "FYI\n\nFrom: Ina Rangel\n\n"
        "To: Keith Holst/HOU/ECT@ect, Phillip K Allen/HOU/ECT@ECT, Mike Grigsby/HOU/ECT@ECT\n\n"
        "The dinner is at 7 pm at the Rainforest Cafe."
    )


def test_forwarded_people_lines_read_lotus_senders_and_outlook_lists() -> None:
    """A Lotus Notes sender before " on <date>", and an Outlook list separated by semicolons
    with "Last, First" names, cut into short lines as a message's own To list is."""
    lotus = (
        "---------------------- Forwarded by Darron C Giron/HOU/ECT on 01/18/2001 \n"
        "01:06 PM ---------------------------\n\n\n"
        '"Yvonne Haynes" <yhaynes@mindspring.com> on 01/18/2001 12:47:37 PM\n'
        'To: "Jennifer Iu" <jenniferiu@yahoo.com>, <dgiron@enron.com>, \n<gbohan@home.com>\ncc:  \n'
        "Subject: Fw: Don't Do It!!!\n\n\nRead this before you buy.\n"
    )
    assert clean_body(lotus) == (
        'From: "Yvonne Haynes" <yhaynes@mindspring.com>\n\n'
        'To: "Jennifer Iu" <jenniferiu@yahoo.com>, <dgiron@enron.com>, <gbohan@home.com>\n\n'
        "Read this before you buy."
    )
    people = "; ".join(f"Person{i}, Ann" for i in range(8))
    outlook = (
        "-----Original Message-----\nFrom: Campbell, Pat [mailto:Pat.Campbell@Nextel.com]\n"
        f"Sent: Tuesday, May 01, 2001 9:05 AM\nTo: {people}\nCc: 'bo@x.example'\nSubject: Coke\n\nFunny.\n"
    )
    assert clean_body(outlook, forwarded=True).split("\n\n") == [
        "From: Campbell, Pat [mailto:Pat.Campbell@Nextel.com]",
        "To: " + ", ".join(f'"Person{i}, Ann"' for i in range(6)),
        'To: "Person6, Ann", "Person7, Ann"',
        "Cc: 'bo@x.example'",
        "Funny.",
    ]
    # a Lotus Notes sender with its date on the same line
    lotus_same_line = (
        "---------------------- Forwarded by Kam Keiser/HOU/ECT on 12/08/2000 10:40 AM ---------------------------\n\n"
        "Kam Keiser 12/08/2000 10:38 AM\nTo: Souad Mahmassani/Corp/Enron@ENRON\ncc:\nSubject: Curves\n\nAttached.\n"
    )
    assert clean_body(lotus_same_line) == "From: Kam Keiser\n\nTo: Souad Mahmassani/Corp/Enron@ENRON\n\nAttached."
    lotus_from = lotus_same_line.replace("Kam Keiser 12/08", "From: Kam Keiser                           12/08")
    assert clean_body(lotus_from) == clean_body(lotus_same_line)


def test_attachments_become_documents(tmp_path: Path) -> None:
    msg = message(subject="Reports", body="Both reports attached.")
    pdf = (SAMPLES / "documents" / "normans.pdf").read_bytes()
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="normans.pdf")
    msg.add_attachment(
        docx_bytes("Quarterly summary.", "Revenue grew."),
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="summary.docx",
    )
    msg.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(64), maintype="image", subtype="png", filename="logo.png")
    msg.add_attachment(b"%PDF-1.4 broken", maintype="application", subtype="pdf", filename="broken.pdf")
    msg.add_attachment(
        b"\x89PNG\r\n\x1a\n" + bytes(64), maintype="image", subtype="png", filename="sig.png", disposition="inline"
    )
    path = write_eml(tmp_path, msg)
    items = list(iter_extract(path))
    docs = [i for i in items if isinstance(i, Document)]
    errors = [i for i in items if isinstance(i, ExtractionError)]
    parent = docs[0]
    assert parent.key == str(path) and parent.text == "Both reports attached."
    assert [(d.key, d.kind, d.parent_key) for d in docs[1:]] == [
        (f"{path}/attachment/1:normans.pdf", "pdf", str(path)),
        (f"{path}/attachment/2:summary.docx", "docx", str(path)),
        (f"{path}/attachment/3:logo.png", "other", str(path)),
    ]
    assert "Rollo's Vikings" in docs[1].text
    assert docs[2].text == "Quarterly summary.\n\nRevenue grew."
    assert docs[2].path == str(path) and docs[2].fields["date"] == parent.fields["date"]
    # The attached image (3) is not read: a document of its name alone, found by it as a file on
    # disk is; the inline one (5, a signature's logo) is none; the broken PDF (4) is an error.
    assert (docs[3].title, docs[3].text, docs[3].fields["filename"]) == ("logo.png", "", "logo.png")
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{path}/attachment/4:broken.pdf: corrupt PDF")
    # extract() keeps what worked and logs the failed attachment.
    assert [d.key for d in extract(path)] == [d.key for d in docs]


def test_attached_message_becomes_an_email_document(tmp_path: Path) -> None:
    inner = message(subject="Original note", body="The warehouse opens at six.", Message_ID="<inner@x>")
    outer = message(subject="Fwd: note", body="Forwarding as attachment.")
    outer.add_attachment(inner)
    docs = extract(write_eml(tmp_path, outer))
    assert [d.kind for d in docs] == ["email", "email"]
    assert docs[1].title == "Original note" and docs[1].text == "The warehouse opens at six."
    assert docs[1].parent_key == docs[0].key and "/attachment/1:" in docs[1].key


def test_unknown_charset_does_not_crash(tmp_path: Path) -> None:
    raw = (
        b"From: a@example.org\nSubject: odd\nMessage-ID: <odd@x>\n"
        b"Content-Type: text/plain; charset=x-no-such-charset\n\nCaf\xe9 ouvert.\n"
    )
    assert extract(write_eml(tmp_path, raw))[0].text == "Café ouvert."


# --------------------------------------------------------------------------- mbox and Maildir


def test_mbox_with_a_malformed_message_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "archive.mbox"
    path.write_bytes(
        b"From ada@example.org Mon Jan  1 00:00:00 2024\n"
        b"From: ada@example.org\nSubject: First\nMessage-ID: <first@x>\n\nFirst body.\n\n"
        b"From junk Mon Jan  1 00:00:00 2024\n"
        b"\x00\x01\x02\x03 binary garbage, no header at all\n\xff\xfe\n\n"
        b"From bob@example.org Mon Jan  1 00:00:00 2024\n"
        b"From: bob@example.org\nSubject: Third\n\nThird body, no Message-ID.\n"
    )
    items = list(iter_mailbox(path))
    assert [type(i).__name__ for i in items] == ["Document", "ExtractionError", "Document"]
    first, bad, third = items
    assert first.key == f"{path}#first@x" and first.path == str(path)
    assert first.fields["mailbox"] == "archive.mbox" and first.text == "First body."
    assert str(bad) == f"{path}#1: malformed message: no header fields"
    assert third.key == f"{path}#2" and third.text == "Third body, no Message-ID."
    assert [d.title for d in extract(path)] == ["First", "Third"]


def test_mbox_without_extension_and_per_message_size_limit(tmp_path: Path) -> None:
    box = mailbox.mbox(str(tmp_path / "Inbox"))
    box.add(message(subject="small", body="short", Message_ID="<s@x>"))
    box.add(message(subject="large", body="long text " * 500, Message_ID="<l@x>"))
    box.add(message(subject="dup", body="same id again", Message_ID="<s@x>"))
    box.flush()
    box.close()
    items = list(iter_extract(tmp_path / "Inbox", max_bytes=2000))
    assert isinstance(items[1], ExtractionError) and "file too large" in items[1].reason
    keys = [i.key for i in items if isinstance(i, Document)]
    assert keys == [f"{tmp_path / 'Inbox'}#s@x", f"{tmp_path / 'Inbox'}#2"]  # repeated id: position


def test_maildir(tmp_path: Path) -> None:
    folder = tmp_path / "Work"
    box = mailbox.Maildir(str(folder), create=True)
    key_read = box.add(message(subject="read one", body="Already read.", Message_ID="<r@x>"))
    box.add(message(subject="new one", body="Not read yet.", Message_ID="<n@x>"))
    read = box.get_message(key_read)
    read.set_subdir("cur")
    read.add_flag("S")
    box[key_read] = read
    no_id = message(subject="no id", body="Missing Message-ID.")
    del no_id["Message-ID"]
    key_no_id = box.add(no_id)
    (folder / "new" / "garbage").write_bytes(b"\x00\x01 not a message\n")
    box.close()
    items = list(iter_mailbox(folder))
    docs = {i.title: i for i in items if isinstance(i, Document)}
    errors = [i for i in items if isinstance(i, ExtractionError)]
    assert set(docs) == {"read one", "new one", "no id"}
    assert docs["read one"].key == f"{folder}#r@x"
    assert docs["read one"].path.startswith(str(folder / "cur"))  # the message file itself
    assert docs["no id"].key == f"{folder}#{key_no_id}"
    assert all(d.fields["mailbox"] == "Work" for d in docs.values())
    assert len(errors) == 1 and str(errors[0]).endswith("garbage: malformed message: no header fields")


def test_sample_mail_stores() -> None:
    mbox_docs = extract(SAMPLES / "mail" / "trading-track.mbox")
    assert len(mbox_docs) == 6
    reply = next(d for d in mbox_docs if d.title.startswith("RE: Dinner"))
    assert reply.text.startswith("Just a reminder that the Trading Track dinner is tomorrow night")
    # the quoted invitation follows the reply's own words; search counts it once, in its own
    # message (engine.search.answers.weigh_quoted)
    at = int(reply.fields[QUOTED_AT])
    assert "cordially invited" not in reply.text[:at] and "cordially invited" in reply.text[at:]
    maildir_docs = extract(SAMPLES / "mail" / "enron-wolfe")
    assert len(maildir_docs) == 6
    assert {d.fields["mailbox"] for d in maildir_docs} == {"enron-wolfe"}
    assert [d.fields["date"] for d in maildir_docs] == sorted(d.fields["date"] for d in maildir_docs)


def test_thanks_inside_the_text_is_not_taken_for_a_signoff() -> None:
    body = "Hi Bob,\n\nThanks, that works.\n\nThe report is late because of the audit.\n\nAnna"
    assert clean_body(body) == body
    assert (
        clean_body("The report is late.\n\nThanks,\nAnna\nACME Corp | +1 555 0100") == "The report is late."
    )


def test_addresses_separated_by_spaces_alone_are_several_people() -> None:
    assert people_of('ann@x.org bob@y.org, "Lee, Ann" <a@x.org>') == ["ann@x.org", "bob@y.org", '"Lee, Ann" <a@x.org>']
    assert addresses("ann@x.org <bob@y.org>") == ["ann@x.org", "bob@y.org"]
    assert people_of("Ann Lee <ann@x.org>") == ["Ann Lee <ann@x.org>"]  # a name and its address: one person
    assert addresses("Team: a@x.org, b@x.org;") == ["a@x.org", "b@x.org"]


@needs_enron
@pytest.mark.needs_data
def test_control_characters_in_a_subject_are_not_shown_as_boxes() -> None:
    """Issue 36, item 10: "Mind\\x01,s Eye Madness" showed a box in the window."""
    doc = extract(ENRON / "wolfe-j" / "all_documents" / "180.")[0]
    assert doc.title == "Mind,s Eye Madness - April 24th - 27th"


def test_windows_quotes_in_a_latin_1_header_read_as_cp1252(tmp_path: Path) -> None:
    raw = b"From: a@b.org\nSubject: =?iso-8859-1?Q?Mind=92s_Eye_=96_tonight?=\n\nHello.\n"
    assert extract(write_eml(tmp_path, raw))[0].title == "Mind\u2019s Eye \u2013 tonight"
    plain = b"From: a@b.org\nSubject: Budget review\n\nHello.\n"  # must not fire on plain text
    assert extract(write_eml(tmp_path, plain, "plain.eml"))[0].title == "Budget review"
