"""Conftest memory systems wherever users put them (issue 22.1), unknown names fail once, fast
(issue 22.2): real folder layouts, run as a user would, without xdist and with ``-n 2``."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

#: a memory system whose answers name the conftest it came from (the memories say ``where``)
SYSTEM = """
import pytest
from pytest_memeval import Memory

class Where:
    def __init__(self, where):
        self.where = where
    def ingest(self, conversation):
        self.turns = [t for s in conversation.sessions_by_date() for t in s.turns]
    def search(self, question, k):
        return [Memory(text=self.where + ": " + t.text, id=t.id) for t in self.turns[:k]]
"""

FIXTURE = (
    SYSTEM
    + """
@pytest.fixture(scope="session")
def mymem():
    return Where({where!r})
"""
)

PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
RUN = ("--memeval=demo", "--memsys=mymem", "--memeval-limit=2", "-p", "no:cacheprovider")


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _where(pytester: pytest.Pytester, out: Path) -> set[str]:
    """The conftests the run's memories came from (every question answered, none errored)."""
    run = read_json(out)["runs"][0]
    assert run["system"] == "mymem"
    assert len(run["questions"]) == 4
    assert all(q["status"] != "ERROR" for q in run["questions"]), run["questions"]
    return {m["text"].split(":")[0] for q in run["questions"] for m in q["memories"]}


@pytest.mark.parametrize("args", [[], ["tests"]], ids=["testpaths", "tests-on-command-line"])
def test_tests_conftest_with_testpaths(
    pytester: pytest.Pytester, run_mode: list[str], args: list[str]
) -> None:
    """The most common layout: pyproject at the root, the fixture in tests/conftest.py."""
    _write(
        pytester.path,
        {"pyproject.toml": PYPROJECT, "tests/conftest.py": FIXTURE.format(where="tests")},
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest(*args, *RUN, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    assert _where(pytester, out) == {"tests"}


def test_rootdir_conftest(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    _write(
        pytester.path, {"pyproject.toml": PYPROJECT, "conftest.py": FIXTURE.format(where="root")}
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest(*RUN, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    assert _where(pytester, out) == {"root"}


@pytest.mark.parametrize("root_too", [False, True], ids=["alone", "rootdir-too"])
def test_start_folder_conftest(
    pytester: pytest.Pytester,
    run_mode: list[str],
    monkeypatch: pytest.MonkeyPatch,
    root_too: bool,
) -> None:
    """pytest started from a subfolder of the rootdir that holds the conftest (the README's
    ``cd examples/custom_adapter`` in a checkout). Defined at the rootdir too: the rootdir's is
    what pytest shows every item, on every pytest, and a warning says so."""
    files = {"pyproject.toml": PYPROJECT, "bench/mine/conftest.py": FIXTURE.format(where="mine")}
    if root_too:
        files["conftest.py"] = FIXTURE.format(where="root")
    _write(pytester.path, files)
    monkeypatch.chdir(pytester.path / "bench" / "mine")
    out = pytester.path / "r.json"
    result = pytester.runpytest(*RUN, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    assert _where(pytester, out) == ({"root"} if root_too else {"mine"})
    warning = "*ConftestSystemWarning: --memsys=mymem: 2 conftests define 'mymem'; using *"
    if root_too:
        result.stdout.fnmatch_lines([warning])
    else:
        assert "ConftestSystemWarning" not in result.stdout.str()


def test_two_conftests_below_the_rootdir_nearest_wins(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """tests/conftest.py (a testpaths folder) and a folder given on the command line both define
    the system: the command-line folder's wins, with a warning."""
    _write(
        pytester.path,
        {
            "pyproject.toml": PYPROJECT,
            "tests/conftest.py": FIXTURE.format(where="tests"),
            "tests/evals/conftest.py": FIXTURE.format(where="evals"),
        },
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest("tests/evals", *RUN, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    assert _where(pytester, out) == {"evals"}
    result.stdout.fnmatch_lines(["*2 conftests define 'mymem'; using *evals*conftest.py (nearest*"])


def test_command_line_folder_conftest(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    """A folder given on the command line; its fixture asks for another fixture of the same
    conftest and for one of pytest's own."""
    conftest = SYSTEM + (
        "\n@pytest.fixture\ndef label(tmp_path):\n    return 'cli-' + str(tmp_path.exists())\n"
        "\n@pytest.fixture(name='mymem')\ndef mymem_fixture(label):\n    return Where(label)\n"
    )
    _write(pytester.path, {"pyproject.toml": PYPROJECT, "evals/conftest.py": conftest})
    out = pytester.path / "r.json"
    result = pytester.runpytest("evals", *RUN, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    assert _where(pytester, out) == {"cli-True"}


def test_unknown_name_is_usage_error_before_collection(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    _write(
        pytester.path,
        {"pyproject.toml": PYPROJECT, "tests/conftest.py": FIXTURE.format(where="tests")},
    )
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25s", *run_mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --memsys: unknown memory system 'bm25s'; did you mean 'bm25'? Available: *"]
    )
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25,mymen", *run_mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown memory system 'mymen'; did you mean 'mymem'?*the rootdir's, the folder*"]
    )
    assert "collected" not in result.stdout.str()


def test_missing_fixture_fails_once_others_not_run(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """A name only the first question can decide (a plugin attribute that is not a fixture):
    that question errors with one line and "did you mean", the system's others are not run (one
    summary line, counted as errors in the tables), the other systems run."""
    _write(
        pytester.path,
        {
            "pyproject.toml": PYPROJECT,
            "conftest.py": "pytest_plugins = ['helpers']\n",
            "helpers.py": SYSTEM + "\nghost = None\n\n@pytest.fixture\ndef ghosts():\n"
            "    return Where('helpers')\n",
        },
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25,ghost", f"--memeval-json={out}", "-rs", *run_mode
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    outcomes = result.parseoutcomes()
    workers = 2 if "-n" in run_mode and run_mode[-1] == "2" else 1
    assert 1 <= outcomes["errors"] <= workers
    assert outcomes["errors"] + outcomes["skipped"] == 15
    assert outcomes.get("wrong", 0) + outcomes.get("correct", 0) == 15
    result.stdout.fnmatch_lines(
        [
            "SystemNotFound: --memsys: unknown memory system 'ghost'; did you mean 'ghosts'?*",
            "SKIPPED [[]*[]] *not run: memory system 'ghost' was not found*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    runs = {r["system"]: r for r in read_json(out)["runs"]}
    assert [q["status"] for q in runs["ghost"]["questions"]] == ["ERROR"] * 15
    assert all(q["status"] != "ERROR" for q in runs["bm25"]["questions"])
