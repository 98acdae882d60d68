"""``--memeval=memoryagentbench`` end to end on hand-written split files in the Hugging Face
records' shape: bm25 without xdist and with ``-n 2`` (the same numbers), every question collected,
the splits as markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import read_json

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "memoryagentbench" / "data"
XDIST_MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}

pytestmark = pytest.mark.usefixtures("memeval_env")


def _scores(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (run["system"], q["id"]): {"status": q["status"], **q["scores"]}
        for run in report["runs"]
        for q in run["questions"]
    }


def test_bm25_same_numbers_without_and_with_xdist(pytester: pytest.Pytester) -> None:
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=memoryagentbench",
            f"--memeval-data={DATA}",
            "--memsys=bm25",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()
        reports.append(read_json(out))
    first, second = reports
    assert _scores(first) == _scores(second)
    (run,) = first["runs"]
    assert run["summary"]["overall"]["count"] == 6  # every question of the three files
    scored = [q for q in run["questions"] if "mab_score" in q["scores"]]
    assert len(scored) == 6
    ds = first["provenance"]["datasets"]["memoryagentbench"]
    assert ds["questions_total"] == 6


@pytest.mark.parametrize(
    ("marker", "count"),
    [("Accurate_Retrieval", 3), ("Conflict_Resolution", 2), ("Test_Time_Learning", 1)],
)
def test_splits_are_markers(pytester: pytest.Pytester, marker: str, count: int) -> None:
    result = pytester.runpytest(
        "--memeval=memoryagentbench",
        f"--memeval-data={DATA}",
        "--memsys=bm25",
        "--collect-only",
        "-q",
        "-m",
        marker,
        "-p",
        "no:xdist",
    )
    assert result.ret == 0, result.stdout.str()
    ids = [line for line in result.outlines if "::" in line]
    assert len(ids) == count, result.stdout.str()
