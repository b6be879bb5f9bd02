"""An index or catalog of another sparcdesk version (issue 14, item 2): an older one is
upgraded (the catalog in place, the index rebuilt from the sources) and says so; a newer one
is refused with one line saying what to do, and left exactly as it is (an older version
used to rewrite a newer catalog's schema number, and to move a newer index aside as damage
and re-encode everything)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from test_pipeline import kill_at_step, write
from test_robustness import _env

from engine.api.facade import Engine
from engine.catalog.store import MIGRATIONS, SCHEMA_VERSION, Catalog, CatalogVersionError
from engine.catalog.texts import TextStore
from engine.index.sentences import FORMAT_VERSION, META_FILE


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    """A data folder with one indexed file; returns it and its live index folder."""
    docs = tmp_path / "docs"
    write(docs / "owls.txt", "Owls hunt at night over the fields.")
    home = tmp_path / "home"
    r = _cli(home, "index", str(docs), "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    return home, home / "index" / "gen-000001"


def _set_format(index_dir: Path, fmt: int) -> None:
    meta = json.loads((index_dir / META_FILE).read_text(encoding="utf-8"))
    meta["format"] = fmt
    (index_dir / META_FILE).write_text(json.dumps(meta), encoding="utf-8")


def _user_version(catalog: Path) -> int:
    con = sqlite3.connect(catalog)
    try:
        return int(con.execute("PRAGMA user_version").fetchone()[0])
    finally:
        con.close()


def _owls(home: Path) -> list[str]:
    r = _cli(home, "ask", "--json", "where do owls hunt?")
    assert r.returncode == 0, r.stderr
    return [a["path"] for a in json.loads(r.stdout)["answers"]]


def test_an_older_index_is_reported_with_what_to_do_and_rebuilt(tmp_path: Path) -> None:
    home, live = _indexed(tmp_path)
    _set_format(live, FORMAT_VERSION - 1)
    r = _cli(home, "ask", "where do owls hunt?")
    assert r.returncode == 0, r.stderr
    assert f"made by an older sparcdesk (index format {FORMAT_VERSION - 1}" in r.stderr, r.stderr
    assert "run 'sparcdesk index' on your folders ('sparcdesk sources' lists them) to rebuild it" in r.stderr
    assert "damaged" not in r.stderr.split(":", 2)[-1].split("moved to")[0]
    assert _cli(home, "index", str(tmp_path / "docs"), "-q", "--threads", "1").returncode == 0
    assert _owls(home) and _owls(home)[0].endswith("owls.txt")
    assert json.loads((live / META_FILE).read_text(encoding="utf-8"))["format"] == FORMAT_VERSION


def test_a_newer_index_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    home, live = _indexed(tmp_path)
    _set_format(live, FORMAT_VERSION + 1)
    for args in (("ask", "where do owls hunt?"), ("index", str(tmp_path / "docs"), "-q"), ("status",)):
        r = _cli(home, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert f"made by a newer sparcdesk (index format {FORMAT_VERSION + 1}" in lines[0]
        assert "run that newer sparcdesk, or" in lines[0] and "move the data folder aside" in lines[0]
    # not moved aside, not rebuilt: the newer version finds its index as it left it
    assert json.loads((live / META_FILE).read_text(encoding="utf-8"))["format"] == FORMAT_VERSION + 1
    assert not (home / "damaged").exists()


# --------------------------------------------------------------------------- the catalog

#: Schema 1 as sparcdesk wrote it (its sqlite_master, from Catalog and TextStore of that
#: version): the five catalog tables and their indexes at the first open, the text store's
#: two tables at the first indexing run, then ``user_version`` 1.
SCHEMA_1 = (
    'CREATE TABLE "sources" ("id" INTEGER PRIMARY KEY, "path" TEXT NOT NULL, "kind" TEXT NOT NULL,'
    ' "added" TEXT NOT NULL, "last_indexed" TEXT, "exclude" TEXT)',
    'CREATE TABLE "files" ("path" TEXT PRIMARY KEY, "source_id" INTEGER NOT NULL REFERENCES "sources"("id"),'
    ' "size" INTEGER, "mtime_ns" INTEGER, "content_hash" TEXT, "status" TEXT NOT NULL, "last_error" TEXT,'
    ' "sentences" INTEGER, "indexed_at" TEXT, "generation" INTEGER)',
    'CREATE TABLE "documents" ("key" TEXT PRIMARY KEY, "path" TEXT, "kind" TEXT, "title" TEXT,'
    ' "parent_key" TEXT, "n_sentences" INTEGER)',
    'CREATE TABLE "messages" ("key" TEXT PRIMARY KEY, "file" TEXT, "message_id" TEXT, "thread" TEXT,'
    ' "from_addr" TEXT, "to_addrs" TEXT, "cc_addrs" TEXT, "date" INTEGER, "subject" TEXT, "mailbox" TEXT)',
    'CREATE TABLE "generations" ("id" INTEGER PRIMARY KEY, "model_name" TEXT, "model_version" TEXT,'
    ' "created" TEXT, "status" TEXT NOT NULL, "index_dir" TEXT)',
    "CREATE UNIQUE INDEX idx_sources_path ON sources(path)",
    "CREATE INDEX idx_files_source ON files(source_id)",
    "CREATE INDEX idx_files_status ON files(status)",
    "CREATE INDEX idx_documents_path ON documents(path)",
    "CREATE INDEX idx_messages_file ON messages(file)",
    "CREATE INDEX idx_messages_thread ON messages(thread)",
    "CREATE UNIQUE INDEX idx_one_active ON generations(status) WHERE status = 'active'",
    "PRAGMA user_version = 1",
    'CREATE TABLE "doc_texts" ("key" TEXT PRIMARY KEY, "unit" TEXT, "digest" TEXT, "text" BLOB)',
    'CREATE TABLE "index_journal" ("unit" TEXT, "key" TEXT, PRIMARY KEY ("unit", "key"))',
    "CREATE INDEX idx_doc_texts_unit ON doc_texts(unit)",
)
SENDERS = "SELECT from_addr, COUNT(*) FROM messages WHERE from_addr != '' GROUP BY from_addr"
MAILBOXES = "SELECT mailbox, file, COUNT(*) FROM messages WHERE mailbox != '' GROUP BY mailbox, file"
SUBJECTS = "SELECT key FROM messages WHERE subject_key IN ('owls at dusk', 'cave survey')"


def _schema_1_catalog(home: Path) -> Path:
    """A data folder whose catalog schema 1 wrote: a mail store of three messages from two
    senders in two mailboxes, a note, a file that failed, texts, a journal row, generations
    (the files in the retired one, so no index folder is needed)."""
    mail = home.parent / "mail"
    catalog = home / "catalog.sqlite"
    home.mkdir(parents=True)
    con = sqlite3.connect(catalog, isolation_level=None)
    con.execute("PRAGMA journal_mode = wal")
    for sql in SCHEMA_1:
        con.execute(sql)
    ex = con.execute
    ex("INSERT INTO sources VALUES (1, ?, 'mailstore', '2026-11-20T10:00:00+00:00', NULL, '[]')", [str(mail)])
    ex(
        "INSERT INTO generations VALUES (1, 'sparc-tiny', '0.2.0', '2026-11-20T10:00:00+00:00', 'retired', ?)",
        [str(home / "index" / "gen-000001")],
    )
    ex(
        "INSERT INTO generations VALUES (2, 'sparc-tiny', '0.3.0', '2026-11-21T10:00:00+00:00', 'active', ?)",
        [str(home / "index" / "gen-000002")],
    )
    files = [
        (str(mail / "Inbox"), 1, 4096, 10, "h1", "ok", None, 9, "2026-11-20T10:01:00+00:00", 1),
        (str(mail / "Sent"), 1, 2048, 11, "h2", "ok", None, 4, "2026-11-20T10:01:00+00:00", 1),
        (str(mail / "notes.txt"), 1, 60, 12, "h3", "ok", None, 2, "2026-11-20T10:01:00+00:00", 1),
        (
            str(mail / "broken.pdf"),
            1,
            9,
            13,
            None,
            "error",
            "corrupt broken.pdf: no trailer",
            0,
            "2026-11-20T10:01:00+00:00",
            None,
        ),
    ]
    con.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", files)
    messages = [
        ("m1", "Inbox", "Owl Ward <owl@example.org>", "Owls at dusk", 1700000000),
        ("m2", "Inbox", "owl@example.org", "Re: Owls at dusk", 1700000600),
        ("m3", "Sent", "Bat Keeper <bat@example.org>", "Cave survey", 1700001200),
    ]
    for key, box, sender, subject, date in messages:
        unit = str(mail / box)
        ex("INSERT INTO documents VALUES (?, ?, 'email', ?, NULL, 3)", [f"{unit}#{key}", unit, subject])
        ex(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, '[\"ana@example.org\"]', '[]', ?, ?, ?)",
            [f"{unit}#{key}", unit, f"<{key}@example.org>", "<m1@example.org>", sender, date, subject, box],
        )
        ex(
            "INSERT INTO doc_texts VALUES (?, ?, ?, ?)",
            [f"{unit}#{key}", unit, f"d-{key}", zlib.compress(f"{subject}. Seen near the barn.".encode())],
        )
    note = str(mail / "notes.txt")
    ex("INSERT INTO documents VALUES (?, ?, 'text', 'notes', NULL, 2)", [note, note])
    ex("INSERT INTO doc_texts VALUES (?, ?, 'd-n', ?)", [note, note, zlib.compress(b"Owls nest in barns.")])
    ex("INSERT INTO index_journal VALUES (?, ?)", [note, note])
    con.close()
    return catalog


def _schema(path: Path) -> set[tuple[str, str, str | None]]:
    """(type, name, sql with the spacing made uniform) of every table and index of a file."""
    con = sqlite3.connect(path)
    try:
        return {
            (
                t,
                n,
                " ".join((s or "").replace("IF NOT EXISTS ", "").split())
                .replace("( ", "(")
                .replace(" )", ")")
                .replace(" ,", ","),  # ALTER TABLE ADD COLUMN keeps the newline before ")"
            )
            for t, n, s in con.execute("SELECT type, name, sql FROM sqlite_master")
        }
    finally:
        con.close()


def _plan(cat: Catalog, sql: str) -> str:
    return " ".join(r[3] for r in cat.db.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall())


def test_the_steps_number_the_schemas_in_order() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert all(m.statements and m.why for m in MIGRATIONS)


def test_a_schema_1_catalog_is_upgraded_in_place_with_its_rows(tmp_path: Path) -> None:
    catalog = _schema_1_catalog(tmp_path / "home")
    with sqlite3.connect(catalog) as con:
        v1_rows = {
            t: sorted(con.execute(f"SELECT * FROM {t}"))
            for t in (
                "sources",
                "files",
                "documents",
                "messages",
                "generations",
                "doc_texts",
                "index_journal",
            )
        }
    with Engine(home=tmp_path / "home", threads=1) as e:
        assert e.repairs == []  # an older catalog is not damage
        senders = [(s.address, s.name, s.messages) for s in e.senders()]
        assert senders == [("owl@example.org", "Owl Ward", 2), ("bat@example.org", "Bat Keeper", 1)]
        assert [(s.address, s.messages) for s in e.senders("KEEP")] == [("bat@example.org", 1)]
        assert sorted((m.name, m.messages) for m in e.mailboxes()) == [("Inbox", 2), ("Sent", 1)]
        assert [(s.kind, s.files, s.sentences, s.errors) for s in e.sources()] == [("mailstore", 4, 15, 1)]
        assert [(Path(f.path).name, f.reason) for f in e.errors()] == [
            ("broken.pdf", "corrupt broken.pdf: no trailer")
        ]
        assert e.document_text(str(tmp_path / "mail" / "notes.txt")) == "Owls nest in barns."
    assert _user_version(catalog) == SCHEMA_VERSION
    with sqlite3.connect(catalog) as con:
        for table, rows in v1_rows.items():
            got = sorted(con.execute(f"SELECT * FROM {table}"))
            width = len(rows[0]) if rows else 0  # columns added since (messages.bcc_addrs) are NULL
            added = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description][width:]
            assert [r[:width] for r in got] == rows, table
            assert all(v is None for r in got for c, v in zip(added, r[width:], strict=True) if c != "subject_key"), table
        # but the subject as questions are compared with it, which schema 8 fills from the subjects
        keys = con.execute("SELECT message_id, subject_key FROM messages ORDER BY message_id").fetchall()
        assert keys == [("<m1@example.org>", "owls at dusk"), ("<m2@example.org>", "owls at dusk"), ("<m3@example.org>", "cave survey")]
    with Catalog(catalog) as cat:
        assert TextStore(cat).journal_units() == {str(tmp_path / "mail" / "notes.txt")}
        assert cat.active_generation().id == 2  # type: ignore[union-attr]
        # why schema 2: each e-mail list is one covering index scan, not a scan and a sort
        assert _plan(cat, SENDERS) == "SCAN messages USING COVERING INDEX idx_messages_from"
        assert _plan(cat, MAILBOXES) == "SCAN messages USING COVERING INDEX idx_messages_mailbox"
        # why schemas 4 and 8: a message named by its subject is one index search, not a scan
        assert "USING INDEX idx_messages_subject" in _plan(cat, SUBJECTS)
        found = cat.messages_with_subject(["OWLS AT DUSK"])
        assert sorted(k.rsplit("#", 1)[1] for k in found) == ["m1", "m2"]
    # upgraded, it is what a new catalog is
    with Catalog(tmp_path / "new" / "catalog.sqlite"):
        pass
    assert _schema(catalog) == _schema(tmp_path / "new" / "catalog.sqlite")


def test_a_creation_cut_short_before_the_steps_is_finished(tmp_path: Path) -> None:
    """Before the steps, schema 1 was created one statement at a time and ``user_version``
    written last: a process killed in between left tables at version 0."""
    catalog = tmp_path / "catalog.sqlite"
    with sqlite3.connect(catalog) as con:
        for sql in SCHEMA_1[:6]:  # the tables and the first index
            con.execute(sql)
    with Catalog(catalog) as cat:
        assert cat.schema_version() == SCHEMA_VERSION
        cat.add_source("/home/ana/docs")
    with Catalog(tmp_path / "new.sqlite"):
        pass
    assert _schema(catalog) == _schema(tmp_path / "new.sqlite")


# a real process opens the catalog and is killed inside one step's transaction, its
# statements and the version already written, just before the commit
OPEN_CATALOG = (
    "import sys\nfrom engine.catalog.store import Catalog\nCatalog(sys.argv[1])\nprint('not paused')\n"
)


@pytest.mark.parametrize(("start", "step"), [(None, 1), (None, 2), (1, 2), (None, 3), (1, 3)])
def test_a_kill_inside_a_step_leaves_the_last_complete_version(
    tmp_path: Path, start: int | None, step: int
) -> None:
    home = tmp_path / "home"
    catalog = _schema_1_catalog(home) if start == 1 else home / "catalog.sqlite"
    before = _schema(catalog) if start == 1 else set()
    # the announcement is the first thing the process writes
    assert kill_at_step(["-c", OPEN_CATALOG, str(catalog)], f"catalog:migrate-{step}") == []
    last = step - 1
    assert _user_version(catalog) == last
    with sqlite3.connect(catalog) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        columns = {r[1] for r in con.execute("PRAGMA table_info(messages)")}
    if last == 0:
        assert _schema(catalog) == set()  # nothing of step 1 is left
    elif start == 1 and last == 1:
        assert _schema(catalog) == before  # step 2's indexes were rolled back with it
    elif last == 1:
        assert "idx_one_active" in names and "idx_messages_from" not in names
    else:  # step 3's column was rolled back with it
        assert "idx_messages_from" in names and "bcc_addrs" not in columns
    with Catalog(catalog) as cat:  # the next open goes on from there
        assert cat.schema_version() == SCHEMA_VERSION
        if start == 1:
            assert [a for a, _ in cat.from_headers()] != []
            assert sorted(n for _, n in cat.from_headers()) == [1, 1, 1]


def test_a_newer_catalog_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    catalog = home / "catalog.sqlite"
    with Catalog(catalog) as cat:
        cat.add_source(str(tmp_path / "docs"))
    con = sqlite3.connect(catalog)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    schema = _schema(catalog)
    with pytest.raises(CatalogVersionError):
        Catalog(catalog)
    write(tmp_path / "docs" / "owls.txt", "Owls hunt at night over the fields.")
    for args in (("ask", "where do owls hunt?"), ("index", str(tmp_path / "docs"), "-q"), ("status",)):
        r = _cli(home, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert (
            f"the catalog {catalog} was written by a newer sparcdesk (catalog schema {SCHEMA_VERSION + 1}"
            in lines[0]
        )
        assert "run that newer sparcdesk, or" in lines[0]
    assert _user_version(catalog) == SCHEMA_VERSION + 1
    assert _schema(catalog) == schema
    assert not (home / "damaged").exists()
