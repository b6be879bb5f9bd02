"""The indexing pipeline on small real files: incremental runs, mail stores, attachments,
progress, cancel and pause, batched commits, crash repair, model changes, sources.

``census`` (used by other test modules too) checks the index against the catalog: every
indexed sentence belongs to a catalog document, no sentence is there twice, and each
document holds exactly the sentences the segmenter cuts from its text.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from email.message import EmailMessage
from pathlib import Path

import pytest

from engine.api.facade import Engine, SearchFilters
from engine.catalog.store import Catalog
from engine.catalog.texts import TextStore
from engine.home import crashpoints
from engine.index.docindex import mail_header_lines
from engine.index.sentences import SentenceIndex
from engine.indexer import commit
from engine.indexer.prepare import has_name_line
from engine.ingest.extract import extract
from engine.ingest.segment import passages_of
from engine.ingest.walk import Rules, unit_for
from engine.model.encoder import default_bundle_dir

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- helpers


def kill_at_step(args: list[str], step: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``python *args`` (in the repository, ``env`` added to this environment) paused at the
    crash point ``step`` (engine.home.crashpoints) and SIGKILL it there; returns the stderr
    lines it wrote before the announcement. Fails the test, with what the process wrote, if it
    ends without reaching the step."""
    announce = f"{crashpoints.ANNOUNCE}{step}"
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}), **{crashpoints.ENV: step}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        for line in proc.stderr:  # blocks until the step is announced or the process ends
            if line.strip() == announce:
                break
            seen.append(line)
        else:
            out, _ = proc.communicate()
            pytest.fail(f"{args} never reached {step}: {''.join(seen)[-2000:]}{out[-1000:]}")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    return seen


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def n_sentences(text: str, kind: str = "text") -> int:
    return sum(len(p) for p in passages_of(text, kind))


def expected_sentences(unit: Path) -> dict[str, int]:
    """Sentences per document key of a unit, by extracting and segmenting it (plus an
    e-mail's header lines and a file's name line, which are indexed as sentences too)."""
    return {
        d.key: n_sentences(d.text, d.kind)
        + (len(mail_header_lines(d.fields)) if d.kind == "email" else 0)
        + has_name_line(d)
        for d in extract(unit)
    }


def census(engine: Engine) -> dict[str, list[tuple[int, int, str]]]:
    """(start, end, header line) of every indexed sentence per document (an e-mail's header
    lines have no place in its text: (0, 0, "From: ann@x.org"), a long list's lines apart by
    their text); asserts index == catalog."""
    cat = Catalog(engine.layout.catalog)
    try:
        gen = cat.active_generation()
        if gen is None or not (Path(gen.index_dir) / "meta.json").exists():
            return {}
        ix = SentenceIndex.open(gen.index_dir)
        spans: dict[str, list[tuple[int, int, str]]] = {}
        total = 0
        for f in cat.files():
            if f.status == "pending":
                assert not cat.documents(f.path), f"documents of a pending file: {f.path}"
                continue
            if f.status == "error":  # content not read: at most its name line is indexed
                assert all(d.n_sentences <= 1 for d in cat.documents(f.path)), f"text of a failed file: {f.path}"
            file_total = 0
            for d in cat.documents(f.path):
                ids = ix.document_sentence_ids(d.key)
                fields = ix.get(ids)
                got = sorted(
                    (fields[i]["start"], fields[i]["end"], fields[i]["text"] if fields[i].get("field") else "")
                    for i in ids
                )
                assert len(got) == len(set(got)), f"duplicate sentences in {d.key}"
                assert len(got) == d.n_sentences, f"{d.key}: {len(got)} indexed, catalog says {d.n_sentences}"
                spans[d.key] = got
                file_total += len(got)
            assert file_total == f.sentences, f.path
            total += file_total
        # A cancelled or crashed run may have committed sentences of a unit it did not
        # finish: the journal owns them until the next run redoes the unit.
        owned = {k for ks in spans for k in [ks]}
        journal = cat.db.execute("SELECT key FROM index_journal").fetchall()
        total += sum(len(ix.document_sentence_ids(k)) for (k,) in journal if k not in owned)
        assert ix.num_sentences == total, "sentences in the index that no catalog document owns"
        return spans
    finally:
        cat.close()


