"""The format readers' registry (engine.ingest.readers) and the decoding of text that is not
UTF-8 (issue 40): charset-normalizer guesses the encoding of legacy text, UTF-8 and ASCII never
reach it, cp1252 stays the fallback."""

from __future__ import annotations

from pathlib import Path

import charset_normalizer
import pytest

from engine.ingest import formats, readers
from engine.ingest.extract import extract
from engine.ingest.readers import common, tables
from engine.ingest.readers.common import DETECT_BYTES, decode_text

RUSSIAN = (
    "В начале было слово, и слово было у Бога. Мы пишем этот текст, чтобы проверить, как "
    "программа определяет кодировку файлов, сохранённых в старых системах."
)
JAPANESE = "日本語のテキストです。文字コードの判定を確認します。古いエディタで保存したファイルも読めます。"


def _old_decode(data: bytes) -> str:
    """How text that is not UTF-8 was read before charset-normalizer: cp1252, else latin-1."""
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _one(path: Path):
    (doc,) = extract(path)
    return doc


@pytest.mark.parametrize(
    "text",
    [
        "\u201cSmart quotes\u201d cost \u20ac5 \u2013 it\u2019s the caf\xe9\u2019s cr\xe8me br\xfbl\xe9e.",
        # charset-normalizer's best guess is cp1250 ("crčme"), cp1252 as good: cp1252 wins
        "Caf\xe9 cr\xe8me is served daily at the harbour.",
        "L'\xe9t\xe9 dernier, nous sommes all\xe9s \xe0 la plage pr\xe8s de N\xeemes.",
    ],
    ids=["quotes-euro", "creme", "french"],
)
def test_windows_1252_text_still_reads_right(tmp_path: Path, text: str) -> None:
    path = tmp_path / "menu.txt"
    path.write_bytes(text.encode("cp1252"))
    doc = _one(path)
    assert doc.text == text
    assert doc.fields["encoding"] == "cp1252"
    assert doc.fields["note"] == "not valid UTF-8; decoded as cp1252"


@pytest.mark.parametrize(
    ("text", "encoding"),
    [(RUSSIAN, "cp1251"), (RUSSIAN, "koi8-r"), (JAPANESE, "shift_jis"), (JAPANESE, "euc-jp")],
    ids=["cp1251", "koi8-r", "shift-jis", "euc-jp"],
)
def test_legacy_russian_and_japanese_text_reads_as_its_words(tmp_path: Path, text: str, encoding: str) -> None:
    raw = text.encode(encoding)
    assert _old_decode(raw) != text  # what cp1252 made of it: mojibake
    path = tmp_path / "legacy.txt"
    path.write_bytes(raw)
    doc = _one(path)
    assert doc.text == text
    used = doc.fields["encoding"]
    assert used != "cp1252" and raw.decode(used) == text  # the field names the codec that read it
    assert doc.fields["note"] == f"not valid UTF-8; decoded as {used}"


def test_legacy_markdown_is_decoded_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(f"# Заметки\n\n{RUSSIAN}\n".encode("cp1251"))
    doc = _one(path)
    assert doc.title == "Заметки" and RUSSIAN in doc.text and doc.fields["encoding"] == "cp1251"


