"""Issue 22 renderers, unit level: the scoreboard, the UNSCORED reasons, the "best" lists."""

from __future__ import annotations

import pytest
from conftest import REPORT_CATS, report_result

from pytest_memeval.analysis import RunProtocol, aggregate_run, baselines_for, mark_comparability
from pytest_memeval.report._html import _worst_best, render_html
from pytest_memeval.report._model import Summary, published_entries, unscored_notes
from pytest_memeval.report._tables import scoreboard_table
from pytest_memeval.report._terminal import render_summary


def _summary() -> Summary:
    runs = []
    for system in ("bm25", "no-memory"):
        results = [
            report_result(system, "q1", "single-hop", 4, 1.0),
            report_result(system, "q2", "single-hop", 4, 0.0),
            report_result(system, "q3", "multi-hop", 1, 0.0, status="UNSCORED", scores={}),
            report_result(
                system, "q4", "multi-hop", 1, 0.0, status="ERROR", scores={}, error="boom\nx"
            ),
        ]
        runs.append(aggregate_run("locomo", system, "", results, REPORT_CATS, ["f1"]))
    return Summary(runs=runs, provenance={"pass_metric": {"locomo": "f1"}})


def _baselines() -> dict[str, list]:  # type: ignore[type-arg]
    run = RunProtocol(metrics=frozenset({"f1"}), answerer="extractive")
    return {"locomo": mark_comparability(baselines_for("locomo"), run)}


def test_scoreboard_rows_and_controls() -> None:
    board = scoreboard_table(_summary(), _baselines())
    assert board is not None
    assert [c.text for c in board.header] == [
        "benchmark", "system", "metric", "overall", "95% CI", "n", "errors", "unscored",
        "nearest published", "role",
    ]  # fmt: skip
    bm25, floor = ([c.text for c in row.cells] for row in board.rows)
    assert bm25[:3] == ["locomo", "bm25", "f1"] and bm25[5:8] == ["4", "1", "1"]
    # the nearest f1 figure, with its selection named (the LoCoMo paper's overall counts
    # category 5 in, the headline leaves it out) and so labelled reference
    assert bm25[8].endswith(" over all categories (reference)") and bm25[9] == ""
    assert floor[9] == "control"


def test_scoreboard_n_is_the_overalls_count() -> None:
    """The n beside the headline counts the questions the headline covers: with an adversarial
    question outside overall, ``4 of 5`` (the errors and unscored columns count all five, as the
    health gate does, and the caption says so)."""
    results = [
        report_result("bm25", "q1", "single-hop", 4, 1.0),
        report_result("bm25", "q2", "single-hop", 4, 0.0),
        report_result("bm25", "q3", "multi-hop", 1, 0.0, status="UNSCORED", scores={}),
        report_result("bm25", "q4", "multi-hop", 1, 0.0, status="ERROR", scores={}, error="x"),
        report_result("bm25", "q5", "adversarial", 5, 0.0, status="ERROR", scores={}, error="x"),
    ]
    run = aggregate_run("locomo", "bm25", "", results, REPORT_CATS, ["f1"])
    board = scoreboard_table(Summary(runs=[run], provenance={}), {})
    assert board is not None
    assert [c.text for c in board.rows[0].cells][5:8] == ["4 of 5", "2", "1"]
    assert "n: the questions the overall covers, of all the run's questions" in board.caption


def test_terminal_opens_with_the_scoreboard_and_shows_every_baseline() -> None:
    lines = render_summary(_summary(), _baselines(), ["configuration: x"])
    assert lines[0] == "scoreboard" and lines[-1] == "configuration: x"
    text = "\n".join(lines)
    for b in _baselines()["locomo"]:
        assert f"published  {b.system}" in text
    assert "Mem0 (mem0-j-mem0), reference (protocol: " in text


def test_unscored_notes_give_the_reason() -> None:
    summary = _summary()
    unscored_notes(summary, {"locomo": "needs a judge"})
    assert summary.runs[0].notes == [
        "UNSCORED 1 of 4: no f1 value for the question (needs a judge)",
    ]


def test_published_entries_carry_values_label_and_reasons() -> None:
    (mem0,) = [e for e in published_entries(_baselines())["locomo"] if e["name"] == "mem0-j-mem0"]
    assert mem0["overall"] == pytest.approx(0.6688)
    assert mem0["by_category"]["4"] == pytest.approx(0.7293)
    assert mem0["label"] == "reference" and mem0["reasons"][0].startswith("protocol: ")


def test_best_lists_hold_only_correct_answers() -> None:
    results = [report_result("bm25", f"q{i}", "single-hop", 4, 0.0) for i in range(6)]
    results.append(report_result("bm25", "ok", "single-hop", 4, 0.9))
    worst, best = _worst_best(results, "f1")
    assert [r.question_id for r in best] == ["ok"]
    assert all(r.status == "WRONG" for r in worst) and len(worst) == 5
    page = render_html(_summary(), _baselines())
    assert "<td>best 1</td>" in page
