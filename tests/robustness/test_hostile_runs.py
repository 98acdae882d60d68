"""A hostile ``--memeval-baseline`` file end to end (issue 26, breaks 8 and 9): a score of 1e308
and names with escape codes. The session ends with one line and every report written."""

from __future__ import annotations

import json

import pytest
from conftest import read_json

from pytest_memeval.analysis._regression import BASELINE_SCHEMA

pytestmark = pytest.mark.usefixtures("memeval_env")


def _baseline(system: str, qid: str, value: float) -> str:
    question = {"status": "CORRECT", "category": "single-hop", "scores": {"f1": value}}
    runs = [
        {"benchmark": "demo", "system": system, "flow": "", "questions": {q: question for q in qid}}
    ]
    return json.dumps(
        {"schema": BASELINE_SCHEMA, "provenance": {"judge_metric": None}, "runs": runs}
    )


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_a_hostile_baseline_costs_no_report(pytester: pytest.Pytester, mode: list[str]) -> None:
    huge = pytester.path / "huge.json"
    huge.write_text(_baseline("bm25", ["demo-1-q1", "demo-1-q2"], 1e308))
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-limit=2", f"--memeval-baseline={huge}",
        "--memeval-max-drop=f1:2", f"--memeval-json={out}", *mode,
    )  # fmt: skip
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "OverflowError" not in text
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["memeval: regression FAILED: --memeval-baseline *outside*"])
    assert read_json(out)["runs"]

    named = pytester.path / "named.json"
    named.write_text(_baseline("bm25\x1b]0;pwned\x07", ["q\x1b[2J"], 0.5))
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-limit=2", f"--memeval-baseline={named}",
        *mode,
    )  # fmt: skip
    text = result.stdout.str()
    assert "bm25\\x1b]0;pwned\\x07" in text
    assert "\x1b]0" not in text and "\x1b[2J" not in text
