"""Fault paths (issue 17), scaled down for CI: a second writer on another source, a long
catalog transaction in another process; the full campaign is ``python -m bench.faults``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_pipeline import write
from test_robustness import _env

import engine.catalog.store
from bench.faults import NO_SPACE_CHECK
from engine.api.facade import Engine
from engine.catalog.store import Catalog


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ``sparcdesk index`` that stops at its first commit, holding the home's writer lock, and
# says so on stderr, until a line arrives on its stdin: the other writer meets it for sure.
HELD_AT_FIRST_COMMIT = (
    "import sys\n"
    "from engine.indexer.run import Indexer\n"
    "real = Indexer._commit\n"
    "def held(self):\n"
    "    Indexer._commit = real\n"
    "    print('holding the writer lock', file=sys.stderr, flush=True)\n"
    "    sys.stdin.readline()\n"
    "    return real(self)\n"
    "Indexer._commit = held\n"
    "from engine.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
# ``sparcdesk index --wait`` that says on stderr when it first finds the lock taken.
SAYS_WHEN_IT_WAITS = (
    "import sys\n"
    "from engine.upkeep import writelock\n"
    "real = writelock._try_os_lock\n"
    "def trying(fd):\n"
    "    if real(fd):\n"
    "        return True\n"
    "    if writelock._try_os_lock is trying:\n"
    "        writelock._try_os_lock = real\n"
    "        print('waiting for the writer lock', file=sys.stderr, flush=True)\n"
    "    return False\n"
    "writelock._try_os_lock = trying\n"
    "from engine.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _popen(home: Path, code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stderr_until(proc: subprocess.Popen[str], marker: str) -> None:
    """Read ``proc``'s stderr until the line ``marker`` (fails if it ends first)."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        if line.strip() == marker:
            return
        seen.append(line)
    raise AssertionError(f"ended (code {proc.wait()}) before saying {marker!r}: {''.join(seen)[-3000:]}")


# --------------------------------------------------------------------------- one writer


