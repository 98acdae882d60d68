"""The declared dependency range: pyproject.toml's floors and the floor constraints agree; the
built wheel installs into a project of one's own and runs there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import INNER_ADDOPTS, REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from test_readme import _block as _readme_block

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


# ---- installing into one's own project --------------------------------------------------------


def _package_files(root: Path) -> set[str]:
    """The files of the package ``root`` (``.../pytest_memeval``) but bytecode, relative to it."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


#: the wheel alone: its dependencies are already there, nothing is downloaded, and the editable
#: install of the checkout that pip sees through the ``.pth`` file is left alone
NO_NETWORK = ("--no-deps", "--no-index", "--ignore-installed")


def _site_dirs() -> list[str]:
    """This interpreter's site-packages folders: where the dependencies are installed."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]


def test_built_wheel_installs_into_a_fresh_project(tmp_path: Path) -> None:
    """The README's wheel route, as a user takes it: build the wheel from a copy of the source,
    install it into a new virtual environment outside the repository, and run the README's
    memory-system example from a project of its own (``tests/conftest.py`` under
    ``testpaths = ["tests"]``) on the shipped demo. Every data file of the package must be in the
    wheel: an editable install reads them from the checkout and would hide a missing one.

    The environment is made without pip and gets the dependencies from this interpreter's
    site-packages through a ``.pth`` file (``--system-site-packages`` would give the base
    Python's, which in CI's virtual environment has none of them). A ``.pth`` folder's own ``.pth``
    files are not processed, so the editable install of the checkout there is not seen: the test
    checks that the plugin pytest loads is the one in the new environment."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "pytest_memeval",
        source / "pytest_memeval",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env.pop("PYTHONPATH", None)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--quiet"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("pytest_memeval-*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "_memeval_test_dependencies.pth").write_text(
        "\n".join(_site_dirs()) + "\n", encoding="utf-8"
    )
    installed = subprocess.run(
        [*pip, "--python", str(python), "install", *NO_NETWORK, str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    package = site / "pytest_memeval"
    assert _package_files(REPO / "pytest_memeval") <= _package_files(package)
    assert (venv / "bin" / "memeval-board").is_file()

    project = tmp_path / "myproject"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text(
        _readme_block("example: conftest.py", "python")
        + "\n\ndef pytest_report_header() -> str:\n"
        + "    import pytest_memeval.plugin\n\n"
        + '    return f"memeval plugin: {pytest_memeval.plugin.__file__}"\n',
        encoding="utf-8",
    )
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', encoding="utf-8"
    )
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    # the HTML report and the board: their templates, CSS and JS are package files of the wheel
    report, board_dir = tmp_path / "report.html", tmp_path / "board"
    run = [
        "--memsys=keyword",
        f"--memeval-cache-dir={tmp_path / 'cache'}",
        f"--memeval-html={report}",
        f"--memeval-board={board_dir}",
    ]
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--memeval=demo", *run],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert f"memeval plugin: {package / 'plugin' / '__init__.py'}" in proc.stdout, out[-4000:]
    assert str(REPO) not in proc.stdout
    board = proc.stdout.split("scoreboard", 1)[1].split("\n\n", 1)[0]
    (row,) = [line.split() for line in board.splitlines() if line.startswith("demo ")]
    # the demo's questions, all of them scored: the data file shipped in the wheel was read
    demo = json.loads((REPO / "pytest_memeval" / "benchmarks" / "data" / "demo.json").read_text())
    assert row[:3] == ["demo", "keyword", "f1"] and 0.0 < float(row[3]) <= 1.0, board
    # n reads "<covered> of <all>": the overall leaves the demo's category outside it out
    assert row[7] == "of" and int(row[8]) == sum(len(c["qa"]) for c in demo), board
    assert 0 < int(row[6]) < int(row[8]) and row[9:11] == ["0", "0"], board
    assert "memeval/demo/demo-1/keyword" in proc.stdout
    page = report.read_text(encoding="utf-8")
    assert "<title>pytest-memeval report</title>" in page and 'id="memeval-data"' in page
    assert "--accent:#2f6db5" in page and "data-memeval-ready" in page  # report.css, report.js
    index = (board_dir / "index.html").read_text(encoding="utf-8")
    assert "<title>memeval board</title>" in index and "data-board-ready" in index
