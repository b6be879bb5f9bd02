"""sparcdesk is offline (issue 18, item 2): no process of ``index``, ``ask``, ``status``,
``watch``, ``adapt`` or the window tries the network, and ONNX Runtime's telemetry leaves no
device id or event queue in the user's cache folder. The same traces show that they write
nothing outside the data folder (issue 17, item 5; what counts as a write: ``test_private``).

Each command runs as a real process under ``strace -f -y`` (children included: the window
indexes in a child process) with ``$HOME``, ``$TMPDIR`` and the data folder in three
separate temporary folders. What counts as trying the network:
``connect``/``sendto``/``sendmsg`` to an AF_INET or AF_INET6 address (a DNS lookup is one of
these, to the resolver), a ``bind`` to a non-loopback address, or a connection to a local
name-resolution socket (systemd-resolved). Allowed, and only this: creating an AF_INET6
socket that is bound to ``::1`` and never used (urllib3, imported by ``transformers`` for
``adapt``, probes IPv6 support that way at import), and AF_UNIX sockets otherwise (nscd,
when present, also answers user-name lookups; none was seen here).

strace is installed by ``scripts/test.sh`` when missing and running as root; without it (or
without ptrace permission) the test is skipped and says why.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_pipeline import write
from test_private import STRACE_CALLS, outside, written_paths

ROOT = Path(__file__).resolve().parent.parent
STRACE = shutil.which("strace")
SYSCALLS = "socket,connect,bind,sendto,sendmsg"
_INET = re.compile(r"sa_family=AF_INET6?\b")
_LOOPBACK = re.compile(r'inet_pton\(AF_INET6, "::1"|inet_addr\("127\.')


def _strace_problem() -> str | None:
    if STRACE is None:
        return "strace is not installed (scripts/test.sh installs it when run as root)"
    r = subprocess.run([STRACE, "-f", "-qq", "-e", "trace=none", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"strace cannot trace here (no ptrace permission?): {r.stderr.strip()[:200]}"
    return None


def network_attempts(trace: Path) -> list[str]:
    """The lines of an strace log that try the network (see the module docstring)."""
    return [line for line in trace.read_text(errors="replace").splitlines() if _tries(line.split(" ", 1)[-1])]


def _tries(call: str) -> bool:
    inet = _INET.search(call) is not None
    if call.startswith(("connect(", "sendto(", "sendmsg(")) and inet:
        return True
    if call.startswith("bind(") and inet:
        return _LOOPBACK.search(call) is None
    return call.startswith("connect(") and "resolve" in call  # systemd-resolved's varlink socket


@pytest.fixture(scope="module")
def strace() -> str:
    problem = _strace_problem()
    if problem:
        pytest.skip(problem)
    assert STRACE is not None
    return STRACE


@pytest.mark.slow
def test_no_process_tries_the_network_or_writes_outside_the_data_folder(tmp_path: Path, strace: str) -> None:
    """One strace run per command serves both checks: the network calls above, and the
    writes of ``test_private`` (files written only in the data folder and ``$TMPDIR``)."""
    user, tmp, data = tmp_path / "user", tmp_path / "tmp", tmp_path / "data"
    for p in (user, tmp):
        p.mkdir()
    docs = tmp_path / "docs"
    for i, animal in enumerate(["Otters", "Beavers", "Herons"]):
        write(
            docs / f"{i}.txt",
            f"{animal} live near the river. {animal} are seen at dawn. The keeper counts {animal} weekly.",
        )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY" and not k.startswith("XDG_")}
    env.update(
        HOME=str(user),
        TMPDIR=str(tmp),
        SPARCDESK_HOME=str(data),
        PYTHONPATH=str(ROOT),
        QT_QPA_PLATFORM="offscreen",
        PYTHONFAULTHANDLER="1",
    )
    traces: dict[str, Path] = {}

    def traced(name: str) -> list[str]:
        traces[name] = tmp_path / f"{name}.trace"
        # --seccomp-bpf: only the traced calls stop the process, so tracing costs little;
        # -y: each descriptor's path, for the writes made relative to one
        calls = f"{SYSCALLS},{STRACE_CALLS}"
        return [strace, "-f", "-qq", "-y", "--seccomp-bpf", "-e", f"trace={calls}", "-o", str(traces[name])]

    def run(name: str, *args: str) -> None:
        cmd = [*traced(name), sys.executable, "-m", "engine.cli.main", *args]
        r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"

    run("index", "index", str(docs), "-q", "--threads", "1")
    run("ask", "ask", "who is seen at dawn near the river?")
    run("status", "status")

    # watch: started, one change re-indexed, stopped by SIGTERM (all events, no sleeps)
    err_path = tmp_path / "watch.stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            [
                *traced("watch"),
                sys.executable,
                "-m",
                "engine.cli.main",
                "watch",
                "-q",
                "--threads",
                "1",
                "--debounce",
                "0.2",
            ],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        line = "-"
        while line and "watching 1 source(s)" not in line:
            line = proc.stdout.readline()
        assert line, err_path.read_text()[-3000:]
        changed = write(docs / "0.txt", "Otters live near the river. Kingfishers dive for fish.")
        line = proc.stdout.readline()
        assert line.strip().endswith(f"re-indexed {changed}"), err_path.read_text()[-3000:]
        os.killpg(proc.pid, signal.SIGTERM)  # strace passes it on and exits with the watcher
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()

    run("adapt", "adapt", "--steps", "2", "--threads", "1", "-q")

    # the window with its default settings: opens the engine, indexes a new file in its
    # child process (ONNX Runtime loads there), answers a question about it, and quits
    new = write(docs / "3.txt", "Dragonflies hunt mosquitoes above the pond.")
    window = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from app.main import create_window, parse_args
app = QApplication([sys.argv[0]])
app.setOrganizationName("sparcdesk"); app.setApplicationName("sparcdesk")
w = create_window(parse_args(["--threads", "1"]))
w.show()
b = w.backend
done = []
b.ready.connect(lambda: b.update_index())
b.index_finished.connect(lambda final, error: (print("indexed", error, flush=True), b.ask("what do dragonflies hunt above the pond?")))
b.answers_ready.connect(
    lambda result: (done.append(1), print("answered", result.answers[0].path, flush=True), w.close(), app.quit())
)
QTimer.singleShot(180_000, lambda: app.exit(3))
code = app.exec()
sys.exit(code if done else 4)
"""
    r = subprocess.run(
        [*traced("window"), sys.executable, "-c", window],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and f"answered {new}" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]

    attempts = {name: network_attempts(t) for name, t in traces.items()}
    assert attempts == {name: [] for name in traces}
    telemetry = [
        str(p.relative_to(user)) for p in user.rglob("*") if "Microsoft" in p.parts or "onnxruntime" in p.name
    ]
    assert telemetry == [], "ONNX Runtime telemetry wrote under $HOME"
    written = {name: written_paths(t, ROOT) for name, t in traces.items()}
    assert all(any(p.startswith(str(data)) for p in w) for w in written.values())  # the trace sees the writes
    assert {name: outside(w, [data, tmp]) for name, w in written.items()} == {name: [] for name in traces}
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700


def test_network_attempts_are_recognised(tmp_path: Path) -> None:
    """The trace check itself, on lines strace writes for real lookups and for the allowed probe."""
    t = tmp_path / "t.trace"
    t.write_text(
        "1 socket(AF_INET6, SOCK_STREAM|SOCK_CLOEXEC, IPPROTO_IP) = 6\n"
        '1 bind(6, {sa_family=AF_INET6, sin6_port=htons(0), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", '
        "&sin6_addr), sin6_scope_id=0}, 28) = 0\n"
        '1 connect(6, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT\n'
        '2 connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = 0\n'
        '2 sendto(7, "\\x12", 1, MSG_NOSIGNAL, NULL, 0) = 1\n'
        '3 connect(8, {sa_family=AF_UNIX, sun_path="/run/systemd/resolve/io.systemd.Resolve"}, 42) = 0\n'
        '4 bind(9, {sa_family=AF_INET, sin_port=htons(0), sin_addr=inet_addr("0.0.0.0")}, 16) = 0\n'
    )
    assert [line.split(" ", 1)[0] for line in network_attempts(t)] == ["2", "3", "4"]
