"""Catalog: change detection on real files, errors, documents, generations, transactions."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engine.catalog.store import Catalog, DocumentRow, MessageRow
from engine.ingest.walk import content_hash


def _scan(root: Path) -> list[tuple[str, int, int]]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out.append((str(p), st.st_size, st.st_mtime_ns))
    return out


@pytest.fixture
def cat(tmp_path: Path):
    c = Catalog(tmp_path / "profile" / "catalog.db")
    yield c
    c.close()


def test_wal_mode_and_schema(cat: Catalog, tmp_path: Path) -> None:
    assert cat.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"sources", "files", "messages", "documents", "generations"} <= set(cat.db.table_names())


def test_sources_are_idempotent(cat: Catalog) -> None:
    a = cat.add_source("/home/ana/docs", "folder", exclude=["*.tmp"])
    assert cat.add_source("/home/ana/docs", "folder", exclude=["*.bak"]) == a
    b = cat.add_source("/home/ana/mail", "mailstore")
    assert [(s.id, s.kind, s.exclude) for s in cat.sources()] == [
        (a, "folder", ["*.bak"]),
        (b, "mailstore", []),
    ]
    cat.mark_source_indexed(a)
    assert cat.get_source(a).last_indexed is not None  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        cat.add_source("/x", "cloud")


def test_change_detection_new_modified_touched_deleted(cat: Catalog, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    for name, text in [("a.txt", "alpha"), ("b.txt", "beta"), ("sub/c.txt", "gamma")]:
        (root / name).write_text(text)
    src = cat.add_source(str(root))
    ch = cat.scan_changes(src, _scan(root), hasher=content_hash)
    assert len(ch.new) == 3 and not (ch.modified or ch.deleted or ch.unchanged)
    cat.mark_pending(src, _scan(root))
    for path, size, mtime in _scan(root):
        cat.mark_indexed(path, src, size, mtime, content_hash(path), sentences=2, generation=1)
    assert cat.counts(src) == {"ok": 3, "error": 0, "pending": 0, "files": 3, "sentences": 6}

    a, b, c = (str(root / n) for n in ("a.txt", "b.txt", "sub/c.txt"))
    (root / "a.txt").write_text("alpha, edited")  # content and size change
    st = os.stat(b)
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # touched only
    (root / "sub/c.txt").unlink()
    (root / "d.txt").write_text("delta")
    ch = cat.scan_changes(src, _scan(root), hasher=content_hash)
    assert ch.new == [str(root / "d.txt")]
    assert ch.modified == [a]
    assert ch.touched == [b]
    assert ch.deleted == [c]
    assert ch.to_index == [str(root / "d.txt"), a]
    # The touched file's new stat was stored: next scan finds it unchanged without hashing.
    ch2 = cat.scan_changes(src, [x for x in _scan(root) if x[0] == b], hasher=None)
    assert ch2.unchanged == [b]

    # Same size and mtime but the catalog says pending (crash mid-indexing): re-queued.
    cat.mark_pending(src, [x for x in _scan(root) if x[0] == b])
    assert cat.scan_changes(src, [x for x in _scan(root) if x[0] == b], hasher=content_hash).modified == [b]


def test_errors_are_recorded_counted_and_retried(cat: Catalog, tmp_path: Path) -> None:
    src = cat.add_source(str(tmp_path))
    f = tmp_path / "broken.pdf"
    f.write_bytes(b"%PDF-garbage")
    st = f.stat()
    cat.record_error(str(f), src, "PdfReadError: EOF marker not found", st.st_size, st.st_mtime_ns)
    errs = cat.errors(src)
    assert [(e.path, e.status, e.last_error) for e in errs] == [
        (str(f), "error", "PdfReadError: EOF marker not found")
    ]
    assert cat.counts()["error"] == 1
    # Unchanged failed files are not retried on every scan...
    assert cat.scan_changes(src, _scan(tmp_path), hasher=content_hash).unchanged == [str(f)]
    # ...but are when they change, or on request.
    assert cat.retry_errors(src) == [str(f)]
    assert cat.file_state(str(f)).status == "pending"  # type: ignore[union-attr]
    cat.mark_indexed(str(f), src, st.st_size, st.st_mtime_ns, None, 4, 1)
    assert cat.errors() == [] and cat.file_state(str(f)).last_error is None  # type: ignore[union-attr]
    assert cat.counts_per_source()[src]["sentences"] == 4


def test_documents_and_messages_follow_their_file(cat: Catalog, tmp_path: Path) -> None:
    src = cat.add_source(str(tmp_path), "mailstore")
    mbox = str(tmp_path / "inbox.mbox")
    cat.mark_indexed(mbox, src, 10, 1, "h", 7, 1)
    old = cat.replace_documents(
        mbox, [DocumentRow("m1", mbox, "mail", "Hi", None, 3), DocumentRow("m2", mbox, "mail")]
    )
    assert old == []
    cat.upsert_messages(
        [
            MessageRow("m1", mbox, "<1@x>", "t1", "a@x", ["b@x"], [], 100, "Hi", "Inbox"),
            MessageRow("m2", mbox, "<2@x>", "t1", "b@x", ["a@x"], ["c@x"], 200, "Re: Hi", "Inbox"),
        ]
    )
    assert [m.key for m in cat.thread("t1")] == ["m1", "m2"]
    assert cat.message("m2").cc_addrs == ["c@x"]  # type: ignore[union-attr]
    assert cat.get_document("m1").n_sentences == 3  # type: ignore[union-attr]
    assert sorted(cat.replace_documents(mbox, [DocumentRow("m1", mbox, "mail")])) == ["m1", "m2"]
    assert [d.key for d in cat.documents(mbox)] == ["m1"]
    assert cat.remove_file(mbox) == ["m1"]
    assert cat.file_state(mbox) is None and cat.message("m1") is None and cat.thread("t1") == []
    cat.mark_indexed(mbox, src, 10, 1, "h", 7, 1)
    cat.replace_documents(mbox, [DocumentRow("m9", mbox, "mail")])
    assert cat.remove_source(src) == ["m9"] and cat.sources() == [] and cat.files() == []


def test_generation_switch_is_atomic_and_unique(cat: Catalog, tmp_path: Path) -> None:
    assert cat.active_generation() is None
    g1 = cat.create_generation("sparc-minilm-l6", "1", str(tmp_path / "g1"))
    g2 = cat.create_generation("sparc-minilm-l6", "1+adapted", str(tmp_path / "g2"))
    assert cat.activate_generation(g1) is None
    assert cat.active_generation().id == g1  # type: ignore[union-attr]
    prev = cat.activate_generation(g2)
    assert prev is not None and prev.id == g1
    assert [(g.id, g.status) for g in cat.generations()] == [(g1, "retired"), (g2, "active")]
    with pytest.raises(KeyError):
        cat.activate_generation(999)
    assert cat.active_generation().id == g2  # type: ignore[union-attr]
    # The database refuses a second active generation even from raw SQL.
    with pytest.raises(sqlite3.IntegrityError):
        cat.db.execute("UPDATE generations SET status = 'active' WHERE id = ?", [g1])
    with pytest.raises(ValueError):
        cat.set_generation_status(g1, "active")
    cat.set_generation_status(g1, "building")
    assert cat.get_generation(g1).status == "building"  # type: ignore[union-attr]


def test_transaction_rolls_back_and_other_connections_see_commits(cat: Catalog, tmp_path: Path) -> None:
    src = cat.add_source(str(tmp_path))
    with pytest.raises(RuntimeError), cat.transaction():
        cat.mark_indexed("/x/1", src, 1, 1, None, 1, 1)
        with cat.transaction():  # nested: joins the outer transaction
            cat.mark_indexed("/x/2", src, 1, 1, None, 1, 1)
        raise RuntimeError("boom")
    assert cat.files() == []
    other = Catalog(cat.path)
    cat.mark_indexed("/x/3", src, 1, 1, None, 1, 1)
    assert [f.path for f in other.files()] == ["/x/3"]
    other.close()
