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
from pathlib import Path

from test_pipeline import write
from test_robustness import _env

from engine.catalog.store import SCHEMA_VERSION
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


def test_a_newer_catalog_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    home, _ = _indexed(tmp_path)
    catalog = home / "catalog.sqlite"
    con = sqlite3.connect(catalog)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    for args in (("ask", "where do owls hunt?"), ("index", str(tmp_path / "docs"), "-q"), ("status",)):
        r = _cli(home, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert f"the catalog {catalog} was written by a newer sparcdesk (catalog schema {SCHEMA_VERSION + 1}" in lines[0]
        assert "run that newer sparcdesk, or" in lines[0]
    assert _user_version(catalog) == SCHEMA_VERSION + 1
    assert not (home / "damaged").exists()


def test_an_older_catalog_is_upgraded_in_place(tmp_path: Path) -> None:
    """Schema 0: a catalog from before the schema number was written, without the index
    that keeps one generation live."""
    home, _ = _indexed(tmp_path)
    catalog = home / "catalog.sqlite"
    con = sqlite3.connect(catalog)
    con.execute("DROP INDEX idx_one_active")
    con.execute("PRAGMA user_version = 0")
    con.close()
    assert _owls(home)[0].endswith("owls.txt")
    assert _user_version(catalog) == SCHEMA_VERSION
    con = sqlite3.connect(catalog)
    try:
        assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_one_active'").fetchone()[0] == 1
    finally:
        con.close()
