"""The engine's shape (issue 14), checked on the sources: engine/ is its stages, a
sub-package each, and the rules between them hold. Imports are read with ``ast`` from every
file, module-level and function-level alike, so a late import cannot hide a cycle."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
STAGES = {
    *("common", "ingest", "model", "index", "catalog", "indexer", "search", "home", "upkeep", "api", "watch"),
    "cli",
}
#: Modules a question goes through: none may import torch, even late. (The facade is not
#: among them: it imports adaptation, which is torch, inside ``Engine.adapt`` only.)
SEARCH_PATH = ("engine.search", "engine.index", "engine.model.encoder", "engine.model.features", "engine.model.sparse")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """Each file is parsed once per session (the checks only read the trees)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def sources(*folders: str) -> Iterator[tuple[str, Path, ast.Module]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield module_name(path), path, _parsed(path)


def imports(name: str, tree: ast.Module) -> Iterator[tuple[str, list[str], int]]:
    """``(module, imported names, line)`` for every import anywhere in the file; relative
    imports are resolved against ``name``."""
    package = name if name.endswith("__init__") else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            yield module, [a.name for a in node.names], node.lineno


@functools.cache
def engine_modules() -> frozenset[str]:
    return frozenset(name for name, _, _ in sources("engine"))


def edges() -> dict[str, set[str]]:
    """Engine module -> the engine modules it imports (``from engine.x import y`` counts as
    an import of ``engine.x.y`` when that is a module)."""
    return package_edges("engine")


def test_engine_is_its_stages() -> None:
    top = {p.stem for p in ENGINE.glob("*.py")} - {"__init__"}
    packages = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").exists()}
    assert not top, f"flat modules left in engine/: {sorted(top)}"
    assert packages == STAGES


def package_edges(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same top-level ``package`` it imports (engine/, app/, bench/)."""
    known = engine_modules() if package == "engine" else frozenset(name for name, _, _ in sources(package))
    graph: dict[str, set[str]] = {}
    for name, _, tree in sources(package):
        out = graph.setdefault(name, set())
        for module, names, _ in imports(name, tree):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known] or [module]
            out.update(t for t in targets if t in known and t not in (name, package))
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycle_in_the_app_or_the_benchmarks() -> None:
    """Issue 40: app.main -> app.window -> app.backend -> app.main (for EngineSpec) and
    bench.product <-> bench.product_doc were cycles."""
    for package in ("app", "bench"):
        cycles = find_cycles(package_edges(package))
        assert not cycles, f"{package}: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_import_cycle_inside_the_engine() -> None:
    cycles = find_cycles(edges())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def stage_edges() -> dict[str, set[str]]:
    """Stage -> the other stages its modules import (``engine.home.paths`` is in ``home``)."""
    out: dict[str, set[str]] = {}
    for src, targets in edges().items():
        a = src.split(".")[1] if "." in src else src
        out.setdefault(a, set()).update(t.split(".")[1] for t in targets if "." in t and t.split(".")[1] != a)
    return out


def test_no_import_cycle_between_stages() -> None:
    """Issue 40: modules without cycles can still make stages that import each other (home
    held the repair protocol, which imports index and catalog, which import home's file
    helpers). The stages must form layers."""
    cycles = find_cycles(stage_edges())
    assert not cycles, "stages on a cycle: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_stage_check_sees_a_cycle(monkeypatch) -> None:
    """The check itself: two stages importing each other through different modules fail it."""
    fake = {
        "engine.home.paths": set(),
        "engine.home.repair": {"engine.index.x"},
        "engine.index.x": {"engine.home.paths"},
    }
    monkeypatch.setattr(__import__(__name__), "edges", lambda: fake)
    graph = stage_edges()
    assert graph == {"home": {"index"}, "index": {"home"}}
    assert find_cycles(graph) == [["home", "index", "home"]]


def test_the_import_reader_sees_a_late_import() -> None:
    """The reader itself: an import inside a function is found like one at the top."""
    tree_a = ast.parse("import engine.b\n")
    tree_b = ast.parse("def f():\n    from engine import a\n")
    found = {m for m, _, _ in imports("engine.b", tree_b)} | {m for m, _, _ in imports("engine.a", tree_a)}
    assert found == {"engine", "engine.b"}


def test_engine_imports_neither_app_nor_trainer() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for name, path, tree in sources("engine")
        for module, _, line in imports(name, tree)
        if module.split(".")[0] in ("app", "trainer")
    ]
    assert not bad, bad


def engine_aliases(tree: ast.Module, within: str = "engine") -> set[str]:
    """Names a file binds to engine modules under ``within`` (``import engine.x as y``, ``from
    engine.x import y`` where ``y`` is a module), so that ``y._private`` can be found."""
    known = engine_modules()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.asname and a.name.startswith(within))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
            names.update(
                a.asname or a.name
                for a in node.names
                if f"{node.module}.{a.name}" in known and f"{node.module}.{a.name}".startswith(within)
            )
    return names


def test_trainer_and_bench_use_public_engine_names_only() -> None:
    bad = []
    for name, path, tree in sources("trainer", "bench"):
        for module, names, line in imports(name, tree):
            if not module.startswith("engine"):
                continue
            private = [p for p in module.split(".") if p.startswith("_")] + [
                n for n in names if n.startswith("_")
            ]
            if private:
                bad.append(f"{path.relative_to(ROOT)}:{line} {module}: {private}")
        aliases = engine_aliases(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    assert not bad, bad


def _search_target(node: ast.expr, aliases: set[str]) -> bool:
    """``node`` names an ``engine.search`` module: an alias bound to one, or spelled out."""
    if isinstance(node, ast.Name):
        return node.id in aliases
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    return isinstance(node, ast.Name) and node.id == "engine" and chain[-1:] == ["search"] and len(chain) >= 2


def tunable_writes(tree: ast.Module) -> list[int]:
    """Lines that write an ``engine.search`` module's UPPER_CASE global (``search.DOC_WEIGHT = 0``,
    ``setattr(engine.search.answers, "DOC_DECAY", 0)``): a search's tunables are the
    ``SearchSettings`` it is given (issue 37), and a write to a global would change every
    search of the process, or, since they moved, nothing at all."""
    aliases = engine_aliases(tree, within="engine.search")
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            for leaf in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(leaf, ast.Attribute) and leaf.attr.isupper() and _search_target(leaf.value, aliases):
                    lines.append(node.lineno)
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            target, attr = node.args[0], node.args[1]
            if (
                name == "setattr"
                and isinstance(attr, ast.Constant)
                and str(attr.value).isupper()
                and _search_target(target, aliases)
            ):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_module_global_tunable_is_written_from_outside() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}"
        for _, path, tree in sources("engine", "app", "bench", "trainer", "scripts", "tests")
        for line in tunable_writes(tree)
    ]
    assert not bad, bad


def test_the_tunable_check_sees_a_write() -> None:
    must = ast.parse(
        "import engine.search.answers as search\nimport engine.search.answers\n"
        "search.DOC_WEIGHT = 0\nsetattr(engine.search.answers, 'DOC_DECAY', 0)\nsearch.DOC_WEIGHT, search.X = 1, 2\n"
    )
    assert tunable_writes(must) == [3, 4, 5]
    assert not tunable_writes(ast.parse("import engine.search.answers as search\nweight = search.DOC_WEIGHT\n"))


def test_the_search_path_never_imports_torch() -> None:
    graph = edges()
    torch_users = {
        name
        for name, _, tree in sources("engine")
        if any(m.split(".")[0] == "torch" for m, _, _ in imports(name, tree))
    }
    bad = []
    for start in sorted(m for m in graph if m.startswith(SEARCH_PATH)):
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        if seen & torch_users:
            bad.append(f"{start} reaches torch via {sorted(seen & torch_users)}")
    assert not bad, bad


SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|CREATE\s+(TABLE|INDEX))\b",
    re.I,
)


def test_no_sql_outside_the_catalog() -> None:
    bad = []
    for folder in ("engine", "app"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("engine/catalog/"):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "execute(" in line or "executemany(" in line or SQL.search(line):
                    bad.append(f"{rel}:{i}: {line.strip()}")
    assert not bad, "SQL outside engine/catalog:\n" + "\n".join(bad)


def test_common_is_a_leaf_every_stage_may_import() -> None:
    """engine/common holds the types stages share (progress, Cancelled) and the word lists per
    language: it imports no engine module outside itself, so importing it can never make a
    cycle between stages."""
    graph = edges()
    bad = {
        m: sorted(x for x in graph[m] if not x.startswith("engine.common"))
        for m in graph
        if m.startswith("engine.common") and any(not x.startswith("engine.common") for x in graph[m])
    }
    assert not bad, bad


def public_classes(*folders: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for _, path, tree in sources(*folders):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_one_type_per_name() -> None:
    """One concept, one type (issue 14): no public class name is defined twice across the
    engine, the window and the trainer (there were two ``Cancelled`` and two ``Hit``)."""
    found = public_classes("engine", "app", "trainer")
    assert "Cancelled" in found and "IndexHit" in found  # the reader sees classes at all
    twice = {name: where for name, where in found.items() if len(where) > 1}
    assert not twice, twice


NAME_MATCH = re.compile(r"__name__\s*[!=]=|[!=]=\s*\S*__name__|hasattr\(\w+, \"(files_done|steps|step)\"\)")


def test_exceptions_and_progress_are_told_apart_by_type() -> None:
    """An exception or a progress report is recognised with ``except``/``isinstance``, never
    by its class's name as a string or by probing for an attribute."""
    bad = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for _, path, _ in sources("engine", "app")
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if NAME_MATCH.search(line) and "__main__" not in line
    ]
    assert not bad, bad


def _lint_imports(*args: str) -> subprocess.CompletedProcess:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_import_linter_contracts_hold() -> None:
    """Issue 40: the stage layers and forbidden imports as import-linter contracts
    (``[tool.importlinter]`` in pyproject.toml), run on the sources as ``lint-imports`` does."""
    proc = _lint_imports()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in proc.stdout


def test_the_import_linter_sees_a_broken_layer(tmp_path: Path) -> None:
    """The same tool with the layers upside down (model above ingest's shared leaf, common
    on top) must fail: the contracts are checked, not just parsed."""
    cfg = tmp_path / "contracts.ini"
    cfg.write_text(
        "[importlinter]\nroot_package = engine\n\n[importlinter:contract:upside-down]\n"
        "name = upside down\ntype = layers\nlayers =\n    engine.common\n    engine.model\n",
        encoding="utf-8",
    )
    proc = _lint_imports("--config", str(cfg))
    assert proc.returncode != 0 and "upside down BROKEN" in proc.stdout, proc.stdout[-2000:]
