"""The log file a user can send (engine.home.logs): written under HOME/logs by the command line and
the window, rotated at its size limit, and reachable from Help > Open log file; Help > About
names the app's and the model's versions."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from engine import __version__
from engine.home import logs
from engine.model.encoder import default_bundle_dir


@pytest.fixture
def clean_logging():
    """Leaves the root logger and sys.excepthook as they were."""
    root = logging.getLogger()
    handlers, level, hook = list(root.handlers), root.level, sys.excepthook
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.setLevel(level)
    sys.excepthook = hook


def test_log_file_is_written_and_rotates(tmp_path, clean_logging):
    home = tmp_path / "home"
    path = logs.setup(home, max_bytes=2_000, backups=2)
    assert path == home / "logs" / logs.LOG_FILE
    log = logging.getLogger("engine.test")
    for i in range(200):
        log.info("line %03d %s", i, "x" * 40)
    for h in logging.getLogger().handlers:
        h.flush()
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["sparcdesk.log", "sparcdesk.log.1", "sparcdesk.log.2"]  # backups=2: no .3
    for p in path.parent.iterdir():
        assert p.stat().st_size <= 2_000
    text = path.read_text(encoding="utf-8")
    assert "line 199" in text and "INFO engine.test" in text
    assert "line 000" not in "".join(p.read_text(encoding="utf-8") for p in path.parent.iterdir())
    # set up again (another home): one file handler, the new one
    other = logs.setup(tmp_path / "other")
    logging.getLogger("engine.test").warning("to the other home")
    files = [h for h in logging.getLogger().handlers if getattr(h, "_sparcdesk_file", False)]
    assert len(files) == 1
    files[0].flush()
    assert "to the other home" in other.read_text(encoding="utf-8")
    assert "to the other home" not in path.read_text(encoding="utf-8")


def test_uncaught_exception_goes_to_the_log(tmp_path, clean_logging, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: seen.append(exc))  # the terminal's
    path = logs.setup(tmp_path, console=logging.WARNING)
    try:
        raise RuntimeError("boom for the log")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    text = path.read_text(encoding="utf-8")
    assert "CRITICAL sparcdesk: uncaught exception" in text and "RuntimeError: boom for the log" in text
    assert len(seen) == 1  # then the usual report, once (not again through the console handler)


def test_cli_writes_the_log_and_reports_versions(tmp_path, clean_logging, capsys):
    import engine.cli.main as cli

    home = tmp_path / "home"
    assert cli.main(["status", "--home", str(home), "--json"]) == 0
    text = (home / "logs" / logs.LOG_FILE).read_text(encoding="utf-8")
    assert f"sparcdesk {__version__} started" in text
    model = json.loads((default_bundle_dir() / "config.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.strip() == (
        f"sparcdesk {__version__} (shipped model {model['name']} {model['version']})"
    )


def test_window_help_menu_opens_the_log_and_shows_versions(qtbot, tmp_path, clean_logging, monkeypatch):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QObject, QSettings, QUrl, Slot
    from PySide6.QtGui import QDesktopServices

    from app.backend import Backend
    from app.main import make_engine_factory
    from app.qtcompat import install_none_guard
    from app.window import MainWindow

    class Recorder(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.urls: list[QUrl] = []

        @Slot(QUrl)
        def handle(self, url: QUrl) -> None:
            self.urls.append(url)

    install_none_guard()
    home = tmp_path / "home"
    logs.setup(home)
    backend = Backend(make_engine_factory(home=home))
    window = MainWindow(backend, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    backend.start()
    rec = Recorder()
    QDesktopServices.setUrlHandler("file", rec, "handle")
    try:
        qtbot.waitUntil(lambda: bool(backend.is_ready and window.last_status.get("home")), timeout=60_000)
        model = json.loads((default_bundle_dir() / "config.json").read_text(encoding="utf-8"))
        about = window.about_text()
        assert f"sparcdesk {__version__}" in about
        assert f"{model['name']} {model['version']}" in about
        assert window.act_log in window.menuBar().actions()[-1].menu().actions()
        window.act_log.trigger()
        assert [u.toLocalFile() for u in rec.urls] == [str(home / "logs" / logs.LOG_FILE)]
        # nothing here opens it: the banner names the file with Copy path (issue 36, item 8)
        QDesktopServices.unsetUrlHandler("file")
        monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda _url: False))
        window.act_log.trigger()
        log_file = str(home / "logs" / logs.LOG_FILE)
        assert window.banner.isVisible() and window.banner.path == log_file
        assert window.banner.text().startswith(f"The log file is {log_file}")
    finally:
        QDesktopServices.unsetUrlHandler("file")
        window.close()


def test_a_swallowed_error_lands_in_the_log(tmp_path, clean_logging):
    """A damaged side file of the catalog used to be passed over in silence: the copy of the
    source list (HOME/sources.json) is now named in the log with the reason, and written again."""
    from engine.cli import main as cli

    home = tmp_path / "home"
    home.mkdir()
    (home / "sources.json").write_text('[{"path": "/somewhere", "kind": "fol', encoding="utf-8")  # cut short
    assert cli.main(["status", "--home", str(home), "--json"]) == 0
    for h in logging.getLogger().handlers:
        h.flush()
    lines = (home / "logs" / logs.LOG_FILE).read_text(encoding="utf-8").splitlines()
    written = [ln for ln in lines if f"{home / 'sources.json'} is unreadable (JSONDecodeError" in ln]
    assert written and all(" WARNING engine.upkeep.repair: " in ln for ln in written), lines
    assert any(ln.endswith("writing it again") for ln in written)
    assert json.loads((home / "sources.json").read_text(encoding="utf-8")) == []  # the catalog's list: none


def test_an_indexing_run_and_each_problem_file_are_logged(tmp_path, clean_logging, capsys):
    """Issue 36, item 8: the log held only "started" lines. A run's summary and each problem
    file with its reason are in it now, and nothing more reaches the terminal."""
    import engine.cli.main as cli

    src = tmp_path / "src"
    src.mkdir()
    (src / "owls.txt").write_text("Owls hunt at night.", encoding="utf-8")
    (src / "blob.txt").write_bytes(b"bad\x00\x00binary")
    home = tmp_path / "home"
    assert cli.main(["index", str(src), "--home", str(home), "-q", "--threads", "1"]) == 0
    text = (home / "logs" / logs.LOG_FILE).read_text(encoding="utf-8")
    assert f"indexing {src} with" in text
    assert "indexing finished: 2 of 2 files done (1 indexed, 1 with problems" in text
    assert f"{src / 'blob.txt'}: binary data" in text
    assert "blob.txt" not in capsys.readouterr().err


def test_the_indexing_process_says_what_it_is(tmp_path, clean_logging):
    """Issue 36, item 8: indexer.log repeated "sparcdesk gui started" for every indexing
    process, as if the app had started again. Its line says what it is; the app's says the app."""
    home = tmp_path / "home"
    path = logs.setup(home, name=logs.INDEXER_LOG_FILE, started="indexing process of the window (pid 7) started: index")
    for h in logging.getLogger().handlers:
        h.flush()
    text = path.read_text(encoding="utf-8")
    assert "indexing process of the window (pid 7) started: index (pid " in text
    assert "sparcdesk " + logs.__version__ + " started" not in text
    app_log = logs.setup(home)
    for h in logging.getLogger().handlers:
        h.flush()
    assert "sparcdesk " + logs.__version__ + " started" in app_log.read_text(encoding="utf-8")
