"""The ``sparcdesk`` command line: demo, index, ask (pretty and JSON, filters), status,
sources, remove, watch and the lazy gui entry."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
from test_pipeline import write
from test_search import _CACHE, QUESTIONS, SAMPLES, norm, sample_home

from engine.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def test_demo_on_a_fresh_home_then_again(capsys: pytest.CaptureFixture[str]) -> None:
    home = sample_home()  # ran `sparcdesk demo --home <fresh>` once for the session
    first = str(_CACHE["demo_output"])
    assert f"indexing the sample corpus ({SAMPLES})" in first
    assert first.count("Q: ") == 3
    assert "indexed 18 changed file(s)" in first
    asked = [q for q in QUESTIONS if f"Q: {q['question']}" in first]
    assert len(asked) == 3 and any(q["file"].startswith("mail/") for q in asked)
    # The known answer of each demo question is printed in bold inside its passage.
    for q in asked:
        assert f"**{norm(q['sentence'])}**" in norm(first), q["question"]

    assert main(["demo", "--home", str(home), "-q"]) == 0
    again = capsys.readouterr().out
    assert "already indexed" in again and again.count("Q: ") == 3


def test_index_ask_status_sources_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "docs"
    write(d / "otters.txt", "Sea otters hold hands while they sleep. They float on their backs.")
    write(d / "notes" / "owls.md", "# Owls\n\nBarn owls hunt by sound in complete darkness.")
    (d / "broken.txt").write_bytes(b"\x00\x01\x02" * 100)
    home = ["--home", str(tmp_path / "home"), "--threads", "1"]

    assert main(["index", str(d), "-q", *home]) == 0
    out = capsys.readouterr().out
    assert "indexed 3 changed file(s)" in out and "1 file(s) with problems" in out

    assert main(["ask", "Why do sea otters hold hands?", "--json", "--top", "2", *home]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["question"] == "Why do sea otters hold hands?"
    best = data["answers"][0]
    assert best["path"] == str(d / "otters.txt") and best["kind"] == "text"
    assert best["best"]["sentence"] == "Sea otters hold hands while they sleep."
    assert best["best"]["passage"][best["best"]["start"] : best["best"]["end"]] == best["best"]["sentence"]

    assert main(["ask", "How do barn owls hunt?", "--hybrid", "--idf", *home]) == 0
    pretty = capsys.readouterr().out
    assert "**Barn owls hunt by sound in complete darkness.**" in pretty
    assert str(d / "notes" / "owls.md") in pretty

    # a question both files answer; the filter keeps the plain-text one only
    assert main(["ask", "Do sea otters and barn owls sleep or hunt?", "--json", *home]) == 0
    both = json.loads(capsys.readouterr().out)["answers"]
    assert {a["kind"] for a in both} == {"text", "markdown"}
    # the score printed is the document's, the one the list is ordered by
    assert main(["ask", "Do sea otters and barn owls sleep or hunt?", *home]) == 0
    shown = [float(s) for s in re.findall(r"\[\w+, score (-?[\d.]+)\]", capsys.readouterr().out)]
    assert shown == [round(a["score"], 2) for a in both] and shown == sorted(shown, reverse=True)
    assert any(round(a["best"]["score"], 2) != round(a["score"], 2) for a in both)  # not the sentence's
    assert main(["ask", "Do sea otters and barn owls sleep or hunt?", "--kind", "text", "--json", *home]) == 0
    assert {a["kind"] for a in json.loads(capsys.readouterr().out)["answers"]} == {"text"}
    assert main(["ask", "How do barn owls hunt?", "--folder", str(d / "notes"), "--json", *home]) == 0
    assert [a["title"] for a in json.loads(capsys.readouterr().out)["answers"]] == ["Owls"]
    assert main(["ask", "otters", "--to", "2001-01-01", "--json", *home]) == 0
    assert json.loads(capsys.readouterr().out)["answers"] == []
    # no answer says why: the filters, or a question with no word (not "index some folders")
    assert main(["ask", "otters", "--to", "2001-01-01", *home]) == 0
    assert "loosen the filters" in capsys.readouterr().out
    assert main(["ask", "?!", *home]) == 0
    assert "the question has no word" in capsys.readouterr().out

    assert main(["status", *home]) == 0
    status = capsys.readouterr().out
    assert f"source:    {d} [folder]: 3 files" in status
    assert "broken.txt" in status and "binary data, not text" in status
    assert main(["status", "--json", *home]) == 0
    st = json.loads(capsys.readouterr().out)
    # 4 sentences of text and each file's name line (the unreadable one is found by its name)
    assert st["files"] == 3 and st["files_error"] == 1 and st["sentences"] == 4 + 3

    assert main(["sources", *home]) == 0
    assert capsys.readouterr().out.startswith(f"{d}\tfolder\t3 files")
    assert main(["remove", str(d), *home]) == 0
    assert "removed" in capsys.readouterr().out
    assert main(["sources", *home]) == 0 and capsys.readouterr().out == ""
    assert main(["remove", str(d), *home]) == 1
    assert main(["ask", "otters", *home]) == 0
    assert "Index some folders first" in capsys.readouterr().out


def test_an_upgrading_run_says_it_re_reads_files_not_that_they_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an update that indexes more of each file (a new records version) the next run
    re-reads every file; it says so rather than "N changed file(s)"."""
    import engine.indexer.prepare as prepare
    import engine.indexer.run as run

    d = tmp_path / "docs"
    write(d / "otters.txt", "Sea otters hold hands while they sleep.")
    write(d / "owls.txt", "Barn owls hunt by sound in complete darkness.")
    home = ["--home", str(tmp_path / "home"), "--threads", "1", "-q"]
    with monkeypatch.context() as m:
        m.setattr(prepare, "RECORDS_VERSION", "4")
        m.setattr(run, "RECORDS_VERSION", "4")
        assert main(["index", str(d), *home]) == 0
    assert "indexed 2 changed file(s)" in capsys.readouterr().out
    assert main(["index", *home]) == 0
    assert "re-read 2 file(s) for what this version indexes, 0 sentences encoded" in capsys.readouterr().out
    assert main(["index", *home]) == 0
    assert "indexed 0 changed file(s)" in capsys.readouterr().out


