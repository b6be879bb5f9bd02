"""Entry point of the desktop window (``sparcdesk gui`` and ``python -m app.main``)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ORG = "sparcdesk"
APP = "sparcdesk"
SETTINGS_FILE = "settings.ini"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from engine.home.paths import home_argument

    p = argparse.ArgumentParser(prog="sparcdesk gui", description="The sparcdesk desktop window.")
    p.add_argument(
        "--home",
        type=lambda v: Path(home_argument(v)),
        help="engine home folder (default: $SPARCDESK_HOME or the user data folder)",
    )
    p.add_argument("--model", type=Path, help="model bundle folder (default: the shipped model)")
    p.add_argument("--threads", type=int, help="encoder threads (default: physical cores, at most 4)")
    p.add_argument("--settings", type=Path, help="settings file (default: settings.ini in the data folder)")
    p.add_argument("--ask", help="run this question once the index is open")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="start, wait for the engine and the welcome page, print what is shown and quit (0: it was)",
    )
    return p.parse_args(list(argv) if argv is not None else None)


def make_engine_factory(
    home: Path | None = None, bundle_dir: Path | None = None, threads: int | None = None
) -> Callable[[], Any]:
    """A callable that opens the engine (an ``app.indexer_process.EngineSpec``)."""
    from app.indexer_process import EngineSpec

    return EngineSpec(home, bundle_dir, threads)


def make_settings(path: Path | None = None, home: Path | None = None):
    """The window's settings: ``path``, else ``settings.ini`` in the data folder (``home``,
    else ``$SPARCDESK_HOME`` or the user data folder): sparcdesk writes nothing outside its
    data folder, and a second profile has settings of its own."""
    from PySide6.QtCore import QSettings

    from engine.home.paths import Layout

    if path is None:
        path = Layout.resolve(home).home / SETTINGS_FILE
    return QSettings(str(path), QSettings.Format.IniFormat)


def create_window(args: argparse.Namespace, engine_factory=None, settings=None):
    """The main window with its backend, started (the engine opens in the background)."""
    from app.backend import Backend
    from app.window import MainWindow

    factory = engine_factory or make_engine_factory(args.home, args.model, args.threads)
    backend = Backend(factory)
    window = MainWindow(backend, settings if settings is not None else make_settings(args.settings, args.home))
    backend.setParent(window)
    if args.ask:
        backend.ready.connect(lambda: window.ask(args.ask))
    backend.start()
    return window


def xcb_plugin() -> Path | None:
    """Qt's X11 platform plugin as installed with PySide6 (None when there is none)."""
    try:
        import PySide6
    except ImportError:
        return None
    path = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return path if path.is_file() else None


