"""Readers against a writer in another process, and crash recovery by killing real processes
(issue 14): a search never fails because another process committed or merged; a commit's
pending column state is used only when tantivy's last commit is that commit; an index
being created is either absent or complete, whenever its creator dies."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from bench.synthetic import sample_questions
from engine.index import columns
from engine.index import sentences as index
from engine.index.sentences import IndexFormatError, SentenceIndex
from tests.test_columns import QUANT, _batch, _records

REPO = Path(__file__).resolve().parents[1]
#: How many of the writer's commits the reader must have read (each a different column
#: state, most with a merge) before it stops; a generous timeout bounds it.
STATES_READ = int(os.environ.get("SPARCDESK_CONCURRENT_STATES", "100"))
#: Reads after each commit the writer announces, made while it commits and merges it: paced by
#: the writer's commits, the reader does not spin a core of its own (a reader looping flat out
#: cost ~75 s of CPU per minute and read no more distinct states).
READS_PER_COMMIT = 3
#: The writer's pause between commits. Flat out it made ~22 commits a second, ~1,300 in the
#: minute, at half a core; the reader needs 100 states. Paced at 0.35 s it still commits and
#: merges about 150 times in the minute, each one overlapped by reads, for ~6 s of CPU in all
#: (0.25 s: ~200 commits, ~8 s; 0.1 s: ~16 s).
WRITER_PAUSE_S = os.environ.get("SPARCDESK_CONCURRENT_PAUSE", "0.35")
#: And for how long at least (issue 14: 60 s of concurrent indexing and merging): a floor on
#: the exposure, not a limit the test asserts.
MIN_S = float(os.environ.get("SPARCDESK_CONCURRENT_S", "60"))
OPENS = 20
TIMEOUT_S = 600

# A writer that deletes older batches (so segments are compacted) and merges after nearly
# every commit (tiny merge thresholds); it announces each commit just before making it, so
# the reader's reads land while the commit and its merge write and delete files.
WRITER = textwrap.dedent(
    """
    import sys, time
    from engine.index import columns
    from engine.index.sentences import SentenceIndex
    from tests.test_columns import _batch, _records
    columns.MAX_SEGMENTS = 3
    columns.MERGE_WIDTH = 3
    idx = SentenceIndex.open(sys.argv[1], writable=True)
    i, pause = int(sys.argv[2]), float(sys.argv[3])
    while True:
        idx.add(_records(i), _batch(i))
        for d in range(4):
            idx.delete_document(f"b{i - 3}-d{d}")
        print(i, flush=True)
        idx.commit()
        i += 1
        time.sleep(pause)
    """
)


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_reader_never_fails_while_another_process_indexes_and_merges(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    w = SentenceIndex.create(path, QUANT)
    w.add(_records(0), _batch(0))
    w.commit()
    w.close()
    writer = _spawn(WRITER, str(path), "1", WRITER_PAUSE_S)
    commits: queue.Queue[str] = queue.Queue()
    assert writer.stdout is not None
    out = writer.stdout
    threading.Thread(target=lambda: [commits.put(x) for x in iter(out.readline, "")], daemon=True).start()
    try:
        queries = sample_questions(_batch(0) + _batch(1), 8, seed=7)
        reader: SentenceIndex | None = None
        failures: list[str] = []
        reads = opens = 0
        stamps: set[int] = set()
        start = time.monotonic()
        deadline = start + TIMEOUT_S
        while (
            len(stamps) < STATES_READ or opens < OPENS or time.monotonic() - start < MIN_S
        ) and not failures:
            assert time.monotonic() < deadline, f"read {len(stamps)} states, {opens} opens in {TIMEOUT_S} s"
            try:  # the writer's next commit: the reads below overlap it
                commits.get(timeout=max(1.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"the writer made no commit in {TIMEOUT_S} s")
            assert writer.poll() is None, writer.stderr.read() if writer.stderr else ""
            for _ in range(READS_PER_COMMIT):
                try:
                    if reader is None or reads % 25 == 0:  # a fresh reader now and then: opening must not fail either
                        if reader is not None:
                            reader.close()
                        reader = SentenceIndex.open(path)
                        opens += 1
                    else:
                        reader.reload()
                    view = reader._view
                    # The pair is one commit: tantivy's live sentences are the columns' live rows.
                    if view.searcher.num_docs != view.columns.num_live:
                        failures.append(
                            f"paired across commits: {view.searcher.num_docs} != {view.columns.num_live}"
                        )
                    reader.search(queries[reads % len(queries)], 10, idf=True)
                    stamps.add(view.columns.state.opstamp)
                except Exception as exc:  # every failed read is recorded, none may happen
                    failures.append(f"{type(exc).__name__}: {exc}")
                reads += 1
        assert writer.poll() is None, writer.stderr.read() if writer.stderr else ""
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert not failures, f"read {reads} failed, first: {failures[:3]}"
    # Deletion deferred while a reader loads is done by a later commit: no pile-up.
    assert len(list((path / columns.COLUMNS_DIR).iterdir())) < 40


def test_a_commit_landing_between_a_readers_reads_is_read_again(tmp_path: Path, monkeypatch) -> None:
    """The stress test above, made deterministic for one race: another writer commits after a
    reader read tantivy's commit stamp and before it loads the column state, so the manifest
    is of a newer commit; the reader reads both again instead of failing (it raised
    ``ColumnStoreError: ... is at tantivy opstamp N, the index at M`` before issue 14)."""
    path = tmp_path / "ix"
    w = SentenceIndex.create(path, QUANT)
    w.add(_records(0), _batch(0))
    w.commit()
    reader = SentenceIndex.open(path)
    store = reader._columns
    real = store.view
    asked: list[int] = []

    def view(opstamp, previous=None, live=None):
        asked.append(opstamp)
        if len(asked) == 1:
            w.add(_records(1), _batch(1))
            w.commit()
        return real(opstamp, previous, live)

    monkeypatch.setattr(store, "view", view)
    reader.reload()
    assert len(asked) == 2 and asked[1] > asked[0]
    assert reader._view.searcher.num_docs == reader._view.columns.num_live == len(_records(0)) + len(_records(1))
    assert reader.search(sample_questions(_batch(1), 1, seed=3)[0], 10, idf=True)
    reader.close()
    w.close()


def test_files_a_reader_is_loading_outlive_the_commit_that_supersedes_them(tmp_path: Path, monkeypatch) -> None:
    """The other race, made deterministic: while a reader holds the readers' lock (it is
    loading a state), a commit whose merge supersedes segments leaves their files; the next
    commit removes them (the writer deleted them at once before issue 14, and the reader
    failed with FileNotFoundError)."""
    monkeypatch.setattr(columns, "MAX_SEGMENTS", 1)
    monkeypatch.setattr(columns, "MERGE_WIDTH", 2)
    path = tmp_path / "ix"
    root = path / columns.COLUMNS_DIR
    w = SentenceIndex.create(path, QUANT)
    w.add(_records(0), _batch(0))
    w.commit()
    loading = {p.name for p in root.iterdir()} - {columns.MANIFEST, columns.READERS_LOCK}
    assert loading
    with columns._readers_lock(root, exclusive=False) as held:
        assert held
        w.add(_records(1), _batch(1))
        w.commit()  # two segments, more than MAX_SEGMENTS: merged into one
        assert loading <= {p.name for p in root.iterdir()}
    w.add(_records(2), _batch(2))
    w.commit()
    assert not loading & {p.name for p in root.iterdir()}
    w.close()


def test_pending_state_is_used_only_for_its_own_commit(tmp_path: Path, monkeypatch) -> None:
    """A writer killed after writing its pending column state but before tantivy committed
    leaves a stale ``pending.json``; a later tantivy commit made without it (here by a bare
    tantivy writer: stamps advance with every operation, so "tantivy moved on" proves
    nothing) must not make readers take the stale state, which names sentences tantivy
    never committed (the old check took it)."""
    path = tmp_path / "ix"
    w = SentenceIndex.create(path, QUANT)
    w.add(_records(0), _batch(0))
    w.commit()
    w.close()
    killed_after_prepare = textwrap.dedent(
        """
        import os, signal, sys
        from engine.index.sentences import SentenceIndex
        from tests.test_columns import _batch, _records
        idx = SentenceIndex.open(sys.argv[1], writable=True)
        idx.add(_records(1), _batch(1))
        idx.delete_document("b0-d0")
        idx._columns.prepare(idx._view.columns)  # what commit() does before tantivy commits
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = _spawn(killed_after_prepare, str(path))
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert (path / columns.COLUMNS_DIR / columns.PENDING).exists()
    import tantivy

    bare = tantivy.Index.open(str(path))
    tw = bare.writer(15_000_000, 1)
    tw.delete_documents_by_term("doc_key", "no-such-document")
    tw.commit()
    del tw, bare
    # Neither state is tantivy's commit: readers and writers refuse, naming the cause,
    # instead of answering with sentences tantivy never committed.
    monkeypatch.setattr(index, "VIEW_RETRY_S", 0.2)
    for writable in (False, True):
        with pytest.raises(IndexFormatError, match="not tantivy's commit"):
            SentenceIndex.open(path, writable=writable)


