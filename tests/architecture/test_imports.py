"""The house's arrows: package imports point one way, top to bottom, and no module imports its way back.

Read from the source files (``ast``), so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Top to bottom: a package may import packages below it (and itself), never one above it.
LAYERS: list[set[str]] = [
    {"doors", "evaluation", "telemetry"},
    {"turn"},
    {"checks"},
    {"chat"},
    {"kernel_setup"},
    {"plugins"},
    {"twin", "memory"},
    {"governance"},
    {"storage"},
    {"core"},
]
PACKAGES = {name for layer in LAYERS for name in layer}
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each project module and the project modules it imports (anywhere in its body)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = _module_name(path)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                elif isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] in PACKAGES and _exists(target):
                        graph[module].add(target)
            graph.setdefault(module, set())
    return graph


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_package_imports_a_package_above_it() -> None:
    upward = sorted(
        (module, target)
        for module, targets in _imports().items()
        for target in targets
        if RANK[target.split(".")[0]] < RANK[module.split(".")[0]]
    )
    assert upward == [], "imports pointing up the house (see LAYERS): " + ", ".join(f"{a} -> {b}" for a, b in upward)


def test_the_module_import_graph_has_no_cycle() -> None:
    graph = _imports()
    # Importing a package's __init__ to reach its submodule is not a cycle back into the importer's package.
    edges = {m: {t for t in ts if t != m and not m.startswith(t + ".")} for m, ts in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_every_package_of_the_house_is_in_a_layer() -> None:
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench", "examples"}
    assert on_disk == PACKAGES, f"packages not placed in LAYERS: {sorted(on_disk - PACKAGES)}"
