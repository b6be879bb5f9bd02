"""The log file a user can send: ``HOME/logs/sparcdesk.log``, rotated.

:func:`setup` is called once per process, by the command line (:mod:`engine.cli.main`), the window
(:mod:`app.main`) and the window's indexing child (:mod:`app.indexer_process`). The window and
the command line write ``sparcdesk.log``; the indexing child writes ``indexer.log`` beside it,
so two processes never rotate the same file. Each file rotates at :data:`MAX_BYTES` and keeps
:data:`BACKUPS` old ones (``sparcdesk.log.1`` ...), so the folder stays under ~8 MB.

Messages are the ``logging`` records of every module (INFO and up; DEBUG with ``-v``), and an
uncaught exception's traceback; nothing is sent anywhere.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import platform
import sys
from pathlib import Path

from engine import __version__
from engine.home.paths import Layout, make_private_dir

LOG_FILE = "sparcdesk.log"
INDEXER_LOG_FILE = "indexer.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"

_HANDLER_FLAG = "_sparcdesk_log_file"


def log_path(home: Path | str | None = None, name: str = LOG_FILE) -> Path:
    """Where the log file of ``home`` (default: the user's data folder) lives."""
    return Layout.resolve(home).logs / name


def setup(
    home: Path | str | None = None,
    *,
    name: str = LOG_FILE,
    verbose: bool = False,
    console: int | None = None,
    max_bytes: int = MAX_BYTES,
    backups: int = BACKUPS,
    started: str | None = None,
) -> Path | None:
    """Send this process's log records to ``HOME/logs/<name>`` (rotating) and, with
    ``console`` (a level), to stderr as well. Calling it again replaces the file handler (another home, say).
    Returns the log file, or None when the folder cannot be written (logging then goes
    to stderr only: a read-only home must not stop the app). ``started``: the line that says
    who started logging, instead of the program's own start line (the window's indexing
    process wrote "sparcdesk gui started" once per run, as if the app had started again)."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    # A log record that cannot be written (a full disk) is dropped, not printed to the
    # terminal with a traceback.
    logging.raiseExceptions = False
    for h in list(root.handlers):
        if getattr(h, _HANDLER_FLAG, False):
            root.removeHandler(h)
            h.close()
    fmt = logging.Formatter(FORMAT)
    if console is not None and sys.stderr is not None:  # None: a windowed Windows/macOS app
        stream = logging.StreamHandler()
        stream.setLevel(console)
        stream.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        setattr(stream, _HANDLER_FLAG, True)
        root.addHandler(stream)
    path = log_path(home, name)
    try:
        make_private_dir(path.parent.parent)  # the home: owner only
        path.parent.mkdir(exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    except OSError as exc:
        logging.getLogger(__name__).warning("no log file: %s", exc)
        return None
    handler.setFormatter(fmt)
    setattr(handler, _HANDLER_FLAG, True)
    handler._sparcdesk_file = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    _hook_uncaught()
    if started is not None:
        logging.getLogger("sparcdesk").info("%s (pid %d)", started, os.getpid())
        return path
    logging.getLogger("sparcdesk").info(
        "sparcdesk %s started (%s; Python %s on %s %s%s; pid %d)",
        __version__,
        " ".join(sys.argv[:2]) or "?",
        platform.python_version(),
        platform.system(),
        platform.machine(),
        ", bundled" if getattr(sys, "frozen", False) else "",
        os.getpid(),
    )
    return path


def _hook_uncaught() -> None:
    if getattr(sys.excepthook, _HANDLER_FLAG, False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        if not issubclass(kind, KeyboardInterrupt):  # to the file: the terminal gets `previous`
            record = logging.getLogger("sparcdesk").makeRecord(
                "sparcdesk", logging.CRITICAL, __file__, 0, "uncaught exception", (), (kind, value, tb)
            )
            for h in logging.getLogger().handlers:
                if getattr(h, "_sparcdesk_file", False):
                    h.handle(record)
        previous(kind, value, tb)

    setattr(hook, _HANDLER_FLAG, True)
    sys.excepthook = hook
