"""Issue 22 point 7: a pytest run that does not use the plugin (no --memeval, no memeval_case test)
loads only the plugin's option registration and configure; the suite's own conftest imports
nothing heavy at import. What is loaded is checked (deterministic); the time is perf/run.py's
``idle`` row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: loaded only when a run uses the plugin: the run-time glue, the judges and LLM clients, the
#: scorers and their libraries
HEAVY = (
    "pytest_memeval.plugin._items",
    "pytest_memeval.plugin._controller",
    "pytest_memeval.run._question",
    "pytest_memeval.run._ingest",
    "pytest_memeval.run._retrieval",
    "pytest_memeval.run._verdict",
    "pytest_memeval.judges",
    "pytest_memeval.llm",
    "pytest_memeval.metrics",
    "pytest_memeval.report._terminal",
    "pytest_memeval.protocols",
    "numpy",
    "openai",
    "anthropic",
    "scipy",
)

PROBE = """
import json, os, sys

def pytest_sessionfinish(session):
    name = "modules-%d.json" % os.getpid()
    with open(os.path.join(os.environ["IDLE_OUT"], name), "w") as f:
        json.dump(sorted(sys.modules), f)
"""


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_a_run_without_memeval_loads_only_the_light_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    out = pytester.mkdir("out")
    monkeypatch.setenv("IDLE_OUT", str(out))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:benchmark")
    pytester.makeconftest(PROBE)
    pytester.makepyfile("def test_one():\n    assert True\n\ndef test_two():\n    assert 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *mode)
    result.assert_outcomes(passed=2)
    files = sorted(out.glob("modules-*.json"))
    assert len(files) == (3 if mode else 1)  # the controller and two xdist workers
    for file in files:
        loaded = set(json.loads(file.read_text(encoding="utf-8")))
        assert "pytest_memeval.plugin" in loaded  # the plugin is installed and registered
        assert "pytest_memeval.plugin._options" in loaded
        heavy = sorted(m for m in HEAVY if m in loaded)
        assert heavy == [], f"{file.name}: an idle run imported {heavy}"


def test_the_suites_conftest_imports_nothing_heavy() -> None:
    """tests/conftest.py is loaded by every pytest run from the repository root (the demo
    command included): the SDKs and scorers load in a session fixture, not at import."""
    code = (
        "import json, sys; sys.path.insert(0, 'tests'); import conftest; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "conftest" in loaded
    heavy = sorted(m for m in HEAVY if m in loaded)
    assert heavy == [], f"tests/conftest.py imports {heavy} at import"


def test_the_package_exports_load_on_first_use() -> None:
    code = (
        "import sys; import pytest_memeval as m; "
        "assert 'pytest_memeval.records' not in sys.modules; "
        "from pytest_memeval import Memory, MemorySystem, Conversation; "
        "assert Memory.__module__ == 'pytest_memeval.records'; "
        "assert all(hasattr(m, n) for n in m.__all__); print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
