"""Every judge style writes its own metric name (issue 14, point 3): the names, the alias
``judge``, files written before the names, and baselines beside like-for-like numbers only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedClient, make_question, make_result

from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run
from pytest_memeval.analysis._baselines import (
    BASELINES,
    RunProtocol,
    baselines_for,
    mark_comparability,
)
from pytest_memeval.analysis._gates import parse_gate
from pytest_memeval.analysis._regression import compare, legacy_score_key, load_baseline
from pytest_memeval.errors import MemevalError
from pytest_memeval.judges import STYLE_METRICS, STYLES, get_judge, resolve_judge_alias
from pytest_memeval.protocols import PROFILES, metric_of_style
from pytest_memeval.records import Question, QuestionResult
from pytest_memeval.report import Summary
from pytest_memeval.run import QuestionRun, pass_metric_of, score_key


def _question(**kw: Any) -> Question:
    meta = {"rubric": ["says Sweden", "says when"], "question_type": "single-session-user"}
    return make_question(**{"meta": meta, **kw})


#: a reply each built-in style reads as a score
_REPLIES = {
    "mem0": '{"label": "CORRECT"}',
    "graded": '{"score": 80}',
    "longmemeval": "yes",
    "beam-nugget": '{"score": 1, "reason": "ok"}',
    "usermem": '{"reward": 0.75}',
}


def test_every_style_names_its_metric_as_specified() -> None:
    assert STYLE_METRICS == {
        "mem0": "judge_mem0",
        "graded": "judge_graded",
        "longmemeval": "judge_lme",
        "beam-nugget": "nugget",
        "usermem": "judge_usermem",
    }
    official = {p.judge_style: p.metric for p in PROFILES.values() if p.judge is not None}
    assert official == {
        "mem0-official": "judge_mem0_official",
        "longmemeval-official": "judge_lme_official",
        "beam-official": "nugget_official",
        "locomo-plus-official": "judge_locomo_plus_official",
        "memoryagentbench-official": "judge_mab_official",
        "halumem-official": "judge_halumem_official",
        "longmemeval-v2-official": "judge_lme2_official",
    }
    for style, metric in {**STYLE_METRICS, **official}.items():
        assert metric_of_style(style) == metric
    assert metric_of_style("no-such-style") is None


def test_built_in_judges_write_headline_and_prefixed_extras_only(tmp_path: Path) -> None:
    written: dict[str, set[str]] = {}
    for style in STYLES:
        judge = get_judge(style, runs=3)
        result = judge.judge(_question(), "from Sweden", ScriptedClient(_REPLIES[style]))  # type: ignore[arg-type]
        assert not result.unscored, style
        assert judge.metric == STYLE_METRICS[style]
        keys = set(result.scores)
        assert judge.metric in keys and result.scores[judge.metric] is not None
        assert all(k == judge.metric or k.startswith(judge.metric + "_") for k in keys), keys
        written[style] = keys
    assert written["graded"] == {"judge_graded", "judge_graded_std", "judge_graded_runs"}
    assert written["longmemeval"] == {"judge_lme", "judge_lme_substring"}
    assert written["beam-nugget"] == {"nugget", "nugget_beam_rule"}
    # no two styles, built-in or official, ever write the same key
    official = {p.metric for p in PROFILES.values() if p.judge is not None}
    every = [k for keys in written.values() for k in keys]
    assert len(every) == len(set(every))
    assert not official & set(every)


def test_later_judges_carry_their_label() -> None:
    assert score_key("judge_mem0", True, "openai:gpt-4o-mini") == "judge_mem0"
    assert score_key("judge_graded_std", False, "anthropic:claude") == (
        "judge_graded_std@anthropic:claude"
    )


@pytest.mark.parametrize(
    ("metric", "headline", "expected"),
    [
        ("judge", "judge_mem0", "judge_mem0"),
        ("judge", "nugget", "nugget"),
        ("judge@anthropic:claude", "judge_lme", "judge_lme@anthropic:claude"),
        ("judge", None, None),
        ("judge@x:y", None, None),
        ("f1", None, "f1"),
        ("judge_graded", "judge_mem0", "judge_graded"),
        ("judge_true_accept", "judge_mem0", "judge_true_accept"),
    ],
)
def test_judge_alias(metric: str, headline: str | None, expected: str | None) -> None:
    assert resolve_judge_alias(metric, headline) == expected


def test_pass_metric_is_the_deciding_judges_metric() -> None:
    def judge(q: Question, text: str) -> tuple[dict[str, float | None], dict[str, Any]]:
        return {}, {}

    run = QuestionRun("beam", "f1", 0.5, lambda q, p: {}, judge=judge, judge_metric="nugget")
    assert pass_metric_of(run, {"f1": 0.2, "nugget": 0.5}) == "nugget"
    # LoCoMo category 5 under the Mem0 judge: not judged, the offline rule decides
    run = QuestionRun("locomo", "f1", 0.5, lambda q, p: {}, judge=judge, judge_metric="judge_mem0")
    assert pass_metric_of(run, {"f1": 1.0}) == "f1"
    # a graded score never decides a Mem0-style run (and no fixed tuple of names is consulted)
    assert pass_metric_of(run, {"f1": 1.0, "judge_graded": 1.0, "judge": 1.0}) == "f1"
    offline = QuestionRun("locomo", "f1", 0.5, lambda q, p: {})
    assert pass_metric_of(offline, {"f1": 1.0, "judge_mem0": 0.0}) == "f1"


def _summary(scores: list[dict[str, float | None]], judge_metric: str | None) -> Summary:
    results: list[QuestionResult] = [
        make_result(f"q{i}", scores=s, status="CORRECT", category="temporal")
        for i, s in enumerate(scores)
    ]
    metrics = sorted({k for s in scores for k in s})
    cats = [CategoryMeta("temporal", 2, False, True)]
    run = aggregate_run("locomo", "bm25", "", results, cats, metrics)
    provenance: dict[str, Any] = {
        "judge_metric": None if judge_metric is None else {"locomo": judge_metric}
    }
    return Summary(runs=[run], provenance=provenance)


def test_gate_alias_is_resolved_per_benchmark() -> None:
    summary = _summary([{"judge_mem0": 1.0}, {"judge_mem0": 0.0}], "judge_mem0")
    result = parse_gate("locomo.overall.judge>=0.5").check(summary)
    assert result.passed and "locomo.overall.judge_mem0 = 0.500" in result.message
    failed = parse_gate("locomo.overall.judge>=0.6").check(summary)
    assert not failed.passed
    # the graded judge's column is not the Mem0 one
    graded = _summary([{"judge_graded": 0.9}], "judge_graded")
    assert parse_gate("locomo.overall.judge>=0.8").check(graded).passed
    assert not parse_gate("locomo.overall.judge_mem0>=0.8").check(graded).passed


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), "utf-8")
    return path


def _legacy_file(path: Path, provenance: dict[str, Any]) -> Path:
    return _write(
        path,
        {
            "schema": "pytest-memeval-baseline/1",
            "provenance": provenance,
            "runs": [
                {
                    "benchmark": "locomo",
                    "system": "bm25",
                    "questions": {
                        "q0": {
                            "status": "CORRECT",
                            "category": "temporal",
                            "scores": {"f1": 0.5, "judge": 1.0, "judge@anthropic:c": 0.0},
                        }
                    },
                }
            ],
        },
    )


def test_old_file_is_mapped_through_its_recorded_style(tmp_path: Path) -> None:
    base = load_baseline(_legacy_file(tmp_path / "old.json", {"judge_style": {"locomo": "mem0"}}))
    scores = base["runs"][0]["questions"]["q0"]["scores"]
    assert scores == {"f1": 0.5, "judge_mem0": 1.0, "judge_mem0@anthropic:c": 0.0}
    # an older provenance with one style for the session
    base = load_baseline(_legacy_file(tmp_path / "older.json", {"judge_style": "graded"}))
    assert "judge_graded" in base["runs"][0]["questions"]["q0"]["scores"]


def test_old_file_without_style_is_a_clear_error(tmp_path: Path) -> None:
    path = _legacy_file(tmp_path / "old.json", {})
    with pytest.raises(MemevalError) as err:
        load_baseline(path)
    message = str(err.value)
    assert str(path) in message and "'judge'" in message
    assert "provenance.judge_style" in message and "--memeval-save-baseline" in message
    # a new file (judge_metric recorded) is never renamed: "judge" there is a user's own metric
    new = _legacy_file(tmp_path / "new.json", {"judge_metric": None})
    assert "judge" in load_baseline(new)["runs"][0]["questions"]["q0"]["scores"]


@pytest.mark.parametrize(
    ("key", "style", "expected"),
    [
        ("judge", "mem0-official", "judge_mem0_official"),
        ("judge_std", "graded", "judge_graded_std"),
        ("judge@openai:x_runs", "graded", "judge_graded_runs@openai:x"),
        ("judge_official", "longmemeval", "judge_lme_substring"),
        ("judge_strict", "longmemeval-official", "judge_lme_official_strict"),
        ("nugget", "beam-official", "nugget_official"),
        ("ordering_f1", "beam-official", "nugget_official_ordering_f1"),
        ("nugget_official", "beam-nugget", "nugget_beam_rule"),
        ("nugget", "beam-nugget", "nugget"),
        ("f1", "mem0", "f1"),
    ],
)
def test_legacy_keys(key: str, style: str, expected: str) -> None:
    assert legacy_score_key(key, style) == expected


def test_regression_alias_compares_the_first_judges_metric(tmp_path: Path) -> None:
    before = _summary([{"judge_mem0": 1.0}] * 30, "judge_mem0")
    after = _summary([{"judge_mem0": 0.0}] * 30, "judge_mem0")
    from pytest_memeval.analysis._regression import save_baseline

    saved = load_baseline(_write(tmp_path / "b.json", save_baseline(before)))
    (c,) = compare(after, saved, "judge", 2.0)
    assert c.metric == "judge_mem0" and c.failed


def test_published_rows_name_their_exact_metric() -> None:
    by_name = {b.name: b for b in BASELINES}
    assert {by_name[n].metric for n in by_name if n.startswith("mem0-j-")} == {
        "judge_mem0_official"
    }
    assert {b.metric for b in BASELINES if b.needs_judge_style == "longmemeval-official"} == {
        "judge_lme_official"
    }
    assert {b.metric for b in BASELINES if b.benchmark == "beam"} == {"nugget_official"}
    for b in BASELINES:
        if b.needs_judge_style is not None:  # the row's metric is what that style writes
            assert metric_of_style(b.needs_judge_style) == b.metric, b.name
        assert b.metric != "judge", b.name


def test_graded_run_is_not_beside_mem0_j() -> None:
    rows = baselines_for("locomo", ("mem0-j-mem0",))
    graded = RunProtocol(frozenset({"f1", "judge_graded"}), "mem0", "graded", "gpt-4o-mini")
    (row,) = mark_comparability(rows, graded)
    assert row.not_comparable is not None and "mem0-official judge" in row.not_comparable
    official = RunProtocol(
        frozenset({"f1", "judge_mem0_official"}), "mem0", "mem0-official", "gpt-4o-mini"
    )
    (row,) = mark_comparability(rows, official)
    assert row.not_comparable is None
    # same protocol, style and model, but the metric was left out of the run
    bare = RunProtocol(frozenset({"f1"}), "mem0", "mem0-official", "gpt-4o-mini")
    (row,) = mark_comparability(rows, bare)
    assert row.not_comparable == (
        "published as judge_mem0_official; this run has no judge_mem0_official"
    )
