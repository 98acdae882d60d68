"""Issue 34, items 1 and 2: the README's PR gate says what the scoreboard says.

A user's keyword system (a fixture in the project's conftest) is saved as the baseline; the PR run
then uses ``--memeval-max-drop=f1:2`` alone. A system whose ``search`` returns nothing must fail:
the regression gate pairs the scoreboard's headline categories (LoCoMo and the demo leave category
5 out, where an answerer given no memories abstains and scores 1.0) and quotes the scoreboard's
figures, and the health gate fails it whatever the scores do. The unchanged system passes both.
The demo run is in the default suite; the same on full LoCoMo runs with the real file (slow).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}

CONFTEST = """
import os

import pytest

from pytest_memeval import Memory


class KeywordMemory:
    def __init__(self) -> None:
        self.turns = []

    def reset(self) -> None:
        self.turns = []

    def ingest(self, conversation):
        for session, turn in conversation.turns():
            self.turns.append(
                Memory(f"{turn.speaker}: {turn.text}", id=turn.id, date=session.date,
                       source_ids=(turn.id, session.id), speaker=turn.speaker)
            )

    def search(self, question, k):
        if os.environ.get("MEM_BROKEN") == "empty":  # the index stopped returning anything
            return []
        words = set(question.question.lower().split())
        ranked = sorted(self.turns, key=lambda m: -len(words & set(m.text.lower().split())))
        return ranked[:k]


@pytest.fixture(scope="session")
def mymem():
    return KeywordMemory()
