"""The house's shape, checked: small modules and functions, imports that only run down the layers, no
import cycle. The layer order is defined here, once (README's layout table describes it)."""

from __future__ import annotations

import ast
from pathlib import Path

from backend import PROJECT_ROOT

BACKEND = PROJECT_ROOT / "backend"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

# Lowest first. A package may import from the layers below its own, never from its own layer's other
# packages or from above. "backend" is the package root (PROJECT_ROOT and the version).
LAYERS: list[set[str]] = [
    {"backend", "errors", "budget", "text", "settings", "versioned"},
    {"config"},
    {"auth", "telemetry", "retrieval", "confidence", "rerank"},
    {"llm"},
    {"embeddings", "db"},
    {"collections"},
    {"ingest"},
    {"web"},
    {"where"},
    {"search"},
    {"chat", "documents", "keys"},
    {"research", "jobs"},
    {"openai_compat"},
    {"composition", "testing", "cluster"},
    {"mcp_server"},
    {"api"},
    {"cli"},
    {"__main__"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in BACKEND.rglob("*.py"):
        parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "backend"


def _imports(module: str, path: Path) -> set[str]:
    """The backend modules `module` imports (a name imported from a package counts as its submodule
    when there is one), wherever the import stands: inside a function or under TYPE_CHECKING too."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return {m for m in found if m in MODULES and m != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _layer(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def test_every_package_has_a_layer():
    assert {_package(m) for m in MODULES} <= set().union(*LAYERS)


def test_no_import_runs_up_or_sideways_between_layers():
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _package(target) != _package(module) and _layer(_package(target)) >= _layer(_package(module))
    )
    assert wrong == []


def test_no_import_cycle():
    cycles, state = [], dict.fromkeys(GRAPH, 0)  # 0 unseen, 1 on the path, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state[target] == 1:
                cycles.append([*path[path.index(target) :], target])
            elif state[target] == 0:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if state[module] == 0:
            visit(module, [module])
    assert cycles == []


def test_no_module_over_the_limit():
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_over_the_limit():
    long = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{module}.{node.name}"] = lines
    assert long == {}
