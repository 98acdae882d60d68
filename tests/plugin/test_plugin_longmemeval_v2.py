"""``--memeval=longmemeval-v2`` end to end on hand-written files in upstream's shape: bm25
without xdist and with ``-n 2`` (the same numbers), every question collected, the question types
as markers, the LLM-checked items without an offline score."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import XDIST_MODES, read_json, status_scores

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "longmemeval_v2" / "data"

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_bm25_same_numbers_without_and_with_xdist(pytester: pytest.Pytester) -> None:
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=longmemeval-v2",
            f"--memeval-data={DATA}",
            "--memsys=bm25",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()
        reports.append(read_json(out))
    first, second = reports
    assert status_scores(first) == status_scores(second)
    (run,) = first["runs"]
    assert run["summary"]["overall"]["count"] == 6  # every question of questions.jsonl
    scored = {q["id"] for q in run["questions"] if "lme2_score" in q["scores"]}
    # the two LLM-checked questions have no offline score (unless the reply is UNKNOWN)
    assert {"q_static_1", "q_proc_1", "q_dyn_1", "q_ent_1"} <= scored
    assert all("lme2_unknown" in q["scores"] for q in run["questions"])
    ds = first["provenance"]["datasets"]["longmemeval-v2"]
    assert ds["questions_total"] == 6


@pytest.mark.parametrize(
    ("marker", "count"),
    [("static-environment", 2), ("errors-gotchas", 1), ("static-environment-abs", 1)],
)
def test_question_types_are_markers(pytester: pytest.Pytester, marker: str, count: int) -> None:
    result = pytester.runpytest(
        "--memeval=longmemeval-v2",
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