def assert_complete(engine: Engine, units: list[Path]) -> None:
    spans = census(engine)
    for unit in units:
        for key, n in expected_sentences(unit).items():
            assert len(spans.get(key, [])) == n, key


def mail_bytes(
    subject: str, body: str, sender: str = "alice@example.com", msgid: str = "", attach=None
) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Alice Example <{sender}>"
    msg["To"] = "bob@example.com"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 13 Mar 2001 10:00:00 -0000"
    msg["Message-ID"] = f"<{msgid or subject.replace(' ', '.')}@example.com>"
    msg.set_content(body)
    if attach:
        name, content = attach
        msg.add_attachment(content.encode(), maintype="text", subtype="plain", filename=name)
    return bytes(msg)


#: A message from ``mail_bytes`` is also indexed as its From, To and Subject lines.
HEADER_LINES = 3


def mbox_text(messages: list[bytes]) -> bytes:
    out = b""
    for m in messages:
        out += b"From alice@example.com Tue Mar 13 10:00:00 2001\n" + m.replace(b"\r\n", b"\n") + b"\n"
    return out


@pytest.fixture()
def engine(tmp_path: Path):
    e = Engine(home=tmp_path / "home", threads=1)
    yield e
    e.close()


# --------------------------------------------------------------------------- incremental


