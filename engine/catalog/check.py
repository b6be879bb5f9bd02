"""Is a catalog file usable? Read-only checks that self-repair (:mod:`engine.upkeep.repair`)
runs before opening it: a damaged catalog is set aside and rebuilt from the sources."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

from engine.catalog.store import SCHEMA_VERSION

log = logging.getLogger(__name__)

#: Past this size the catalog's pages are not all read at every open (its schema is).
QUICK_CHECK_MAX = 256 * 1024 * 1024

_CORRUPT = (
    "not a database",
    "malformed",
    "corrupt",
    "no such table",
    "file is encrypted",
    "unsupported file format",
)


def catalog_problem(path: Path) -> str | None:
    """Why the catalog at ``path`` cannot be used, or None (also when it is merely busy)."""
    if not path.exists():
        return None
    try:
        if path.stat().st_size == 0:
            return None  # created, never written: SQLite makes it a database
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        if con.execute("PRAGMA user_version").fetchone()[0] > SCHEMA_VERSION:
            return None  # a newer sparcdesk's catalog is not damage: opening it says what to do
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = {"sources", "files", "generations"} - names
        if missing:
            return f"tables missing: {', '.join(sorted(missing))}"
        con.execute("SELECT COUNT(*) FROM sources").fetchone()
        con.execute("SELECT id, status, index_dir FROM generations").fetchall()
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns]
        checked = path.with_name(".catalog-checked.json")
        try:
            known = json.loads(checked.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = None
        except (OSError, ValueError) as exc:  # costs one full check, nothing else
            log.info("%s is unreadable (%s: %s): checking every page of the catalog", checked, type(exc).__name__, exc)
            known = None
        if st.st_size <= QUICK_CHECK_MAX and known != stamp:  # every page, once per change
            result = [r[0] for r in con.execute("PRAGMA quick_check(5)")]
            if result != ["ok"]:
                return "; ".join(result)[:300]
            try:
                checked.write_text(json.dumps(stamp), encoding="utf-8")
            except OSError as exc:
                log.warning("cannot save %s (the catalog is checked again next time): %s", checked, exc)
    except sqlite3.Error as exc:
        text = str(exc)
        if any(w in text.lower() for w in _CORRUPT):
            return text
        return None  # locked, busy, a full disk: not damage
    finally:
        con.close()
    return None