def test_pending_state_of_a_commit_killed_before_its_manifest_is_used(tmp_path: Path) -> None:
    """The other side: killed after tantivy committed, before the manifest: the pending
    state is that commit's, readers and the next writer take it."""
    path = tmp_path / "ix"
    w = SentenceIndex.create(path, QUANT)
    ids = w.add(_records(0), _batch(0))
    w.commit()
    w.close()
    killed_before_manifest = textwrap.dedent(
        """
        import os, signal, sys
        from engine.index import columns
        from engine.index.sentences import SentenceIndex
        from tests.test_columns import _batch, _records
        def die(self, opstamp):
            os.kill(os.getpid(), signal.SIGKILL)
        columns.ColumnStore.finish = die
        idx = SentenceIndex.open(sys.argv[1], writable=True)
        idx.add(_records(1), _batch(1))
        idx.delete_document("b0-d0")
        idx.commit()
        """
    )
    proc = _spawn(killed_before_manifest, str(path))
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert (path / columns.COLUMNS_DIR / columns.PENDING).exists()
    expected = len(ids) - 10 + 40
    reader = SentenceIndex.open(path)
    assert reader.num_sentences == reader._view.columns.num_live == expected
    reader.close()
    w = SentenceIndex.open(path, writable=True)
    assert w._view.columns.num_live == expected
    assert not (path / columns.COLUMNS_DIR / columns.PENDING).exists()
    w.close()


