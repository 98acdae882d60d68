"""The package's layering, checked on the source: which modules may import pytest, which packages
may import which, no import cycle anywhere (module-level and function-level imports alike; imports
under ``if TYPE_CHECKING:`` are for the type checker only and do not count there), none inside
``plugin/`` or ``run/`` even for the type checker, and no module there over ``MAX_LINES``; each
benchmark's home (``benchmarks/<name>/``) is a layer of its own, and no core module branches on
a suite's name (issue 40) beyond a shrinking allowlist."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_memeval

PACKAGE = Path(pytest_memeval.__file__).resolve().parent

#: the layer name of the benchmarks' homes (``benchmarks/<name>/``, a package per suite)
HOMES = "benchmarks/<home>"

#: layers, lowest first: a module may import from its own layer and the ones before it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "files", "records", "dates"),
    ("metrics", "llm", "benchmarks", "systems"),
    ("answerers", "judges", "protocols"),  # protocols: official judges over judges/metrics
    ("report", "analysis"),  # report.model is the data analysis fills; renderers read it
    # a benchmark's home (``benchmarks/<name>/``): its loader and scorer, and its official judge,
    # figures and answer prompts built on the layers below; nothing below imports a home (the core
    # reaches a suite through the registry and the Benchmark protocol's hooks)
    (HOMES,),
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


def _lazy_exports(path: Path) -> dict[str, str]:
    """A package's names imported on first use (its ``_WHERE`` map: name -> ``._module``)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "_WHERE":
                assert node.value is not None
                return {k: v for k, v in ast.literal_eval(node.value).items()}
    return {}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    lazy = {name: _lazy_exports(path) for name, (path, is_pkg) in mods.items() if is_pkg}
    graph = {}
    for name, (path, is_pkg) in mods.items():
        deps = set()
        for dep in _imports(name, path, is_pkg):
            if dep.startswith("pytest_memeval"):
                package, _, attr = dep.rpartition(".")
                if dep not in mods and attr in lazy.get(package, {}):
                    # a name a package exports on first use: the edge goes to its module
                    dep = package + lazy[package][attr]
                while dep not in mods and "." in dep:  # a name imported from a module
                    dep = dep.rsplit(".", 1)[0]
                if dep != name:
                    deps.add(dep)
            else:
                deps.add("pytest")
        graph[name] = deps
    return graph


def _is_home(module: str) -> bool:
    """A module of a benchmark's home: ``pytest_memeval.benchmarks.<name>`` is a package."""
    parts = module.split(".")
    return (
        len(parts) > 2
        and parts[1] == "benchmarks"
        and (PACKAGE / "benchmarks" / parts[2] / "__init__.py").is_file()
    )


def _top(module: str) -> str:
    if _is_home(module):
        # a home's _pins.py is data (its SuitePins record): the protocol profiles read the
        # upstream commits and file hashes from it, so it sits with the benchmarks layer
        return "benchmarks" if module.endswith("._pins") else HOMES
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


#: the packages whose modules must not name one another in a circle, not even for the type checker
KNOTLESS = ("plugin", "run")
#: the one module whose ``if TYPE_CHECKING:`` imports are exempt: the stash keys name the type each
#: key holds (the controller, the run state), which is what lets every glue module reach that state
#: through ``config.stash`` instead of importing the module that builds it
KEYS_MODULE = "pytest_memeval.plugin._stash"


