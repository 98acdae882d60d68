"""Smoke test of ``perf/run.py --quick``: it runs, prints the table, saves its numbers, exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "perf" / "run.py"
HEADER = ("what", "ours", "reference", "ratio", "target", "ok?")


def _row(lines: list[str], startswith: str) -> list[str]:
    hits = [ln for ln in lines if ln.startswith(startswith)]
    assert len(hits) == 1, (startswith, lines)
    return [c.strip() for c in hits[0].split(" | ")]


@pytest.mark.slow
def test_run_quick_prints_the_table(data_dir: Path, tmp_path: Path) -> None:
    """perf/run.py needs locomo/locomo10.json (the ``data_dir`` fixture)."""
    out_json = tmp_path / "perf.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["MEMEVAL_DATA_DIR"] = str(data_dir)
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--json", str(out_json)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard, not a budget: --quick takes ~1-3 min with the load
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pytest-memeval performance (quick;")
    assert tuple(c.strip() for c in lines[1].split("|")) == HEADER

    # F1: identical scores; speed-up is a positive number
    f1 = _row(lines, "LoCoMo F1, 1986 q x 2 pairs")
    assert float(f1[3]) > 1.0
    mism = _row(lines, "LoCoMo F1 mismatches vs plain")
    assert mism[1:3] == ["0", "3972"] and mism[5] == "yes"

    # harness: both runs measured, ratio consistent with the two wall times
    harness = _row(lines, "LoCoMo run, instant system, 100 q")
    ours, ref = float(harness[1].split()[0]), float(harness[2].split()[0])
    assert ours > 0 and ref > 0
    assert float(harness[3]) == pytest.approx(ours / ref, rel=0.01)
    assert harness[4] == "<= 1.5x" and harness[5] in ("yes", "NO")

    # idle: the installed plugin vs -p no:memeval on trivial tests, side by side
    idle = _row(lines, "plugin idle: 20 trivial tests, plugin vs -p no:memeval")
    i_ours, i_ref = float(idle[1].split()[0]), float(idle[2].split()[0])
    assert i_ours > 0 and i_ref > 0
    assert float(idle[3]) == pytest.approx(i_ours / i_ref, rel=0.01)
    assert idle[4] == "<= 1.1x" and idle[5] in ("yes", "NO")
    assert float(_row(lines, "  `import pytest_memeval.plugin` after pytest")[1].split()[0]) > 0

    # xdist: every conversation ingested exactly once per mode, identical scores
    for mode in ("2", "0"):
        ingests = _row(lines, f"  ingests at -n {mode}")
        assert ingests[1] == "10" and ingests[5] == "yes"
    assert _row(lines, "  per-question scores and predictions identical")[5] == "yes"

    # judge: the warm rerun makes no request
    assert _row(lines, "  warm rerun: HTTP requests")[1:3] == ["0", "0"]

    # warm judge rerun of a LoCoMo run (20 q): zero requests; the cold run made one per question
    warm = _row(lines, "warm judge rerun, 20 q (--memeval-limit=2)")
    w_ours, w_ref = float(warm[1].split()[0]), float(warm[2].split()[0])
    assert w_ours > 0 and w_ref > 0
    assert float(warm[3]) == pytest.approx(w_ours / w_ref, rel=0.01)
    assert warm[4] == "<= 1.2x" and warm[5] in ("yes", "NO")
    requests = _row(lines, "  warm reruns: HTTP requests to the loopback server")
    assert requests[1:3] == ["0", "0"] and requests[5] == "yes"
    assert _row(lines, "  cold run (fills the cache): HTTP requests")[1:3] == ["20", "20"]
    assert "(longmemeval skipped in --quick mode)" in proc.stdout
    assert "ERROR" not in proc.stdout

    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["mode"] == "quick" and not data["errors"]
    assert set(data["seconds"]) == {
        "f1",
        "harness",
        "idle",
        "xdist",
        "judge",
        "warmjudge",
        "pipeline",
        "window",
        "board",
    }
    assert len(data["raw"]["idle"]["walls"]["with"]) == 3
    # the board: built from reports over LoCoMo's questions (verified: one ranked re-scored row
    # per system, none shown apart), index page far below its 2 MB bound
    board = _row(lines, "memeval-board, 6 runs x 300 q")
    assert board[4] == "< 30 s" and board[5] in ("yes", "NO")
    assert _row(lines, "  index page size")[5] == "yes"
    assert data["raw"]["board"]["pages"] > 6 and 0 < data["raw"]["board"]["index_bytes"] < 2e6
    assert (data["raw"]["board"]["ranked_rows"], data["raw"]["board"]["apart_rows"]) == (5, 0)
    assert _row(lines, "  ranked rows (re-scored, one per system)")[5] == "yes"
    # the plugin's own LLM path: identical rows to concurrency 1, no request when warm
    pipeline = data["raw"]["pipeline"]
    assert pipeline["questions"] == 20 and set(pipeline["modes"]) == {"0"}
    mode = pipeline["modes"]["0"]
    assert mode["identical"] is True and mode["warm_requests"] == 0 and mode["calls"] > 20
    # the window over one question per conversation and ten per conversation: window 1's rows
    window = data["raw"]["window"]
    assert len(window) == 2 and all(w["identical"] and w["calls"] > 0 for w in window.values())
    assert data["raw"]["f1"]["identical"] is True
    assert data["raw"]["harness"]["questions"] == 100
    assert data["raw"]["harness"]["statuses"]["CORRECT"] > 0
    assert data["raw"]["harness"]["statuses"]["WRONG"] > 0
    assert data["raw"]["xdist"]["ingests"] == {
        "2": {"instant_system:slow": 10},
        "0": {"instant_system:slow": 10},
    }
    assert data["raw"]["judge"]["cases"][0]["warm_requests"] == 0
    warmjudge = data["raw"]["warmjudge"]
    assert warmjudge["questions"] == 20 and warmjudge["cold_requests"] == 20
    assert warmjudge["warm_requests"] == 0 and warmjudge["warm_cache_hits"] == [20]
    assert warmjudge["warm_extra"]["llm_cache"] == {"hits": 20, "misses": 0, "writes": 0}


def test_only_rejects_unknown_section(data_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(RUN), "--only", "f1,nope"],
        env={**os.environ, "MEMEVAL_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown section ['nope']" in proc.stderr


def test_pyspy_phases_charges_stacks_to_the_outermost_hook() -> None:
    """The py-spy breakdown (``perf/run.py --py-spy``) on a hand-written raw profile."""
    sys.path.insert(0, str(REPO / "perf"))
    try:
        from run import pyspy_phases  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(REPO / "perf"))
    raw = "\n".join(
        [
            "<module> (pytest/__main__.py:9);main (_pytest/config/__init__.py:193) 50",
            "main (x.py:1);wrap_session (_pytest/main.py:283);pytest_configure (pytest_memeval/plugin.py:99) 10",
            "main (x.py:1);wrap_session (_pytest/main.py:283);pytest_runtestloop (_pytest/main.py:360);"
            "MemevalItem.setup (pytest_memeval/collect.py:220);score (pytest_memeval/collect.py:180) 20",
            "main (x.py:1);wrap_session (_pytest/main.py:283);pytest_runtestloop (_pytest/main.py:361) 30",
            "main (x.py:1);wrap_session (_pytest/main.py:283);"
            "Controller.pytest_sessionfinish (pytest_memeval/controller.py:300);"
            "pytest_collection (pytest_memeval/fake.py:1) 5",
            "main (x.py:1);wrap_session (_pytest/main.py:290);collect (gc:0) 15",
            "garbage line",
        ]
    )
    result = pyspy_phases(raw, rate=100)
    assert result["total"] == pytest.approx(1.3)
    phases = result["phases"]
    assert phases["start-up (imports, plugins, options)"] == pytest.approx(0.5)
    assert phases["configure (plugins' pytest_configure)"] == pytest.approx(0.1)
    assert phases["test loop (setup, call, teardown, reports)"] == pytest.approx(0.5)
    # the outermost hook wins: a collection-named frame inside session finish is session finish
    assert phases["session finish (summary, reports, gates)"] == pytest.approx(0.05)
    assert phases["other in session (gc, exit)"] == pytest.approx(0.15)
    assert result["memeval"]["test loop (setup, call, teardown, reports)"] == pytest.approx(0.2)
    top = dict(result["top"])
    # inclusive, once per stack, methods keep their class, line numbers dropped
    assert top["MemevalItem.setup (pytest_memeval/collect.py)"] == pytest.approx(0.2)
    assert top["score (pytest_memeval/collect.py)"] == pytest.approx(0.2)
    assert top["Controller.pytest_sessionfinish (pytest_memeval/controller.py)"] == pytest.approx(
        0.05
    )


CPUPROF_TESTS = """
import subprocess
import sys


