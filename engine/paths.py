"""Where sparcdesk keeps its state on the user's machine.

Everything lives under one folder, the *home*: ``$SPARCDESK_HOME`` when set (tests, a second
profile, a portable install), else the platform's per-user data folder
(``~/.local/share/sparcdesk`` on Linux, ``~/Library/Application Support/sparcdesk`` on macOS,
``%LOCALAPPDATA%\\sparcdesk`` on Windows).

Layout::

    HOME/
      catalog.sqlite          sources, files, documents, messages, generations (engine.catalog)
      index/
        gen-000001/           one tantivy index per generation (engine.index); the catalog says
        gen-000002/           which generation is live, so a re-encode with a new model builds
                              the next one beside the live one and switches atomically
      logs/                   indexing and watch logs

Nothing here creates folders on import; :meth:`Layout.ensure` does it when an engine opens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "sparcdesk"
HOME_ENV = "SPARCDESK_HOME"

CATALOG_FILE = "catalog.sqlite"
INDEX_DIR = "index"
LOG_DIR = "logs"
GENERATION_PREFIX = "gen-"


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

    def ensure(self) -> Layout:
        """Create the home, index and log folders if missing; returns self."""
        for folder in (self.home, self.index_root, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        return self
