"""The package's layering, checked on the source: which modules may import pytest, which packages
may import which, and no import cycle (module-level and function-level imports alike; imports
under ``if TYPE_CHECKING:`` are for the type checker only and do not count)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_memeval

PACKAGE = Path(pytest_memeval.__file__).resolve().parent

#: layers, lowest first: a module may import from its own layer and the ones before it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "files", "records", "dates"),
    ("metrics", "llm", "benchmarks", "systems"),
    ("answerers", "judges", "protocols"),  # protocols: official judges over judges/metrics
    ("report", "analysis"),  # report.model is the data analysis fills; renderers read it
    ("run",),
    ("board",),  # the board over many runs: reads reports and run folders, renders the site
    ("plugin",),
)


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["pytest_memeval", *path.relative_to(PACKAGE).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _imports(module: str, path: Path, is_pkg: bool) -> set[str]:
    """Every pytest_memeval module (or package) ``module`` imports at run time, and ``pytest``
    when it imports pytest."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            skip.update(id(x) for sub in node.body for x in ast.walk(sub))
    found: set[str] = set()
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[: len(base) - (node.level - 1)]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # a name may be a submodule (``from . import _nltk``) or an attribute; the graph
            # strips attributes back to their module
            found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {
        name
        for name in found
        if name == "pytest" or name.startswith("pytest.") or name.startswith("pytest_memeval")
    }


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, (path, is_pkg) in mods.items():
        deps = set()
        for dep in _imports(name, path, is_pkg):
            if dep.startswith("pytest_memeval"):
                while dep not in mods and "." in dep:  # a name imported from a module
                    dep = dep.rsplit(".", 1)[0]
                if dep != name:
                    deps.add(dep)
            else:
                deps.add("pytest")
        graph[name] = deps
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_only_the_plugin_package_imports_pytest() -> None:
    importers = sorted(m for m, deps in _graph().items() if "pytest" in deps)
    assert importers, "the plugin package imports pytest"
    assert all(_top(m) == "plugin" for m in importers), importers


def test_no_import_points_upward() -> None:
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    wrong = []
    for module, deps in _graph().items():
        here = rank.get(_top(module))
        if here is None:  # the package itself re-exports the public API
            continue
        for dep in deps:
            there = rank.get(_top(dep))
            if dep != "pytest" and there is not None and there > here:
                wrong.append(f"{module} -> {dep}")
    assert not wrong, wrong


def test_no_import_cycle() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


@pytest.mark.parametrize(
    "name",
    ["locomo_f1", "set_f1", "bleu1"],
)
def test_public_metric_imports(name: str) -> None:
    import pytest_memeval.metrics as metrics

    assert callable(getattr(metrics, name))


def test_public_records_import() -> None:
    from pytest_memeval import (  # noqa: F401
        Conversation,
        Memory,
        MemorySystem,
        Prediction,
        Question,
        QuestionResult,
        Session,
        Turn,
    )
