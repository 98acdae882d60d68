"""Results store and --memeval-resume: nothing computed is lost, nothing is computed twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import INNER_ADDOPTS, read_json
from fakes import COUNTING_CONFTEST

pytestmark = pytest.mark.usefixtures("memeval_env")

COUNTING = COUNTING_CONFTEST


def _answered(path: Path) -> list[str]:
    log = path / "answered.log"
    return log.read_text().split() if log.exists() else []


def test_results_stored_as_they_arrive(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(COUNTING)
    cache = pytester.path / "cache"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=counting", f"--memeval-cache-dir={cache}"
    )
    assert result.ret == 0
    (run,) = list((cache / "runs").iterdir())
    lines = (run / "results.jsonl").read_text().splitlines()
    assert len(lines) == 15
    assert (run / "config.json").is_file()


def test_resume_after_sigkill(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    pytester.makeconftest(COUNTING)
    cache = pytester.path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["MEMEVAL_SLOW"] = "0.25"
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--memeval=demo",
        "--memsys=counting",
        f"--memeval-cache-dir={cache}",
        "-p",
        "no:cacheprovider",
        *run_mode,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=pytester.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and len(_answered(pytester.path)) < 5:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the controller and every worker
    proc.wait()
    first = set(_answered(pytester.path))
    assert 0 < len(first) < 15
    (run,) = list((cache / "runs").iterdir())
    stored = [ln for ln in (run / "results.jsonl").read_text().splitlines() if ln.strip()]
    out = pytester.path / "r.json"
    env.pop("MEMEVAL_SLOW")
    done = subprocess.run(
        [*cmd, "--memeval-resume", f"--memeval-json={out}"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = read_json(out)
    ids = [q["id"] for q in report["runs"][0]["questions"]]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 15  # every question exactly once
    answered_after = _answered(pytester.path)[len(first) :]
    stored_ids = {json.loads(line)["id"] for line in stored}
    # exactly the questions that were not stored are answered again, each once
    assert sorted(answered_after) == sorted(set(ids) - stored_ids)
    assert report["provenance"]["resumed"] is True


def test_resume_unknown_run_is_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-resume=../../etc",
        f"--memeval-cache-dir={pytester.path / 'c'}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-resume=*not a run id*"])
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-resume",
        f"--memeval-cache-dir={pytester.path / 'c'}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no earlier run*"])