def _design_imports(module: str, path: Path, is_pkg: bool) -> set[str]:
    """Every pytest_memeval module ``module`` names in an import: at module level, inside a
    function (a run-time import all the same, only later) and under ``if TYPE_CHECKING:`` (it never
    executes, but a module that needs another's types to be checked depends on it: a circle of
    those is the knot issue 26 asks to untie). Only ``KEYS_MODULE``'s type-only imports are left
    out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    if module == KEYS_MODULE:
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
            found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name.startswith("pytest_memeval")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    cycles: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> None:
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
    return cycles


def _a_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle through the component's first module, e.g. ``a -> b -> a``."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                todo.append(w)
    return component


@pytest.mark.parametrize("package", KNOTLESS)
def test_no_import_circle_in_package(package: str) -> None:
    """No circle among one package's modules, counting every import a module names (issue 26:
    controller, items, keys, scale and calibration in ``plugin/``; settings, calibration and
    runtime in ``run/``)."""
    prefix = f"pytest_memeval.{package}"
    mods = {
        name: where
        for name, where in _modules().items()
        if name == prefix or name.startswith(prefix + ".")
    }
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        deps = set()
        for dep in _design_imports(name, path, is_pkg):
            while dep not in mods and "." in dep:  # a name imported from a module
                dep = dep.rsplit(".", 1)[0]
            if dep in mods and dep != name:
                deps.add(dep)
        graph[name] = deps
    circles = [
        f"{len(c)} modules in a circle ({', '.join(c)}), e.g. {' -> '.join(_a_circle(graph, c))}"
        for c in _cycles(graph)
    ]
    assert not circles, circles


def test_no_import_circle_anywhere() -> None:
    """No circle in the whole package among the imports that execute (module level or in a
    function); ``plugin/`` and ``run/`` are held to more below (type-only imports count there)."""
    graph = _graph()
    circles = [
        f"{len(c)} modules in a circle ({', '.join(c)}), e.g. {' -> '.join(_a_circle(graph, c))}"
        for c in _cycles(graph)
    ]
    assert not circles, circles


#: the most lines a module of ``plugin/`` or ``run/`` may have (issue 26: glue files split by
#: concern rather than grown)
MAX_LINES = 500
#: modules over MAX_LINES still to be split (none: run/_question.py was split into run/_ingest.py,
#: run/_retrieval.py and run/_verdict.py)
OVER_MAX_LINES: frozenset[str] = frozenset()


def test_no_glue_module_over_max_lines() -> None:
    over = []
    for package in KNOTLESS:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            name = path.relative_to(PACKAGE).as_posix()
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES and name not in OVER_MAX_LINES:
                over.append(f"{name}: {lines} lines (at most {MAX_LINES}: split it by concern)")
    assert not over, over


#: what a class may declare without setting it: a dataclass's fields, a Protocol's members
_DECLARING = {"dataclass", "Protocol", "NamedTuple", "TypedDict"}


def _declared_not_set(cls: ast.ClassDef) -> list[str]:
    """The attributes a class body annotates without a value (``results: dict[...]``), unless the
    class is a dataclass, a Protocol, a NamedTuple or a TypedDict."""
    names = {ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in cls.decorator_list}
    names |= {ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in cls.bases}
    if names & _DECLARING:
        return []
    return [
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name)
    ]


def test_no_mixin_declares_what_another_class_sets() -> None:
    """Issue 26: the controller's summary and terminal halves were mixins declaring the
    controller's attributes (and stub methods) for the type checker. Code that reads another
    object's state takes it as a parameter typed by a small Protocol (``provenance.SummarySource``,
    ``session_lines.TerminalSource``), so no class in plugin/ or run/ declares attributes it never
    sets."""
    found = []
    for package in KNOTLESS:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and (names := _declared_not_set(node)):
                    found.append(f"{path.relative_to(PACKAGE)}::{node.name} declares {names}")
    assert not found, found


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


def _suite_names() -> frozenset[str]:
    from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS

    return frozenset(BUILTIN_BENCHMARKS)


def _named_in_collection(node: ast.expr, names: frozenset[str]) -> set[str]:
    """The suite names written as string literals in ``node`` (a literal, or a tuple / list / set
    / dict of them, a ``frozenset({...})`` call included)."""
    return {
        sub.value
        for sub in ast.walk(node)
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in names
    }


def suite_branches(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, suite)`` of each place ``source`` branches on a suite's name: a comparison
    (``==``, ``!=``, ``in``, ``not in``) with a name literal on either side (inside a tuple or set
    there too, e.g. ``name in ("beam", "halumem")``), a ``match`` case on one, and a comparison
    with a module-level constant that holds one (``WHOLE_REPLY = ("beam",)``, then
    ``bench in WHOLE_REPLY``)."""
    tree = ast.parse(source)
    constants: dict[str, set[str]] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and (found := _named_in_collection(value, names)):
                constants[target.id] = found
    hits: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                hits.extend((node.lineno, n) for n in sorted(_named_in_collection(side, names)))
                if isinstance(side, ast.Name) and side.id in constants:
                    hits.extend((node.lineno, n) for n in sorted(constants[side.id]))
        elif (
            isinstance(node, ast.MatchValue)
            and isinstance(node.value, ast.Constant)
            and node.value.value in names
        ):
            hits.append((node.lineno, str(node.value.value)))
    return hits


#: core modules (outside ``benchmarks/``) that still branch on a suite's name, each with why:
#: none left. It stays empty: a suite's behaviour goes to its home, ``benchmarks/<name>/``,
#: behind a hook of the ``Benchmark`` protocol, or to the registry as data
#: (``benchmarks/__init__.py``); a lookup table keyed by suite is not a branch
NAMES_A_SUITE: dict[str, str] = {}


def _core_modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "benchmarks"
    )


def test_no_core_module_names_a_suite() -> None:
    """Issue 40: a suite lives in its home; the core reaches it through the registry and the
    ``Benchmark`` protocol's hooks, never by comparing with its name. Only the modules of
    ``NAMES_A_SUITE`` still do, and each of them still does (the list shrinks as suites move)."""
    names = _suite_names()
    found: dict[str, list[tuple[int, str]]] = {}
    for path in _core_modules():
        hits = suite_branches(path.read_text(encoding="utf-8"), names)
        if hits:
            found[path.relative_to(PACKAGE).as_posix()] = hits
    new = {m: hits for m, hits in found.items() if m not in NAMES_A_SUITE}
    assert not new, f"core modules branching on a suite's name (move it to the home): {new}"
    stale = sorted(set(NAMES_A_SUITE) - set(found))
    assert not stale, f"no longer names a suite: remove from NAMES_A_SUITE: {stale}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if name == "beam":\n    pass\n', [(1, "beam")]),
        ('ok = "halumem" != x\n', [(1, "halumem")]),
        ('ok = x in ("locomo", "other")\n', [(1, "locomo")]),
        ('SUITES = ("usermem",)\nok = x in SUITES\n', [(2, "usermem")]),
        ('match x:\n    case "longmemeval":\n        pass\n', [(2, "longmemeval")]),
        ('x = "beam"\nprint("beam is a suite")\n', []),  # named, but no branch
        ('ok = x == "beams"\n', []),
    ],
)
def test_suite_branches_finds_each_form(source: str, expected: list[tuple[int, str]]) -> None:
    assert suite_branches(source, _suite_names()) == expected
