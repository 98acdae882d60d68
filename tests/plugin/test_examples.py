"""The examples run as documented: the SQLite adapter and the GitHub Actions recipes (valid YAML,
only options the plugin has). mem0 is a ready adapter now: tests/plugin/test_local_adapters.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RUN_MODES, question_scores, read_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.usefixtures("memeval_env")


def run_in_place(
    example: str, tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run ``pytest ARGS`` from ``examples/<example>`` in this checkout, as its README says (the
    repository's pyproject is the rootdir's, the example's conftest one below it); nothing may be
    written into the checkout (cache and report under ``tmp_path``, no bytecode, no
    .pytest_cache). Returns the process and its JSON report."""
    folder = EXAMPLES / example
    before = sorted(folder.rglob("*"))
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *args,
            f"--memeval-cache-dir={tmp_path / 'cache'}",
            f"--memeval-json={out}",
            "-p",
            "no:cacheprovider",
        ],
        cwd=folder,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert sorted(folder.rglob("*")) == before, "the run wrote into the checkout"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, read_json(out)


def _run(run: dict[str, Any]) -> dict[str, Any]:
    return {q["id"]: q for q in run["questions"]}


# --------------------------------------------------------------------------------------------
# examples/custom_adapter


def test_custom_adapter_example_runs_in_place(tmp_path: Path) -> None:
    """The README's command, from the example's folder inside the checkout: the conftest sits
    below the rootdir (the repository's pyproject), where the plugin still finds its fixture. One
    run in each mode (no flag, -n 2), each checked, and the two give the same scores (one test, so
    the two runs serve both checks whatever xdist's scheduling); beside bm25 and the no-memory
    floor, which the adapter beats."""
    scores = []
    for mode in RUN_MODES.values():
        proc, report = run_in_place(
            "custom_adapter",
            tmp_path / str(len(scores)),
            "--memeval=demo",
            "--memsys=sqlite_memory,bm25,no-memory",
            *mode,
        )
        assert f"rootdir: {EXAMPLES.parent}" in proc.stdout
        runs = {r["system"]: r for r in report["runs"]}
        assert set(runs) == {"sqlite_memory", "bm25", "no-memory"}
        sqlite = _run(runs["sqlite_memory"])
        assert len(sqlite) == 15
        assert all(q["status"] in ("CORRECT", "WRONG") for q in sqlite.values())
        # the FTS5 index finds the turn about Pixel the beagle, with its turn id, session and date
        q1 = sqlite["demo-1-q1"]
        beagle = [m for m in q1["memories"] if "beagle" in m["text"]]
        assert beagle, q1["memories"]
        assert beagle[0]["source_ids"][0].startswith("D") and beagle[0]["date"].startswith("2024-")
        # "Jonas's" is not a query for the letter "s": every memory shares a real word with it
        assert all(
            re.search(r"(?i)\b(breed|jonas|dog|pixel)", m["text"]) for m in q1["memories"]
        ), q1["memories"]
        overall = runs["sqlite_memory"]["summary"]["overall"]
        assert overall["evidence_recall"] == 1.0
        assert overall["statuses"]["CORRECT"] >= 3
        # the adapter beats the no-memory floor
        assert overall["f1"] > runs["no-memory"]["summary"]["overall"]["f1"]
        scores.append(question_scores(report))
    # the same scores in every mode, for every system
    assert scores[0] == scores[1]
    assert len(scores[0]) == 45


# --------------------------------------------------------------------------------------------
# examples/handwritten


def test_handwritten_example_runs_in_place(tmp_path: Path, run_mode: list[str]) -> None:
    _, report = run_in_place(
        "handwritten",
        tmp_path,
        "test_agent_flow.py",
        "--memeval=demo",
        "--memsys=keyword_memory",
        *run_mode,
    )
    runs = {(r["system"], r["flow"]) for r in report["runs"]}
    assert runs == {("keyword_memory", ""), ("keyword_memory", "test_two_step_agent")}


# --------------------------------------------------------------------------------------------
# examples/custom_adapter against the contract


def test_custom_adapter_passes_the_contract_in_place(tmp_path: Path) -> None:
    """The SQLite FTS5 example, from its folder, in each mode: every property it offers holds,
    and nothing is written into the checkout."""
    folder = EXAMPLES / "custom_adapter"
    before = sorted(folder.rglob("*"))
    for mode in RUN_MODES.values():
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "pytest", "--memsys=sqlite_memory", "--memeval-contract"),
                *("-rs", "-p", "no:cacheprovider", *mode),
            ],
            cwd=folder,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "7 passed, 2 skipped" in proc.stdout, proc.stdout[-3000:]
        assert "sqlite_memory: holds the contract (7 properties)" in proc.stdout
    assert sorted(folder.rglob("*")) == before, "the run wrote into the checkout"


# --------------------------------------------------------------------------------------------
# examples/github-actions


WORKFLOWS = sorted((EXAMPLES / "github-actions").glob("*.yml"))


@pytest.fixture(scope="module")
def plugin_options() -> set[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tempfile.gettempdir(),
    )
    assert result.returncode == 0, result.stderr
    options = set(re.findall(r"--memeval[\w-]*|--memsys\b", result.stdout))
    assert "--memeval-baseline" in options  # sanity: the plugin's help was read
    return options


def _run_lines(workflow: dict[str, Any]) -> list[str]:
    return [
        str(step["run"])
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if "run" in step
    ]


def test_workflows_exist() -> None:
    assert {p.name for p in WORKFLOWS} == {
        "memeval.yml",
        "memeval-nightly.yml",
        "memeval-sharded.yml",
    }


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflow_is_valid(path: Path, plugin_options: set[str]) -> None:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True
    triggers = workflow.get("on", workflow.get(True))
    assert triggers, "no 'on' triggers"
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert job.get("runs-on"), name
        assert job["steps"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
    used = set(re.findall(r"--memeval[\w-]*|--memsys\b", path.read_text(encoding="utf-8")))
    assert used, "the workflow runs no memeval command"
    unknown = used - plugin_options
    assert not unknown, f"options not in `pytest --help`: {sorted(unknown)}"


def test_pr_gate_recipe() -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions" / "memeval.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))
    assert "pull_request" in triggers and "push" in triggers
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    uses = [str(s.get("uses", "")) for s in steps]
    assert any(u.startswith("actions/cache@") for u in uses)  # the LLM cache between runs
    assert any(u.startswith("actions/upload-artifact@") for u in uses)  # report + baseline
    text = "\n".join(_run_lines(workflow))
    for needed in (
        "--memeval-baseline",
        "--memeval-max-drop=f1:2",
        "--memeval-markdown",  # also appended to $GITHUB_STEP_SUMMARY by the plugin
        "--memeval-html",
        "--memeval-fail-under",
        "--memeval-save-baseline",
    ):
        assert needed in text, needed


def test_nightly_recipe() -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions" / "memeval-nightly.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))
    assert "schedule" in triggers and triggers["schedule"][0]["cron"]
    text = "\n".join(_run_lines(workflow))
    assert "--memeval-limit" not in text  # the full run
    assert "--memeval-html" in text
