"""bench/harness.py (issue 40): every benchmark's result starts with one header (command, when,
git head and what was uncommitted, machine, environment before and after); and the product
benchmark's report, docs/product.md, renders from a saved result alone, the same bytes each
time, from its template (bench/templates/product.md)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import harness
from bench.product import report, summarise

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    if shutil.which("git") is None:
        return ""
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout


def test_a_saved_result_starts_with_the_common_header(tmp_path: Path) -> None:
    run = harness.Run("demo", ["--quick"], busy=False)
    payload = {"figure": 1.5, "machine": {"loadavg_before": [0.5], "cpus": 99}}
    path = run.save("demo-case", payload, folder=tmp_path / "results")
    assert path.parent == tmp_path / "results"
    assert re.fullmatch(r"demo-case-\d{8}-\d{6}\.json", path.name)
    out = json.loads(path.read_text(encoding="utf-8"))
    assert list(out)[: len(harness.HEADER)] == list(harness.HEADER)
    assert out["command"] == "python -m bench.demo --quick"
    assert out["git"] == _git("rev-parse", "--short", "HEAD").strip()
    assert isinstance(out["git_dirty"], list)
    machine = out["machine"]
    for key in ("platform", "python", "cpu_model", "packages"):
        assert machine[key]
    # the benchmark's own keys win and stay: the header only adds
    assert machine["cpus"] == 99 and machine["loadavg_before"] == [0.5]
    assert "numpy" in machine["packages"]
    env = out["environment"]
    assert set(env) == {"before", "after"}
    assert env["before"]["busy"] == [] and len(env["after"]["loadavg"]) in (0, 3)
    assert out["figure"] == 1.5


def test_save_result_without_a_run_and_to_a_named_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "named.json"
    assert harness.save_result("x", {"rows": [1, 2]}, path=target) == target
    out = json.loads(target.read_text(encoding="utf-8"))
    assert out["rows"] == [1, 2] and out["git"] == _git("rev-parse", "--short", "HEAD").strip()
    assert set(out["environment"]) == {"after"}  # nothing known of the time before it


def test_git_dirty_lists_uncommitted_changes_to_what_is_measured() -> None:
    if not _git("rev-parse", "HEAD"):
        pytest.skip("not a git checkout")
    status = _git("status", "--porcelain", "--", "engine", "assets")
    assert harness.git_head().dirty == [line[3:] for line in status.splitlines() if line.strip()]


def _rows() -> list[dict]:
    """Questions of a run as ``bench.product.ask.run_questions`` saves them, three sets."""

    def row(s: str, kind: str, qid: str, hit: float, answerable: bool = True, kw: str = "") -> dict:
        r = {
            "set": s,
            "qid": qid,
            "kind": kind,
            "question": f"question {qid}?",
            "answerable": answerable,
            "answered": answerable,
            "top_score": 2.0 if answerable else 1.0,
            "match": 0.5 if answerable else 0.1,
            "coverage": 0.6,
            "ms": 30.0 + len(qid),
            "top_text": "a sentence",
        }
        if answerable:
            r.update(rr=hit, hit1=hit, answer1=hit, bm25_rr=0.5, bm25_hit1=0.0)
            r.update(kw=kw or f"words {qid}", kw_rr=1.0, kw_hit1=1.0, kw_bm25_rr=1.0, kw_bm25_hit1=1.0)
            r.update(kw_answered=True)
        return r

    return [
        row("enron", "address", "a1", 1.0, kw="Ann Lee"),
        row("enron", "address", "a2", 0.0, kw="Bob Fox"),
        row("enron", "sender", "s1", 1.0),
        row("maildir", "address", "m1", 1.0, kw="Cy Dee"),
        row("maildir", "sender", "m2", 1.0),
        row("squad", "squad", "q1", 1.0),
        row("squad", "squad", "q2", 0.0),
        row("squad", "squad-heldout", "q3", 0.0, answerable=False),
    ]


def _saved_run(folder: Path) -> Path:
    """A small result of ``python -m bench.product`` as it is saved: the JSON and its questions."""
    rows = _rows()
    results = {}
    for s in ("enron", "maildir", "squad"):
        results[s] = {
            "collection": s,
            "documents": 12,
            "sentences": 3456,
            **summarise([r for r in rows if r["set"] == s]),
            "ask_s": 0.2,
        }
    cell = {"match": 0.33, "coverage": 0.3, "squad": (100.0, 100.0), "all": (100.0, 100.0)}
    out = {
        "command": "python -m bench.product --sets enron,maildir,squad",
        "when": "2026-11-28T01:19:49+0000",
        "git": "abc1234",
        "git_dirty": [],
        "machine": {"cpus": 2, "platform": "Linux-test", "python": "3.11.7"},
        "environment": {
            "before": {"loadavg": [1.0, 1.5, 2.0], "busy": ["80% python -m pytest"]},
            "after": {"loadavg": [2.0, 2.0, 2.0], "busy": []},
        },
        "sizes": {"enron": 1000, "squad_articles": 48, "cisi_docs": 0, "time_docs": 0, "questions": 0},
        "limit": None,
        "threads": 2,
        "squad_pool": {
            "source": "docs/ood.md",
            "default_search": {"MRR": 80.42, "R@1": 73.04},
            "sparc_alone": {"MRR": 74.28, "R@1": 65.88},
            "bm25": {"MRR": 73.36, "R@1": 65.80},
        },
        "collections": {
            "mail": {"model": "sparc-tiny 0.4.0", "index_s": 120.0, "reused_home": True},
            "squad": {"model": "sparc-tiny 0.4.0", "index_s": 30.0, "reused_home": False},
        },
        "results": results,
        "calibration": {"sets": ["squad"], "shipped": {"match": 0.33, "coverage": 0.3}, "grid": [cell]},
        "total_s": 215.0,
        "questions_file": "product-test.questions.jsonl.gz",
    }
    path = folder / "product-test.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    with gzip.open(folder / out["questions_file"], "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def test_the_product_page_renders_from_a_saved_result_the_same_each_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import product

    saved = _saved_run(tmp_path)
    pages = []
    for name in ("a.md", "b.md"):
        product.main(["--render", str(saved), "--doc", str(tmp_path / name)])
        pages.append((tmp_path / name).read_bytes())
    assert pages[0] == pages[1]
    page = pages[0].decode("utf-8")
    printed = capsys.readouterr().out
    # the live figures come from the result ...
    assert page.startswith("# Product-level benchmark: the app as a user meets it\n")
    assert "2026-11-28, git `abc1234` (engine/ and assets/ as committed), 2 CPUs, Linux-test;" in page
    assert "load average before 1.00, 1.50, 2.00, after 2.00, 2.00, 2.00" in page
    assert "(other busy processes: 80% python -m pytest)" in page
    assert "mail 2.0 min (home reused), squad 30 s" in page
    assert report.table(json.loads(saved.read_text(encoding="utf-8"))) in page
    assert "| enron | address | 2 | Ann Lee |" in page and "| enron | address | 2 | Ann Lee |" in printed
    assert "names alone are at 100.0 (BM25 100.0)" in page  # the Enron names typed alone
    # ... the history stays as the template has it, and no placeholder is left
    assert "the command took 4.0 minutes on an\nidle machine" in page
    assert "What is the email address of {First Last}?" in page
    assert "{{" not in page and "<!--" not in page


def test_every_placeholder_of_the_template_gets_a_value() -> None:
    names = report.placeholders()
    assert {"table", "kinds", "keywords", "calibration", "when", "git"} <= set(names)
    with pytest.raises(KeyError, match="no value for table"):
        report.render(**{n: "" for n in names if n != "table"})
    assert report.render(**{n: f"<{n}>" for n in names}).count("<table>") == 1
