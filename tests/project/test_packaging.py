"""The declared dependency range: pyproject.toml's floors and the floor constraints agree."""

from __future__ import annotations

import tomllib

from conftest import REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

FLOOR_FILE = REPO / "constraints" / "floor.txt"


def _pyproject() -> dict[str, object]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def _declared() -> list[Requirement]:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for r in project["optional-dependencies"]["dev"]]
    return reqs


def _floor(req: Requirement) -> str | None:
    """The lowest version ``req`` allows: its ``>=`` or ``==`` bound."""
    for spec in req.specifier:
        if spec.operator in (">=", "=="):
            return spec.version
    return None


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in FLOOR_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{FLOOR_FILE.name}: {line!r} is not an exact pin"
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_every_dependency_has_a_floor() -> None:
    missing = [str(r) for r in _declared() if _floor(r) is None]
    assert not missing, f"dependencies without a lower bound in pyproject.toml: {missing}"


def test_floor_constraints_match_pyproject() -> None:
    declared = {canonicalize_name(r.name): _floor(r) for r in _declared()}
    pins = _constraints()
    assert set(pins) == set(declared), (
        f"{FLOOR_FILE.name} and pyproject.toml name different packages: only in the file "
        f"{sorted(set(pins) - set(declared))}, only in pyproject {sorted(set(declared) - set(pins))}"
    )
    differ = {
        n: (declared[n], pins[n]) for n in pins if Version(str(declared[n])) != Version(pins[n])
    }
    assert not differ, f"(pyproject floor, constraints pin) differ: {differ}"


def test_floor_pins_are_allowed_by_pyproject() -> None:
    """A pin must itself satisfy the declared range (e.g. not an excluded pytest 9.1.x)."""
    pins = _constraints()
    for req in _declared():
        assert req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True), req


def test_xdist_and_html_are_ordinary_dependencies() -> None:
    names = {
        canonicalize_name(Requirement(r).name) for r in _pyproject()["project"]["dependencies"]
    }  # type: ignore[index]
    assert {"pytest-xdist", "pytest-html"} <= names


def test_runtime_dependencies_have_no_upper_caps() -> None:
    capped = [
        r
        for r in _pyproject()["project"]["dependencies"]  # type: ignore[index]
        if any(s.operator in ("<", "<=", "~=") for s in Requirement(r).specifier)
    ]
    assert not capped, f"runtime dependencies with an upper cap: {capped}"


def test_lint_tools_are_pinned_exactly() -> None:
    dev = {
        canonicalize_name(Requirement(r).name): Requirement(r)
        for r in _pyproject()["project"]["optional-dependencies"]["dev"]
    }  # type: ignore[index]
    for tool in ("mypy", "ruff"):
        assert [s.operator for s in dev[tool].specifier] == ["=="], dev[tool]
