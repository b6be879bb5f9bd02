"""Nothing outside the data folder (issue 17, item 5): ``index``, ``ask``, ``watch`` and the
window write no file outside the data folder and the temporary directory, and the data
folder is readable by its owner only (0700, the catalog 0600).

Each command runs as a real process under ``strace -f -y`` (children included: the window
indexes in a child process), with ``$HOME``, ``$TMPDIR`` and the data folder in three
separate folders: the same runs as the network check's, in ``test_offline`` (one trace per
command serves both). A *write* is a successful ``open``/``openat``/``creat`` for writing or
creating, or a ``mkdir``, ``rename``, ``link``, ``symlink``, ``unlink``, ``rmdir``,
``truncate`` or ``chmod`` on a path. Allowed outside the two folders: ``/dev`` (``/dev/null``;
``/dev/shm``, where multiprocessing keeps the window's queue semaphores), ``/proc``, and
Python's own bytecode caches (``__pycache__``) of the installed program.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from engine.home.paths import Layout

ROOT = Path(__file__).resolve().parent.parent
STRACE_CALLS = (
    "open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,"
    "unlink,unlinkat,rmdir,truncate,chmod,fchmodat"
)
_CALL = re.compile(r"^(?:\d+\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+)")
_ARG_PATH = re.compile(r'(?:(AT_FDCWD|\d+)<([^>]*)>,\s*)?"((?:[^"\\]|\\.)*)"')
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")


def _decode(s: str) -> str:
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape", "replace")


def written_paths(trace: Path, cwd: Path) -> set[str]:
    """Absolute paths an ``strace -f -y`` log shows written (see the module docstring)."""
    out: set[str] = set()
    for line in trace.read_text(errors="replace").splitlines():
        m = _CALL.match(line.strip())
        if m is None or int(m.group(3)) < 0:
            continue  # not a call line, or a call that failed (wrote nothing)
        call, args = m.group(1), m.group(2)
        if (
            call in ("open", "openat", "creat")
            and call != "creat"
            and not any(f in args for f in _WRITE_FLAGS)
        ):
            continue  # opened for reading
        for dirfd, base, name in _ARG_PATH.findall(args):
            name = _decode(name)
            if not name.startswith("/"):
                name = os.path.join(base if dirfd else str(cwd), name)
            out.add(os.path.normpath(name))
            if call in (
                "open",
                "openat",
                "creat",
                "truncate",
                "chmod",
                "fchmodat",
                "mkdir",
                "mkdirat",
                "rmdir",
            ):
                break  # one path argument
    return out


def outside(paths: set[str], allowed: list[Path]) -> list[str]:
    roots = [os.path.realpath(p) for p in allowed]
    bad = []
    for p in sorted(paths):
        if p.startswith(("/dev/", "/proc/")):
            # as traced: resolving /proc/self/fd/N here would follow this test's own descriptor
            continue
        real = os.path.realpath(p)
        if any(real == r or real.startswith(r + os.sep) for r in roots):
            continue
        if real.startswith(("/dev/", "/proc/")) or real == "/dev/null":
            continue
        if "__pycache__" in Path(p).parts:
            continue
        bad.append(p)
    return bad


def test_written_paths_are_recognised(tmp_path: Path) -> None:
    """The trace parser, on lines strace -y writes."""
    t = tmp_path / "t.trace"
    t.write_text(
        '1 openat(AT_FDCWD</w>, "/h/catalog.sqlite", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 3</h/catalog.sqlite>\n'
        '1 openat(AT_FDCWD</w>, "/usr/lib/x.so", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x.so>\n'
        '1 openat(AT_FDCWD</w>, "rel.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4</w/rel.txt>\n'
        '2 mkdir("/u/.cache/x", 0777) = 0\n'
        '2 mkdir("/u/.cache/y", 0777) = -1 EEXIST (File exists)\n'
        '3 renameat2(5</h/index>, ".gen.creating", 5</h/index>, "gen-000001", 0) = 0\n'
        '3 unlinkat(AT_FDCWD</w>, "/t/tmpabc", 0) = 0\n'
    )
    got = written_paths(t, Path("/w"))
    assert got == {
        "/h/catalog.sqlite",
        "/w/rel.txt",
        "/u/.cache/x",
        "/h/index/.gen.creating",
        "/h/index/gen-000001",
        "/t/tmpabc",
    }
    assert outside(got, [Path("/h"), Path("/t")]) == ["/u/.cache/x", "/w/rel.txt"]


def test_data_folder_is_private(tmp_path: Path) -> None:
    home = tmp_path / "a" / "data"
    old = os.umask(0o022)
    try:
        with_engine = subprocess.run(
            [sys.executable, "-m", "engine.cli.main", "status", "--home", str(home)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.umask(old)
    assert with_engine.returncode == 0, with_engine.stderr
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home / "catalog.sqlite").st_mode) == 0o600
    # an existing data folder that others can read is tightened
    os.chmod(home, 0o755)
    os.chmod(home / "catalog.sqlite", 0o644)
    Layout.resolve(home).ensure()
    from engine.catalog.store import Catalog

    Catalog(home / "catalog.sqlite").close()
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home / "catalog.sqlite").st_mode) == 0o600