def test_busy():
    sum(i * i for i in range(3_000_000))


def test_child():  # the CPU of a child process the test waited for is the test's
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)


def test_idle():
    pass
"""


def test_cpuprof_charges_each_test_its_cpu_and_its_childrens(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """perf/cpuprof.py, the plugin docs/ci.md's figures were measured with: one row per test,
    a child process's CPU charged to the test that waited for it, and the summary command."""
    path = [str(REPO / "perf"), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    monkeypatch.setenv("CPUPROF_OUT", str(pytester.path / "prof"))
    pytester.makepyfile(test_cpu=CPUPROF_TESTS)
    result = pytester.runpytest_subprocess("-p", "cpuprof", "-p", "no:xdist")
    assert result.ret == 0, result.stdout.str()
    rows = {
        r[0].split("::")[1]: r[1:]
        for r in json.loads((pytester.path / "prof.main.json").read_text())
    }
    assert sorted(rows) == ["test_busy", "test_child", "test_idle"]
    assert rows["test_busy"][0] > 0.05 and rows["test_child"][0] > 0.05
    assert rows["test_idle"][0] < min(rows["test_busy"][0], rows["test_child"][0])
    summary = subprocess.run(
        [sys.executable, str(REPO / "perf" / "cpuprof.py"), str(pytester.path / "prof")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "all: 3 tests" in summary and "test_cpu.py::test_busy" in summary
