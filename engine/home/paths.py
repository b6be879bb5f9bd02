"""Where sparcdesk keeps its state on the user's machine.

Everything lives under one folder, the *home*: ``$SPARCDESK_HOME`` when set (tests, a second
profile, a portable install), else the platform's per-user data folder
(``~/.local/share/sparcdesk`` on Linux, ``~/Library/Application Support/sparcdesk`` on macOS,
``%LOCALAPPDATA%\\sparcdesk`` on Windows).

Layout::

    HOME/
      catalog.sqlite          sources, files, documents, messages, generations, document texts and
                              the indexing journal (engine.catalog.store, engine.catalog.texts)
      index/
        gen-000001/           one index per generation (engine.index.sentences: tantivy for text, BM25 and
                              filters, columns/ for the SPARC scores); the catalog says
        gen-000002/           which generation is live, so a re-encode with a new model builds
                              the next one beside the live one and switches atomically
      logs/                   indexing and watch logs

Nothing here creates folders on import; :meth:`Layout.ensure` does it when an engine opens.
The home holds every document's text (the catalog), so it is created readable by its owner
only (0700; an existing one is tightened), and the catalog file is 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

APP_NAME = "sparcdesk"
HOME_ENV = "SPARCDESK_HOME"

CATALOG_FILE = "catalog.sqlite"
INDEX_DIR = "index"
LOG_DIR = "logs"
GENERATION_PREFIX = "gen-"
#: The home's mode: every document's text is in it.
PRIVATE_DIR_MODE = 0o700


def make_private_dir(path: Path) -> Path:
    """Create folder ``path`` readable by its owner only (its parents as usual), or tighten
    an existing one that others could read (POSIX; a no-op on Windows, where the user's
    profile folder is private already). Raises NotADirectoryError when ``path`` is a file."""
    path = Path(path)
    try:
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileExistsError:
        if not path.is_dir():
            raise NotADirectoryError(f"the data folder {path} is a file, not a folder") from None
    if os.name == "posix":
        st = os.stat(path)
        if stat.S_IMODE(st.st_mode) != PRIVATE_DIR_MODE and st.st_uid == os.getuid():
            os.chmod(path, PRIVATE_DIR_MODE)
    return path


def home_argument(value: str) -> str:
    """A ``--home`` value on a command line (``sparcdesk``, ``sparcdesk gui``): an empty one
    (``--home "$UNSET"``) is refused, not taken for the current folder."""
    import argparse

    if not value.strip():
        raise argparse.ArgumentTypeError("an empty path; leave --home out for the default data folder")
    return value


def default_home() -> Path:
    """``$SPARCDESK_HOME`` if set, else the platform's user-data folder for sparcdesk."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def generation_name(number: int) -> str:
    """Folder name of index generation ``number`` (``gen-000001``): sorts in creation order."""
    if number < 0:
        raise ValueError("generation numbers are >= 0")
    return f"{GENERATION_PREFIX}{number:06d}"


def parse_generation(name: str) -> int | None:
    """Inverse of :func:`generation_name`; None for any other folder name."""
    if not name.startswith(GENERATION_PREFIX):
        return None
    digits = name[len(GENERATION_PREFIX) :]
    return int(digits) if digits.isdigit() else None


@dataclass(frozen=True)
class Layout:
    """The files and folders of one sparcdesk home."""

    home: Path

    @classmethod
    def resolve(cls, home: Path | str | None = None) -> Layout:
        """The layout of ``home``, or of :func:`default_home` when None; always absolute."""
        path = Path(home).expanduser() if home is not None else default_home()
        return cls(Path(os.path.abspath(path)))

    @property
    def catalog(self) -> Path:
        return self.home / CATALOG_FILE

    @property
    def index_root(self) -> Path:
        return self.home / INDEX_DIR

    @property
    def logs(self) -> Path:
        return self.home / LOG_DIR

    def generation_dir(self, number: int) -> Path:
        """Folder of index generation ``number`` (not created)."""
        return self.index_root / generation_name(number)

    def generations_on_disk(self) -> list[int]:
        """Generation numbers that have a folder, ascending (leftovers included)."""
        try:
            names = os.listdir(self.index_root)
        except OSError:
            return []
        found = (parse_generation(n) for n in names if (self.index_root / n).is_dir())
        return sorted(n for n in found if n is not None)

    def ensure_home(self) -> Layout:
        """Create the home only (owner only); returns self."""
        make_private_dir(self.home)
        return self

    def ensure(self) -> Layout:
        """Create the home (owner only, see :func:`make_private_dir`), index and log folders
        if missing; returns self."""
        make_private_dir(self.home)
        for folder in (self.index_root, self.logs):
            folder.mkdir(exist_ok=True)
        return self


# ---- file names that are not valid UTF-8
#
# Python hands such names over as ``str`` with lone surrogates (U+DC80-U+DCFF, PEP 383), which
# ``open()`` accepts but SQLite and tantivy (both UTF-8) refuse. The stores keep them in the
# *stored form* below, which is valid Unicode and converts back exactly; everything else in
# the engine keeps working with the surrogate-escaped ``str`` the file system gave.

#: Starts every escaped stored form; no path (and so no document key) begins with NUL.
STORE_MARK = "\0"


def _needs_escape(text: str) -> bool:
    if text.startswith(STORE_MARK):
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def to_store(text: str) -> str:
    """Valid-Unicode stored form of ``text``: ``text`` itself unless it holds lone surrogates
    (or begins with NUL), else NUL + the text with ``\\`` doubled and each surrogate as
    ``\\uXXXX``. :func:`from_store` inverts it exactly."""
    if not _needs_escape(text):
        return text
    out = [STORE_MARK]
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def from_store(text: str) -> str:
    """Inverse of :func:`to_store` (strings without the mark are returned unchanged)."""
    if not text.startswith(STORE_MARK):
        return text
    out: list[str] = []
    i, n = 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and text.startswith("\\u", i) and i + 6 <= n:
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
        elif ch == "\\" and i + 1 < n:
            out.append(text[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def display(text: str) -> str:
    """``text`` printable anywhere: undecodable bytes of a file name shown as ``\\xNN``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte was decoded into
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (a no-op on Windows, where folders
    cannot be opened for fsync)."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` so that a crash leaves the old file or the new one,
    never half of one: a temporary file beside it, fsynced, renamed over it, folder fsynced."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
