"""Issue 22 point 5: gates talk. A passing gate prints its value; a gate or --memeval-max-drop
naming a metric the run does not produce is a usage error before any question runs, with "did
you mean"; an expression the shell cut at its unquoted '>' says to quote it, in one line."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request: pytest.FixtureRequest) -> list[str]:
    return list(MODES[request.param])


def test_a_passing_gate_prints_its_value(pytester: pytest.Pytester, mode: list[str]) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=full-context",
        "--memeval-limit=2",
        "--memeval-fail-under=demo.overall.f1>=0.05",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    lines = [ln for ln in result.stdout.lines if "gate passed" in ln]
    assert len(lines) == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["memeval gate passed: demo.overall.f1 = 0.* >= 0.050 (system full-context)"]
    )


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (
            "--memeval-fail-under=demo.overall.f11>=0.1",
            "--memeval-fail-under 'demo.overall.f11>=0.1': metric 'f11' is not produced on demo;"
            " did you mean 'f1'?",
        ),
        (
            "--memeval-max-drop=f_1:2",
            "--memeval-max-drop 'f_1:2': metric 'f_1' is not produced in this run; did you mean "
            "'f1'?",
        ),
        (
            "--memeval-fail-under=dmo.overall.f1>=0.1",
            "--memeval-fail-under 'dmo.overall.f1>=0.1': benchmark 'dmo' is not in this run; did "
            "you mean 'demo'?",
        ),
    ],
    ids=["gate", "max-drop", "benchmark"],
)
def test_a_misspelt_metric_fails_before_any_question(
    pytester: pytest.Pytester, mode: list[str], option: str, expected: str
) -> None:
    baseline = pytester.path / "baseline.json"
    baseline.write_text("{}", encoding="utf-8")
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        option,
        f"--memeval-baseline={baseline}",
        *mode,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert expected in result.stderr.str()
    out = result.stdout.str()
    assert "passed" not in out and "CORRECT" not in out and "WRONG" not in out


def test_the_judge_alias_and_its_names_are_known(pytester: pytest.Pytester) -> None:
    """``judge`` without --memeval-judge stays read_settings' error (it names the fix)."""
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-fail-under=demo.overall.judge>=0.5"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no --memeval-judge is given" in result.stderr.str()


def test_an_unquoted_gate_says_to_quote_it(pytester: pytest.Pytester) -> None:
    # what `pytest --memeval-fail-under=demo.overall.f1>=0.5` passes after the shell's redirect
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-fail-under=demo.overall.f1"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in result.stderr.lines if "--memeval-fail-under" in ln]
    assert len(errors) == 1, result.stderr.str()
    line = errors[0]
    assert "quote" in line and "--memeval-fail-under='locomo.overall.f1>=0.40'" in line
    assert "grammar" not in line and len(line) < 300