KILLED_WHILE_CREATING = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from engine.index import columns
    from engine.api.facade import Engine
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    # The moment after tantivy created its files, before the column store and the
    # sparcdesk metadata exist.
    columns.ColumnStore.create = die
    e = Engine(home=Path(sys.argv[1]), threads=1)
    e.index([Path(sys.argv[2])])
    """
)


def test_index_creation_killed_midway_leaves_nothing_half_made(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "owl.txt").write_text("The snowy owl hunts lemmings on the tundra.", encoding="utf-8")
    home = tmp_path / "home"
    proc = _spawn(KILLED_WHILE_CREATING, str(home), str(docs))
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    from engine.api.facade import Engine

    with Engine(home=home, threads=1) as e:
        final = e.index()  # the next run creates the index and indexes the file
        assert final.phase == "done" and final.files_done == 1
        answers = e.ask("What does the snowy owl hunt?", top=3, hybrid=True)
        assert answers and answers[0].path == str(docs / "owl.txt")


def test_half_made_index_of_an_older_version_is_replaced(tmp_path: Path) -> None:
    """Before creation was atomic, a kill could leave tantivy's files without the column
    store and sparcdesk's metadata at the index path: creating there replaces them."""
    import tantivy

    from engine.index.sentences import build_schema

    path = tmp_path / "ix"
    path.mkdir()
    tantivy.Index(build_schema(), path=str(path), reuse=False)
    ix = SentenceIndex.create(path, QUANT)
    ix.add(_records(0), _batch(0))
    ix.commit()
    assert ix.num_sentences == 40
    ix.close()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not an index", encoding="utf-8")
    with pytest.raises(FileExistsError):
        SentenceIndex.create(tmp_path / "other", QUANT)  # a folder with anything else stays
    with pytest.raises(FileExistsError):
        SentenceIndex.create(path, QUANT)


# --------------------------------------------------------------------------- catch-up at start

INDEX_UNTIL_KILLED = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engine.api.facade import Engine
    e = Engine(home=Path(sys.argv[1]), threads=1)
    e.commit_every = 2
    e._invalidate_reader = lambda: print("commit", flush=True)  # the indexer's on_commit
    e.index([Path(sys.argv[2])])
    print("finished", flush=True)
    """
)


def write_notes(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        f = folder / f"note{i:03d}.txt"
        f.write_text(f"Note {i} is about the topic numbered {i}. Its second sentence mentions {i}.", "utf-8")
        out.append(f)
    return out


def interrupt_indexing(home: Path, docs: Path) -> None:
    """A first indexing run of ``docs`` cut short: a real process killed after its first commit."""
    proc = _spawn(INDEX_UNTIL_KILLED, str(home), str(docs))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "commit", (line, proc.stderr.read() if proc.stderr else "")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    from engine.api.facade import Engine

    with Engine(home=home, threads=1) as e:
        src, st = e.sources()[0], e.status()
        assert src.last_indexed is None and st["files_pending"] > 0 and st["files_ok"] < src.files, st


def test_watch_command_catches_up_and_resumes_an_interrupted_run(tmp_path: Path) -> None:
    docs, home = tmp_path / "notes", tmp_path / "home"
    notes = write_notes(docs, 20)
    interrupt_indexing(home, docs)
    notes[0].unlink()  # while nothing watched: one file deleted, one added
    (docs / "walrus.txt").write_text("The walrus basks on the ice floe at noon.", "utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), SPARCDESK_HOME=str(home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli.main", "watch", "-q", "--threads", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]  # the catch-up, then "watching"
        assert "watching 1 source(s)" in lines[1], lines
        from engine.api.facade import Engine

        with Engine(home=home, threads=1) as e:
            src, st = e.sources()[0], e.status()
            assert src.files == st["files_ok"] == 20 and st["files_pending"] == 0 and src.last_indexed
            assert e.ask("Where does the walrus bask?", top=1, hybrid=True)[0].path == str(docs / "walrus.txt")
            assert str(notes[0]) not in {a.path for a in e.ask("Note 0 topic numbered 0", top=5, hybrid=True)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