def test_errors_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(tmp_path / "missing"), "--home", str(tmp_path / "h"), "-q"]) == 1
    assert "no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["ask", "q", "--from", "yesterday"])
    assert exc.value.code == 2
    assert main(["watch", "--home", str(tmp_path / "h")]) == 1
    assert "no sources to watch" in capsys.readouterr().err
    assert main(["index", "--home", str(tmp_path / "h"), "-q"]) == 2
    assert "nothing to index yet" in capsys.readouterr().err


def test_index_without_paths_updates_every_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sparcdesk index`` alone brings every source added before up to date (as
    ``recollindex`` does), so a user need not remember which folders they added."""
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "otters.txt", "Sea otters hold hands while they sleep.")
    write(b / "owls.txt", "Barn owls hunt by sound in complete darkness.")
    home = ["--home", str(tmp_path / "home"), "--threads", "1", "-q"]
    assert main(["index", str(a), str(b), *home]) == 0
    capsys.readouterr()
    write(b / "owls.txt", "Barn owls swallow their prey whole and cough up pellets.")
    write(a / "bats.txt", "Bats find insects in the dark by echolocation.")
    assert main(["index", *home]) == 0
    assert "indexed 2 changed file(s)" in capsys.readouterr().out
    assert main(["ask", "What do barn owls cough up?", "--json", *home[:-1]]) == 0
    assert json.loads(capsys.readouterr().out)["answers"][0]["best"]["sentence"] == (
        "Barn owls swallow their prey whole and cough up pellets."
    )
    assert main(["index", "--exclude", "*.tmp", *home]) == 2
    assert "--exclude applies to the paths being added" in capsys.readouterr().err


def test_gui_is_a_command_the_app_adds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The command line never imports the app: ``gui`` comes from the app's entry point
    (pyproject.toml), loaded only when it is asked for."""
    import importlib.metadata

    import tomllib

    import engine.cli.main as cli

    calls = []
    fake = types.ModuleType("app.main")
    fake.gui_command = lambda argv: calls.append(argv) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "app.main", fake)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert declared[cli.COMMANDS_GROUP] == {"gui": "app.main:gui_command"}
    ep = importlib.metadata.EntryPoint("gui", "app.main:gui_command", cli.COMMANDS_GROUP)
    monkeypatch.setattr(cli, "_entry_points", lambda: {"gui": ep})  # as installed
    assert main(["gui", "--home", str(tmp_path), "--ask", "why?"]) == 0
    assert calls == [["--home", str(tmp_path), "--ask", "why?"]]
    read: list[int] = []
    monkeypatch.setattr(cli, "_entry_points", lambda: read.append(1) or {"gui": ep})
    assert main(["status", "--home", str(tmp_path / "home")]) == 0
    assert not read  # a built-in command does not read the installed entry points
    assert "gui" in cli.build_parser().format_help() and read  # the full list names it
    monkeypatch.setattr(cli, "_entry_points", dict)  # nothing installed adds it
    with pytest.raises(SystemExit):
        main(["gui"])
    code = "import sys, engine.cli.main; print(any(m == 'app' or m.startswith('app.') for m in sys.modules))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    assert (
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
        == "False\n"
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_watch_command_reindexes_changes(tmp_path: Path, stop: signal.Signals) -> None:
    """Also when started from a background shell (SIGINT inherited as ignored)."""
    d = tmp_path / "docs"
    f = write(d / "moles.txt", "Moles dig tunnels under the lawn.")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARCDESK_HOME=str(tmp_path / "home"))
    assert main(["index", str(d), "-q", "--home", env["SPARCDESK_HOME"], "--threads", "1"]) == 0
    # stderr goes to a file: an unread pipe that fills up would block the watcher, and the file
    # shows what it said when something goes wrong
    err_path = tmp_path / "watch.stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli.main", "watch", "-q", "--threads", "1", "--debounce", "0.2"],
            env=dict(env, PYTHONFAULTHANDLER="1"),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as `cmd &` in a script
        )
    try:
        # printed once its watches are in place (start_watch installs them before returning)
        assert "watching 1 source(s)" in proc.stdout.readline() + proc.stdout.readline()
        write(f, "Moles dig tunnels under the lawn. Voles nest in the tall grass.")
        line = proc.stdout.readline()
        assert line.strip().endswith(f"re-indexed {f}")
        proc.send_signal(stop)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack to stderr
            proc.wait(timeout=10)
            raise AssertionError(f"watch did not stop on {stop.name}:\n" + err_path.read_text()[-8000:]) from None
        assert code == 0, err_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_an_empty_home_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--home ""`` (a script's unset variable) was the current folder to the log and the
    default home to the engine; it is refused before anything is written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["ask", "--home", "", "anything"])
    assert info.value.code == 2
    assert "--home: an empty path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_window_refuses_an_empty_home_too(capsys: pytest.CaptureFixture[str]) -> None:
    from app.main import parse_args

    with pytest.raises(SystemExit) as info:
        parse_args(["--home", ""])
    assert info.value.code == 2 and "--home: an empty path" in capsys.readouterr().err
    assert parse_args(["--home", "somewhere"]).home == Path("somewhere")


def test_a_reader_that_closes_the_pipe_stops_ask_quietly(tmp_path: Path) -> None:
    """``sparcdesk ask ... | head``: the reader goes away before the answers are written; the
    command stops as Unix tools do (exit 141), with no error line and nothing in the log."""
    from conftest import copied_home

    home = copied_home(sample_home(), "pipe")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli.main", "ask", "--home", str(home), "--top", "10", "What do moles eat?"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # before the interpreter has even imported the engine
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141, err.decode()
    assert err.decode() == ""
    log = home / "logs" / "sparcdesk.log"
    assert "BrokenPipe" not in (log.read_text() if log.exists() else "")