def test_two_writers_on_two_sources(tmp_path: Path) -> None:
    """Two ``sparcdesk index`` processes on two different sources: the second gets one clear
    line and exit code 3 and changes nothing (its source is not even added), or, with
    ``--wait``, waits for the first and then indexes. Never a traceback. The first is held
    at its first commit while the others meet it, so this does not depend on timing."""
    home = tmp_path / "home"
    a = tmp_path / "a"
    b = tmp_path / "b"
    for i in range(30):
        write(a / f"a{i:03d}.txt", f"Note {i} about otters and the river token alpha{i}.")
    for i in range(5):
        write(b / f"b{i}.txt", f"Heron note {i}: herons stand in the pond token beta{i}.")
    args = ("-q", "--threads", "1")
    first = _popen(home, HELD_AT_FIRST_COMMIT, "index", str(a), *args, "--commit-every", "25")
    waited = None
    try:
        _stderr_until(first, "holding the writer lock")
        second = _cli(home, "index", str(b), *args)
        assert second.returncode == 3, second.stderr
        assert "Traceback" not in second.stderr and "database is locked" not in second.stderr
        lines = [x for x in second.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and f"being written by another sparcdesk process (pid {first.pid}" in lines[0]
        cat = Catalog(home / "catalog.sqlite")
        assert [s.path for s in cat.sources()] == [str(a)]  # nothing half-done by the second
        cat.close()
        # with --wait the second run waits for the first, then indexes its own source
        waited = _popen(home, SAYS_WHEN_IT_WAITS, "index", str(b), *args, "--wait", "-1")
        _stderr_until(waited, "waiting for the writer lock")
        assert first.poll() is None
        first.communicate("go on\n", timeout=300)
        assert first.returncode == 0, first.stderr
        _out, err = waited.communicate(timeout=300)
        assert waited.returncode == 0, err
        assert "Traceback" not in err
    finally:
        for proc in (first, waited):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    with Engine(home=home, threads=1) as e:
        st = e.status()
        assert st["files"] == 35 and st["files_ok"] == 35 and st["files_pending"] == 0
        assert e.ask("where do herons stand? beta3", top=1)[0].path == str(b / "b3.txt")


def test_opening_waits_for_no_other_writers_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Status and questions while another process holds a long catalog write transaction:
    opening the catalog writes nothing (it used to set the schema version on every open, and
    so waited for the writer, then failed with 'database is locked')."""
    d = tmp_path / "docs"
    write(d / "a.txt", "Walruses haul out onto the ice to rest.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([d])
    holder = sqlite3.connect(home / "catalog.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer in the middle of a long transaction
    try:
        monkeypatch.setattr(engine.catalog.store, "BUSY_TIMEOUT_S", 0.5)
        with Engine(home=home, threads=1) as e:
            assert e.status()["files"] == 1
            assert e.ask("where do walruses rest?", top=1)[0].path == str(d / "a.txt")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# --------------------------------------------------------------------------- full disk


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 16 MB tmpfs (root only; skipped where mounting is not permitted)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(disk: Path, leave: int) -> Path:
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


#: Files of the second corpus: 10 sentences each, ~0.5 MB more in the data folder in all (~5 KB
#: a sentence, name lines included), well over the 256 KB left free, so the disk fills in its
#: commit (the column store's write falls short).
TWO_FILES = 10
#: Files of the first corpus (3 sentences each), indexed while the disk has room.
ONE_FILES = 10
#: Free space left on the small disk before the second corpus is indexed.
LEFT_FREE = 256 << 10


def _two_corpora(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    for i in range(ONE_FILES):
        write(one / f"f{i}.txt", f"Otter note {i}. Otters swim in river number {i}. They eat fish daily.")
    for i in range(TWO_FILES):
        write(
            two / f"g{i}.txt",
            " ".join(
                f"Heron report {i} line {j} mentions pond {j * i} and reeds token{i}x{j}." for j in range(10)
            ),
        )
    return one, two


# Indexing whose free-space check before each commit is switched off, so the disk fills in
# the middle of a commit (SQLite, tantivy or the column store fails half-way); the same
# program the campaign's `bench.faults disk --during` runs.
NO_CHECK = NO_SPACE_CHECK


@pytest.mark.parametrize("check", ["before", "during"])
def test_full_disk_stops_cleanly_and_the_next_run_continues(
    tmp_path: Path, small_disk: Path, check: str
) -> None:
    """The data folder's disk fills while indexing: one line naming the data folder and the
    space needed, exit code 4, no traceback; status and questions work at the last commit;
    once space is free the same command finishes, with nothing indexed twice."""
    one, two = _two_corpora(tmp_path)
    home = small_disk / "home"
    r = _cli(home, "index", str(one), "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    filler = _fill(small_disk, LEFT_FREE)
    args = ("index", str(two), "-q", "--threads", "1", "--commit-every", "200")
    if check == "before":
        r = _cli(home, *args)
    else:
        r = subprocess.run(
            [sys.executable, "-c", NO_CHECK, *args],
            env=_env(home),
            capture_output=True,
            text=True,
            timeout=600,
        )
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr
    assert f"the disk holding the data folder {home} is full" in lines[0] and "needs about" in lines[0]
    st = _cli(home, "status")
    assert st.returncode == 0 and "Traceback" not in st.stderr, st.stderr
    ask = _cli(home, "ask", "where do otters swim? river 7", "--json")
    assert ask.returncode == 0 and json.loads(ask.stdout)["answers"][0]["path"] == str(one / "f7.txt")
    with Engine(home=home, threads=1) as e:
        from test_pipeline import census

        census(e)  # index and catalog agree at the last commit
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,size=96m", str(small_disk)], check=True)
    r = _cli(home, *args)
    assert r.returncode == 0, r.stderr
    with Engine(home=home, threads=1) as e:
        from test_pipeline import assert_complete

        assert_complete(e, [*sorted(one.iterdir()), *sorted(two.iterdir())])
        st = e.status()
        assert st["files"] == st["files_ok"] == ONE_FILES + TWO_FILES
        assert e.ask("heron report 7 token7x3", top=1)[0].path == str(two / "g7.txt")


# --------------------------------------------------------------------------- hostile files


def _zip(path: Path, members: dict[str, bytes | tuple[int, bytes]]) -> Path:
    """A zip file; a member given as ``(n, block)`` is ``block`` repeated ``n`` times (streamed)."""
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            if isinstance(data, tuple):
                n, block = data
                with z.open(name, "w", force_zip64=True) as f:
                    for _ in range(n):
                        f.write(block)
            else:
                z.writestr(name, data)
    return path


_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_CT = (
    b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    b'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships'
    b'+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
    b'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    b'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)


def docx_with_paragraphs(path: Path, n: int, text: str = "Go.") -> Path:
    """A DOCX of ``n`` one-sentence paragraphs, written as XML (python-docx takes minutes)."""
    para = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>".encode()
    body = b"".join(
        [f'<?xml version="1.0"?><w:document {_W}><w:body>'.encode(), para * n, b"</w:body></w:document>"]
    )
    return _zip(path, {"[Content_Types].xml": _CT, "_rels/.rels": _RELS, "word/document.xml": body})


def odt_with_paragraph(path: Path, mb: int) -> Path:
    """An ODT whose one paragraph is ``mb`` MB of text (a few hundred KB on disk)."""
    head = (
        b'<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
        b'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text><text:p>'
    )
    tail = b"</text:p></office:text></office:body></office:document-content>"
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", b"application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/manifest.xml",
            b'<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
            b'manifest:1.0"><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
            b"</manifest:manifest>",
        )
        with z.open("content.xml", "w", force_zip64=True) as f:
            f.write(head)
            for _ in range(mb):
                f.write(b"word " * ((1 << 20) // 5))
            f.write(tail)
    return path


def nested_html(path: Path, depth: int, fact: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{'<div>' * depth}<p>{fact}</p>{'</div>' * depth}</body></html>")
    return path


def _peak_tree_rss(proc: subprocess.Popen, timeout: float = 900) -> int:
    """Wait for ``proc``; the peak of its and its children's summed resident size. Past
    ``timeout`` (generous: a hang, not a slow machine) it is killed and the test fails."""
    import psutil

    deadline = time.monotonic() + timeout
    peak = 0
    p = psutil.Process(proc.pid)
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"still running after {timeout:.0f} s")
        try:
            total = p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
        except psutil.Error:
            total = 0
        peak = max(peak, total)
        time.sleep(0.05)
    return peak


def _limit_box() -> None:  # a hostile test must not take the shared machine down
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))


def test_hostile_files_cost_one_file_each(tmp_path: Path) -> None:
    """Zip bombs, a 40 MB paragraph in a tiny ODT, HTML nested 100,000 deep, a DOCX of 70,000
    paragraphs, a 1 GB sparse file, a FIFO and a Maildir with a symbolic link loop in cur/:
    the run finishes in bounded time and memory, every hostile file is in status with its
    reason, and the good files (the nested page's text and the Maildir's message too) answer."""
    d = tmp_path / "docs"
    good = write(d / "good.txt", "Kestrels hover over motorway verges while hunting voles.")
    _zip(d / "bomb.docx", {"word/document.xml": (300, b"\0" * (1 << 20))})
    _zip(d / "bomb.epub", {"mimetype": b"application/epub+zip", "a.xhtml": (300, b"a" * (1 << 20))})
    odt_with_paragraph(d / "paragraph.odt", 40)
    nested_html(d / "nested.html", 100_000, "Axolotls regrow their limbs within weeks.")
    docx_with_paragraphs(d / "many.docx", 70_000)
    with open(d / "sparse.txt", "wb") as f:
        f.truncate(1 << 30)
    os.mkfifo(d / "pipe.txt")
    box = d / "Mail"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True)
    (box / "cur" / "1.host:2,S").write_bytes(
        b"From: ann@example.org\nTo: bob@example.org\nSubject: Owls\nMessage-ID: <owl@x>\n\n"
        b"Barn owls swallow their prey whole.\n"
    )
    os.symlink(box / "cur" / "loop", box / "cur" / "loop")
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli.main", "index", str(d), "-q", "--threads", "1"],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limit_box,
    )
    peak = _peak_tree_rss(proc)
    out, err = proc.communicate()
    assert proc.returncode == 0, err.decode()[-3000:]
    assert b"Traceback" not in err and len(out) < 10_000  # nothing a parser printed reaches the terminal
    assert peak < 1.5 * (1 << 30), f"peak RSS {peak / (1 << 20):.0f} MB"
    with Engine(home=home, threads=1) as e:
        reasons = {Path(x.path).name: x.reason for x in e.errors()}
        assert "expands to 300.0 MB" in reasons["bomb.docx"]
        assert "expands to 300.0 MB" in reasons["bomb.epub"]
        assert "ODT expands to 40.0 MB" in reasons["paragraph.odt"]
        assert "too many sentences (70,000 > 60,000 limit)" in reasons["many.docx"]
        assert "file too large" in reasons["sparse.txt"]
        assert "cur/loop: Too many levels of symbolic links" in reasons["Mail"]
        assert e.ask("how do kestrels hunt?", top=1)[0].path == str(good)
        assert e.ask("what do axolotls regrow?", top=1)[0].path == str(d / "nested.html")
        assert "nested more than 1,000 deep" in reasons["nested.html"]
        assert e.ask("how do barn owls eat their prey?", top=1)[0].kind == "email"
        st = e.status()
        assert st["files_pending"] == 0


def test_extraction_worker_limits(tmp_path: Path) -> None:
    """The worker is killed past its memory or time limit; the unit gets the reason and the
    next unit is read by a fresh worker."""
    from engine.ingest.extract_worker import Extractor

    big = tmp_path / "big.txt"
    big.write_bytes(b"many words in a row " * (2 << 20))  # 40 MB: decoding and tidying need more than 64 MB
    small = write(tmp_path / "small.txt", "Puffins nest in burrows.")
    slow = write(
        tmp_path / "slow.md", "* a *list* item with `code` and [a](link)\n" * 200_000
    )  # seconds to parse
    small_memory = Extractor(memory_limit=64 << 20)
    # 1 s for the 9 MB page, a generous 120 s for the small file read next (a fresh worker
    # starting on a loaded machine must not hit the limit)
    short_time = Extractor(time_limit=lambda size: 1.0 if size > 1 << 20 else 120.0)
    try:
        (err,) = list(small_memory.extract(big, 50 << 20))
        assert "needed more than 64 MB of memory to read: skipped" in err.reason
        (doc,) = list(small_memory.extract(small, 50 << 20))  # a fresh worker reads the next
        assert doc.text == "Puffins nest in burrows."
        (err,) = list(short_time.extract(slow, 50 << 20))  # parsing it takes seconds: killed after 1 s
        assert err.reason == "took longer than 1 s to read: skipped"
        (doc,) = list(short_time.extract(small, 50 << 20))
        assert doc.text == "Puffins nest in burrows."
    finally:
        small_memory.close()
        short_time.close()


def test_a_file_swapped_for_a_fifo_after_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the scan and its extraction a file becomes a FIFO: the run does not block on
    it (hashing and reading open without waiting for a writer)."""
    import threading

    import engine.indexer.run as pipeline

    d = tmp_path / "docs"
    write(d / "a.txt", "Lynx hunt snowshoe hares.")
    swapped = write(d / "b.txt", "This file becomes a pipe.")
    real_scan = pipeline.scan

    def scan_then_swap(*args, **kwargs):
        out = real_scan(*args, **kwargs)
        swapped.unlink()
        os.mkfifo(swapped)
        return out

    monkeypatch.setattr(pipeline, "scan", scan_then_swap)
    done: list[object] = []
    with Engine(home=tmp_path / "home", threads=1) as e:
        t = threading.Thread(target=lambda: done.append(e.index([d])), daemon=True)
        t.start()
        t.join(120)
        assert done, "indexing blocked on the FIFO"
        reasons = {Path(x.path).name: x.reason for x in e.errors()}
        assert "not a regular file" in reasons["b.txt"]
        assert e.ask("what do lynx hunt?", top=1)[0].path == str(d / "a.txt")


# --------------------------------------------------------------------------- damaged data folder

#: A scaled-down share of ``python -m bench.faults damage`` (40 cases): one of each kind.
DAMAGE_CASES = [
    "catalog garbage",
    "catalog deleted",
    "generation folder deleted",
    "segment .store garbage",
    "column manifest garbage",
    "columns dense.npy truncated",
    "index folder is a file",
    "bundle tokenizer garbage",
    "logs is a file",
    "data folder moved",
]


@pytest.mark.slow
def test_damaged_data_folder_is_repaired(tmp_path: Path) -> None:
    """Each kind of damage to the data folder: status, ask and index print no traceback (a
    line saying what was repaired), and after the index run the right file answers."""
    from bench.faults import run_damage

    # no writer exists here: a reader need not wait 5 s for a damaged store to settle; half the
    # campaign's corpus (12 notes): most cases re-encode it
    out = run_damage(tmp_path, DAMAGE_CASES, view_retry_s=0.2, files=12)
    rows = {r["case"]: r for r in out["rows"]}
    assert set(rows) == set(DAMAGE_CASES)
    assert {n: r["verdict"] for n, r in rows.items()} == dict.fromkeys(DAMAGE_CASES, "works")
    for name in DAMAGE_CASES[:-1]:  # a moved data folder is not damage: nothing to say
        assert any("repaired:" in x for x in rows[name]["said"]), name
    assert out["summary"]["tracebacks"] == 0


def test_damaged_index_found_while_answering_is_repaired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index damaged while an engine is open (after its checks): the next question finds
    it, the generation is moved aside, and the next indexing run rebuilds it."""
    from engine.index import sentences

    # no writer is mid-commit here: a reader need not wait 5 s for the store to settle
    monkeypatch.setattr(sentences, "VIEW_RETRY_S", 0.2)
    d = tmp_path / "docs"
    write(d / "a.txt", "Ravens cache food for the winter.")
    home = tmp_path / "home"
    with Engine(home=home, threads=1) as e:
        e.index([d])
        gen = Path(Catalog(e.layout.catalog).active_generation().index_dir)
        e.ask("what do ravens cache?")
        e._reader.close()  # noqa: SLF001 - a reader opened before the damage would keep its maps
        e._reader = None  # noqa: SLF001
        (gen / "columns" / "manifest.json").write_bytes(b"\x00garbage")
        assert e.ask("what do ravens cache?") == []  # no traceback: repaired, being rebuilt
        assert any("index gen-000001 was damaged" in n for n in e.repairs)
        assert list((home / "damaged").glob("*/gen-000001"))
        e.index()
        assert e.ask("what do ravens cache?", top=1)[0].path == str(d / "a.txt")
