"""The fault campaign of issue 17, rerunnable: hostile files, a full disk, a damaged data folder.

    .venv/bin/python -m bench.faults damage            # 40 ways to damage the data folder
    .venv/bin/python -m bench.faults disk              # a 5-50 MB tmpfs as the data folder (root)
    .venv/bin/python -m bench.faults hostile [--hostile 970 --good 30]
                                                       # bench/hostile.py's corpus vs as many good files

Each case runs the real ``sparcdesk`` command line in subprocesses and records exit codes,
whether any output holds a Python traceback, and whether the index answers at the end.
Prints a table and writes JSON to bench/results/faults-<what>-<timestamp>.json.

``damage``: a small corpus is indexed once; for each case a copy of that data folder is
damaged, then ``status``, ``ask``, ``index`` and ``ask`` run on it, one after another in one
process per case (:func:`cli_steps`; each command opens the data folder anew). A case *works* when no
command printed a traceback and the final ask finds the right file; *clear* when it does not
work but every failing command printed one line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import harness

ROOT = Path(__file__).resolve().parents[1]
RESULTS = harness.RESULTS


def cli(
    home: Path, *args: str, timeout: float = 900, model: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPARCDESK_HOME=str(home), PYTHONPATH=str(ROOT))
    if model is not None:
        env["SPARCDESK_MODEL"] = str(model)
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# Runs ``engine.cli.main`` once per argv given as JSON, in one process, as the ``sparcdesk``
# entry point would in a process of its own: for each command, file descriptors 1 and 2 point
# at files of its own (so what child processes and native code print is captured with it), an
# uncaught exception is printed as the interpreter prints it, and its exit status is kept.
# Writes the list of results as JSON to the file named by the last argument.
_STEPS = """
import json, os, sys, tempfile, traceback
from engine.cli.main import main
from engine.index import sentences
commands, retry, result = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
if retry is not None:
    sentences.VIEW_RETRY_S = float(retry)
saved = os.dup(1), os.dup(2)
out = []
for argv in commands:
    files = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(files[0].fileno(), 1); os.dup2(files[1].fileno(), 2)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(saved[0], 1); os.dup2(saved[1], 2)
    text = []
    for f in files:
        f.seek(0)
        text.append(f.read().decode("utf-8", "replace"))
        f.close()
    out.append([int(code or 0), *text])
with open(result, "w", encoding="utf-8") as f:
    json.dump(out, f)