def test_incremental_modify_touch_rename_delete(engine: Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    a = write(docs / "a.txt", "The aardvark digs burrows at night. It eats ants and termites.")
    b = write(
        docs / "sub" / "b.md", "# Bees\n\nHoney bees dance to point at flowers.\n\nThe queen lays eggs."
    )
    c = write(docs / "c.txt", "Cormorants dive for fish in cold water.")
    p = engine.index([docs])
    assert (p.phase, p.files_done, p.files_total) == ("done", 3, 3)
    # the Markdown heading "Bees" is a sentence too, and so is each file's name line
    assert p.sentences_done == 6 + 3
    assert_complete(engine, [a, b, c])
    assert engine.sources()[0].files == 3 and engine.sources()[0].sentences == 6 + 3

    p = engine.index()
    assert (p.files_done, p.sentences_done) == (0, 0)

    write(a, "The aardvark digs burrows at night. It eats ants and termites. Zebras graze nearby.")
    p = engine.index()
    assert (p.files_done, p.sentences_done) == (1, 3 + 1)  # only a.txt re-encoded (and its name)
    assert "Zebras graze nearby." in [x.best.sentence for x in engine.ask("zebras graze", top=3, hybrid=True)]

    os.utime(c, (time.time() + 5, time.time() + 5))  # touched, same bytes
    p = engine.index()
    assert (p.files_done, p.sentences_done) == (0, 0)

    b2 = b.with_name("bees.md")
    b.rename(b2)
    p = engine.index()
    assert p.files_done == 1
    hits = engine.ask("honey bees dance", top=3, hybrid=True)
    assert hits[0].path == str(b2) and all(h.path != str(b) for h in hits)

    c.unlink()
    engine.index()
    assert all(h.path != str(c) for h in engine.ask("cormorants dive for fish", top=5, hybrid=True))
    assert_complete(engine, [a, b2])
    assert {f.path for f in Catalog(engine.layout.catalog).files()} == {str(a), str(b2)}


def test_index_one_file_inside_a_source(engine: Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    a = write(docs / "a.txt", "Alpacas hum softly.")
    b = write(docs / "b.txt", "Badgers sleep in setts.")
    engine.index([docs])
    write(a, "Alpacas hum softly. They live in the Andes.")
    write(b, "Badgers sleep in setts. They are changed too.")
    p = engine.index([a])  # a path inside a source: only that unit
    assert (p.files_done, p.sentences_done) == (1, 2 + 1)  # with its name line
    assert len(engine.sources()) == 1
    assert engine.index().files_done == 1  # b.txt is still to do


def test_excludes_and_ignore_files(engine: Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    keep = write(docs / "keep.txt", "Kept text about koalas.")
    write(docs / "drafts" / "skip.txt", "Skipped text about skunks.")
    write(docs / "notes.log.txt", "Logged text about lemurs.")
    write(docs / "private" / ".sparcdeskignore", "# keep out\nsecret*\n")
    write(docs / "private" / "secret.txt", "Secret text about sloths.")
    write(docs / "private" / "open.txt", "Open text about otters.")
    engine.add_source(docs, exclude=["drafts", "*.log.txt"])
    engine.index()
    paths = {f.path for f in Catalog(engine.layout.catalog).files()}
    assert paths == {str(keep), str(docs / "private" / "open.txt")}
    assert Rules(docs, ["drafts"]).allows(docs / "private" / "open.txt")
    assert not Rules(docs, ["drafts"]).allows(docs / "drafts" / "new.txt")
    assert not Rules(docs, []).allows(docs / "private" / "secret2.txt")
    assert not Rules(docs, []).allows(docs / ".hidden" / "x.txt")


# --------------------------------------------------------------------------- mail


def test_mbox_append_and_remove_reencode_only_changed_messages(engine: Engine, tmp_path: Path) -> None:
    box = tmp_path / "mail" / "inbox.mbox"
    box.parent.mkdir()
    m1 = mail_bytes("Budget review", "The budget review is on Friday. Bring the spreadsheets.")
    m2 = mail_bytes("Ski trip", "The ski trip leaves at dawn.")
    box.write_bytes(mbox_text([m1, m2]))
    p = engine.index([box])
    assert p.sentences_done == 3 + 2 * HEADER_LINES
    assert engine.sources()[0].kind == "mailstore"
    m3 = mail_bytes("Harbour picnic", "The harbour picnic starts at noon. Bring a hat. Sunscreen helps.")
    box.write_bytes(mbox_text([m1, m2, m3]))
    p = engine.index()
    assert (p.files_done, p.sentences_done) == (1, 3 + HEADER_LINES)  # only the new message was encoded
    assert_complete(engine, [box])
    cat = Catalog(engine.layout.catalog)
    key3 = f"{box}#Harbour.picnic@example.com"
    assert cat.message(key3).subject == "Harbour picnic"
    assert cat.message(key3).from_addr.endswith("<alice@example.com>")

    box.write_bytes(mbox_text([m1, m3]))  # the ski trip message was deleted
    p = engine.index()
    assert p.sentences_done == 0
    assert cat.message(f"{box}#Ski.trip@example.com") is None
    assert all(
        "ski trip" not in a.best.sentence.lower() for a in engine.ask("ski trip at dawn", top=5, hybrid=True)
    )
    assert_complete(engine, [box])
    cat.close()


def test_maildir_new_message_and_attachment_subdocument(engine: Engine, tmp_path: Path) -> None:
    md = tmp_path / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (md / sub).mkdir(parents=True)
    (md / "new" / "1000.M1.host").write_bytes(mail_bytes("Quarterly plan", "The quarterly plan is approved."))
    engine.index([md])
    note = "The warehouse inventory lists forty crates of lemons."
    (md / "new" / "1001.M2.host").write_bytes(
        mail_bytes(
            "Inventory", "See the attached inventory.", sender="carol@example.com", attach=("inv.txt", note)
        )
    )
    p = engine.index()
    # the new message (its sentence and header lines) and its attachment (its sentence and
    # its file name line), not the first message
    assert p.sentences_done == 1 + HEADER_LINES + 1 + 1
    assert_complete(engine, [md])
    answers = engine.ask(
        "How many crates of lemons?", top=3, filters=SearchFilters(sender="carol@example.com")
    )
    assert answers and answers[0].best.sentence == note
    att = answers[0]
    assert att.kind == "text" and att.doc_key.endswith("/attachment/1:inv.txt")
    assert att.fields["attachment_of"] == f"{md}#Inventory@example.com"
    assert att.fields["mailbox"] == "Maildir" and att.path == str(md / "new" / "1001.M2.host")
    assert unit_for(md / "new" / "1001.M2.host") == md
    by_box = engine.ask("quarterly plan", top=5, filters=SearchFilters(mailbox="maildir", kinds=["email"]))
    assert by_box and all(a.kind == "email" for a in by_box)


# --------------------------------------------------------------------------- progress, cancel, pause


def _corpus(folder: Path, n: int) -> list[Path]:
    return [
        write(
            folder / f"note{i:03d}.txt", f"Note {i} is about topic {i}. It has a second sentence number {i}."
        )
        for i in range(n)
    ]


def test_progress_cancel_then_resume_without_duplicates(engine: Engine, tmp_path: Path) -> None:
    files = _corpus(tmp_path / "notes", 24)
    cancel = threading.Event()
    seen = []

    def progress(p) -> None:
        seen.append(p)
        if p.files_done >= 4:
            cancel.set()

    engine.commit_every = 4  # commits while running, so the cancel lands between commits
    engine.add_source(tmp_path / "notes")
    first = engine.index(progress=progress, cancel=cancel)
    assert first.phase == "cancelled" and 4 <= first.files_done < 24
    assert {p.phase for p in seen} >= {"indexing", "cancelled"}
    running = [p for p in seen if p.phase in ("indexing", "committing")]
    assert running and all(p.files_total == 24 for p in running)
    assert any(p.eta_s is not None and p.eta_s > 0 and p.rate > 0 for p in running)
    census(engine)
    second = engine.index()
    assert second.phase == "done" and second.files_done + first.files_done >= 24
    assert_complete(engine, files)


def test_pause_then_resume(engine: Engine, tmp_path: Path) -> None:
    """A run started paused reports "paused" before its first file and holds there until
    the pause is lifted, then completes."""
    files = _corpus(tmp_path / "notes", 6)
    pause = threading.Event()
    pause.set()
    seen: list = []
    paused = threading.Event()
    finished: list = []

    def progress(p) -> None:
        seen.append(p)
        if p.phase == "paused":
            paused.set()

    worker = threading.Thread(
        target=lambda: finished.append(engine.index([tmp_path / "notes"], progress=progress, pause=pause))
    )
    worker.start()
    try:
        assert paused.wait(timeout=120), [p.phase for p in seen]
        assert worker.is_alive() and not finished  # held by the pause
        assert next(p for p in seen if p.phase == "paused").files_done == 0
    finally:
        pause.clear()
        worker.join(timeout=300)
    assert not worker.is_alive() and finished and finished[0].phase == "done"
    assert finished[0].files_done == 6
    assert_complete(engine, files)


def test_commits_in_batches(engine: Engine, tmp_path: Path) -> None:
    files = _corpus(tmp_path / "notes", 10)
    engine.commit_every = 6
    phases: list[str] = []
    engine.index([tmp_path / "notes"], progress=lambda p: phases.append(p.phase))
    commits = phases.count("committing")  # reported once per commit
    assert commits >= 3  # 20 sentences, every 6, plus the last
    assert_complete(engine, files)


# --------------------------------------------------------------------------- crash repair


# A run of sparcdesk killed (SIGKILL) at one step of its first commit, a crash point of
# engine.indexer.commit: just before the index commit (the journal already names the units),
# or right after it, before the catalog records the finished units.
INDEX_ALL = (
    "import sys\n"
    "from pathlib import Path\n"
    "from engine.api.facade import Engine\n"
    "Engine(home=Path(sys.argv[1]), threads=1).index()\n"
    "print('not paused')\n"
)


@pytest.mark.parametrize("step", [commit.INDEXED, commit.JOURNALED])
def test_kill_between_commit_steps_is_repaired(engine: Engine, tmp_path: Path, step: str) -> None:
    """A real indexing process killed between the journal, the index commit and the catalog
    update leaves a state the next run repairs with no duplicate or lost sentence."""
    files = _corpus(tmp_path / "notes", 5)
    engine.index([tmp_path / "notes"])
    for f in files[:3]:
        write(f, f.read_text() + " A third sentence was added.")
    write(tmp_path / "notes" / "new.txt", "A new file arrived. It has two sentences.")

    kill_at_step(["-c", INDEX_ALL, str(engine.layout.home)], step)
    store = TextStore(Catalog(engine.layout.catalog))
    assert store.journal_units()  # the journal knows what may be in the index
    with Engine(home=engine.layout.home, threads=1) as again:  # the next run, a new process's
        p = again.index()
        assert p.files_done == 4
        assert_complete(again, [*files, tmp_path / "notes" / "new.txt"])
    assert not store.journal_units()


# --------------------------------------------------------------------------- generations, sources


def test_model_change_builds_a_new_generation(engine: Engine, tmp_path: Path) -> None:
    files = _corpus(tmp_path / "notes", 3)
    engine.index([tmp_path / "notes"])
    old = Catalog(engine.layout.catalog).active_generation()
    bundle = tmp_path / "bundle"
    shutil.copytree(default_bundle_dir(), bundle)
    cfg = json.loads((bundle / "config.json").read_text())
    cfg["version"] = "9.9.9"
    (bundle / "config.json").write_text(json.dumps(cfg))
    with Engine(home=engine.layout.home, bundle_dir=bundle, threads=1) as e2:
        assert e2.status()["rebuilding"]
        assert e2.ask("topic 1", top=1)  # the old generation still answers
        p = e2.index()
        assert p.files_done == 3
        new = Catalog(e2.layout.catalog).active_generation()
        assert new.id != old.id and new.model_version.startswith("9.9.9+")
        assert Path(old.index_dir).exists()  # kept: the previous model can be restored
        assert e2.status()["adapted_model"]["previous"]["generation"] == old.id
        assert not e2.status()["rebuilding"]
        assert_complete(e2, files)
        assert e2.index().files_done == 0
    cfg["version"] = "9.9.10"
    (bundle / "config.json").write_text(json.dumps(cfg))
    with Engine(home=engine.layout.home, bundle_dir=bundle, threads=1) as e3:
        assert e3.index().files_done == 3
        assert not Path(old.index_dir).exists()  # only the generation retired last is kept
        assert Path(new.index_dir).exists()
        assert_complete(e3, files)


def test_remove_source_and_nested_sources(engine: Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "inner" / "x.txt", "Xylophones ring clearly.")
    write(docs / "y.txt", "Yaks roam the plateau.")
    engine.add_source(docs / "inner")
    engine.index()
    outer = engine.add_source(docs)  # takes over the inner source and its files
    assert [s.path for s in engine.sources()] == [str(docs)] and outer.files == 1
    assert engine.index().files_done == 1  # only y.txt is new
    assert engine.add_source(docs / "inner").path == str(docs)  # already covered
    engine.remove_source(docs)
    assert engine.sources() == []
    assert engine.ask("xylophones ring", top=3, hybrid=True) == []
    assert census(engine) == {}
    with pytest.raises(KeyError):
        engine.remove_source(docs)
    with pytest.raises(FileNotFoundError):
        engine.add_source(tmp_path / "missing")


def test_reads_while_indexing_in_another_thread(engine: Engine, tmp_path: Path) -> None:
    """Questions and status while another thread indexes: held at the start of its second
    commit, the run's first commit answers; reads go on until the run ends."""
    _corpus(tmp_path / "notes", 30)
    engine.commit_every = 8
    engine.add_source(tmp_path / "notes")
    held, go_on = threading.Event(), threading.Event()
    commits: list[int] = []

    def progress(p) -> None:
        if p.phase == "committing":
            commits.append(p.files_done)
            if len(commits) == 2:  # the first commit is done, the second not begun
                held.set()
                go_on.wait(timeout=600)

    worker = threading.Thread(target=lambda: engine.index(progress=progress))
    worker.start()
    try:
        deadline = time.monotonic() + 600  # generous; fails at once if the run ends instead
        while not held.wait(timeout=0.1):
            assert worker.is_alive() and time.monotonic() < deadline, f"not held at its second commit: {commits}"
        mid = engine.status()["sentences"]
        assert 0 < mid < 60 + 30, mid  # the first commit's sentences, not all
        assert all(a.best.sentence for a in engine.ask("What is note 3 about?", top=3))
    finally:
        go_on.set()
    while worker.is_alive():
        answers = engine.ask("What is note 7 about?", top=3)
        assert all(a.best.sentence for a in answers)
        assert engine.status()["sentences"] >= mid
        worker.join(timeout=0.05)
    assert engine.status()["sentences"] == 60 + 30  # and 30 name lines
    assert engine.ask("What is note 7 about?", top=1, hybrid=True)[0].title == "note007.txt"
