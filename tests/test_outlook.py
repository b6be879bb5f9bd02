"""Outlook (issue 39, item 1): a .msg file is read as a message (headers, body, attachments as
documents of their own, an attached message too), a .pst/.ost store as mailboxes of messages.

The .msg files are written here: an OLE compound file ([MS-CFB] version 3, ``cfb``) of MAPI
property streams ([MS-OXMSG], ``msg_file``), as Outlook saves them. The stores are real files
from other projects' test data (tests/data/outlook/README.md: where from, and their licences).
"""

from __future__ import annotations

import lzma
import struct
import sys
from datetime import datetime, timezone
from email.message import EmailMessage
from pathlib import Path

import pytest

from engine.ingest.documents import Document, ExtractionError
from engine.ingest.extract import extract, iter_extract
from engine.ingest.outlook import is_msg, lzfu_decompress, read_msg
from engine.ingest.walk import classify, source_kind, walk

DATA = Path(__file__).resolve().parent / "data" / "outlook"

# --------------------------------------------------------------------------- an OLE writer

FREE, END, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
SECTOR, MINI, CUTOFF = 512, 64, 4096


def cfb(tree: dict) -> bytes:
    """An OLE compound file (version 3: 512-byte sectors) holding ``tree``: a name maps to
    bytes (a stream) or to a dict (a storage). Streams under 4 KiB live in the mini stream,
    as the format requires; siblings form a binary search tree (length, then upper case)."""
    entries: list[dict] = [{"name": "Root Entry", "type": 5, "kids": [], "data": b""}]

    def add(node: dict, parent: int) -> None:
        for name, value in node.items():
            entry = {"name": name, "type": 1 if isinstance(value, dict) else 2, "kids": [], "data": b""}
            entries.append(entry)
            entries[parent]["kids"].append(len(entries) - 1)
            if isinstance(value, dict):
                add(value, len(entries) - 1)
            else:
                entry["data"] = value

    add(tree, 0)
    for e in entries:
        e.update(left=NOSTREAM, right=NOSTREAM, child=NOSTREAM, start=END, size=0)

    def balanced(ids: list[int]) -> int:
        if not ids:
            return NOSTREAM
        mid = len(ids) // 2
        entries[ids[mid]]["left"] = balanced(ids[:mid])
        entries[ids[mid]]["right"] = balanced(ids[mid + 1 :])
        return ids[mid]

    for e in entries:
        kids = sorted(e["kids"], key=lambda i: (len(entries[i]["name"]), entries[i]["name"].upper()))
        e["child"] = balanced(kids)

    # the mini stream and its FAT
    mini = bytearray()
    minifat: list[int] = []
    big: list[dict] = []
    for e in entries[1:]:
        if e["type"] != 2:
            continue
        e["size"] = len(e["data"])
        if not e["data"]:
            continue
        if len(e["data"]) < CUTOFF:
            n = -(-len(e["data"]) // MINI)
            e["start"] = len(minifat)
            minifat += [len(minifat) + i + 1 for i in range(n - 1)] + [END]
            mini += e["data"] + b"\0" * (n * MINI - len(e["data"]))
        else:
            big.append(e)

    def sectors(n_bytes: int) -> int:
        return -(-n_bytes // SECTOR)

    n_dir = sectors(len(entries) * 128)
    n_minifat = sectors(len(minifat) * 4)
    n_mini = sectors(len(mini))
    n_big = [sectors(len(e["data"])) for e in big]
    others = n_dir + n_minifat + n_mini + sum(n_big)
    n_fat = 1
    while n_fat * (SECTOR // 4) < n_fat + others:
        n_fat += 1
    assert n_fat <= 109, "only the header's DIFAT is written"
    fat = [FATSECT] * n_fat
    body: list[bytes] = []

    def chain(data: bytes, n: int) -> int:
        if n == 0:
            return END
        start = len(fat)
        fat.extend([start + i + 1 for i in range(n - 1)] + [END])
        body.append(data + b"\0" * (n * SECTOR - len(data)))
        return start

    dir_start_at = len(fat)
    fat.extend([dir_start_at + i + 1 for i in range(n_dir - 1)] + [END])
    dir_index = len(body)
    body.append(b"")  # the directory, written once every start is known
    minifat_start = chain(b"".join(struct.pack("<I", x) for x in minifat), n_minifat)
    entries[0]["start"] = chain(bytes(mini), n_mini) if mini else END
    entries[0]["size"] = len(mini)
    for e, n in zip(big, n_big, strict=True):
        e["start"] = chain(e["data"], n)
    directory = bytearray()
    for e in entries:
        name = e["name"].encode("utf-16-le") + b"\0\0"
        directory += struct.pack(
            "<64sHBBIII16sIQQIQ",
            name,
            len(name),
            e["type"],
            1,  # black
            e["left"],
            e["right"],
            e["child"],
            b"\0" * 16,
            0,
            0,
            0,
            e["start"],
            e["size"],
        )
    directory += b"\0" * (n_dir * SECTOR - len(directory))
    for i in range(len(entries), n_dir * SECTOR // 128):  # unused entries
        struct.pack_into("<III", directory, i * 128 + 68, NOSTREAM, NOSTREAM, NOSTREAM)
    body[dir_index] = bytes(directory)
    fat += [FREE] * (n_fat * SECTOR // 4 - len(fat))
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        b"\0" * 16,
        0x3E,
        3,
        0xFFFE,
        9,
        6,
        b"\0" * 6,
        0,
        n_fat,
        dir_start_at,
        0,
        CUTOFF,
        minifat_start if minifat else END,
        n_minifat,
        END,
        0,
    )
    header += b"".join(struct.pack("<I", i) for i in range(n_fat)) + struct.pack("<I", FREE) * (109 - n_fat)
    fat_bytes = b"".join(struct.pack("<I", x) for x in fat)
    return header + fat_bytes + b"".join(body)


# --------------------------------------------------------------------------- a .msg writer

PT_LONG, PT_BOOLEAN, PT_SYSTIME, PT_STRING8, PT_UNICODE, PT_BINARY = 0x0003, 0x000B, 0x0040, 0x001E, 0x001F, 0x0102


def filetime(when: datetime) -> int:
    return int((when - datetime(1601, 1, 1, tzinfo=timezone.utc)).total_seconds() * 10_000_000)


def properties(props: dict[int, tuple[int, object]], header: bytes) -> dict:
    """A message, recipient or attachment storage: ``props`` maps an id to (type, value); a
    string or binary value becomes its own stream, the others an entry of the property stream."""
    out: dict = {}
    table = bytearray(header)
    for pid, (ptype, value) in props.items():
        tag = (pid << 16) | ptype
        if ptype == PT_UNICODE:
            data = str(value).encode("utf-16-le") + b"\0\0"
        elif ptype == PT_STRING8:
            data = value if isinstance(value, bytes) else str(value).encode("cp1252")
            data += b"\0"
        elif ptype == PT_BINARY:
            data = bytes(value)  # type: ignore[arg-type]
        else:
            number = filetime(value) if ptype == PT_SYSTIME else int(value)  # type: ignore[arg-type]
            table += struct.pack("<IIQ", tag, 6, number)
            continue
        out[f"__substg1.0_{tag:08X}"] = data
        table += struct.pack("<IIII", tag, 6, len(data), 0)
    out["__properties_version1.0"] = bytes(table)
    return out


def msg_storage(
    props: dict[int, tuple[int, object]],
    recipients: list[dict[int, tuple[int, object]]] = (),
    attachments: list[dict[int, tuple[int, object]] | tuple[dict, dict]] = (),
    top: bool = True,
) -> dict:
    """The storages of a message: ``attachments`` are property dicts, or (properties, an
    attached message's storages) for an attached message."""
    counts = struct.pack("<8xIIII", len(recipients), len(attachments), len(recipients), len(attachments))
    tree = properties(props, counts + (b"\0" * 8 if top else b""))
    for i, r in enumerate(recipients):
        tree[f"__recip_version1.0_#{i:08X}"] = properties(r, b"\0" * 8)
    for i, a in enumerate(attachments):
        if isinstance(a, tuple):
            a_props, inner = a
            storage = properties(a_props, b"\0" * 8)
            storage["__substg1.0_3701000D"] = inner
        else:
            storage = properties(a, b"\0" * 8)
        tree[f"__attach_version1.0_#{i:08X}"] = storage
    return tree


def rtf_compressed(rtf: bytes) -> bytes:
    """``rtf`` as PR_RTF_COMPRESSED: literal runs under zero control bytes, then the end marker."""
    body = bytearray()
    for i in range(0, len(rtf), 8):
        body += b"\0" + rtf[i : i + 8]
    write = (207 + len(rtf)) % 4096
    if len(rtf) % 8 == 0:
        body += b"\x01" + struct.pack(">H", write << 4)
    else:  # the marker takes the next item of the last run
        k = len(rtf) % 8
        start = len(body) - k - 1
        body[start] |= 1 << k
        body += struct.pack(">H", write << 4)
    return struct.pack("<IIII", len(body) + 12, len(rtf), 0x75465A4C, 0) + bytes(body)


SENT = datetime(2024, 3, 14, 9, 30, tzinfo=timezone.utc)
BODY = (
    "Hello team,\r\n\r\nThe harbour crane inspection found corrosion on the north jib; the "
    "replacement bolts arrive on Thursday and the crane stays closed until then.\r\n\r\nRegards,\r\nMarta"
)
#: a text attachment over 4 KiB: it lives in ordinary sectors, not the mini stream
MINUTES = "Minutes of the dredging committee.\n\n" + "The silt survey of berth seven shows a depth of nine metres. " * 80


def sample_msg() -> bytes:
    inner = msg_storage(
        {
            0x001A: (PT_UNICODE, "IPM.Note"),
            0x0037: (PT_STRING8, "Tug schedule r\xe9vis\xe9"),  # an ANSI string, code page 1252
            0x3FFD: (PT_LONG, 1252),
            0x0C1A: (PT_UNICODE, "Harbour Office"),
            0x0C1E: (PT_UNICODE, "SMTP"),
            0x0C1F: (PT_UNICODE, "office@harbour.example"),
            0x0039: (PT_SYSTIME, datetime(2024, 3, 1, 8, 0, tzinfo=timezone.utc)),
            # no plain or HTML body: the compressed RTF is all there is
            0x1009: (PT_BINARY, rtf_compressed(rb"{\rtf1\ansi The pilot boat Kestrel sails at dawn on Fridays.\par}")),
        },
        top=False,
    )
    return cfb(
        msg_storage(
            {
                0x001A: (PT_UNICODE, "IPM.Note"),
                0x0037: (PT_UNICODE, "Crane inspection, north jib"),
                0x0C1A: (PT_UNICODE, "Marta Lindqvist"),
                0x0C1E: (PT_UNICODE, "SMTP"),
                0x0C1F: (PT_UNICODE, "marta@harbour.example"),
                0x0E04: (PT_UNICODE, "Ops Team; Lee, Ann"),
                0x0039: (PT_SYSTIME, SENT),
                0x0E06: (PT_SYSTIME, SENT),
                0x1035: (PT_UNICODE, "<crane-42@harbour.example>"),
                0x1000: (PT_UNICODE, BODY),
            },
            recipients=[
                {0x3001: (PT_UNICODE, "Ops Team"), 0x3003: (PT_UNICODE, "ops@harbour.example"), 0x3002: (PT_UNICODE, "SMTP"), 0x0C15: (PT_LONG, 1)},
                {0x3001: (PT_UNICODE, "Lee, Ann"), 0x39FE: (PT_UNICODE, "ann.lee@harbour.example"), 0x3002: (PT_UNICODE, "EX"), 0x3003: (PT_UNICODE, "/O=HARBOUR/CN=ANN"), 0x0C15: (PT_LONG, 1)},
                {0x3001: (PT_UNICODE, "Records"), 0x3003: (PT_UNICODE, "records@harbour.example"), 0x0C15: (PT_LONG, 2)},
            ],
            attachments=[
                {
                    0x3707: (PT_UNICODE, "dredging-minutes.txt"),
                    0x3705: (PT_LONG, 1),
                    0x370E: (PT_UNICODE, "text/plain"),
                    0x3701: (PT_BINARY, MINUTES.encode()),
                },
                {0x3707: (PT_UNICODE, "jib-photo.jpg"), 0x3705: (PT_LONG, 1), 0x3701: (PT_BINARY, b"\xff\xd8\xff" + bytes(50))},
                {  # an inline logo: no document at all
                    0x3707: (PT_UNICODE, "logo.png"),
                    0x3712: (PT_UNICODE, "logo@1"),
                    0x370E: (PT_UNICODE, "image/png"),
                    0x7FFE: (PT_BOOLEAN, 1),
                    0x3701: (PT_BINARY, b"\x89PNG" + bytes(20)),
                },
                ({0x3001: (PT_UNICODE, "Tug schedule"), 0x3705: (PT_LONG, 5)}, inner),
            ],
        )
    )


# --------------------------------------------------------------------------- .msg


def test_the_writer_makes_files_olefile_reads() -> None:
    import olefile

    data = cfb({"small": b"x" * 100, "big": bytes(range(256)) * 40, "box": {"inside": b"hello"}})
    ole = olefile.OleFileIO(data)
    assert ole.openstream("small").read() == b"x" * 100
    assert ole.openstream("big").read() == bytes(range(256)) * 40
    assert ole.openstream("box/inside").read() == b"hello"


def test_compressed_rtf_reads_as_the_specification_says() -> None:
    # [MS-OXRTFCP] section 3.1.1: the example, a reference into the ring's prefix included
    example = bytes.fromhex("2d0000002b0000004c5a4675f1c5c7a703000a007263706731323542320af32068656c090020627705b06c647d0a800fa0")
    assert lzfu_decompress(example) == b"{\\rtf1\\ansi\\ansicpg1252\\pard hello world}\r\n"
    assert lzfu_decompress(rtf_compressed(b"{\\rtf1 abc}")) == b"{\\rtf1 abc}"
    stored = struct.pack("<IIII", 19, 7, 0x414C454D, 0) + b"{\\rtf1}"  # "MELA": not compressed
    assert lzfu_decompress(stored) == b"{\\rtf1}"


def test_a_msg_file_is_a_message_then_its_attachments(tmp_path: Path) -> None:
    path = tmp_path / "crane.msg"
    path.write_bytes(sample_msg())
    assert is_msg(path.read_bytes()) and classify(path) == "file" and source_kind(path) == "mailstore"
    docs = extract(path)
    message = docs[0]
    assert (message.key, message.kind, message.title, message.parent_key) == (str(path), "email", "Crane inspection, north jib", None)
    f = message.fields
    assert f["from"] == "Marta Lindqvist <marta@harbour.example>"
    # the recipient table, an Exchange address replaced by the SMTP one stored beside it
    assert f["to"] == 'Ops Team <ops@harbour.example>, "Lee, Ann" <ann.lee@harbour.example>'
    assert f["cc"] == "Records <records@harbour.example>"
    assert (f["date"], f["message_id"], f["thread"], f["mailbox"]) == (
        "2024-03-14T09:30:00+00:00",
        "crane-42@harbour.example",
        "crane-42@harbour.example",
        tmp_path.name,
    )
    assert "corrosion on the north jib" in message.text and "Regards" not in message.text  # sign-off cut
    by_title = {d.title: d for d in docs[1:]}
    minutes = by_title["dredging-minutes.txt"]
    assert (minutes.kind, minutes.parent_key, minutes.key) == ("text", str(path), f"{path}/attachment/1:dredging-minutes.txt")
    assert minutes.text.startswith("Minutes of the dredging committee.") and len(minutes.text) > 4096
    photo = by_title["jib-photo.jpg"]  # a picture attached is found by its name, as in .eml
    assert (photo.kind, photo.text, photo.fields["filename"]) == ("other", "", "jib-photo.jpg")
    assert "logo.png" not in by_title  # inline and hidden
    inner = by_title["Tug schedule révisé"]  # an ANSI subject, decoded with the message's code page
    assert (inner.kind, inner.parent_key, inner.key) == ("email", str(path), f"{path}/attachment/4:Tug schedule")
    assert inner.fields["from"] == "Harbour Office <office@harbour.example>"
    assert inner.fields["date"] == "2024-03-01T08:00:00+00:00"
    assert "pilot boat Kestrel sails at dawn" in inner.text  # from the compressed RTF body
    assert len(docs) == 4


def test_a_msg_attached_to_an_eml_is_read_as_a_message(tmp_path: Path) -> None:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@x.org", "b@x.org", "fwd: crane"
    msg.set_content("See the attached message.")
    msg.add_attachment(sample_msg(), maintype="application", subtype="vnd.ms-outlook", filename="crane.msg")
    path = tmp_path / "outer.eml"
    path.write_bytes(bytes(msg))
    docs = extract(path)
    attached = [d for d in docs if d.parent_key == str(path)]
    assert attached[0].title == "Crane inspection, north jib" and attached[0].kind == "email"
    assert "corrosion on the north jib" in attached[0].text
    assert any("dredging committee" in d.text for d in docs)


def test_a_damaged_msg_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.msg"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(ExtractionError, match="corrupt Outlook message"):
        extract(path)
    other = tmp_path / "sheet.msg"  # an OLE file, but no message in it
    other.write_bytes(cfb({"Workbook": b"\x09\x08" + bytes(100)}))
    with pytest.raises(ExtractionError, match="not an Outlook message"):
        extract(other)
    with pytest.raises(ValueError):
        read_msg(cfb({"x": b"1"}))


# --------------------------------------------------------------------------- .pst / .ost


def unpack(name: str, dest: Path) -> Path:
    path = dest / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((DATA / name).read_bytes()))
    return path


def test_an_ost_store_is_read_folder_by_folder(tmp_path: Path) -> None:
    pytest.importorskip("pypff")
    path = unpack("pstextractortest.ost.xz", tmp_path)
    assert classify(path) == "outlook" and source_kind(path) == "mailstore"
    assert [p for p in walk(tmp_path)] == [path]
    items = list(iter_extract(path))
    assert not [i for i in items if isinstance(i, ExtractionError)]
    docs = [i for i in items if isinstance(i, Document)]
    messages = [d for d in docs if d.kind == "email" and d.parent_key is None]
    assert len(messages) >= 20 and all(d.path == str(path) for d in docs)
    assert len({d.key for d in docs}) == len(docs)
    by_subject = {d.title: d for d in messages}
    mail = by_subject["text file attachment"]  # received mail: its Internet headers
    assert mail.fields["from"] == "Ed <epfromer@gmail.com>" and mail.fields["mailbox"] == "Inbox"
    assert mail.key == f"{path}#BBDB52E7-75F7-4FA6-994E-4BD56A81C92B@hxcore.ol"
    assert mail.fields["date"].startswith("2021-08-12T20:23")
    attachment = next(d for d in docs if d.parent_key == mail.key)
    assert (attachment.title, attachment.kind, attachment.text) == ("text.txt", "text", "this is a text doc")
    welcome = by_subject["Welcome to your new Outlook.com account"]  # an HTML body
    assert "Welcome to your new Outlook.com account" in welcome.text and "<" not in welcome.text
    sent = next(d for d in messages if d.fields["mailbox"] == "Sent Items")
    assert sent.fields["from"] == "Pst Extractor" and sent.fields["to"] == "epfromer@gmail.com"
    meetings = {d.fields["mailbox"] for d in messages}
    assert {"Inbox", "Sent Items", "Calendar", "Calendar/United States holidays"} <= meetings
    pdf = next(d for d in docs if d.title == "Clinometer Usage.pdf")
    assert "Technical Support" in pdf.text


def test_a_pst_store_reads_its_items_but_not_its_contacts(tmp_path: Path) -> None:
    pytest.importorskip("pypff")
    path = unpack("dist-list.pst.xz", tmp_path)
    docs = extract(path)
    assert [(d.title, d.fields["mailbox"], d.text) for d in docs] == [("Test appointment", "Calendar", "This is a complete test")]


def test_without_libpff_a_store_is_skipped_naming_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "archive.pst"
    path.write_bytes(b"!BDN" + bytes(600))
    monkeypatch.setitem(sys.modules, "pypff", None)  # import fails
    items = list(iter_extract(path))
    assert len(items) == 1 and isinstance(items[0], ExtractionError)
    assert "libpff-python" in items[0].reason and type(items[0]).__name__ == "UnsupportedFormat"


def test_a_damaged_store_is_an_error_naming_the_file(tmp_path: Path) -> None:
    pytest.importorskip("pypff")
    path = tmp_path / "broken.pst"
    path.write_bytes(b"!BDN" + bytes(600))
    items = list(iter_extract(path))
    assert len(items) == 1 and isinstance(items[0], ExtractionError) and items[0].path == str(path)
    assert "cannot read Outlook data file" in items[0].reason


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_the_engine_finds_a_msg_its_attachment_and_a_store(tmp_path: Path) -> None:
    from engine.api.facade import Engine

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crane.msg").write_bytes(sample_msg())
    stores = tmp_path / "stores"
    stores.mkdir()
    have_pff = True
    try:
        import pypff  # noqa: F401
    except ImportError:
        have_pff = False
    if have_pff:
        unpack("pstextractortest.ost.xz", stores)
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([docs, stores])
        top = e.ask("corrosion on the north jib of the harbour crane")[0]
        assert (top.title, top.kind, Path(top.path).name) == ("Crane inspection, north jib", "email", "crane.msg")
        top = e.ask("silt survey of berth seven depth")[0]
        assert top.title == "dredging-minutes.txt"
        top = e.ask("when does the pilot boat Kestrel sail?")[0]
        assert top.title == "Tug schedule révisé"
        if have_pff:
            top = e.ask("clinometer technical support")[0]
            assert top.title == "Clinometer Usage.pdf" and Path(top.path).suffix == ".ost"