"""


def cli_steps(
    home: Path, *commands: list[str], timeout: float = 900, view_retry_s: float | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """``sparcdesk`` commands run one after another in one process (:func:`cli` starts one
    per command: ~0.4 s of CPU each, most of a small case's cost). Each command opens the
    data folder anew, as its own process would; a result per command, as :func:`cli`'s, with
    all it printed (its children's output included).
    ``view_retry_s``: how long a reader waits for a column store that disagrees with its
    tantivy commit before calling it damaged (``VIEW_RETRY_S``, 5 s: a writer may be mid-commit)."""
    env = dict(os.environ, SPARCDESK_HOME=str(home), PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "steps.json"
        r = subprocess.run(
            [sys.executable, "-c", _STEPS, json.dumps(commands), json.dumps(view_retry_s), str(result)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode != 0 or not result.is_file():  # the driver itself died: every step says so
            return [subprocess.CompletedProcess(c, r.returncode or 1, r.stdout, r.stderr) for c in commands]
        steps = json.loads(result.read_text(encoding="utf-8"))
    return [
        subprocess.CompletedProcess(c, code, out, err) for c, (code, out, err) in zip(commands, steps, strict=True)
    ]


def _traceback(*runs: subprocess.CompletedProcess[str]) -> bool:
    return any("Traceback" in (r.stdout + r.stderr) for r in runs)


# --------------------------------------------------------------------------- damage


def _corpus(folder: Path, files: int = 24) -> None:
    facts = [
        ("otters", "Otters hold hands while they sleep so they do not drift apart."),
        ("kestrels", "Kestrels hover over motorway verges while hunting voles."),
        ("axolotls", "Axolotls regrow their limbs within a few weeks."),
        ("puffins", "Puffins nest in burrows on grassy sea cliffs."),
    ]
    for i in range(files):
        name, fact = facts[i % len(facts)]
        (folder / f"{name}-{i}.txt").write_text(f"Note {i}. {fact} Filed under token{i}.\n")


def _files(gen: Path, suffix: str) -> list[Path]:
    return sorted(p for p in gen.iterdir() if p.name.endswith(suffix))


def _truncate(p: Path) -> None:
    with open(p, "r+b") as f:
        f.truncate(max(0, p.stat().st_size // 2))


def _garbage(p: Path) -> None:
    p.write_bytes(random.Random(p.name).randbytes(max(64, p.stat().st_size)))


def _gen(home: Path) -> Path:
    return sorted((home / "index").glob("gen-*"))[-1]


def _on(rel: str, fn: Callable[[Path], None]) -> Callable[[Path, Path], None]:
    """Damage ``fn`` applied to ``rel`` in the data folder."""

    def apply(home: Path, _case: Path) -> None:
        fn(home / rel)

    return apply


def _on_gen(pick: Callable[[Path], Path], fn: Callable[[Path], None]) -> Callable[[Path, Path], None]:
    """Damage ``fn`` applied to what ``pick`` chooses in the newest index generation."""

    def apply(home: Path, _case: Path) -> None:
        fn(pick(_gen(home)))

    return apply


def _in_bundle(name: str, fn: Callable[[Path], None]) -> Callable[[Path, Path], None]:
    """Damage ``fn`` applied to the file ``name`` of the model bundle the data folder uses."""

    def apply(home: Path, _case: Path) -> None:
        b = json.loads((home / "model.json").read_text())["bundle"]
        fn(Path(b) / name)

    return apply


def _seg(suffix: str) -> Callable[[Path], Path]:
    """A generation's first tantivy segment file ending in ``suffix``."""
    return lambda g: _files(g, suffix)[0]


def _col(name: str) -> Callable[[Path], Path]:
    """A generation's first column-store segment's file ``name``."""
    return lambda g: sorted((g / "columns").glob(f"seg-*/{name}"))[0]


def _delete(p: Path) -> None:
    shutil.rmtree(p) if p.is_dir() else p.unlink()


def _empty_dir(p: Path) -> None:
    for c in p.iterdir():
        _delete(c)


def _header_garbage(p: Path) -> None:
    with open(p, "r+b") as f:
        f.write(random.Random(1).randbytes(100))


def _to_4k(p: Path) -> None:
    with open(p, "r+b") as f:
        f.truncate(4096)


def _as_file(p: Path) -> None:
    _delete(p)
    p.write_text("not a folder")


def _home_file(home: Path, _case: Path) -> None:
    shutil.rmtree(home)
    home.write_text("not a folder")


def _moved(home: Path, case: Path) -> Path:
    new = case / "moved-home"
    shutil.move(str(home), new)
    return new


def damage_cases() -> dict[str, Callable[[Path, Path], Path | None]]:
    """name -> damage(home, case_dir); returns the data folder to use after it (when moved)."""
    return {
        "catalog truncated to 0": _on("catalog.sqlite", lambda p: p.write_bytes(b"")),
        "catalog truncated to half": _on("catalog.sqlite", _truncate),
        "catalog truncated to 4 KB": _on("catalog.sqlite", _to_4k),
        "catalog garbage": _on("catalog.sqlite", _garbage),
        "catalog header garbage": _on("catalog.sqlite", _header_garbage),
        "catalog deleted": _on("catalog.sqlite", _delete),
        "generation folder deleted": _on_gen(lambda g: g, _delete),
        "generation folder emptied": _on_gen(lambda g: g, _empty_dir),
        "tantivy meta deleted": _on_gen(lambda g: g / "meta.json", _delete),
        "tantivy meta truncated": _on_gen(lambda g: g / "meta.json", _truncate),
        "tantivy meta garbage": _on_gen(lambda g: g / "meta.json", _garbage),
        "segment .store deleted": _on_gen(_seg(".store"), _delete),
        "segment .store truncated": _on_gen(_seg(".store"), _truncate),
        "segment .store garbage": _on_gen(_seg(".store"), _garbage),
        "segment .term deleted": _on_gen(_seg(".term"), _delete),
        "segment .term truncated": _on_gen(_seg(".term"), _truncate),
        "segment .term garbage": _on_gen(_seg(".term"), _garbage),
        "segment .idx garbage": _on_gen(_seg(".idx"), _garbage),
        "segment .fast garbage": _on_gen(_seg(".fast"), _garbage),
        "column manifest deleted": _on_gen(lambda g: g / "columns" / "manifest.json", _delete),
        "column manifest truncated": _on_gen(lambda g: g / "columns" / "manifest.json", _truncate),
        "column manifest garbage": _on_gen(lambda g: g / "columns" / "manifest.json", _garbage),
        "columns dense.npy deleted": _on_gen(_col("dense.npy"), _delete),
        "columns dense.npy truncated": _on_gen(_col("dense.npy"), _truncate),
        "columns dense.npy garbage": _on_gen(_col("dense.npy"), _garbage),
        "columns sids.npy truncated": _on_gen(_col("sids.npy"), _truncate),
        "columns sids.npy garbage": _on_gen(_col("sids.npy"), _garbage),
        "columns levels.npy garbage": _on_gen(_col("levels.npy"), _garbage),
        "sparcdesk-index.json deleted": _on_gen(lambda g: g / "sparcdesk-index.json", _delete),
        "sparcdesk-index.json garbage": _on_gen(lambda g: g / "sparcdesk-index.json", _garbage),
        "sparcdesk-ids.json garbage": _on_gen(lambda g: g / "sparcdesk-ids.json", _garbage),
        "document index meta garbage": _on_gen(lambda g: g / "docs" / "meta.json", _garbage),
        "document index .store garbage": _on_gen(lambda g: _files(g / "docs", ".store")[0], _garbage),
        "index folder deleted": _on("index", _delete),
        "index folder is a file": _on("index", _as_file),
        "bundle tokenizer garbage": _in_bundle("tokenizer.json", _garbage),
        "bundle config garbage": _in_bundle("config.json", _garbage),
        "logs is a file": _on("logs", _as_file),
        "data folder is a file": _home_file,
        "data folder moved": _moved,
    }


def run_damage(
    work: Path, only: str | list[str] | None = None, view_retry_s: float | None = None, files: int = 24
) -> dict:
    """The damage cases (``only``: those whose name holds this string, or these names;
    ``view_retry_s``: see :func:`cli_steps`; ``files``: notes in the corpus, at least 6, so
    ``kestrels-5.txt`` is among them)."""
    docs = work / "docs"
    docs.mkdir(parents=True)
    _corpus(docs, files)
    base = work / "base"
    bundle = work / "bundle"
    from engine.model.encoder import default_bundle_dir

    shutil.copytree(default_bundle_dir(), bundle)
    r = cli(base, "index", str(docs), "-q", "--threads", "1")
    assert r.returncode == 0, r.stderr
    # this home indexes with its own bundle (as after an adaptation): its damage is a case
    (base / "model.json").write_text(json.dumps({"bundle": str(bundle)}))
    rows = []
    for name, apply in damage_cases().items():
        if isinstance(only, str) and only not in name or isinstance(only, list) and name not in only:
            continue
        case = work / name.replace(" ", "_").replace("/", "_")
        home = case / "home"
        case.mkdir()
        shutil.copytree(base, home, symlinks=True)
        shutil.copytree(bundle, case / "bundle")
        data = json.loads((home / "model.json").read_text())
        data["bundle"] = str(case / "bundle")
        (home / "model.json").write_text(json.dumps(data))
        t0 = time.monotonic()
        home = apply(home, case) or home
        st, q1, ix, q2 = cli_steps(
            home,
            ["status"],
            ["ask", "how do kestrels hunt? token5", "--json"],
            ["index", "-q", "--threads", "1", str(docs)],
            ["ask", "how do kestrels hunt? token5", "--json"],
            view_retry_s=view_retry_s,
        )
        try:
            answers = json.loads(q2.stdout)["answers"]
            works = bool(answers) and answers[0]["path"].endswith("kestrels-5.txt")
        except (ValueError, KeyError, IndexError):
            works = False
        tb = _traceback(st, q1, ix, q2)
        failing = [r for r in (st, q1, ix, q2) if r.returncode != 0]
        clear = not tb and all(len([x for x in r.stderr.splitlines() if x.strip()]) == 1 for r in failing)
        verdict = "works" if works and not tb else ("clear" if clear else "FAIL")
        rows.append(
            {
                "case": name,
                "verdict": verdict,
                "traceback": tb,
                "codes": [r.returncode for r in (st, q1, ix, q2)],
                "seconds": round(time.monotonic() - t0, 1),
                "said": [
                    x for r in (st, q1, ix, q2) for x in r.stderr.splitlines() if x.startswith("sparcdesk:")
                ][:3],
                "error": "" if works else (q2.stderr + ix.stderr)[-600:],
            }
        )
        print(f"{verdict:6} {name:34} codes {rows[-1]['codes']}  {rows[-1]['said'][:1]}", flush=True)
        shutil.rmtree(case, ignore_errors=True)
    n = len(rows)
    summary = {
        "cases": n,
        "works": sum(r["verdict"] == "works" for r in rows),
        "clear": sum(r["verdict"] == "clear" for r in rows),
        "fail": sum(r["verdict"] == "FAIL" for r in rows),
        "tracebacks": sum(r["traceback"] for r in rows),
    }
    print(json.dumps(summary))
    return {"summary": summary, "rows": rows}


# --------------------------------------------------------------------------- full disk


#: ``sparcdesk`` with its free-space check before each commit switched off, so that the disk
#: fills in the middle of a commit (SQLite, tantivy or the column store fails half-way): the
#: path the check otherwise always refused before (issue 35). Its arguments follow.
NO_SPACE_CHECK = (
    "import sys\n"
    "from engine.home import diskspace\n"
    "diskspace.commit_estimate = lambda *a: 0\n"
    "diskspace.MIN_FREE_BYTES = 0\n"
    "from engine.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def run_disk(work: Path, sizes: list[int], during: bool = False) -> dict:
    """Index a corpus into a data folder on a tmpfs of each size (MB); then status, ask, and
    the same index run on a disk made large enough. ``during``: with the free-space check
    off (``NO_SPACE_CHECK``), so the disk fills during a commit."""
    docs = work / "docs"
    for i in range(300):
        (docs / "d").mkdir(parents=True, exist_ok=True)
        (docs / "d" / f"g{i}.txt").write_text(
            " ".join(
                f"Heron report {i} line {j} mentions pond {j * i} and reeds token{i}x{j}." for j in range(12)
            )
        )
    rows = []
    for size in sizes:
        mnt = work / f"disk{size}"
        mnt.mkdir()
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}m", "tmpfs", str(mnt)], capture_output=True
        )
        if r.returncode:
            raise SystemExit(f"cannot mount a tmpfs (run as root): {r.stderr.decode().strip()}")
        try:
            home = mnt / "home"
            args = ("index", str(docs / "d"), "-q", "--threads", "1", "--commit-every", "300")
            if during:
                env = dict(os.environ, SPARCDESK_HOME=str(home), PYTHONPATH=str(ROOT))
                ix = subprocess.run(
                    [sys.executable, "-c", NO_SPACE_CHECK, *args], env=env, cwd=ROOT, capture_output=True, text=True
                )
            else:
                ix = cli(home, *args)
            st = cli(home, "status")
            q = cli(home, "ask", "heron report 1 token1x3", "--json")
            usable = st.returncode == 0 and q.returncode == 0
            subprocess.run(["mount", "-o", "remount,size=512m", str(mnt)], check=True)
            again = cli(home, "index", str(docs / "d"), "-q", "--threads", "1")
            q2 = cli(home, "ask", "heron report 17 token17x3", "--json")
            rows.append(
                {
                    "size_mb": size,
                    "check": "off: the disk fills during a commit" if during else "on",
                    "index_code": ix.returncode,
                    "traceback": _traceback(ix, st, q, again, q2),
                    "last_commit_usable": usable,
                    "message": ix.stderr.strip().splitlines()[-1:] if ix.returncode else [],
                    "continued": again.returncode == 0 and "g17.txt" in q2.stdout,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        finally:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    summary = {
        "runs": len(rows),
        "tracebacks": sum(r["traceback"] for r in rows),
        "usable": sum(r["last_commit_usable"] for r in rows),
        "continued": sum(r["continued"] for r in rows),
    }
    print(json.dumps(summary))
    return {"summary": summary, "rows": rows}


# --------------------------------------------------------------------------- hostile corpus


def _measure(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[bytes], int, float]:
    import psutil

    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    p = psutil.Process(proc.pid)
    out: list[bytes] = []
    import threading

    reader = threading.Thread(target=lambda: out.append(proc.communicate()), daemon=True)  # type: ignore[func-returns-value]
    reader.start()
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(
                peak, p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
            )
        time.sleep(0.05)
    reader.join()
    stdout, stderr = out[0] if out else (b"", b"")  # type: ignore[misc]
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), peak, time.monotonic() - t0


def run_hostile(work: Path, hostile: int, good: int) -> dict:
    from bench import hostile as gen

    corpus = work / "hostile"
    manifest = gen.make_corpus(corpus, hostile=hostile, good=good)
    baseline = work / "good"
    base_manifest = gen.make_good(baseline, hostile + good)
    results = {}
    for label, folder, man in (("hostile", corpus, manifest), ("good", baseline, base_manifest)):
        home = work / f"home-{label}"
        env = dict(os.environ, SPARCDESK_HOME=str(home), PYTHONPATH=str(ROOT))
        r, peak, wall = _measure([sys.executable, "-m", "engine.cli.main", "index", str(folder), "-q"], env)
        st = json.loads(cli(home, "status", "--json").stdout or "{}")
        reasons = {e["path"]: e["reason"] for e in st.get("errors", [])}
        hostile_paths = [str(folder / p) for p in man["hostile"]]
        with_reason = sum(p in reasons for p in hostile_paths)
        answered = 0
        asked = (
            man["good"]
            if label == "hostile"
            else random.Random(0).sample(man["good"], min(30, len(man["good"])))
        )
        for q in asked:
            a = cli(home, "ask", q["question"], "--json", "--top", "3")
            try:
                paths = [x["path"] for x in json.loads(a.stdout)["answers"]]
            except (ValueError, KeyError):
                paths = []
            answered += str(folder / q["file"]) in paths
        results[label] = {
            "code": r.returncode,
            "traceback": b"Traceback" in r.stderr,
            "stdout_bytes": len(r.stdout),
            "peak_rss_mb": round(peak / (1 << 20)),
            "wall_s": round(wall, 1),
            "files": st.get("files"),
            "sentences": st.get("sentences"),
            "hostile": len(hostile_paths),
            "hostile_with_reason": with_reason,
            "hostile_indexed_without_reason": [p for p in hostile_paths if p not in reasons][:20],
            "good_questions": len(asked),
            "good_answered": answered,
        }
        print(
            label,
            json.dumps({k: v for k, v in results[label].items() if k != "hostile_indexed_without_reason"}),
        )
    results["wall_ratio"] = round(results["hostile"]["wall_s"] / max(1e-9, results["good"]["wall_s"]), 2)
    print("wall time hostile / good:", results["wall_ratio"])
    return results


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("damage", "disk", "hostile"))
    p.add_argument("--only", help="damage: only cases whose name holds this")
    p.add_argument("--sizes", default="5,8,12,20,50", help="disk: tmpfs sizes in MB")
    p.add_argument("--during", action="store_true", help="disk: free-space check off, the disk fills mid-commit")
    p.add_argument("--hostile", type=int, default=970, help="hostile: hostile files")
    p.add_argument("--good", type=int, default=30, help="hostile: good files among them")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args(argv)
    recorder = harness.Run("faults", argv)
    work = Path(tempfile.mkdtemp(prefix=f"sparcdesk-faults-{args.what}-"))
    try:
        if args.what == "damage":
            out = run_damage(work, args.only)
        elif args.what == "disk":
            out = run_disk(work, [int(x) for x in args.sizes.split(",")], args.during)
        else:
            out = run_hostile(work, args.hostile, args.good)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    path = recorder.save(f"faults-{args.what}", out, folder=RESULTS)
    print("wrote", path)
    return out


if __name__ == "__main__":
    main()
