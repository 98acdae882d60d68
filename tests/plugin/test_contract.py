"""``pytest --memsys=X --memeval-contract``: the MemorySystem contract as items, one per property,
for every kind of system the plugin resolves, without xdist and with ``-n 2``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import contract_systems
import pytest
from conftest import INNER_ADDOPTS
from test_services import WHOLE, _mcp_spec, _reference_server

pytestmark = pytest.mark.usefixtures("memeval_env")

PROPERTIES = contract_systems.PROPERTIES
SYSTEMS_SOURCE = Path(contract_systems.__file__).read_text(encoding="utf-8")


def outcomes(xml: Path) -> dict[str, tuple[str, str]]:
    """``<system>::<property>`` -> (outcome, message) of every contract item, from the run's
    JUnit XML (the messages whole, skips by item)."""
    found = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        system = case.get("classname", "").removeprefix("memeval-contract.")
        outcome, message = "PASSED", ""
        for tag, name in (("failure", "FAILED"), ("error", "ERROR"), ("skipped", "SKIPPED")):
            element = case.find(tag)
            if element is not None:
                outcome, message = name, element.get("message", "").removeprefix("Failed: ")
        found[f"{system}::{case.get('name')}"] = (outcome, message)
    return found


def _contract(
    pytester: pytest.Pytester, *args: str, subprocess: bool = False
) -> tuple[pytest.RunResult, dict[str, tuple[str, str]]]:
    xml = pytester.path / "contract.xml"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--memeval-contract", f"--junitxml={xml}", *args)
    return result, outcomes(xml)


def _with_systems(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(contract_systems=SYSTEMS_SOURCE)
    pytester.makeconftest(contract_systems.CONFTEST)


def _messages(result: pytest.RunResult) -> str:
    return result.stdout.str()


def test_contract_names_the_broken_property(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    """A class-level store fails naming isolation, shuffled results fail naming determinism, a
    sound system passes every property; each failure is one line, no traceback."""
    _with_systems(pytester)
    result, found = _contract(pytester, "--memsys=sound,shared,shuffled", *run_mode)
    assert result.ret == 1, _messages(result)
    assert len(found) == 3 * len(PROPERTIES), _messages(result)
    assert {found[f"sound::{p}"][0] for p in PROPERTIES} == {"PASSED"}
    outcome, message = found["shared::isolation"]
    assert outcome == "FAILED"
    assert message.startswith("shared: isolation: searching conversation contract-b for 'zeph")
    outcome, message = found["shuffled::determinism"]
    assert outcome == "FAILED"
    assert message.startswith("shuffled: determinism: two ingests of conversation demo-1")
    text = _messages(result)
    assert "Traceback" not in text and "During handling" not in text
    # the summary: one line per system (in any order with -n 2)
    for line in (
        "sound: holds the contract (9 properties); scale: ingest * s, +* MiB",
        "shared: breaks *isolation* (* of 9 hold)*",
        "shuffled: breaks *determinism* (* of 9 hold)*",
    ):
        result.stdout.fnmatch_lines(["*= memeval contract =*", line])
    # the failure section is the one sentence
    result.stdout.fnmatch_lines(
        ["*_ contract of shared: isolation _*", "shared: isolation: searching conversation *"]
    )


def test_builtins_pass_the_contract(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    systems = ["bm25", "full-context", "no-memory", "oracle"]
    result, found = _contract(pytester, f"--memsys={','.join(systems)}", "-rs", *run_mode)
    assert result.ret == 0, _messages(result)
    assert len(found) == len(systems) * len(PROPERTIES)
    skipped = {k: v for k, v in found.items() if v[0] != "PASSED"}
    # oracle stores nothing it could list
    assert skipped == {
        "oracle::dump": ("SKIPPED", "dump: the system offers no dump(conversation_id)")
    }, skipped
    result.stdout.fnmatch_lines(["*dump: the system offers no dump(conversation_id)"])
    result.stdout.fnmatch_lines(
        [
            "*= memeval contract =*",
            "oracle: holds the contract (8 properties); not applicable: dump; scale: ingest * s, +* MiB",
        ]
    )


#: ~80 s here (the scale item encodes 500 turns on one torch thread): CI's `-m slow` step runs it
@pytest.mark.slow
def test_embedding_passes_the_contract(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("the embedding extra is not installed")
    # in a subprocess on one thread: torch in pytester's in-process runs crashed a later `-n 2`
    # run in the same worker (tests/unit/test_embedding.py)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result, found = _contract(pytester, "--memsys=embedding", subprocess=True)
    assert result.ret == 0, _messages(result)
    assert len(found) == len(PROPERTIES)


def test_import_paths_and_entry_points_are_checked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run_mode: list[str]
) -> None:
    site = pytester.path / "site"
    site.mkdir()
    (site / "contract_systems.py").write_text(SYSTEMS_SOURCE, encoding="utf-8")
    dist = site / "contractsys-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: contractsys\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[pytest_memeval.systems]\nep-shared = contract_systems:SharedList\n"
    )
    # installed, as far as entry points go (a process of its own: its -n 2 workers see it too)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))
    result, found = _contract(
        pytester, "--memsys=contract_systems:Sound,ep-shared", *run_mode, subprocess=True
    )
    assert result.ret == 1, _messages(result)
    sound = {p: v for p, v in found.items() if p.startswith("contract_systems:Sound::")}
    assert len(sound) == len(PROPERTIES) and {v[0] for v in sound.values()} == {"PASSED"}, found
    outcome, message = found["ep-shared::isolation"]
    assert (outcome, message.split(":")[:2]) == ("FAILED", ["ep-shared", " isolation"])


@pytest.mark.parametrize("run_mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_http_and_mcp_services_are_checked(tmp_path: Path, run_mode: list[str]) -> None:
    """The reference HTTP service and the MCP server, both around bm25, hold the contract (what
    a service's process allocates is its own: the scale item measures this process only)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    with _reference_server() as url:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                f"--memsys=http:{url}#name=remote,{_mcp_spec(WHOLE, 'viamcp')}",
                "--memeval-contract",
                f"--junitxml={tmp_path / 'contract.xml'}",
                *run_mode,
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    found = outcomes(tmp_path / "contract.xml")
    assert len(found) == 2 * len(PROPERTIES), proc.stdout[-4000:]
    passed = {k for k, v in found.items() if v[0] == "PASSED"}
    for name in ("remote", "viamcp"):
        for prop in ("isolation", "determinism", "top-k", "plain-values", "unicode", "scale"):
            assert f"{name}::{prop}" in passed, found


def test_contract_usage_errors(pytester: pytest.Pytester) -> None:
    alone = pytester.runpytest("--memeval-contract")
    alone.stderr.fnmatch_lines(
        ["*--memeval-contract needs the system to check: add --memsys=NAME*"]
    )
    both = pytester.runpytest("--memeval=demo", "--memsys=bm25", "--memeval-contract")
    both.stderr.fnmatch_lines(
        ["*--memeval-contract checks the memory system alone: drop --memeval=demo*"]
    )
    typo = pytester.runpytest("--memsys=bm52", "--memeval-contract")
    typo.stderr.fnmatch_lines(["*unknown memory system 'bm52'; did you mean 'bm25'?*"])
    memory = pytester.runpytest(
        "--memsys=bm25", "--memeval-contract", "--memeval-contract-memory=0"
    )
    memory.stderr.fnmatch_lines(["*--memeval-contract-memory='0': must be >= 1*"])
    for result in (alone, both, typo, memory):
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "Traceback" not in result.stderr.str()


def test_the_memory_budget_option_reaches_the_scale_item(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    _with_systems(pytester)
    result, found = _contract(
        pytester, "--memsys=hungry", "--memeval-contract-memory=20", "-k", "scale", *run_mode
    )
    assert result.ret == 1, _messages(result)
    assert list(found) == ["hungry::scale"]
    outcome, message = found["hungry::scale"]
    assert outcome == "FAILED" and "over the 20 MiB budget (--memeval-contract-memory)" in message


def test_test_files_are_not_collected_without_paths(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_other="def test_x():\n    assert False\n")
    result = pytester.runpytest("--memsys=bm25", "--memeval-contract")
    assert result.ret == 0, _messages(result)
    result.assert_outcomes(passed=len(PROPERTIES))


def test_the_timeout_reaches_the_scale_item(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    _with_systems(pytester)
    result, found = _contract(
        pytester, "--memsys=slow", "--memeval-timeout=1", "-k", "scale", *run_mode
    )
    assert result.ret == 1, _messages(result)
    assert found == {
        "slow::scale": (
            "FAILED",
            "slow: scale: ingesting a LongMemEval-S-sized conversation (50 sessions, 500 turns, "
            "~115k tokens) did not finish within 1 s (--memeval-timeout)",
        )
    }