"""


def _scoreboard_f1(stdout: str, bench: str) -> str:
    """The headline figure the scoreboard row of ``mymem`` prints."""
    for line in stdout.splitlines():
        cells = line.split()
        if cells[:3] == [bench, "mymem", "f1"]:
            return cells[3]
    raise AssertionError(f"no scoreboard row for mymem in:\n{stdout}")


def _gate_run(
    pytester: pytest.Pytester,
    args: list[str],
    mode: list[str],
    monkeypatch: pytest.MonkeyPatch,
    broken: bool,
) -> pytest.RunResult:
    if broken:
        monkeypatch.setenv("MEM_BROKEN", "empty")
    else:
        monkeypatch.delenv("MEM_BROKEN", raising=False)
    return pytester.runpytest(*args, "--memeval-max-drop=f1:2", *mode)


def _check(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    bench: str,
    mode: list[str],
    *,
    expect_regression_fail: bool,
) -> None:
    pytester.makeconftest(CONFTEST)
    base = pytester.path / "base.json"
    monkeypatch.delenv("MEM_BROKEN", raising=False)
    saved = pytester.runpytest(*args, f"--memeval-save-baseline={base}", "-p", "no:xdist")
    assert saved.ret == 0, saved.stdout.str()
    before = _scoreboard_f1(saved.stdout.str(), bench)
    args = [*args, f"--memeval-baseline={base}"]

    # the unchanged system passes both gates
    same = _gate_run(pytester, [*args, "--memeval-json=same.json"], mode, monkeypatch, False)
    out = same.stdout.str()
    assert same.ret == 0, out
    assert f"regression passed: {bench} (mymem) f1 over categories excl. adversarial [5]" in out
    assert f"did not drop ({before} -> {before} on the scoreboard" in out
    assert f"health passed: {bench} (mymem)" in out

    # search returns nothing: the health gate fails, quoting the scoreboard's headline
    broken = _gate_run(pytester, [*args, "--memeval-json=broken.json"], mode, monkeypatch, True)
    out = broken.stdout.str()
    assert broken.ret == 1, out
    after = _scoreboard_f1(out, bench)
    assert float(after) < float(before)
    lines = [ln for ln in out.splitlines() if ln.startswith("memeval: health")]
    assert len(lines) == 1, out
    assert re.search(
        rf"memeval: health FAILED: {bench} \(mymem\): ([\d,]+) of \1 questions \(100\.0%\) got "
        r"no memories, raised or went unscored, against 0 of [\d,]+ questions \(0\.0%\) in the "
        r"baseline \(\+100\.0 points; the limit is \+10\.0 points, --memeval-health-max-rise\); "
        rf"the scoreboard's f1 over categories excl\. adversarial \[5\] is {before} -> {after}\.",
        lines[0],
    ), lines[0]
    # the regression sentence pairs the headline categories and quotes the scoreboard's figures
    reg = [ln for ln in out.splitlines() if ln.startswith("memeval: regression")]
    assert len(reg) == 1, out
    verdict = "FAILED" if expect_regression_fail else "passed"
    assert reg[0].startswith(
        f"memeval: regression {verdict}: {bench} (mymem) f1 over categories excl. adversarial "
        "[5] dropped "
    ), reg[0]
    assert f"({before} -> {after} on the scoreboard, delta -" in reg[0]
    assert "memeval regression" not in out  # the prefix is said once
    # the per-category deltas: category 5 rose (the answerer abstains) but is not gated
    (cats,) = [ln for ln in out.splitlines() if "f1 by category, paired questions" in ln]
    assert "(* not gated: outside categories excl. adversarial [5])" in cats
    assert re.search(r"adversarial\* 0\.\d{3} -> 1\.000 \(\+", cats), cats
    report = read_json(pytester.path / "broken.json")
    (health,) = report["extra"]["health"]  # beside extra.regression, not inside it
    assert health["failed"] and health["delta"] == pytest.approx(1.0)
    assert all(r["metric"] != "health" for r in report["extra"]["regression"])


@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
def test_demo_pr_gate_fails_a_system_that_stopped_retrieving(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    # two conversations: no drop can be significant over 2 clusters (the sign-flip test's
    # smallest p is 0.5), so here the health gate alone catches it
    _check(
        pytester,
        monkeypatch,
        ["--memeval=demo", "--memsys=mymem"],
        "demo",
        mode,
        expect_regression_fail=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
def test_locomo_pr_gate_fails_a_system_that_stopped_retrieving(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data_dir: Path, mode: list[str]
) -> None:
    # full LoCoMo: 1,986 questions over 10 conversations; before, the gate paired all of them
    # and read the empty system's abstentions on category 5 as a rise (0.055 -> 0.228)
    _check(
        pytester,
        monkeypatch,
        ["--memeval=locomo", "--memsys=mymem", f"--memeval-data={data_dir}"],
        "locomo",
        mode,
        expect_regression_fail=True,
    )


def test_health_gate_can_be_turned_off_and_its_option_is_checked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    base = pytester.path / "base.json"
    saved = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-save-baseline={base}"
    )
    assert saved.ret == 0, saved.stdout.str()
    monkeypatch.setenv("MEM_BROKEN", "empty")
    off = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-baseline={base}",
        "--memeval-health-max-rise=off",
    )  # fmt: skip
    assert off.ret == 0, off.stdout.str()
    assert "memeval: health" not in off.stdout.str()
    bad = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-baseline={base}",
        "--memeval-health-max-rise=lots",
    )  # fmt: skip
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--memeval-health-max-rise='lots': expected points between 0 and 100" in (
        bad.stderr.str()
    )


def test_one_category_can_be_gated_by_name(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    base = pytester.path / "base.json"
    saved = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-save-baseline={base}"
    )
    assert saved.ret == 0, saved.stdout.str()
    same = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-baseline={base}",
        "--memeval-max-drop=temporal.f1:2", "--memeval-max-drop=5.f1:2",
    )  # fmt: skip
    out = same.stdout.str()
    assert same.ret == 0, out
    assert "regression passed: demo (mymem) f1 over category temporal [2] did not drop" in out
    assert "regression passed: demo (mymem) f1 over category adversarial [5] did not drop" in out
    unknown = pytester.runpytest(
        "--memeval=demo", "--memsys=mymem", f"--memeval-baseline={base}",
        "--memeval-max-drop=tempral.f1:2",
    )  # fmt: skip
    assert "has no category 'tempral' (categories: " in unknown.stdout.str()
