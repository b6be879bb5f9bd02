"""What every benchmark records next to its figures, in one place (issue 40): the machine,
its load and busy processes before and after, the git head and what was uncommitted, when,
and the command; and where results go (``bench/results/NAME-STAMP.json``).

    run = harness.Run("product", argv)          # environment before, git head, start time
    ...                                         # the benchmark
    path = run.save("product", payload)         # environment after; header + payload written

A result file starts with the common header (``HEADER``: command, when, git, git_dirty,
machine, environment) and then the benchmark's own keys. A benchmark that recorded any of
those keys itself keeps its values: dictionaries are merged (its keys win, the harness only
adds), so files read by other code and docs keep every key they had.

Only the standard library and psutil: a benchmark imports this before the engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: The header's keys, in the order a result file starts with.
HEADER = ("command", "when", "started", "git", "git_dirty", "machine", "environment")
#: What a run measures: uncommitted changes there are listed in ``git_dirty``.
MEASURED = ("engine", "assets")
#: Packages whose versions move the figures (absent ones are left out).
PACKAGES = (
    "numpy",
    "onnxruntime",
    "tantivy",
    "tokenizers",
    "torch",
    "scipy",
    "bm25s",
    "PyStemmer",
    "blingfire",
    "psutil",
    "pyside6-essentials",
)


def stamp() -> str:
    """A result file's time stamp: ``20261128-011949`` (local time)."""
    return time.strftime("%Y%m%d-%H%M%S")


def when() -> str:
    """The time as results record it: ``2026-11-28T01:19:49+0000``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def load() -> tuple[float, ...]:
    """The 1, 5 and 15 minute load averages (() where the system has none)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return ()


def busy_processes(min_cpu: float = 15.0) -> list[str]:
    """Other processes using at least ``min_cpu`` % of a CPU over one second (name and
    command line, shortened). Takes one second."""
    try:
        import psutil
    except ImportError:
        return ["(psutil not installed)"]
    procs = list(psutil.process_iter(["pid", "cmdline", "name"]))
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.cpu_percent(None)
    time.sleep(1.0)
    out: list[str] = []
    me = os.getpid()
    for p in procs:
        try:
            cpu = p.cpu_percent(None)
            if p.pid != me and cpu >= min_cpu:
                cmd = " ".join(p.info["cmdline"] or [p.info["name"] or "?"])
                out.append(f"{cpu:.0f}% {cmd[:120]}")
        except psutil.Error:
            pass
    return out


def environment(busy: bool = True) -> dict[str, Any]:
    """The machine's state now: ``loadavg`` and, with ``busy``, the other ``busy`` processes."""
    return {"loadavg": load(), "busy": busy_processes() if busy else []}


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the figures ran on: CPU model and cores, memory, OS, Python and the versions of
    the packages that move them."""
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
    }
    with contextlib.suppress(ImportError):
        import psutil

        out["cpus_physical"] = psutil.cpu_count(logical=False)
        out["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    versions = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    out["packages"] = versions
    return out


class Git(NamedTuple):
    head: str
    dirty: list[str]


def _git(*args: str) -> str:
    with contextlib.suppress(Exception):
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        ).stdout
    return ""


def git_head(measured: tuple[str, ...] = MEASURED) -> Git:
    """The checkout's short head commit ("" outside git) and the uncommitted changes to
    what is measured (``measured``: engine/ and the shipped bundle unless told)."""
    head = _git("rev-parse", "--short", "HEAD").strip()
    status = _git("status", "--porcelain", "--", *measured)
    return Git(head, [line[3:] for line in status.splitlines() if line.strip()])


def command(bench: str, argv: list[str] | tuple[str, ...] | None = None) -> str:
    """``python -m bench.NAME ARGS`` (the process's own arguments when ``argv`` is None)."""
    return f"python -m bench.{bench} " + " ".join(sys.argv[1:] if argv is None else argv)


def merge(header: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The header's keys first, then the payload's; where both hold a key the payload's value
    wins, and where both values are dictionaries they are merged the same way."""
    out = dict(header)
    for k, v in payload.items():
        out[k] = merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


class Run:
    """One benchmark run: ``Run(...)`` records the start (environment, git, time); ``header()``
    or ``save()`` the end."""

    def __init__(
        self,
        bench: str,
        argv: list[str] | tuple[str, ...] | None = None,
        *,
        busy: bool = True,
        measured: tuple[str, ...] = MEASURED,
        before: bool = True,
    ) -> None:
        self.bench = bench
        self.command = command(bench, argv)
        self.busy = busy
        self.started = when()
        self.git = git_head(measured)
        #: None for a run made when its result is saved (no state before it is known)
        self.before = environment(busy) if before else None
        self.after: dict[str, Any] | None = None

    def finish(self) -> dict[str, Any]:
        """The environment at the end (taken once)."""
        if self.after is None:
            self.after = environment(self.busy)
        return self.after

    def header(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "when": when(),
            "started": self.started,
            "git": self.git.head,
            "git_dirty": self.git.dirty,
            "machine": machine(),
            "environment": {"after": self.finish()}
            if self.before is None
            else {"before": self.before, "after": self.finish()},
        }

    def save(self, name: str, payload: dict[str, Any], **where: Any) -> Path:
        return save_result(name, payload, run=self, **where)


def result_path(name: str, folder: Path | None = None) -> Path:
    """``folder/NAME-STAMP.json`` (``bench/results`` unless told), the folder made."""
    folder = RESULTS if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}-{stamp()}.json"


def _running_bench() -> str:
    """The running benchmark's name: ``bench/x.py`` -> ``x``, ``bench/x/__main__.py`` -> ``x``."""
    script = Path(sys.argv[0])
    return script.parent.name if script.stem == "__main__" else script.stem


def with_header(payload: dict[str, Any], run: Run | None = None, bench: str | None = None) -> dict[str, Any]:
    """``payload`` under the common header: ``run``'s, else one taken now (the environment
    at the end only; ``bench`` names the command, else the running script does)."""
    if run is None:
        run = Run(bench or _running_bench(), before=False)
    return merge(run.header(), payload)


def write_json(path: Path, data: Any) -> Path:
    """``data`` as the results' JSON (indent 1, a final newline) at ``path``, its folder made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def write_result(path: Path, payload: dict[str, Any], run: Run | None = None, bench: str | None = None) -> Path:
    """Write ``payload`` under the common header as JSON to ``path``; returns ``path``."""
    return write_json(path, with_header(payload, run, bench))


def save_result(
    name: str,
    payload: dict[str, Any],
    *,
    run: Run | None = None,
    folder: Path | None = None,
    path: Path | None = None,
) -> Path:
    """Write ``payload`` with the common header to ``folder/NAME-STAMP.json`` (``path`` when
    given, e.g. a benchmark's ``--out FILE``); returns where it went."""
    target = Path(path) if path is not None else result_path(name, folder)
    return write_result(target, payload, run)
