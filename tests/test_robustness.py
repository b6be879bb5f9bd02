"""Bad input and bad luck: every bad file becomes a clear per-file problem in status while
the rest is indexed; kill -9 during indexing loses nothing committed and leaves no
duplicates after a restart; a second writer gets a clear message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_pipeline import assert_complete, census, write

import engine.indexer.produce
import engine.ingest.formats
from engine.api.facade import Engine
from engine.catalog.store import Catalog
from engine.cli.main import main as cli_main
from engine.index.sentences import IndexLockedError, SentenceIndex

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SPARCDESK_HOME"] = str(home)
    return env


def test_bad_files_are_reported_and_the_rest_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "docs"
    good = write(d / "good.txt", "Good files still get indexed. Giraffes have long necks.")
    (d / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nthis is not a real pdf\n%%EOF")
    (d / "binary.txt").write_bytes(bytes(range(256)) * 40)
    with open(d / "huge.txt", "wb") as f:  # 200 MB, sparse: nothing is written or read
        f.truncate(200 * 1024 * 1024)
    unreadable = write(d / "unreadable.txt", "You cannot read this.")
    os.chmod(unreadable, 0)
    os.symlink(d / "loop", d / "loop")  # a link to itself: ELOOP
    os.symlink(d, d / "back")  # a link back to a folder being walked
    (d / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me is served daily at the harbour.".encode("cp1252"))
    (d / "empty.txt").write_bytes(b"")
    vanishing = write(d / "vanishing.txt", "This file disappears while it is being read.")
    write(d / "crashing.txt", "Something inside the indexer breaks on this file.")

    real_open = engine.ingest.formats.open_regular
    real_iter = engine.indexer.produce.iter_extract
    real_prepare = engine.indexer.produce.prepare

    opened: list[str] = []

    def fake_open(path, *a, **k):  # root reads anything whatever its mode: fake the refusal
        opened.append(str(path))
        if str(path) == str(unreadable):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    def deleting_iter(path, *a, **k):  # the file vanishes after the scan, before it is read
        if str(path) == str(vanishing):
            os.unlink(path)
        return real_iter(path, *a, **k)

    def crashing_prepare(doc, mail):
        if doc.key.endswith("crashing.txt"):
            raise ValueError("unexpected failure inside the indexer")
        return real_prepare(doc, mail)

    # the fakes live in this process: extract here, not in the worker (test_faults covers it)
    monkeypatch.setattr(engine.indexer.produce, "ISOLATE_EXTRACTION", False)
    monkeypatch.setattr(engine.ingest.formats, "open_regular", fake_open)
    monkeypatch.setattr(engine.indexer.produce, "iter_extract", deleting_iter)
    monkeypatch.setattr(engine.indexer.produce, "prepare", crashing_prepare)

    with Engine(home=tmp_path / "home", threads=1) as e:
        p = e.index([d])
        assert p.phase == "done"
        reasons = {Path(x.path).name: x.reason for x in e.errors()}
        assert "corrupt PDF" in reasons["corrupt.pdf"]
        assert reasons["binary.txt"] == "binary data, not text"
        assert reasons["huge.txt"] == "file too large (200.0 MB > 50.0 MB limit)"
        assert str(d / "huge.txt") not in opened and str(good) in opened  # refused by its size, unread
        assert "Permission denied" in reasons["unreadable.txt"]
        assert "symbolic link loop" in reasons["loop"]
        assert "loop" in reasons["back"] and "not followed" in reasons["back"]
        assert "not valid UTF-8" in reasons["latin1.txt"]
        assert reasons["empty.txt"] == "empty file"  # indexed: by its name
        assert "No such file or directory" in reasons["vanishing.txt"]
        assert "unexpected failure inside the indexer" in reasons["crashing.txt"]
        assert all(x.when for x in e.errors())

        # The rest is indexed: the good file, and the cp1252 file with its text intact.
        assert e.ask("Which animals have long necks?", top=1, hybrid=True)[0].path == str(good)
        latin = e.ask("Where is cafe creme served?", top=1, hybrid=True)[0]
        assert latin.path == str(d / "latin1.txt") and "Café crème" in latin.best.sentence
        st = e.status()
        assert st["files_error"] >= 7 and st["files_pending"] == 0
        assert_complete(e, [good, d / "latin1.txt"])

        # Failed files are not retried until they change; a fixed file is indexed again.
        assert e.index().files_done == 0
        write(d / "binary.txt", "Now this file holds plain text about binary stars.")
        assert e.index().files_done == 1
        assert "binary.txt" not in {Path(x.path).name for x in e.errors()}
        census(e)


def test_second_writer_gets_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "docs"
    write(d / "a.txt", "Walruses use their tusks to haul out onto ice.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([d])
        write(d / "b.txt", "Narwhals have a single long tusk.")
        gen_dir = Catalog(e.layout.catalog).active_generation().index_dir
        holder = SentenceIndex.open(gen_dir, writable=True)  # another writer holds the lock
        try:
            with pytest.raises(IndexLockedError, match="being written by another sparcdesk process"):
                e.index()
            assert e.ask("What do walruses use their tusks for?", top=1)  # reading still works
            assert cli_main(["index", str(d), "--home", str(home), "-q"]) == 3
            assert "being written by another sparcdesk process" in capsys.readouterr().err
            # A real second process: same message, exit code 3, no traceback.
            proc = subprocess.run(
                [sys.executable, "-m", "engine.cli.main", "index", str(d), "-q", "--threads", "1"],
                env=_env(home),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 3, proc.stderr
            assert "being written by another sparcdesk process" in proc.stderr
            assert "Traceback" not in proc.stderr
        finally:
            holder.close()
        assert e.index().files_done == 1  # lock released: indexing goes on


# ``sparcdesk index`` that, once its first commit is done, says so on stderr and waits (for
# the test's SIGKILL): it is killed mid-run whatever the machine's speed.
WAITS_AFTER_FIRST_COMMIT = (
    "import sys, threading\n"
    "from engine.indexer.run import Indexer\n"
    "real = Indexer._commit\n"
    "def commit(self):\n"
    "    real(self)\n"
    "    if self.result.commits:\n"
    "        print('committed', file=sys.stderr, flush=True)\n"
    "        threading.Event().wait()\n"
    "Indexer._commit = commit\n"
    "from engine.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
COMMIT_EVERY = 10


@pytest.mark.slow
def test_kill_9_during_indexing_then_restart(tmp_path: Path) -> None:
    d = tmp_path / "many"
    files = [write(d / f"f{i:03d}.txt", f"File {i} records the token word{i}.") for i in range(60)]
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-c", WAITS_AFTER_FIRST_COMMIT, "index", str(d), "-q", "--threads", "1"]
        + ["--commit-every", str(COMMIT_EVERY)],
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.strip() == "committed":
                break
        else:
            raise AssertionError(f"ended (code {proc.wait()}) before its first commit")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    with Engine(home=home, threads=1) as e:
        cat = Catalog(e.layout.catalog)
        before = {f.path for f in cat.files() if f.status == "ok"}
        assert 0 < len(before) < len(files)
        census(e)  # consistent even right after the kill (journal-owned sentences allowed)
        p = e.index()
        assert p.phase == "done"
        assert p.files_done <= len(files) - len(before) + COMMIT_EVERY  # committed files were not redone
        after = {f.path for f in cat.files() if f.status == "ok"}
        assert before <= after and len(after) == len(files)
        assert_complete(e, files)
        assert e.status()["sentences"] == 2 * len(files)  # each file's sentence and its name line
        hit = e.ask("Which file records the token word42?", top=1, hybrid=True)[0]
        assert hit.path == str(d / "f042.txt")
        cat.close()
