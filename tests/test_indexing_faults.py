"""One bad file never stops the indexer (issue 35): each fault of the third reliability
campaign, on real files and real processes.

* a 6 MB line without a full stop costs a bounded number of sentences and linear context;
* a lone surrogate in a mail header, or any document whose batch fails to encode, is
  narrowed to its document, recorded with the reason, and the run (and every rerun) goes on;
* ``remove`` killed at each of its steps is finished by the next open;
* a link to a FIFO is listed in status as skipped, with the reason;
* an mbox is read without ever being opened for writing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_faults import _cli
from test_pipeline import census, kill_at_step, write

from engine.api.facade import REMOVE_INDEXED, REMOVE_JOURNALED, Engine
from engine.catalog.store import Catalog
from engine.indexer.prepare import MAX_CONTEXT_CHARS, prepare
from engine.ingest.documents import Document
from engine.ingest.mail import ReadOnlyMbox, iter_mailbox
from engine.ingest.segment import MAX_PIECES, MAX_SENTENCE_CHARS
from engine.model.encoder import SparseEncoder


def _errors(home: Path) -> dict[str, str]:
    st = _cli(home, "status", "--json")
    assert st.returncode == 0, st.stderr
    return {e["path"]: e["reason"] for e in json.loads(st.stdout)["errors"]}


# --------------------------------------------------------------------------- one huge line


def test_a_six_megabyte_line_is_cut_into_few_sentences_with_bounded_context() -> None:
    """The campaign's ``'w ' * 3_000_000``: ~3,000 pieces in one passage, each with all the
    others as context (18 GB of strings). Now at most MAX_PIECES pieces, each context at
    most MAX_CONTEXT_CHARS, and a note saying what was left to the document index."""
    text = "Otters hold hands while they sleep.\n\n" + "w " * 3_000_000
    doc = Document("/x/one-line.txt", "/x/one-line.txt", "text", "one-line", text)
    p = prepare(doc, {})
    assert len(p.sentences) <= MAX_PIECES + 3  # the first sentence, the pieces, the name line
    assert max(len(c) for c in p.contexts) <= MAX_CONTEXT_CHARS
    assert sum(len(r.passage) for r in p.records) < 40 * MAX_SENTENCE_CHARS * MAX_PIECES
    assert p.notes and "found by their words only" in p.notes[0]
    assert p.sentences[0] == "Otters hold hands while they sleep."


def test_a_short_document_is_cut_as_before() -> None:
    """The cap must not fire on ordinary text: every sentence, contexts of the whole passage."""
    text = "Owls hunt at night. They fly without a sound. Mice fear them."
    p = prepare(Document("/x/owls.txt", "/x/owls.txt", "text", "owls", text), {})
    assert p.sentences[:3] == ["Owls hunt at night.", "They fly without a sound.", "Mice fear them."]
    assert p.contexts[0] == "They fly without a sound. Mice fear them."
    assert not p.notes


def test_the_huge_line_is_indexed_in_one_run_and_its_note_listed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "one-line.txt").write_text("Beavers build dams of mud and sticks.\n\n" + "w " * 2_900_000)
    write(src / "owls.txt", "Owls hunt at night over the fields.")
    home = tmp_path / "home"
    r = _cli(home, "index", str(src), "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    errors = _errors(home)
    assert "without a sentence end" in errors[str(src / "one-line.txt")]
    ask = _cli(home, "ask", "what do beavers build dams of?", "--json", "--top", "1")
    assert json.loads(ask.stdout)["answers"][0]["path"] == str(src / "one-line.txt")


# --------------------------------------------------------------------------- encoding faults


def test_a_lone_surrogate_in_a_mail_header_does_not_stop_the_run(tmp_path: Path) -> None:
    """An address header with a raw 8-bit byte that no parser accepts came out of the mail
    reader holding a lone surrogate ('mark.fisher\\udc97enron.com'); the tokenizer raised
    TypeError for the whole batch and the run ended, at the same file on every rerun."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "bad.eml").write_bytes(
        b"From: mark.fisher\x97enron.com\nTo: ann@x.org\nSubject: herons\n\nThe heron waits by the pond.\n"
    )
    # a .txt with the UTF-8 bytes of a surrogate, in its text and in its name
    (src / os.fsdecode(b"bad-\xed\xb3\xbf-\xff.txt")).write_bytes(b"The crane waits \xed\xb3\xbf by the lake.\n")
    write(src / "owls.txt", "Owls hunt at night over the fields.")
    home = tmp_path / "home"
    for _ in range(2):  # and the rerun
        r = _cli(home, "index", str(src), "-q", "--threads", "1")
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
    assert "not valid Unicode were replaced" in _errors(home)[str(src / "bad.eml")]
    with Engine(home=home, threads=1) as e:
        assert e.status()["files"] == 3
        assert e.ask("where does the heron wait?", top=1)[0].path == str(src / "bad.eml")
        assert e.ask("where does the crane wait?", top=1)[0].path.endswith(".txt")
        census(e)


