"""The format readers' registry (engine.ingest.readers, issue 40)."""

from __future__ import annotations

import pytest

from engine.ingest import formats, readers
from engine.ingest.readers import common, tables

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
