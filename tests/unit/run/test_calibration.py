"""Judge calibration, pure parts: perturbations, Wilson intervals, tables, gate figures, the
audit file reader and the option checks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import scipy.stats
from calibration_files import audit_doc
from file_server import FileServer, Reply, serve_files

from pytest_memeval.analysis import (
    Outcome,
    Rate,
    is_calibration_metric,
    kind_metric,
    metric_value,
    negation,
    parse_gate,
    perturb,
    summarize,
    wilson_interval,
    wrong_date,
    wrong_entity,
)
from pytest_memeval.benchmarks.locomo import (
    AUDIT_COMMIT,
    AUDIT_SETS,
    load_audit_set,
    load_wrong_file,
    match_answers,
    parse_audit,
)
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Question
from pytest_memeval.report import Summary
from pytest_memeval.run._calibrate import (
    CalibrationError,
    build_cases,
    calibration_settings,
    file_kind,
)

# --------------------------------------------------------------------------- perturbations


@pytest.mark.parametrize(
    "gold",
    ["7 May 2023", "The sunday before 25 May 2023", "2022", "Monday, 3 March 2024", "December"],
)
def test_wrong_date_changes_every_date_part(gold: str) -> None:
    wrong = wrong_date(gold)
    assert wrong is not None and wrong != gold
    assert wrong_date(gold) == wrong  # deterministic
    for year in ("2022", "2023", "2024"):
        if year in gold:
            assert str(int(year) - 1) in wrong
    assert len(wrong.split()) == len(gold.split())  # same shape, other values


def test_wrong_date_wraps_months_and_weekdays() -> None:
    assert wrong_date("December") == "January"
    assert wrong_date("on sunday") == "on monday"
    assert wrong_date("no date here") is None
    assert wrong_date("3 weeks") is None


def test_wrong_entity_replaces_names_from_the_pool() -> None:
    pool = ["Lena", "Kyoto", "Pixel", "Edinburgh"]
    out = wrong_entity("q1", "her sister Lena", pool, [])
    assert out is not None and out.startswith("her sister ") and "Lena" not in out
    assert out.removeprefix("her sister ") in pool
    assert wrong_entity("q1", "her sister Lena", pool, []) == out
    # openers, months and weekdays are not names
    assert wrong_entity("q2", "The week before", pool, []) is None


def test_wrong_entity_without_names_swaps_a_disjoint_gold() -> None:
    golds = ["adoption agencies", "pottery classes", "adoption papers"]
    out = wrong_entity("q3", "adoption agencies", [], golds)
    assert out == "pottery classes"  # the only same-category gold sharing no word


@pytest.mark.parametrize(
    ("gold", "expected"),
    [
        ("Yes", "No"),
        ("no", "yes"),
        ("Likely yes; she loves pottery", "Likely no"),
        ("beagle", "Not beagle"),
        ("The week before 26 February 2024", "Not the week before 26 February 2024"),
        ("", None),
    ],
)
def test_negation(gold: str, expected: str | None) -> None:
    assert negation(gold) == expected


def test_perturb_never_returns_the_gold() -> None:
    kinds = perturb("q", "2024", ["Lena"], ["2024"])
    assert set(kinds) <= {"wrong-entity", "wrong-date", "negation"}
    assert all(v.strip().lower() != "2024" for v in kinds.values())
    assert kinds["wrong-date"] == "2023"


# --------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (3, 10), (10, 10), (57, 200), (1, 1540)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ref = scipy.stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(ref.low, abs=1e-12)
    assert high == pytest.approx(ref.high, abs=1e-12)


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="0 <= accepted <= n"):
        wilson_interval(3, 2)
    assert Rate(0, 0).to_dict() == {"n": 0, "accepted": 0, "rate": None, "ci": None}


# --------------------------------------------------------------------------- tables


def _outcome(category: str, kind: str, status: str, judge: str = "openai:m") -> Outcome:
    return Outcome("locomo", judge, f"{category}-{kind}", "c1", category, kind, "x", status)


def _outcomes() -> list[Outcome]:
    out = []
    for i in range(4):
        out.append(_outcome("temporal", "gold", "accepted" if i < 3 else "rejected"))
        out.append(_outcome("temporal", "wrong-date", "accepted" if i < 1 else "rejected"))
        out.append(_outcome("single-hop", "negation", "accepted" if i < 2 else "rejected"))
    out.append(_outcome("single-hop", "gold", "unscored"))
    out.append(_outcome("single-hop", "gold", "skipped"))
    out.append(_outcome("single-hop", "audit-v2", "error"))
    return out


def test_summarize_counts_per_category_and_overall() -> None:
    (table,) = summarize(_outcomes(), {"locomo": ["single-hop", "temporal"]})
    assert table["judge"] == "openai:m"
    assert [r["category"] for r in table["rows"]] == ["single-hop", "temporal", "overall"]
    single, temporal, overall = table["rows"]
    assert temporal["correct"]["n"] == 4 and temporal["correct"]["accepted"] == 3
    assert temporal["wrong"]["rate"] == 0.25
    assert single["correct"]["n"] == 0 and single["unscored"] == 1 and single["skipped"] == 1
    assert single["errors"] == 1
    assert overall["wrong"]["n"] == 8 and overall["wrong"]["accepted"] == 3
    assert list(overall["wrong_by_kind"]) == ["wrong-date", "negation"]  # built-in kind order
    assert overall["correct"]["ci"] == list(wilson_interval(3, 4))


def test_metric_value_and_names() -> None:
    (table,) = summarize(_outcomes())
    overall = table["rows"][-1]
    assert metric_value(overall, "judge_true_accept") == (0.75, None)
    assert metric_value(overall, "judge_false_accept") == (3 / 8, None)
    assert metric_value(overall, kind_metric("wrong-date")) == (0.25, None)
    value, reason = metric_value(overall, "judge_false_accept_audit_v1")
    assert value is None and reason is not None and "judge_false_accept_negation" in reason
    assert is_calibration_metric("judge_false_accept_wrong_entity")
    assert not is_calibration_metric("judge") and not is_calibration_metric("judge_std")


def _summary(outcomes: list[Outcome]) -> Summary:
    return Summary(runs=[], judge_calibration={"tables": summarize(outcomes)})


def test_gates_on_calibration_figures() -> None:
    outcomes = [
        *_outcomes(),
        _outcome("temporal", "wrong-date", "rejected", judge="anthropic:j"),
        _outcome("temporal", "gold", "accepted", judge="anthropic:j"),
    ]
    summary = _summary(outcomes)
    worst = parse_gate("locomo.overall.judge_false_accept<=0.3").check(summary)
    assert not worst.passed and worst.actual == pytest.approx(3 / 8)
    assert "judge openai:m" in worst.message and "0.375 > 0.300" in worst.message
    only = parse_gate("locomo[anthropic:j].temporal.judge_false_accept<=0.3").check(summary)
    assert only.passed and only.actual == 0.0
    assert parse_gate("locomo.temporal.judge_true_accept>=75%").check(summary).passed
    missing = parse_gate("locomo.open-domain.judge_false_accept<=0.1").check(summary)
    assert not missing.passed and "no category 'open-domain'" in missing.message
    nobody = parse_gate("locomo[x:y].overall.judge_false_accept<=0.1").check(summary)
    assert not nobody.passed and "judge 'x:y' was not calibrated" in nobody.message
    off = parse_gate("locomo.overall.judge_false_accept<=0.1").check(Summary(runs=[]))
    assert not off.passed and "--memeval-judge-calibration" in off.message


# --------------------------------------------------------------------------- audit files


def _q(conv: str, index: int, text: str, gold: str = "g", category: str = "temporal") -> Question:
    return Question(f"{conv}-q{index}", conv, category, text, gold, index=index)


def test_parse_and_match_audit_answers() -> None:
    questions = [_q("a", 1, "When?"), _q("a", 2, "Who?"), _q("b", 1, "Where?")]
    answers = parse_audit(
        audit_doc([(0, 0, "When?", "last year"), (1, 0, "Where?", "Paris"), (0, 1, "Why?", "no")]),
        "f.json",
    )
    matched, missed = match_answers(answers, questions)
    assert matched == {"a-q1": "last year", "b-q1": "Paris"}
    assert missed == 1  # a-q2's text differs: never guessed


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"[1]", "no 'detailed_results' object"),
        (b"{", "invalid JSON"),
        (b'{"detailed_results": {"u": 3}}', "must be a list of answers"),
        (b'{"detailed_results": {"u": [{"question_id": "q1"}]}}', "locomo_<K>_qa<N>"),
        (
            b'{"detailed_results": {"u": [{"question_id": "locomo_0_qa0", "question": "q"}]}}',
            "field 'generated_answer'",
        ),
        (b'{"detailed_results": {}}', "holds no answers"),
    ],
)
def test_bad_audit_files_name_the_record(doc: bytes, message: str) -> None:
    with pytest.raises(DatasetError, match=r"bad\.json") as err:
        parse_audit(doc, "bad.json")
    assert message in str(err.value)
    assert "expected" in str(err.value) or "ap_eval_results.json" in str(err.value)


def test_build_cases_uses_the_file_positions(tmp_path: Path) -> None:
    every = [_q("a", 1, "When?", "7 May 2023"), _q("a", 2, "Who?", "Lena", "single-hop")]
    path = tmp_path / "my answers.json"
    path.write_bytes(audit_doc([(0, 1, "Who?", "Marta"), (0, 0, "When?", "June")]))
    ws = load_wrong_file(path, file_kind(str(path)))
    assert (
        ws.kind == "file-my_answers" and ws.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    )
    cs = build_cases("locomo", every[1:], every, perturbations=False, wrong_sets=[ws])
    assert [(c.question.id, c.kind, c.answer) for c in cs.cases] == [
        ("a-q2", "gold", "Lena"),
        ("a-q2", "file-my_answers", "Marta"),
    ]
    assert cs.unmatched == {"file-my_answers": 0}


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    body = audit_doc([(0, 0, "q", "a")])
    with serve_files(fallback=lambda path: Reply(body)) as srv:
        yield srv


def test_audit_set_download_is_pinned(tmp_path: Path, file_server: FileServer) -> None:
    base = file_server.base
    sha = hashlib.sha256(audit_doc([(0, 0, "q", "a")])).hexdigest()
    ws = load_audit_set("audit-v2", None, tmp_path, base_url=base, sha256=sha)
    repo_path = AUDIT_SETS["audit-v2"][0]
    assert file_server.requests == [f"/dial481/locomo-audit/{AUDIT_COMMIT}/{repo_path}"]
    assert ws.path == tmp_path / "data" / "locomo-audit" / repo_path and len(ws.answers) == 1
    assert ws.provenance()["commit"] == AUDIT_COMMIT and not ws.provenance()["sha256_mismatch"]
    load_audit_set("audit-v2", None, tmp_path, base_url=base, sha256=sha)
    assert len(file_server.requests) == 1  # cached: not downloaded again
    with pytest.raises(DatasetError, match="sha256"):
        load_audit_set("audit-v1", None, tmp_path, base_url=base, sha256="0" * 64)


def test_audit_set_from_the_data_folder_records_a_mismatch(tmp_path: Path) -> None:
    local = tmp_path / "locomo-audit" / AUDIT_SETS["audit-v1"][0]
    local.parent.mkdir(parents=True)
    local.write_bytes(audit_doc([(0, 0, "q", "a")]))
    ws = load_audit_set("audit-v1", tmp_path, tmp_path / "cache")
    assert ws.source == "data_dir" and ws.provenance()["sha256_mismatch"] is True


# --------------------------------------------------------------------------- settings


def test_calibration_settings(tmp_path: Path) -> None:
    judges = ["openai:m"]
    assert calibration_settings(None, None, benchmarks=["demo"], judges=judges) is None
    s = calibration_settings("before", None, benchmarks=["locomo"], judges=judges)
    assert s is not None and s.sources == ("perturb", "audit-v1", "audit-v2")
    s = calibration_settings("ONLY", "perturb", benchmarks=["demo"], judges=judges)
    assert s is not None and (s.mode, s.sources) == ("only", ("perturb",))
    path = tmp_path / "w.json"
    path.write_text("{}")
    s = calibration_settings("only", f"{path},perturb", benchmarks=["demo"], judges=judges)
    assert s is not None and s.sources == (str(path), "perturb")
    for mode, wrong, bench, js, message in [
        ("sometimes", None, ["demo"], judges, "expected 'before'"),
        ("only", None, ["demo"], [], "add --memeval-judge=PROVIDER:MODEL"),
        ("only", "locomo-audit", ["demo"], judges, "are for --memeval=locomo"),
        ("only", "nope.json", ["demo"], judges, "not a known source and not a file"),
        (None, "perturb", ["demo"], judges, "needs --memeval-judge-calibration"),
    ]:
        with pytest.raises(CalibrationError, match=message):
            calibration_settings(mode, wrong, benchmarks=bench, judges=js)
