"""Issue 40 item 4: each package's ``__all__`` is its way in.

Every module below the package root is private (``_name.py``) but the vocabulary and the commands
run with ``python -m``; every package declares ``__all__`` and each name in it resolves (eagerly
or on first use through its ``_WHERE`` map); and no code outside a package reaches into its
private modules: not another package, not ``examples/`` or ``perf/``, not the docs, not the
tests, except the white-box tests of that package (``tests/unit/<package>/``, mirroring the tree)
and the fault-injection tests of ``tests/robustness/``."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import pytest_memeval

PACKAGE = Path(pytest_memeval.__file__).resolve().parent
REPO = PACKAGE.parent

#: modules below the root that keep a public name: the vocabulary every layer and every user
#: shares, and the commands run with ``python -m`` (docs name them)
PUBLIC_MODULES = frozenset(
    {
        "pytest_memeval.records",
        "pytest_memeval.errors",
        "pytest_memeval.board.cli",  # python -m pytest_memeval.board.cli (memeval-board)
        "pytest_memeval.report.cards",  # python -m pytest_memeval.report.cards > docs/protocols.md
        "pytest_memeval.analysis.check_published",  # memeval-check-published
    }
)

#: where code is checked, and the folders allowed to reach a private module (besides the package)
CHECKED = ("pytest_memeval", "tests", "examples", "perf")
WHITE_BOX = REPO / "tests" / "robustness"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = ["pytest_memeval", *path.relative_to(PACKAGE).with_suffix("").parts]
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _modules() -> dict[str, bool]:
    return dict(_module_name(p) for p in PACKAGE.rglob("*.py"))


def _private_owner(dotted: str) -> str | None:
    """The package whose private module (or private name) ``dotted`` reaches, else None."""
    parts = dotted.split(".")
    for i, part in enumerate(parts[1:], 1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _may_reach(importer: str | None, path: Path, owner: str) -> bool:
    """Whether code at ``path`` (module ``importer`` when in the package) may use ``owner``'s
    private modules: the package itself and its subpackages, its mirrored unit tests, and the
    fault-injection tests."""
    if importer is not None and (importer == owner or importer.startswith(owner + ".")):
        return True
    if path.is_relative_to(WHITE_BOX):
        return True
    unit = REPO / "tests" / "unit"
    if path.is_relative_to(unit):
        rel = path.relative_to(unit).parts
        below = owner.split(".")[1:]  # the package's path below the root
        return len(rel) == 1 if not below else (len(rel) > 1 and rel[0] == below[0])
    return False


def _files() -> list[Path]:
    out: list[Path] = []
    for top in CHECKED:
        out.extend(p for p in (REPO / top).rglob("*.py") if "fixtures" not in p.parts)
    return sorted(out)


def _import_targets(path: Path, source: str) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every pytest_memeval import in ``path`` (name None for
    ``import x``); relative imports are made absolute."""
    importer, is_pkg = _module_name(path) if path.is_relative_to(PACKAGE) else (None, False)
    base = (importer.split(".") if is_pkg else importer.split(".")[:-1]) if importer else []
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[: len(base) - (node.level - 1)]
                module = ".".join(parts + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("pytest_memeval"):
                out.extend((node.lineno, module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend(
                (node.lineno, a.name, None)
                for a in node.names
                if a.name.startswith("pytest_memeval")
            )
    return out


def test_every_module_below_the_root_is_private_but_the_vocabulary_and_the_commands() -> None:
    modules = _modules()
    public = sorted(
        name
        for name, is_pkg in modules.items()
        if not is_pkg
        and name.count(".") >= 1
        and not name.rsplit(".", 1)[1].startswith("_")
        and name not in PUBLIC_MODULES
    )
    assert public == [], f"name these modules _name (or list them in PUBLIC_MODULES): {public}"
    assert set(modules) >= PUBLIC_MODULES, sorted(PUBLIC_MODULES - set(modules))


@pytest.mark.parametrize("package", sorted(name for name, is_pkg in _modules().items() if is_pkg))
def test_every_package_declares_its_way_in(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert isinstance(names, list) and names, f"{package} declares no __all__"
    assert len(set(names)) == len(names), f"{package}.__all__ names a name twice"
    private = [n for n in names if n.startswith("_") and not n.startswith("__")]
    assert not private, f"{package}.__all__ exports private names: {private}"
    for name in names:
        assert getattr(module, name, None) is not None, f"{package}.{name} does not resolve"
    where: dict[str, str] = getattr(module, "_WHERE", {})
    assert set(where) <= set(names), sorted(set(where) - set(names))
    for name, submodule in where.items():
        # each name imported on first use lives in one of the package's private modules, or is a
        # sibling package's public name (a suite reading another suite's pins)
        assert re.fullmatch(r"\._[a-z0-9_]+|\.\.[a-z0-9_]+", submodule), (package, submodule)
        assert hasattr(importlib.import_module(submodule, package), name), (name, submodule)


def _violations(sources: dict[Path, str]) -> list[str]:
    """What breaks the rule in ``sources`` (path -> source; the path decides what it may reach)."""
    modules = _modules()
    exported: dict[str, set[str]] = {}
    wrong: list[str] = []
    for path, source in sources.items():
        importer = _module_name(path)[0] if path.is_relative_to(PACKAGE) else None
        where = path.relative_to(REPO)
        for line, module, name in _import_targets(path, source):
            target = f"{module}.{name}" if name else module
            owner = _private_owner(target)
            if owner is not None:
                if not _may_reach(importer, path, owner):
                    wrong.append(f"{where}:{line}: {target} (import it from {owner})")
                continue
            if name is None or name == "*" or not modules.get(module, False):
                continue
            if f"{module}.{name}" in modules:  # a public submodule (a command)
                continue
            if importer is not None and (importer == module or importer.startswith(module + ".")):
                continue  # a package's own modules may read names its __init__ defines
            if module not in exported:
                exported[module] = set(getattr(importlib.import_module(module), "__all__", ()))
            if name not in exported[module]:
                wrong.append(f"{where}:{line}: {module}.{name} is not in its __all__")
    return wrong


def test_no_code_reaches_into_another_packages_private_modules() -> None:
    wrong = _violations({p: p.read_text(encoding="utf-8") for p in _files()})
    assert wrong == [], "\n".join(wrong)


def test_the_check_flips_on_an_import_through_a_private_module() -> None:
    """The check above fails on what it forbids: an example importing a private module or a name
    a package does not export, and a unit test reaching another package's private module (its
    own package's is allowed)."""
    wrong = _violations(
        {
            REPO / "examples" / "probe.py": (
                "from pytest_memeval.run._question import answer_question\n"
                "from pytest_memeval.report import not_exported\n"
            ),
            REPO / "tests" / "unit" / "report" / "test_probe.py": (
                "from pytest_memeval.report._tables import Table\n"
                "from pytest_memeval.run._store import ResultStore\n"
            ),
        }
    )
    assert [w.split(": ", 1)[1] for w in wrong] == [
        "pytest_memeval.run._question.answer_question (import it from pytest_memeval.run)",
        "pytest_memeval.report.not_exported is not in its __all__",
        "pytest_memeval.run._store.ResultStore (import it from pytest_memeval.run)",
    ]


def test_the_docs_show_only_the_way_in() -> None:
    """Code and names in the user-facing docs never name a private module (docs/design.md, the
    map of the tree, names the files themselves)."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "perf" / "README.md"]
    docs += sorted(PACKAGE.rglob("README.md"))
    private = re.compile(r"pytest_memeval(?:\.[A-Za-z0-9]+)*\._[a-z][\w]*")
    found = [
        f"{doc.relative_to(REPO)}: {m.group(0)}"
        for doc in docs
        if doc.name != "design.md"
        for m in private.finditer(doc.read_text(encoding="utf-8"))
    ]
    assert found == [], found