def test_a_document_that_fails_to_encode_is_left_out_and_the_rest_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes a batch fail in the encoder (here: a sentence the tokenizer is made to
    reject, as it rejected lone surrogates), the batch is encoded document by document; the
    failing one is recorded with its reason, the others of its batch and its unit are indexed."""
    real = SparseEncoder.encode

    def picky(self, sentences, *args, **kwargs):  # type: ignore[no-untyped-def]
        if any("poison" in s for s in sentences):
            raise TypeError("TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]")
        return real(self, sentences, *args, **kwargs)

    monkeypatch.setattr(SparseEncoder, "encode", picky)
    src = tmp_path / "src"
    write(src / "bad.txt", "This sentence holds poison for the tokenizer.")
    write(src / "owls.txt", "Owls hunt at night over the fields.")
    write(src / "bats.txt", "Bats sleep upside down in caves.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        for _ in range(2):
            result = e.index([src])
            assert result.phase == "done"
            assert e.ask("where do bats sleep?", top=1)[0].path == str(src / "bats.txt")
            assert e.ask("when do owls hunt?", top=1)[0].path == str(src / "owls.txt")
            errors = {x.path: x.reason for x in e.errors()}
            assert "could not be encoded (TypeError" in errors[str(src / "bad.txt")]
            census(e)  # the catalog claims no sentence of the dropped document
        with Catalog(home / "catalog.sqlite") as cat:
            assert [d.n_sentences for d in cat.documents(str(src / "bad.txt"))] == []


# --------------------------------------------------------------------------- remove, killed


def _remove_killed_at(tmp_path: Path, step: str) -> tuple[Path, Path, Path]:
    """Two sources indexed, then a real ``sparcdesk remove`` of the second killed at ``step``:
    the source kept, the source removed, the data folder."""
    keep, gone = tmp_path / "keep", tmp_path / "gone"
    write(keep / "owls.txt", "Owls hunt at night over the fields.")
    write(gone / "bats.txt", "Bats sleep upside down in caves.")
    write(gone / "newts.txt", "Newts breathe through their damp skin.")
    home = tmp_path / "home"
    assert _cli(home, "index", str(keep), str(gone), "-q", "--threads", "1").returncode == 0
    kill_at_step(["-m", "engine.cli.main", "remove", str(gone)], step, {"SPARCDESK_HOME": str(home)})
    return keep, gone, home


@pytest.mark.parametrize("step", [REMOVE_JOURNALED, REMOVE_INDEXED])
def test_remove_killed_at_each_step_is_finished_by_the_next_open(tmp_path: Path, step: str) -> None:
    """Before: a kill between the index commit and the catalog commit left a source whose
    documents were gone from the index while status still counted them (534 against 486)."""
    keep, gone, home = _remove_killed_at(tmp_path, step)
    r = _cli(home, "index", "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    with Engine(home=home, threads=1) as e:
        census(e)
        st = e.status()
        assert [s.path for s in e.sources()] == [str(keep)]
        assert st["files_ok"] == 1
        assert not any(a.path.startswith(str(gone)) for a in e.ask("where do bats sleep?"))
        assert e.ask("when do owls hunt?", top=1)[0].path == str(keep / "owls.txt")


def test_remove_killed_is_finished_by_opening_alone(tmp_path: Path) -> None:
    keep, gone, home = _remove_killed_at(tmp_path, REMOVE_JOURNALED)
    with Engine(home=home, threads=1) as e:
        census(e)
        assert not any(a.path.startswith(str(gone)) for a in e.ask("where do bats sleep?"))
    with Catalog(home / "catalog.sqlite") as cat:
        assert cat.db.execute("SELECT COUNT(*) FROM index_journal").fetchone()[0] == 0


# --------------------------------------------------------------------------- special files


def test_a_link_to_a_fifo_is_listed_as_skipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "owls.txt", "Owls hunt at night over the fields.")
    os.mkfifo(src / "fifo")
    os.symlink("fifo", src / "fifo.txt")
    home = tmp_path / "home"
    r = _cli(home, "index", str(src), "-q", "--threads", "1", timeout=120)
    assert r.returncode == 0, r.stderr
    st = json.loads(_cli(home, "status", "--json").stdout)
    listed = {e["path"]: e for e in st["errors"]}
    entry = listed[str(src / "fifo.txt")]
    assert entry["skipped"] and "FIFO" in entry["reason"] and "-> fifo" in entry["reason"]
    assert str(src / "fifo") not in listed  # the FIFO itself is no document: not listed
    assert st["files_ok"] == 1


# --------------------------------------------------------------------------- mail stores read-only


def _flags(fd: int) -> int:
    """The open flags of ``fd`` as the kernel holds them (Linux: /proc/self/fdinfo)."""
    for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8)
    raise AssertionError("no flags line")


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="needs Linux's /proc/self/fdinfo")
def test_an_mbox_is_opened_read_only_and_left_unchanged(tmp_path: Path) -> None:
    mbox = tmp_path / "archive.mbox"
    mbox.write_bytes(
        b"From ann@x.org Tue Mar 13 10:00:00 2001\nFrom: ann@x.org\nSubject: otters\n\nOtters hold hands.\n\n"
        b"From bob@x.org Tue Mar 13 11:00:00 2001\nFrom: bob@x.org\nSubject: bats\n\nBats sleep in caves.\n"
    )
    before = (mbox.stat().st_mtime_ns, mbox.read_bytes())
    box = ReadOnlyMbox(str(mbox))
    try:
        assert _flags(box._file.fileno()) & os.O_ACCMODE == os.O_RDONLY
        assert len(box.keys()) == 2
    finally:
        box.close()
    docs = [d for d in iter_mailbox(mbox) if isinstance(d, Document)]
    assert {d.fields["subject"] for d in docs} == {"otters", "bats"}
    home = tmp_path / "home"
    assert _cli(home, "index", str(mbox), "-q", "--threads", "1").returncode == 0
    assert (mbox.stat().st_mtime_ns, mbox.read_bytes()) == before


def test_every_view_counts_problem_files_the_same_way(tmp_path: Path) -> None:
    """Issue 36, item 9: the status bar said "2 unreadable", the Sources dialog "3 could not
    be read, 1 skipped", `sparcdesk status` "2 errors" then "problems (3)". One definition
    (FileError.kind) now: could not be read, skipped, or read with a note."""
    src = tmp_path / "src"
    write(src / "owls.txt", "Owls hunt at night over the fields.")
    (src / "blob.txt").write_bytes(b"bad\x00\x00binary")  # could not be read
    (src / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 600)  # a format not read: skipped
    (src / "latin.txt").write_bytes(b"caf\xe9 au lait.")  # read, with a note (decoded as cp1252)
    os.mkfifo(src / "fifo")
    os.symlink("fifo", src / "fifo.txt")  # skipped
    home = tmp_path / "home"
    assert _cli(home, "index", str(src), "-q", "--threads", "1").returncode == 0
    st = json.loads(_cli(home, "status", "--json").stdout)
    kinds = sorted((Path(e["path"]).name, e["kind"]) for e in st["errors"])
    assert kinds == [("blob.txt", "unreadable"), ("fifo.txt", "skipped"), ("latin.txt", "note"), ("old.doc", "skipped")]
    assert st["files_error"] == 1 and st["files_skipped"] == 2
    assert [s["errors"] for s in st["sources"]] == [1]
    text = _cli(home, "status").stdout
    assert "1 could not be read" in text and "could not be read (1)" in text
    assert "skipped (2)" in text and "read, with a note (1)" in text


def test_a_repeated_context_free_sentence_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign's mbox of 10,000 empty messages is 10,000 copies of one header line: the
    encoder runs its graph for it once (VectorCache); a sentence with context is not cached."""
    enc = SparseEncoder(threads=1)
    calls: list[int] = []
    real = enc._run

    def counting(sentences, contexts):  # type: ignore[no-untyped-def]
        calls.append(len(sentences))
        return real(sentences, contexts)

    monkeypatch.setattr(enc, "_run", counting)
    lines = ["From: x@y"] * 50 + ["To: ann@x.org"]
    vectors = enc.encode(lines, [""] * len(lines))
    assert sum(calls) == 2 and all(v is vectors[0] for v in vectors[:50])
    calls.clear()
    again = enc.encode(["From: x@y", "Owls hunt at night."], ["", "Owls hunt at night."])
    assert sum(calls) == 1 and again[0] is vectors[0]  # the header line from the cache


def test_the_vector_cache_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARCDESK_VECTOR_CACHE_MB", "0")
    enc = SparseEncoder(threads=1)
    calls: list[int] = []
    real = enc._run
    monkeypatch.setattr(enc, "_run", lambda s, c: calls.append(len(s)) or real(s, c))
    enc.encode(["From: x@y"] * 8, [""] * 8)
    assert sum(calls) == 8  # every sentence encoded, as before the cache
