"""Self-repair of the data folder: damage is found when an engine opens, the damaged part is
moved aside (kept for a bug report) and rebuilt from the sources.

Checked on every open (:func:`repair`), under the home's writer lock (a home another process
is writing is left alone: that process checks it when it opens):

* the data folder, ``logs`` or ``index`` being a file: moved aside, the folder made;
* the catalog: SQLite's ``quick_check`` (the schema only past :data:`engine.catalog.check.QUICK_CHECK_MAX`) and its
  tables. A damaged catalog is moved aside with the index folder (the index's documents are
  known only to it); a fresh catalog gets the sources back from ``sources.json``, a copy of
  the source list kept beside it, and the next indexing run rebuilds everything;
* each live or building generation: sparcdesk's metadata, tantivy's meta.json and every
  segment file's CRC (tantivy writes one in each file's footer; a file verified once is
  remembered by name, size and mtime, so later opens only stat it), the document index
  beside it, and opening it. A damaged generation is moved aside and its files are marked
  for re-encoding; any indexing run rebuilds it (answers come back as it fills);
* an index recorded under another data folder (the data folder was moved): its paths are
  read relative to the folder it is in now (:class:`engine.catalog.store.Catalog` does that).

Each repair is one line in :attr:`engine.api.facade.Engine.repairs` (and the log), which the command
line prints: what happened, where the damaged part went, what sparcdesk does about it.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

from engine.home.paths import Layout

log = logging.getLogger(__name__)

DAMAGED_DIR = "damaged"
SOURCES_FILE = "sources.json"
_FOOTER_MAGIC = 1337
_VERIFIED = ".verified.json"


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def set_aside(layout: Layout, path: Path, label: str) -> Path:
    """Move ``path`` into ``HOME/damaged/<time>-<label>/`` and return where it went."""
    dest_dir = layout.home / DAMAGED_DIR / f"{_stamp()}-{label}"
    n = 1
    while dest_dir.exists():
        n += 1
        dest_dir = layout.home / DAMAGED_DIR / f"{_stamp()}-{label}-{n}"
    dest_dir.mkdir(parents=True)
    dest = dest_dir / path.name
    os.replace(path, dest)
    return dest


# --------------------------------------------------------------------------- folders


def repair_folders(layout: Layout) -> list[str]:
    """The data folder, ``logs`` and ``index`` are folders (a file in their place is moved
    aside); creates them (the data folder owner-only)."""
    notes: list[str] = []
    home = layout.home
    if home.exists() and not home.is_dir():
        dest = home.with_name(f"{home.name}.damaged-{_stamp()}")
        os.replace(home, dest)
        notes.append(f"the data folder {home} was a file: moved to {dest}; a new data folder was made")
    layout.ensure_home()
    for folder in (layout.logs, layout.index_root):
        if folder.exists() and not folder.is_dir():
            dest = set_aside(layout, folder, folder.name)
            notes.append(f"{folder} was a file, not a folder: moved to {dest}")
    layout.ensure()
    return notes


# --------------------------------------------------------------------------- the catalog

def save_sources(layout: Layout, sources: Iterable[object]) -> None:
    """Keep a copy of the source list beside the catalog (to rebuild from if it is lost)."""
    rows = [{"path": s.path, "kind": s.kind, "exclude": list(s.exclude)} for s in sources]  # type: ignore[attr-defined]
    path = layout.home / SOURCES_FILE
    try:
        if json.loads(path.read_text(encoding="utf-8")) == rows:
            return
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:  # the copy is written again below
        log.warning("%s is unreadable (%s: %s): writing it again", path, type(exc).__name__, exc)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(rows, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # the copy is for rebuilding a lost catalog: opening goes on without it
        log.warning("cannot save the source list to %s: %s", path, exc)


def saved_sources(layout: Layout) -> list[dict]:
    path = layout.home / SOURCES_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s: %s): no sources to restore from it", path, type(exc).__name__, exc)
        return []
    if not isinstance(rows, list):
        log.warning("%s is not a list of sources: no sources to restore from it", path)
        return []
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("path"), str)]


def repair_catalog(layout: Layout) -> list[str]:
    from engine.catalog.check import catalog_problem

    problem = catalog_problem(layout.catalog)
    had_index = bool(layout.generations_on_disk())
    empty = not layout.catalog.exists() or layout.catalog.stat().st_size == 0
    if problem is None and empty and (had_index or saved_sources(layout)):
        problem = "it is missing" if not layout.catalog.exists() else "it is empty"
    if problem is None:
        return []
    from engine.catalog.store import Catalog

    if layout.catalog.exists():
        dest = set_aside(layout, layout.catalog, "catalog")
    else:
        dest = layout.home / DAMAGED_DIR / f"{_stamp()}-catalog" / layout.catalog.name
        dest.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("-wal", "-shm"):
        side = layout.catalog.with_name(layout.catalog.name + suffix)
        if side.exists():
            os.replace(side, dest.with_name(side.name))
    if layout.index_root.exists():
        os.replace(layout.index_root, dest.with_name("index"))
    layout.ensure()
    sources = saved_sources(layout)
    cat = Catalog(layout.catalog)
    try:
        for s in sources:
            try:
                cat.add_source(s["path"], s.get("kind", "folder"), s.get("exclude") or [])
            except Exception as exc:  # one odd row must not cost the others
                log.warning("cannot restore the source %s: %s: %s", s["path"], type(exc).__name__, exc)
    finally:
        cat.close()
    return [
        f"the catalog was damaged ({problem}): moved with the index to {dest.parent}; "
        f"{len(sources)} source(s) restored, the next indexing run rebuilds the index from them"
    ]


# --------------------------------------------------------------------------- generations


def _crc_ok(path: Path) -> str | None:
    """None when a tantivy file's footer CRC matches its content, else what is wrong."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size < 8:
                return "truncated"
            f.seek(size - 8)
            flen, magic = struct.unpack("<II", f.read(8))
            if magic != _FOOTER_MAGIC or flen > size - 8 or flen > 4096:
                return "no footer (truncated or overwritten)"
            f.seek(size - 8 - flen)
            footer = json.loads(f.read(flen))
            f.seek(0)
            crc = 0
            left = size - 8 - flen
            while left > 0:
                block = f.read(min(left, 1 << 20))
                if not block:
                    return "truncated"
                crc = zlib.crc32(block, crc)
                left -= len(block)
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}"
    if int(footer.get("crc", -1)) != crc:
        return "checksum mismatch"
    return None