def _record_detection(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    seen: list[bytes] = []
    real = charset_normalizer.from_bytes

    def recording(sample: bytes, *a, **k):
        seen.append(sample)
        return real(sample, *a, **k)

    monkeypatch.setattr(charset_normalizer, "from_bytes", recording)
    return seen


@pytest.mark.parametrize(
    "raw",
    [
        b"Plain ASCII text about harbour cranes.\n\nA second paragraph.",
        "Grüße aus Köln – “quoted” €5, 日本語, Привет.".encode(),
        b"\xef\xbb\xbf" + "Grüße aus Köln.".encode(),
        "Grüße aus Köln.".encode("utf-16"),
    ],
    ids=["ascii", "utf-8", "utf-8-bom", "utf-16-bom"],
)
def test_ascii_utf8_and_bom_text_never_reach_detection(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> None:
    seen = _record_detection(monkeypatch)
    text, notes = decode_text(raw, "x.txt")
    assert seen == []
    assert "note" not in notes and notes.get("encoding") in (None, "utf-8-sig", "utf-16")
    assert text.lstrip("\ufeff") == raw.decode("utf-8-sig" if raw[:1] != b"\xff" else "utf-16")


def test_detection_sees_a_bounded_sample_where_the_text_is_not_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long ASCII head says nothing about the encoding: the sample starts near the first
    byte that is not UTF-8, holds at most DETECT_BYTES, and the whole file is decoded."""
    seen = _record_detection(monkeypatch)
    head = b"An ASCII preamble line about nothing in particular.\n" * 4000  # ~200 KB
    body = (RUSSIAN + "\n").encode("cp1251") * 3000  # ~800 KB
    text, notes = decode_text(head + body, "big.txt")
    assert notes["encoding"] == "cp1251" and text == (head + body).decode("cp1251")
    (sample,) = seen
    assert len(sample) <= DETECT_BYTES and sample.count(b"\n") > 100
    assert sample.decode("cp1251").strip("\n").split("\n")[-1] in RUSSIAN  # cut between lines


def test_no_guess_falls_back_to_cp1252_then_latin1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charset_normalizer, "from_bytes", lambda *a, **k: charset_normalizer.CharsetMatches())
    assert decode_text(b"caf\xe9 \x93au lait\x94", "a.txt") == (
        "café “au lait”",
        {"encoding": "cp1252", "note": "not valid UTF-8; decoded as cp1252"},
    )
    # 0x81 is undefined in cp1252
    assert decode_text(b"caf\xe9 au lait, and a line long enough for one odd byte \x81", "b.txt")[1] == {
        "encoding": "latin-1",
        "note": "not valid UTF-8; decoded as latin-1",
    }


def test_binary_without_nul_is_still_refused() -> None:
    blob = bytes(range(1, 256)) * 40
    with pytest.raises(Exception, match="binary data, not text"):
        decode_text(blob, "blob.txt")


# --------------------------------------------------------------------------- the registry


def test_the_registry_is_the_one_statement_of_each_format() -> None:
    kinds = [r.kind for r in readers.READERS]
    assert len(kinds) == len(set(kinds))
    claimed = [ext for r in readers.READERS for ext in r.extensions]
    assert len(claimed) == len(set(claimed)), "an extension claimed by two readers"
    assert all(ext.startswith(".") and ext == ext.lower() for ext in claimed)
    assert not set(claimed) & set(readers.UNSUPPORTED_FORMATS)
    assert {ext: r.kind for r in readers.READERS for ext in r.extensions} == readers.EXTENSION_KINDS
    # every kind is read here, except e-mail (engine.ingest.mail reads it)
    assert set(readers.EXTRACTORS) == set(kinds) - {"email"}
    assert readers.READER_BY_KIND["email"].read is None
    for r in readers.READERS:
        assert r.missing() == [], f"{r.kind} needs {r.missing()}"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"%PDF-1.7\n", "pdf"),
        (b"  {\\rtf1\\ansi hello}", "rtf"),
        (b"\n<!DOCTYPE html><title>x</title>", "html"),
        (b"From: a@b.c\nSubject: hi\n\nbody", "email"),
        (b"just words", "text"),
        (b"PK\x03\x04 damaged", None),
    ],
)
def test_sniffing_asks_the_registry(data: bytes, kind: str | None) -> None:
    assert readers.sniff_kind(data) == kind


def test_formats_keeps_the_old_names_and_patches_reach_the_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in formats.__all__:
        assert hasattr(formats, name), name
    assert formats.sniff_kind is readers.sniff_kind and formats.read_file is common.read_file
    monkeypatch.setattr(formats, "MAX_TABLE_CELLS", 7)
    assert tables.MAX_TABLE_CELLS == 7 and formats.MAX_TABLE_CELLS == 7
    monkeypatch.undo()
    assert tables.MAX_TABLE_CELLS == 200_000
