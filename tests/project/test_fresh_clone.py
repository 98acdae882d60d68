"""The README's test command in a fresh clone: ``MEMEVAL_DATA_DIR=../shared/data`` names a folder
that is not there. The tests that read real benchmark files skip, naming the variable and the
missing path, and no other test fails because of the variable (every test runs with it removed:
an inner ``--memeval=demo`` run that inherited it stopped with a usage error)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import INNER_ADDOPTS, REAL_DATA_MARK, REPO

#: a test of tests/plugin that starts ``--memeval=demo`` inner runs without the ``memeval_env``
#: fixture (before the autouse removal of MEMEVAL_DATA_DIR it failed in a fresh clone)
INNER_RUN_TEST = "tests/plugin/test_plugin_nodeids.py::test_collect_only_counts_every_item[plain]"


def _pytest_without_data(missing: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` from the repository root, as the README runs it but with
    MEMEVAL_DATA_DIR pointing at ``missing`` (a folder that does not exist), the slow tests
    opted in (so that their data needs are checked too), no xdist."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env["MEMEVAL_DATA_DIR"] = str(missing)
    env["MEMEVAL_SLOW"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outcomes(stdout: str) -> dict[str, int]:
    """pytest's closing line as ``{"skipped": 3, "deselected": 1700, ...}``."""
    last = stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_real_data_tests_skip_naming_the_variable_and_the_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "shared" / "data"
    proc = _pytest_without_data(missing, "-m", f"{REAL_DATA_MARK} and not realmodel", "-rs", "-q")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    counts = _outcomes(proc.stdout)
    # every test that reads the real files (about thirty today) skips; none fails or errors
    assert counts.get("skipped", 0) >= 20, out[-4000:]
    assert set(counts) <= {"skipped", "deselected"}, out[-4000:]
    reasons = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert reasons, out[-4000:]
    for line in reasons:
        assert f"MEMEVAL_DATA_DIR={missing}: {missing}" in line, line
        assert "is missing" in line, line


def test_inner_runs_do_not_inherit_a_missing_data_dir(tmp_path: Path) -> None:
    proc = _pytest_without_data(tmp_path / "shared" / "data", INNER_RUN_TEST, "-q")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert _outcomes(proc.stdout) == {"passed": 1}, proc.stdout[-2000:]