def _tantivy_problem(folder: Path, verified: dict[str, list[int]]) -> str | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        segments = [s["segment_id"].replace("-", "") for s in meta["segments"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"{folder.name}/meta.json: {type(exc).__name__}: {exc}"
    try:
        names = os.listdir(folder)
    except OSError as exc:
        return str(exc)
    for seg in segments:
        files = [n for n in names if n.startswith(seg + ".")]
        if not any(n.endswith(".store") for n in files) or not any(n.endswith(".term") for n in files):
            return f"segment {seg} of {folder.name} is missing files"
        for name in files:
            p = folder / name
            try:
                st = p.stat()
            except OSError as exc:
                return f"{name}: {exc}"
            key = str(p)
            if verified.get(key) == [st.st_size, st.st_mtime_ns]:
                continue
            bad = _crc_ok(p)
            if bad:
                return f"{name}: {bad}"
            verified[key] = [st.st_size, st.st_mtime_ns]
    return None


def index_problem(folder: Path, layout: Layout | None = None) -> str | None:
    """Why the generation folder cannot be used, or None."""
    from engine.index.sentences import META_FILE, SentenceIndex

    if not folder.is_dir():
        return "its folder is missing"
    if not (folder / META_FILE).exists():
        return f"{META_FILE} is missing"
    cache = (layout.index_root if layout else folder.parent) / f".{folder.name}{_VERIFIED}"
    try:
        verified = json.loads(cache.read_text(encoding="utf-8"))
        if not isinstance(verified, dict):
            verified = {}
    except FileNotFoundError:
        verified = {}
    except (OSError, ValueError) as exc:  # a cache: costs one full verification, nothing else
        log.info("%s is unreadable (%s: %s): verifying every segment", cache, type(exc).__name__, exc)
        verified = {}
    before = dict(verified)
    problem = _tantivy_problem(folder, verified)
    if problem is None and (folder / "docs").is_dir():
        problem = _tantivy_problem(folder / "docs", verified)
    if problem is None:
        try:
            ix = SentenceIndex.open(folder)
            try:
                ix.num_sentences  # noqa: B018 - opening reads the column manifest and maps its files
            finally:
                ix.close()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # tantivy panics arrive as pyo3's PanicException
            problem = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    if problem is None and verified != before:
        try:
            cache.write_text(json.dumps(verified), encoding="utf-8")
        except OSError as exc:
            log.warning("cannot save %s (the index is verified again next time): %s", cache, exc)
    return problem


def repair_generations(layout: Layout, catalog: object) -> list[str]:
    """Move aside every live or building generation that is damaged; its files are marked for
    re-encoding, which any indexing run does."""
    from engine.catalog.store import Catalog
    from engine.catalog.texts import TextStore
    from engine.index.sentences import FORMAT_VERSION, index_format

    assert isinstance(catalog, Catalog)
    notes: list[str] = []
    for gen in catalog.generations():
        if gen.status == "retired":
            continue
        folder = Path(gen.index_dir)
        claimed = catalog.files_in_generation(gen.id)
        if not folder.exists() and not claimed:
            continue  # a building generation not started yet
        fmt = index_format(folder)
        if fmt is not None and fmt > FORMAT_VERSION:
            continue  # a newer sparcdesk's index is not damage: the engine refuses to open it
        problem = index_problem(folder, layout)
        if problem is None:
            continue
        where = ""
        if folder.exists():
            dest = set_aside(layout, folder, folder.name)
            where = f" moved to {dest};"
        with catalog.transaction():
            catalog.forget_generation_files(gen.id)
            TextStore(catalog).clear_all_journals()
        stale = layout.index_root / f".{folder.name}{_VERIFIED}"
        try:
            stale.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove %s: %s", stale, exc)
        if fmt is not None and fmt < FORMAT_VERSION:
            notes.append(
                f"index {folder.name} was made by an older sparcdesk (index format {fmt}; this version"
                f" reads format {FORMAT_VERSION}):{where} run 'sparcdesk index' on your folders"
                f" ('sparcdesk sources' lists them) to rebuild it ({claimed} files; the window does it"
                " when it starts); until then questions find nothing"
            )
            continue
        notes.append(
            f"index {folder.name} was damaged ({problem}):{where} the next indexing run rebuilds it"
            f" from the sources ({claimed} files)"
        )
    return notes


def repair(layout: Layout) -> list[str]:
    """Find and repair damage in the data folder (see the module docstring); returns one line
    per repair. A home that another process is writing is left to that process."""
    from engine.catalog.store import Catalog
    from engine.index.sentences import IndexLockedError
    from engine.upkeep import writelock

    notes = repair_folders(layout)
    try:
        with writelock.hold(layout.home, "checking the data folder", 0.0):
            notes += repair_catalog(layout)
            cat = Catalog(layout.catalog)
            try:
                notes += repair_generations(layout, cat)
            finally:
                cat.close()
    except IndexLockedError as exc:
        log.info("the catalog and index are left to the process writing %s: %s", layout.home, exc)
    for n in notes:
        log.info("repaired: %s", n)
    return notes
