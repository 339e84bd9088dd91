"""The layer contract of docs/ARCHITECTURE.md, checked on the source: imports point down only and
no two modules import each other, directly or around a cycle.

Every import counts — module level, inside a function (a lazy import for start-up speed is still a
dependency) and under ``TYPE_CHECKING`` (a type a module names is one it depends on).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import delta_downgrade

PACKAGE_DIR = Path(delta_downgrade.__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name

# Lowest first. A module belongs to the first entry whose name is its own or a parent package.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("delta_downgrade", "delta_downgrade.errors", "delta_downgrade.clock", "delta_downgrade.spark",
              "delta_downgrade.arrow_compute", "delta_downgrade.arrow_parquet")),
    ("protocol", ("delta_downgrade.protocol",)),
    ("storage", ("delta_downgrade.storage",)),
    ("deletion_vectors", ("delta_downgrade.deletion_vectors",)),
    ("log", ("delta_downgrade.log",)),
    ("drop", ("delta_downgrade.drop",)),
    ("rewrite", ("delta_downgrade.rewrite",)),
    ("features", ("delta_downgrade.features",)),
    ("compat", ("delta_downgrade.compat",)),
    ("operations", ("delta_downgrade.operations",)),
    ("app", ("delta_downgrade.app",)),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    best, best_len = None, -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            exact_root = prefix == PACKAGE and module == PACKAGE
            nested = prefix != PACKAGE and (module == prefix or module.startswith(prefix + "."))
            if (exact_root or nested) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/ARCHITECTURE.md")
    return best


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def imported_modules(module: str, path: Path, known: set[str]) -> dict[str, int]:
    """The package's modules ``module`` imports, each with the line of its first import."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: dict[str, int] = {}

    def note(target: str, line: int) -> None:
        # ``from a.b import c`` imports the module a.b.c when c is one, else a.b.
        if target in known and target != module:
            found.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                note(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{alias.name}" for alias in node.names]
            if any(s in known for s in subs):
                for s in subs:
                    note(s, node.lineno)
                if target != PACKAGE:
                    note(target, node.lineno)
            else:
                note(target, node.lineno)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    modules = all_modules()
    known = set(modules)
    return {m: imported_modules(m, p, known) for m, p in modules.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    for module in all_modules():
        layer_of(module)


def test_imports_point_down_only() -> None:
    upward = []
    for module, targets in sorted(import_graph().items()):
        for target, line in sorted(targets.items()):
            if RANK[layer_of(target)] > RANK[layer_of(module)]:
                upward.append(f"{module}:{line} ({layer_of(module)}) imports {target} ({layer_of(target)})")
    assert upward == [], "upward imports:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_package_never_imports_the_repository_tools() -> None:
    offenders = [str(p.relative_to(PACKAGE_DIR.parent)) for p in PACKAGE_DIR.rglob("*.py")
                 if "delta_downgrade_tools" in p.read_text(encoding="utf-8")]
    assert offenders == []


# The checker itself must be able to fail: a synthetic graph with a cycle and an upward edge.
def test_the_checks_find_a_cycle_and_an_upward_import() -> None:
    graph = {"delta_downgrade.log.a": {"delta_downgrade.log.b": 1},
             "delta_downgrade.log.b": {"delta_downgrade.log.a": 3, "delta_downgrade.app.x": 4},
             "delta_downgrade.app.x": {}}
    assert cycles(graph) == [["delta_downgrade.log.a", "delta_downgrade.log.b"]]
    assert RANK[layer_of("delta_downgrade.app.x")] > RANK[layer_of("delta_downgrade.log.b")]


@pytest.mark.parametrize("module, layer", [
    ("delta_downgrade", "core"), ("delta_downgrade.errors", "core"),
    ("delta_downgrade.protocol.actions", "protocol"), ("delta_downgrade.storage.local", "storage"),
    ("delta_downgrade.deletion_vectors.bitmap", "deletion_vectors"), ("delta_downgrade.log.snapshot", "log"),
    ("delta_downgrade.drop.run", "drop"), ("delta_downgrade.rewrite.dv_purge", "rewrite"),
    ("delta_downgrade.features", "features"), ("delta_downgrade.compat.verdict", "compat"),
    ("delta_downgrade.operations.drop_feature", "operations"), ("delta_downgrade.app.cli", "app"),
])
def test_layer_of(module: str, layer: str) -> None:
    assert layer_of(module) == layer
