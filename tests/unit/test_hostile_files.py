"""Untrusted files and values (issue 26, breaks 8, 10, 11): 5000-digit ids in errata and
calibration files, a protocol source nested 300k deep, a service date whose UTC instant is before
year 1, a baseline holding 1e308 or escape codes, memories citing ids that are not turns of the
conversation. Each is one clear error (or a clean value), never a traceback."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import pytest
from calibration_files import audit_doc
from errata_data import errata_entries, locomo_data
from fakes import ScriptedClient

from pytest_memeval.analysis import BASELINE_SCHEMA, load_baseline
from pytest_memeval.answerers import Mem0Answerer, format_date, order_memories
from pytest_memeval.benchmarks import parse_audit_entries
from pytest_memeval.benchmarks.locomo import BENCHMARK as LOCOMO
from pytest_memeval.benchmarks.locomo import parse_audit, parse_locomo
from pytest_memeval.errors import DatasetError, JudgeError, MemevalError
from pytest_memeval.metrics import evidence_recall
from pytest_memeval.protocols import (
    PROFILES,
    ProtocolSourceError,
    SourceText,
    StringRef,
    Template,
    UpstreamFile,
    extract,
)
from pytest_memeval.records import Memory, Prediction, Question
from pytest_memeval.systems import memory_from_dict, memory_from_wire

HUGE = "9" * 5000

# ---- evidence recall counts only the conversation's own ids ------------------------------------


def test_evidence_recall_drops_ids_outside_the_conversation() -> None:
    valid = {"D1:1", "D1:2", "S1"}
    assert evidence_recall(["D9:9"], ["D9:9"]) == 1.0  # upstream's inputs: all ids count
    assert evidence_recall(["D9:9"], ["D9:9"], valid_ids=valid) == 0.0
    assert evidence_recall(["D9:9", "D1:2"], ["D1:2", "D9:9"], valid_ids=valid) == 0.5
    assert evidence_recall(["D1:2, D7:7"], ["D1:2", "D7:7"], valid_ids=valid) == 0.5
    # an invented S id cannot switch to the session branch either
    assert evidence_recall(["S9", "D1:1"], ["D1:1"], valid_ids=valid) == 1.0
    assert evidence_recall(["S1"], ["D1:2"], valid_ids=valid) == 1.0


def test_a_memory_claiming_every_id_gains_nothing_from_ids_that_do_not_exist() -> None:
    data = locomo_data()
    qa = data[0]["qa"][0]
    qa["evidence"] = ["D1:1", "D30:5"]  # the second is not a turn of conv-a (an annotation slip)
    parsed = parse_locomo(json.dumps(data).encode(), "locomo10.json")
    question = parsed.questions[0]
    every = tuple(f"D{s}:{t}" for s in range(1, 41) for t in range(1, 41))
    claim = Prediction("beagle", (Memory("everything", source_ids=every),))
    assert LOCOMO.score(question, claim)["evidence_recall"] == 0.5  # was 1.0
    fake_only = Prediction("beagle", (Memory("m", source_ids=("D30:5", "D99:1")),))
    assert LOCOMO.score(question, fake_only)["evidence_recall"] == 0.0  # was 0.5


# ---- dates out of range ----------------------------------------------------------------------

EARLY = "0001-01-01T00:00:00+14:00"  # 13 hours before year 1 in UTC


def test_a_date_before_year_one_in_utc_stays_text_and_orders_last() -> None:
    memory = memory_from_wire({"text": "t", "date": EARLY}, "svc")
    assert memory.date == EARLY  # kept as the text it came as, not a datetime
    assert memory_from_dict({"text": "t", "date": EARLY}).date == EARLY
    # an in-process system may hand over the datetime itself: the answerer never raises
    aware = datetime.fromisoformat(EARLY)
    memories = [Memory("a", date=aware), Memory("b", date=EARLY), Memory("c", date="2023-05-08")]
    assert [m.text for m in order_memories(memories)] == ["c", "a", "b"]
    assert format_date(EARLY) == EARLY


# ---- errata and calibration ids -------------------------------------------------------------


def test_an_errata_id_with_5000_digits_is_one_error_naming_the_field() -> None:
    parsed = parse_locomo(json.dumps(locomo_data()).encode(), "locomo10.json")
    entry = copy.deepcopy(errata_entries()[0][0])
    entry["question_id"] = f"locomo_{HUGE}_qa1"
    with pytest.raises(DatasetError) as info:
        parse_audit_entries(
            [entry],
            "errors_conv_0.json",
            list(parsed.questions),
            [c.id for c in parsed.conversations],
        )
    text = str(info.value)
    assert "errors_conv_0.json" in text and "question_id" in text and "locomo_0_qa1" in text
    assert len(text) < 400


def test_a_calibration_id_with_5000_digits_is_one_error_naming_the_field() -> None:
    doc = json.loads(audit_doc([(0, 0, "What breed is Rex?", "poodle")]))
    group = next(iter(doc["detailed_results"].values()))
    group[0]["question_id"] = f"locomo_0_qa{HUGE}"
    with pytest.raises(DatasetError) as info:
        parse_audit(json.dumps(doc).encode(), "wrong.json")
    text = str(info.value)
    assert "wrong.json" in text and "question_id" in text and len(text) < 400


# ---- a protocol source nested 300k deep ------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    ["-" * 300_000 + "1", "1+" * 300_000 + "1", "not " * 300_000 + "1"],
    ids=["unary", "sum", "not"],
)
def test_a_protocol_source_nested_300k_deep_is_one_error(expr: str) -> None:
    source = SourceText(UpstreamFile("o/r", "0" * 40, "p.py", "0" * 64), f"X = {expr}\n", "m")
    with pytest.raises(ProtocolSourceError, match=r"o/r@000000000000:p.py: cannot parse it as"):
        extract(source, StringRef("constant", "A"))


# ---- baselines -------------------------------------------------------------------------------


def _baseline(tmp_path: Path, system: str, qid: str, value: float) -> Path:
    path = tmp_path / "base.json"
    question = {"status": "CORRECT", "category": "single-hop", "scores": {"f1": value}}
    run = {"benchmark": "demo", "system": system, "flow": "", "questions": {qid: question}}
    prov = {"judge_metric": None}
    path.write_text(json.dumps({"schema": BASELINE_SCHEMA, "provenance": prov, "runs": [run]}))
    return path


def test_a_baseline_score_of_1e308_is_refused_on_load(tmp_path: Path) -> None:
    with pytest.raises(MemevalError) as info:
        load_baseline(_baseline(tmp_path, "bm25", "demo-1-q1", 1e308))
    text = str(info.value)
    assert "score 'f1' is 1e+308, outside" in text and "demo-1-q1" in text
    assert load_baseline(_baseline(tmp_path, "bm25", "demo-1-q1", 0.5))["runs"]


def test_names_in_a_baseline_lose_their_escape_codes_on_load(tmp_path: Path) -> None:
    loaded = load_baseline(_baseline(tmp_path, "bm25\x1b[2J", "q\x1b]0;x\x07", 0.5))
    run = loaded["runs"][0]
    assert run["system"] == "bm25\\x1b[2J"
    assert list(run["questions"]) == ["q\\x1b]0;x\\x07"]


# ---- answer-prompt templates (break 7) -------------------------------------------------------


def _mem0(text: str) -> Mem0Answerer:
    shape = PROFILES["mem0"].answer
    assert shape is not None
    return Mem0Answerer(ScriptedClient("ANSWER: x"), Template((text,)), shape)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "a call"),
        ("{% for a in question %}{% for b in question %}x{% endfor %}{% endfor %}", "a loop inside"),
        ("{{ 'x' * 200000000 }}", "the * operator"),
        ("{{ 'x' ** 3 }}", "the ** operator"),
        ("{% include 'other.txt' %}", "{% include %}"),
        ("{% extends 'base.txt' %}", "{% extends %}"),
        ("{% import 'm.txt' as m %}", "{% import %}"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "{% macro %}"),
        ("{{ question | center(1000000000) }}", "the center filter"),
    ],
    ids=["ranges", "nested", "mul", "pow", "include", "extends", "import", "recursion", "center"],
)  # fmt: skip
def test_a_hostile_answer_prompt_is_one_error_when_it_is_read(text: str, refused: str) -> None:
    with pytest.raises(JudgeError) as info:
        _mem0(text)
    message = str(info.value)
    assert f"uses {refused}" in message and "\n" not in message


def test_a_prompt_rendering_past_its_output_bound_fails_once_then_at_once() -> None:
    question = Question("q1", "c1", "single-hop", "x" * 1000, "")
    answerer = _mem0("{% for c in question %}" + "y" * 5000 + "{% endfor %}")
    with pytest.raises(JudgeError, match="renders more than"):
        answerer.render(question, [])
    with pytest.raises(JudgeError, match="renders more than"):  # the same line, without rendering
        answerer.render(question, [])
    # the pinned shape renders
    ok = _mem0("{% for c in question %}{{ c }}{% endfor %} {{ speaker_1_memories }}")
    assert ok.render(question, []).startswith("x" * 1000)


# ---- LongMemEval's task-averaged accuracy with a type absent ---------------------------------


def test_the_macro_row_says_which_types_it_averaged() -> None:
    from fakes import make_result

    from pytest_memeval.analysis import CategoryMeta, aggregate_run

    metas = [CategoryMeta("temporal-reasoning", None, ""), CategoryMeta("multi-session", None, "")]
    metas.append(CategoryMeta("knowledge-update", None, ""))
    results = [
        make_result("a", category="temporal-reasoning", scores={"judge_lme": 1.0}),
        make_result("b", category="multi-session", scores={"judge_lme": 0.0}),
    ]
    run = aggregate_run("longmemeval", "s", "", results, metas, ["judge_lme"])
    assert run.macro is not None and run.macro.metrics["judge_lme"] == 0.5
    (note,) = run.notes
    assert "the mean of the 2 categories present; absent: knowledge-update" in note
    assert "nan" in note
