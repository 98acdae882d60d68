"""Unit tests for ``pytest_memeval.analysis._regression`` on constructed result sets with known answers:
100 questions with 10 flips (McNemar p = 2 * 0.5**10, significant) or 3 flips (p = 0.25, not),
continuous drops through the paired bootstrap, one-sided questions, baseline files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fakes import make_result

from pytest_memeval.analysis import _regression as regression
from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run
from pytest_memeval.analysis._regression import (
    BASELINE_SCHEMA,
    compare,
    load_baseline,
    parse_max_drop,
    save_baseline,
)
from pytest_memeval.errors import MemevalError
from pytest_memeval.records import (
    STATUS_CORRECT,
    STATUS_ERROR,
    STATUS_UNSCORED,
    STATUS_WRONG,
    QuestionResult,
)
from pytest_memeval.report import RunSummary, Summary

CATS = [CategoryMeta("temporal", 2, "temporal"), CategoryMeta("single-hop", 4, "fact-recall")]


def _result(qid: str, status: str, scores: dict[str, float | None], system: str) -> QuestionResult:
    category = "temporal" if int(qid[1:]) % 2 else "single-hop"
    return make_result(qid, status=status, scores=scores, system=system, category=category)


def _binary_run(correct: dict[str, bool], system: str = "bm25") -> RunSummary:
    results = [
        _result(
            qid,
            STATUS_CORRECT if ok else STATUS_WRONG,
            {"judge": 1.0 if ok else 0.0, "f1": 0.9 if ok else 0.1},
            system,
        )
        for qid, ok in correct.items()
    ]
    return aggregate_run("locomo", system, "", results, CATS, ["judge", "f1"])


def _continuous_run(f1: dict[str, float | None], system: str = "bm25") -> RunSummary:
    results = [
        _result(
            qid,
            STATUS_UNSCORED if v is None else (STATUS_CORRECT if v >= 0.5 else STATUS_WRONG),
            {"f1": v},
            system,
        )
        for qid, v in f1.items()
    ]
    return aggregate_run("locomo", system, "", results, CATS, ["f1"])


def _ids(n: int) -> list[str]:
    return [f"q{i:03d}" for i in range(n)]


def _flipped(n_flipped: int) -> tuple[Summary, dict[str, object]]:
    """100 questions, 80 correct in the baseline; ``n_flipped`` of them wrong now."""
    ids = _ids(100)
    before = {q: i < 80 for i, q in enumerate(ids)}
    after = {q: (i < 80 and i >= n_flipped) for i, q in enumerate(ids)}
    baseline = save_baseline(Summary(runs=[_binary_run(before)]))
    return Summary(runs=[_binary_run(after)]), baseline


# --- binary outcomes: exact McNemar ---------------------------------------------------------


@pytest.mark.parametrize("metric", ["correct", "judge"])
def test_ten_flipped_is_significant_and_fails(metric: str) -> None:
    current, baseline = _flipped(10)
    [c] = compare(current, baseline, metric, 2.0)
    assert c.test == "mcnemar" and c.binary
    assert c.paired == 100
    assert c.p_value == 2 * 0.5**10  # exact binomial: b = 10, c = 0
    assert c.baseline_mean == pytest.approx(0.80)
    assert c.current_mean == pytest.approx(0.70)
    assert c.delta == pytest.approx(-0.10)
    assert c.ci is not None and c.delta is not None
    assert c.ci[0] <= c.delta <= c.ci[1] < 0
    assert c.failed
    assert c.flipped_to_wrong == tuple(_ids(10))
    assert c.flipped_to_correct == ()
    assert c.message.startswith(
        f"regression FAILED: locomo (bm25) {metric} over all categories dropped 10.0 points "
        # the scoreboard shows the judge's figure; `correct` is no scoreboard metric
        f"(0.800 -> 0.700{'' if metric == 'correct' else ' on the scoreboard'}, delta -0.100, "
        "95% CI ["
    )
    assert (
        "exact McNemar p = 0.00195, 100 paired questions): more than the allowed 2.0 points "
        "and significant at alpha 0.05." in c.message
    )
    assert c.details[0] == f"flipped correct -> wrong (10): {', '.join(_ids(10))}"
    assert c.details[1] == "flipped wrong -> correct (0): -"


def test_three_flipped_is_not_significant_and_passes() -> None:
    current, baseline = _flipped(3)
    [c] = compare(current, baseline, "correct", 2.0)
    assert c.p_value == 0.25  # 2 * 0.5**3
    assert c.delta == pytest.approx(-0.03)
    assert not c.failed
    assert "dropped 3.0 points" in c.message
    assert c.message.endswith("more than the allowed 2.0 points but not significant at alpha 0.05.")
    assert c.flipped_to_wrong == ("q000", "q001", "q002")


def test_significant_drop_within_the_margin_passes() -> None:
    current, baseline = _flipped(10)
    [c] = compare(current, baseline, "correct", 15.0)
    assert c.p_value == 2 * 0.5**10
    assert not c.failed
    assert c.message.endswith("within the allowed 15.0 points.")


def test_alpha_is_respected() -> None:
    current, baseline = _flipped(10)
    [c] = compare(current, baseline, "correct", 2.0, alpha=0.001)
    assert not c.failed  # p = 0.00195 is not below 0.001


def test_flips_both_ways_use_discordant_pairs_only() -> None:
    ids = _ids(100)
    before = {q: i < 50 for i, q in enumerate(ids)}
    # 12 correct -> wrong (q000..q011), 4 wrong -> correct (q050..q053)
    after = {q: (12 <= i < 50) or (50 <= i < 54) for i, q in enumerate(ids)}
    baseline = save_baseline(Summary(runs=[_binary_run(before)]))
    [c] = compare(Summary(runs=[_binary_run(after)]), baseline, "correct", 2.0)
    # b = 12, c = 4: p = 2 * sum_{k<=4} C(16, k) / 2**16 = 2 * 2517 / 65536
    assert c.p_value == 2 * 2517 / 65536
    assert c.delta == pytest.approx(-0.08)
    assert c.p_value == pytest.approx(0.0768, abs=1e-4)
    assert not c.failed  # an 8-point drop, but not significant at 0.05
    assert len(c.flipped_to_wrong) == 12 and len(c.flipped_to_correct) == 4


def test_improvement_never_fails() -> None:
    current, _ = _flipped(10)
    # swap sides: the "current" run is the better one
    [c] = compare(
        Summary(runs=[_binary_run({q: i < 80 for i, q in enumerate(_ids(100))})]),
        save_baseline(current),
        "correct",
        0.0,
    )
    assert c.delta == pytest.approx(0.10)
    assert not c.failed
    assert "did not drop" in c.message
    assert len(c.flipped_to_correct) == 10


# --- continuous scores: paired bootstrap ---------------------------------------------------


def test_large_significant_continuous_drop_fails() -> None:
    ids = _ids(100)
    before = {q: 0.3 + 0.005 * i for i, q in enumerate(ids)}
    after = {q: v - 0.05 - (0.2 if i == 7 else 0.0) for i, (q, v) in enumerate(before.items())}
    baseline = save_baseline(Summary(runs=[_continuous_run(dict(before))]))
    [c] = compare(Summary(runs=[_continuous_run(dict(after))]), baseline, "f1", 2.0)
    assert c.test == "paired-bootstrap" and not c.binary
    assert c.delta == pytest.approx(-0.052)
    assert c.ci is not None and c.delta is not None
    assert c.ci[0] <= c.delta <= c.ci[1] < -0.02
    assert c.p_value == 0.0
    assert c.failed
    assert "paired bootstrap p < 0.0002" in c.message
    assert c.largest_drops[0][0] == "q007"
    assert c.largest_drops[0][1] == pytest.approx(-0.25)
    assert c.details[0].startswith("largest drops (20 shown): q007 (-0.250), ")


def test_two_point_drop_not_significant_does_not_fail() -> None:
    ids = _ids(100)
    before = {q: 0.5 for q in ids}
    # noisy deltas: +0.3 / -0.34 alternating, mean -0.02
    after = {q: 0.5 + (0.3 if i % 2 else -0.34) for i, q in enumerate(ids)}
    baseline = save_baseline(Summary(runs=[_continuous_run(dict(before))]))
    [c] = compare(Summary(runs=[_continuous_run(dict(after))]), baseline, "f1", 1.0)
    assert c.delta == pytest.approx(-0.02)
    assert c.p_value is not None and c.p_value > 0.3
    assert not c.failed
    assert "not significant" in c.message


def test_drop_exactly_at_the_margin_does_not_fail() -> None:
    ids = _ids(50)
    before = {q: 0.6 for q in ids}
    after = {q: 0.58 for q in ids}
    baseline = save_baseline(Summary(runs=[_continuous_run(dict(before))]))
    [c] = compare(Summary(runs=[_continuous_run(dict(after))]), baseline, "f1", 2.0)
    assert c.p_value == 0.0  # every question dropped: certainly significant
    assert not c.failed  # but not by MORE than 2 points
    assert "within the allowed 2.0 points" in c.message


def test_round3_applies_per_question() -> None:
    baseline = save_baseline(Summary(runs=[_continuous_run({"q001": 0.4004, "q002": 0.4004})]))
    current = Summary(runs=[_continuous_run({"q001": 0.3996, "q002": 0.3996})])
    [raw] = compare(current, baseline, "f1", 0.0)
    [rounded] = compare(current, baseline, "f1", 0.0, round3=["f1"])
    assert raw.delta == pytest.approx(-0.0008)
    assert rounded.delta == 0.0  # both round to 0.400


# --- one-sided questions and runs -----------------------------------------------------------


def test_questions_on_one_side_are_listed() -> None:
    before = {"q001": 0.5, "q002": 0.5, "q003": 0.5, "q004": 0.5, "q009": 0.7}
    after: dict[str, float | None] = {"q001": 0.4, "q002": 0.4, "q003": None, "q004": 0.5}
    after["q010"] = 0.9
    after["q011"] = 0.1
    baseline = save_baseline(Summary(runs=[_continuous_run(dict(before))]))
    [c] = compare(Summary(runs=[_continuous_run(after)]), baseline, "f1", 2.0)
    assert c.paired == 3
    assert c.only_current == ("q010", "q011")
    assert c.only_baseline == ("q009",)
    assert c.no_value == ("q003",)
    assert "only in this run, not in the baseline (2): q010, q011" in c.details
    assert "only in the baseline, not in this run (1): q009" in c.details
    assert "no f1 value on one side, not paired (1): q003" in c.details


def test_correct_pseudo_metric_counts_errors_as_wrong_and_skips_unscored() -> None:
    baseline = save_baseline(
        Summary(
            runs=[
                aggregate_run(
                    "locomo",
                    "bm25",
                    "",
                    [
                        _result("q001", STATUS_CORRECT, {}, "bm25"),
                        _result("q002", STATUS_CORRECT, {}, "bm25"),
                        _result("q003", STATUS_CORRECT, {}, "bm25"),
                    ],
                    CATS,
                    [],
                )
            ]
        )
    )
    current = aggregate_run(
        "locomo",
        "bm25",
        "",
        [
            _result("q001", STATUS_ERROR, {}, "bm25"),
            _result("q002", STATUS_UNSCORED, {}, "bm25"),
            _result("q003", STATUS_CORRECT, {}, "bm25"),
        ],
        CATS,
        [],
    )
    [c] = compare(Summary(runs=[current]), baseline, "correct", 0.0)
    assert c.paired == 2
    assert c.flipped_to_wrong == ("q001",)
    assert c.no_value == ("q002",)


def test_runs_on_one_side_are_reported_not_failed() -> None:
    current, baseline = _flipped(10)
    other = _binary_run({"q001": True}, system="mem0")
    results = compare(Summary(runs=[*current.runs, other]), baseline, "correct", 2.0)
    assert [(c.system, c.failed) for c in results] == [("bm25", True), ("mem0", False)]
    assert results[1].message == (
        "regression: locomo (mem0) has no run in the baseline; not compared."
    )
    assert results[1].only_current == ("q001",)
    missing = compare(Summary(runs=[other]), baseline, "correct", 2.0)
    assert missing[1].message == (
        "regression: locomo (bm25) is in the baseline but did not run in this session; "
        "not compared."
    )
    assert len(missing[1].only_baseline) == 100 and not missing[1].compared


def test_metric_missing_on_both_sides_is_not_compared() -> None:
    current, baseline = _flipped(10)
    [c] = compare(current, baseline, "bleu1", 2.0)
    assert not c.failed and c.paired == 0 and c.test == ""
    assert c.message == (
        "regression: locomo (bm25) bleu1 over all categories: no question has a bleu1 value in both the "
        "baseline and this run; not compared."
    )
    assert c.details == (
        f"no bleu1 value on one side, not paired (100): {', '.join(_ids(20))}, ... and 80 more",
    )


def test_compare_rejects_bad_alpha() -> None:
    current, baseline = _flipped(3)
    with pytest.raises(MemevalError, match="--memeval-alpha"):
        compare(current, baseline, "correct", 2.0, alpha=1.5)


# --- baseline files -------------------------------------------------------------------------


def test_save_and_load_roundtrip(tmp_path: Path) -> None:
    current, _ = _flipped(0)
    current.runs[0].results[0].scores["f1"] = math.nan
    current.provenance["plugin"] = "0.1"
    data = save_baseline(current)
    assert data["schema"] == BASELINE_SCHEMA
    run = data["runs"][0]
    assert (run["benchmark"], run["system"], run["flow"]) == ("locomo", "bm25", "")
    first = run["questions"]["q000"]
    assert first == {
        "status": "CORRECT",
        "category": "single-hop",
        "cluster": "q000",
        "scores": {"judge": 1.0, "f1": None},
        "health": "ok",
    }
    assert run["summary"]["overall"]["count"] == 100
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data, allow_nan=False), encoding="utf-8")
    assert load_baseline(path) == data


def test_load_accepts_a_json_report(tmp_path: Path) -> None:
    current, baseline = _flipped(10)
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            Summary(runs=[_binary_run({q: i < 80 for i, q in enumerate(_ids(100))})]).to_dict()
        ),
        encoding="utf-8",
    )
    loaded = load_baseline(report)
    assert loaded["runs"][0]["questions"] == baseline["runs"][0]["questions"]  # type: ignore[index]
    [c] = compare(current, loaded, "correct", 2.0)
    assert c.failed and c.p_value == 2 * 0.5**10


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            "{not json",
            "not valid JSON: Expecting property name enclosed in double quotes at line 1",
        ),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"schema": "other/1", "runs": []}', "schema is 'other/1', expected"),
        (f'{{"schema": "{BASELINE_SCHEMA}"}}', "'runs' must be a list"),
        (
            f'{{"schema": "{BASELINE_SCHEMA}", "runs": [{{"system": "x"}}]}}',
            "run 0: 'benchmark' must be a string",
        ),
        (
            f'{{"schema": "{BASELINE_SCHEMA}", "runs": [{{"benchmark": "b", "system": "s", '
            '"questions": []}]}',
            "run 0 (b / s): 'questions' must be an object",
        ),
        (
            f'{{"schema": "{BASELINE_SCHEMA}", "runs": [{{"benchmark": "b", "system": "s", '
            '"questions": {"q1": {"status": "CORRECT", "scores": {"f1": "high"}}}}]}',
            "run 0 (b / s), question 'q1': score 'f1' must be a number or null",
        ),
        (
            f'{{"schema": "{BASELINE_SCHEMA}", "runs": [{{"benchmark": "b", "system": "s", '
            '"questions": {"q1": {"scores": {}}}}]}',
            "run 0 (b / s), question 'q1': 'status' must be a string",
        ),
        (
            f'{{"schema": "{BASELINE_SCHEMA}", "runs": [], "x": NaN}}',
            "not valid JSON: NaN is not valid JSON",
        ),
    ],
)
def test_load_bad_content_names_file_and_problem(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(MemevalError) as info:
        load_baseline(path)
    message = str(info.value)
    assert message.startswith(f"--memeval-baseline {path}: ")
    assert problem in message
    assert "--memeval-save-baseline=PATH" in message


def test_load_missing_binary_and_oversized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MemevalError, match=r"nope\.json: file not found"):
        load_baseline(tmp_path / "nope.json")
    with pytest.raises(MemevalError, match="not a regular file"):
        load_baseline(tmp_path)
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(MemevalError, match=r"b\.json: not UTF-8 text \(byte 0\)"):
        load_baseline(binary)
    big = tmp_path / "big.json"
    big.write_text('{"schema": "x"}', encoding="utf-8")
    monkeypatch.setattr(regression, "MAX_BASELINE_BYTES", 10)
    with pytest.raises(MemevalError, match=r"big\.json: file is 15 bytes, larger than the 256 MB"):
        load_baseline(big)


# --- --memeval-max-drop ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("f1:2", ("f1", 2.0)),
        (" judge : 0.5 ", ("judge", 0.5)),
        ("recall_all@5:3%", ("recall_all@5", 3.0)),
        ("correct:0", ("correct", 0.0)),
    ],
)
def test_parse_max_drop_good(text: str, expected: tuple[str, float]) -> None:
    assert parse_max_drop(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("f1", "no ':' between metric and points"),
        (":2", "the metric is missing"),
        ("f1:", "the points are missing"),
        ("f1:two", "points 'two' is not a number"),
        ("f1:-1", "points must be a finite number >= 0"),
        ("f1:nan", "points must be a finite number >= 0"),
        ("f 1:2", "metric 'f 1' is not valid"),
    ],
)
def test_parse_max_drop_bad(text: str, problem: str) -> None:
    with pytest.raises(MemevalError) as info:
        parse_max_drop(text)
    message = str(info.value)
    assert message.startswith(f"--memeval-max-drop {text!r}: ")
    assert problem in message
    assert "expected [CATEGORY.]METRIC:POINTS, e.g. f1:2" in message


# --- the headline selection and the health gate (issue 34) -----------------------------------

ADVERSARIAL = [
    CategoryMeta("single-hop", 4, "fact-recall"),
    CategoryMeta("adversarial", 5, "abstention", in_overall=False),
]


def _searched(qid: str, f1: float, category: str, returned: int) -> QuestionResult:
    r = make_result(qid, scores={"f1": f1}, category=category)
    r.latency = {"search": 0.001}
    r.details["memories_returned"] = returned
    return r


def _abstaining(empty: bool) -> Summary:
    """40 single-hop questions and 20 adversarial ones; an empty system scores 0 on the first
    and 1.0 on the second (its answerer abstains)."""
    results = [
        _searched(f"q{i:03d}", 0.0 if empty else 0.6, "single-hop", 0 if empty else 5)
        for i in range(40)
    ] + [
        _searched(f"q{i:03d}", 1.0 if empty else 0.0, "adversarial", 0 if empty else 5)
        for i in range(40, 60)
    ]
    return Summary(runs=[aggregate_run("locomo", "mem", "", results, ADVERSARIAL, ["f1"])])


def test_the_gate_pairs_the_scoreboard_headline_not_every_category() -> None:
    base = save_baseline(_abstaining(False))
    [c] = compare(_abstaining(True), base, "f1", 2.0)
    # over all 60 questions the mean falls only 0.400 -> 0.333 (the abstentions on category 5
    # score 1.0): the gate reads the headline (single-hop) and quotes the scoreboard's figures
    assert c.row == "overall" and c.selection == "categories excl. adversarial [5]"
    assert c.paired == 40 and c.failed
    assert (c.scoreboard_before, c.scoreboard_after) == (pytest.approx(0.6), 0.0)
    assert "(0.600 -> 0.000 on the scoreboard, delta -0.600" in c.message
    [by_cat] = [d for d in c.details if d.startswith("f1 by category")]
    assert "single-hop 0.600 -> 0.000 (-0.600, n=40)" in by_cat
    assert "adversarial* 0.000 -> 1.000 (+1.000, n=20)" in by_cat
    # every category, and one category by name or id
    [all_cats] = compare(_abstaining(True), base, "overall_all.f1", 2.0)
    assert all_cats.paired == 60 and all_cats.selection == "all categories"
    [five] = compare(_abstaining(True), base, "5.f1", 2.0)
    assert five.row == "adversarial" and five.paired == 20 and not five.failed
    assert "did not drop (0.000 -> 1.000 on the scoreboard" in five.message


def test_health_gate_counts_empty_searches_errors_and_unscored() -> None:
    base = save_baseline(_abstaining(False))
    [h] = regression.compare_health(_abstaining(True), base)
    assert h.failed and h.rise == pytest.approx(1.0)
    assert h.after == {"error": 0, "unscored": 0, "empty": 60}
    assert h.message.startswith(
        "health FAILED: locomo (mem): 60 of 60 questions (100.0%) got no memories, raised or "
        "went unscored, against 0 of 60 questions (0.0%) in the baseline (+100.0 points"
    )
    [same] = regression.compare_health(_abstaining(False), base)
    assert not same.failed and same.rise == 0.0
    # a baseline written before the gate: empty searches unknown, errors still compared
    for q in base["runs"][0]["questions"].values():  # type: ignore[index]
        del q["health"]
    path_free = regression._validate("old.json", json.loads(json.dumps(base)))
    [old] = regression.compare_health(_abstaining(True), path_free)
    assert not old.failed and old.before["empty"] is None
    assert any("written before the health gate" in d for d in old.details)


def test_question_health() -> None:
    assert regression.question_health(STATUS_ERROR, None, False) == "error"
    assert regression.question_health(STATUS_UNSCORED, 3, True) == "unscored"
    assert regression.question_health(STATUS_CORRECT, 0, True) == "empty"
    # a system that answers itself has no search: never "empty"
    assert regression.question_health(STATUS_CORRECT, 0, False) == "ok"


def test_the_default_comparison_says_it_decides_nothing() -> None:
    current, baseline = _flipped(10)
    [c] = compare(current, baseline, "correct", 0.0, gated=False)
    assert c.failed  # the verdict of the test stands; only its wording says it gates nothing
    assert c.message.startswith(
        "regression would fail (not gated: no --memeval-max-drop): locomo (bm25) correct"
    )