def missing_libraries(binary: Path) -> list[str]:
    """The shared libraries ``binary`` needs, directly or not, that the loader cannot find."""
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted({line.split("=>")[0].strip() for line in out.splitlines() if "=> not found" in line})


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package of a library, named after its soname as Debian does
    (libxcb-cursor.so.0 -> libxcb-cursor0, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0)."""
    base, _, version = soname.partition(".so.")
    version = version.split(".")[0]
    if not version:
        return base
    return f"{base}-{version}" if base[-1:].isdigit() else f"{base}{version}"


def display_problem(platform: str | None = None, plugin: Path | None = None) -> str | None:
    """Why the window cannot start on X11 here, naming the missing system libraries and the
    command that installs them; None when it can (or another platform plugin is used).

    Qt aborts when its xcb plugin cannot load, naming at most one library (from Qt 6.5,
    libxcb-cursor0, absent from minimal Debian installs), in a line that is easy to miss."""
    if not sys.platform.startswith("linux"):
        return None
    platform = os.environ.get("QT_QPA_PLATFORM", "") if platform is None else platform
    if platform and not platform.startswith("xcb"):
        return None  # offscreen, wayland, …
    if not platform and os.environ.get("WAYLAND_DISPLAY"):
        return None  # Qt starts on Wayland first
    plugin = plugin or xcb_plugin()
    missing = missing_libraries(plugin) if plugin is not None else []
    if not missing:
        return None
    packages = " ".join(dict.fromkeys(debian_package(m) for m in missing))
    return (
        f"The sparcdesk window cannot start: Qt's X11 platform plugin (xcb) needs {', '.join(missing)}, "
        f"not installed on this system.\n"
        f"On Debian or Ubuntu: sudo apt-get install {packages}\n"
        "Elsewhere, install the package that provides it. The command line (sparcdesk index, ask, "
        "status) works without it."
    )


def gui_command(argv: list[str]) -> int:
    """``sparcdesk gui [options]``: the window, as a sub-command of the command line, which
    finds it through the ``sparcdesk.commands`` entry point (pyproject.toml)."""
    return int(main(list(argv)) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    import multiprocessing

    multiprocessing.freeze_support()  # indexing runs in a child process (frozen builds need this)
    args = parse_args(argv)
    from engine.home import logs

    level = logging.DEBUG if args.verbose else logging.INFO
    logs.setup(args.home, verbose=args.verbose, console=level)  # HOME/logs/sparcdesk.log
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    problem = display_problem()
    if problem is not None:  # before Qt, which would abort with a line that is easy to miss
        logging.getLogger("sparcdesk").error("%s", problem)  # to stderr too (console handler)
        return 1
    from PySide6.QtWidgets import QApplication

    from app.icons import app_icon
    from app.qtcompat import install_none_guard

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setOrganizationName(ORG)
    app.setOrganizationDomain("sparcdesk.org")
    app.setApplicationName(APP)
    app.setApplicationDisplayName("sparcdesk")
    app.setDesktopFileName("sparcdesk")
    app.setWindowIcon(app_icon())
    install_none_guard()
    # Ctrl+C in the terminal quits (Python only sees signals between Qt events otherwise).
    signal.signal(signal.SIGINT, signal.SIG_DFL)

    window = create_window(args)
    window.show()
    if args.smoke:
        result = _smoke_check(window)
        app.exec()
        return result["code"]
    return app.exec()


SMOKE_TIMEOUT_S = 120


def _smoke_check(window) -> dict:
    """``--smoke`` (packaging/smoke.sh): once the engine is open and the welcome page is the
    current page, index the samples the way the welcome page's button does (in the indexing
    child process: the frozen app re-runs itself for it), and quit with 0 when that is done
    without error; with 1 if a step fails or SMOKE_TIMEOUT_S passes."""
    import time

    from PySide6.QtCore import QTimer

    from engine.cli.main import version_text

    start = time.monotonic()
    timer = QTimer(window)
    result = {"code": 1, "phase": "welcome"}

    def say(text: str) -> None:
        print(f"smoke: {text}", flush=True)
        logging.getLogger("sparcdesk").info("smoke: %s", text)

    def finished(progress, error: str) -> None:
        if result["phase"] != "indexing":
            return
        files = getattr(progress, "files_done", 0)
        if error or not files:
            say(f"FAILED: indexing the samples in the child process: {error or 'no file indexed'}")
        else:
            say(f"the window's indexing process indexed the samples ({files} files)")
            say("smoke check passed")
            result["code"] = 0
        result["phase"] = "done"
        timer.stop()
        window.close()  # shuts the backend's threads down, then the app quits

    window.backend.index_finished.connect(finished)

    def check() -> None:
        ready = window.backend.is_ready
        page = window.stack.currentWidget()
        if result["phase"] == "welcome" and ready and page is window.welcome:
            say(f"{version_text()}: window up, welcome page shown")
            result["phase"] = "indexing"
            window.index_samples()
        elif time.monotonic() - start > SMOKE_TIMEOUT_S:
            name = type(page).__name__ if page is not None else None
            say(f"FAILED: timed out in phase {result['phase']} (engine ready={ready}, page {name})")
            timer.stop()
            window.close()

    timer.timeout.connect(check)
    timer.start(200)
    return result
