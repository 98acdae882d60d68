"""User-memory suite loader: YAML cases, gold facts, bad input, keyword recall."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_memeval.benchmarks._base import Benchmark, LoadRequest
from pytest_memeval.benchmarks.usermem import BENCHMARK, parse_gold_facts
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Prediction


def _case(test_id: str = "layer1_01_bank", layer: str = "layer1", **over: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "test_id": test_id,
        "category": layer,
        "title": "Bank account",
        "description": "Recall the account number",
        "conversation_histories": [
            {
                "conversation_id": "bank_001",
                "timestamp": "2024-10-15 11:00:00",
                "metadata": {"business": "Bank", "call_duration": "5 minutes"},
                "messages": [
                    {"role": "user", "content": "Open an account please."},
                    {"role": "assistant", "content": "Your account number is 4429853327."},
                ],
            }
        ],
        "user_question": "What is my account number?",
        "evaluation_criteria": "The agent must give 4429853327.",
    }
    case.update(over)
    return case


def _tree(root: Path, cases: list[dict[str, Any]], facts: Any = None) -> Path:
    for case in cases:
        layer = case.get("category", "layer1")
        path = root / "usermem" / "test_cases" / layer / f"{case.get('test_id', 'x')}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(case, sort_keys=False), encoding="utf-8")
    if facts is not None:
        fpath = root / "usermem" / "fixtures" / "gold_facts.json"
        fpath.parent.mkdir(parents=True, exist_ok=True)
        fpath.write_text(json.dumps(facts), encoding="utf-8")
    return root


def _req(root: Path | None) -> LoadRequest:
    return LoadRequest(data_dir=root, cache_dir=Path("/nonexistent-cache"))


def test_protocol() -> None:
    assert isinstance(BENCHMARK, Benchmark)
    assert list(BENCHMARK.categories) == ["layer1", "layer2", "layer3"]
    assert tuple(BENCHMARK.metrics) == ("keyword_recall",)
    assert BENCHMARK.pass_metric == "keyword_recall"


def test_records(tmp_path: Path) -> None:
    facts = {
        "_comment": "ignored",
        "layer1_01_bank": {"required_facts": ["4429853327", ["Bank", "bank"]]},
    }
    two = _case(
        "layer2_01_two",
        "layer2",
        expected_behavior="Mention both accounts",
        conversation_histories=[
            _case()["conversation_histories"][0],
            {
                "id": "legacy_002",  # legacy key for the id, legacy message forms
                "timestamp": "2024-08-25",
                "conversation": [{"user": "hi"}, {"representative": "hello"}],
            },
        ],
    )
    ds = BENCHMARK.load(_req(_tree(tmp_path, [_case(), two], facts)))
    assert [q.id for q in ds.questions] == ["layer1_01_bank", "layer2_01_two"]
    q1, q2 = ds.questions
    assert q1.conversation_id == "layer1_01_bank" and q1.category == "layer1"
    assert q1.question == "What is my account number?"
    assert q1.gold == "The agent must give 4429853327."  # no expected_behavior -> criteria
    assert q2.gold == "Mention both accounts"
    assert q1.meta["facts"] == (("4429853327",), ("Bank", "bank"))
    assert q2.meta["facts"] == ()
    assert q1.meta["title"] == "Bank account"
    assert q1.meta["evaluation_criteria"] == "The agent must give 4429853327."
    assert q2.meta["expected_behavior"] == "Mention both accounts"
    assert [q.index for q in ds.questions] == [0, 1]
    c2 = ds.conversation("layer2_01_two")
    assert [s.id for s in c2.sessions] == ["bank_001", "legacy_002"]
    assert [s.date for s in c2.sessions] == [datetime(2024, 10, 15, 11), datetime(2024, 8, 25)]
    assert c2.sessions[0].meta["metadata"]["business"] == "Bank"
    assert [(t.id, t.speaker, t.text) for t in c2.sessions[1].turns] == [
        ("legacy_002:1", "user", "hi"),
        ("legacy_002:2", "assistant", "hello"),
    ]
    assert ds.meta["cases_with_facts"] == 1
    assert len(ds.sha256) == 3


def test_legacy_criteria_mapping_and_bom(tmp_path: Path) -> None:
    case = _case(
        evaluation_criteria={
            "description": "Give the number",
            "required_information": ["account number"],
            "success_indicators": ["says 4429853327"],
        }
    )
    root = _tree(tmp_path, [case])
    path = next((root / "usermem" / "test_cases" / "layer1").glob("*.yaml"))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    q = BENCHMARK.load(_req(root)).questions[0]
    assert q.gold == (
        "Give the number\nRequired information:\n- account number\n"
        "Success indicators:\n- says 4429853327"
    )


def test_no_data_dir_explains_memeval_data() -> None:
    with pytest.raises(DatasetError, match="--memeval-data"):
        BENCHMARK.load(_req(None))


def test_empty_or_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="folder not found"):
        BENCHMARK.load(_req(tmp_path))
    (tmp_path / "usermem" / "test_cases" / "layer1").mkdir(parents=True)
    with pytest.raises(DatasetError, match="no YAML cases"):
        BENCHMARK.load(_req(tmp_path))


def test_yaml_that_does_not_parse(tmp_path: Path) -> None:
    root = _tree(tmp_path, [_case()])
    bad = root / "usermem" / "test_cases" / "layer1" / "broken.yaml"
    bad.write_text("test_id: x\nconversation_histories: [\n  - oops: {\n")
    with pytest.raises(DatasetError, match="YAML does not parse at line") as info:
        BENCHMARK.load(_req(root))
    assert info.value.path == str(bad)


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    root = _tree(tmp_path, [])
    bad = root / "usermem" / "test_cases" / "layer1" / "evil.yaml"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("test_id: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(DatasetError, match="YAML does not parse"):
        BENCHMARK.load(_req(root))


@pytest.mark.parametrize(
    ("mutate", "record", "field", "text"),
    [
        (lambda c: c.pop("test_id"), None, "test_id", "missing test_id"),
        (lambda c: c.update(category="layer9"), "layer1_01_bank", "category", "unknown category"),
        (lambda c: c.pop("user_question"), "layer1_01_bank", "user_question", "missing"),
        (
            lambda c: c.pop("evaluation_criteria"),
            "layer1_01_bank",
            "evaluation_criteria",
            "missing",
        ),
        (
            lambda c: c.update(conversation_histories=[]),
            "layer1_01_bank",
            "conversation_histories",
            "empty",
        ),
        (
            lambda c: c["conversation_histories"][0].pop("timestamp"),
            "layer1_01_bank history 1",
            "timestamp",
            "missing timestamp",
        ),
        (
            lambda c: c["conversation_histories"][0]["messages"].append(
                {"role": "bot", "content": "x"}
            ),
            "layer1_01_bank history 1",
            "messages",
            "message 3",
        ),
        (
            lambda c: c["conversation_histories"].append(dict(c["conversation_histories"][0])),
            "layer1_01_bank history 2",
            "conversation_id",
            "duplicate",
        ),
    ],
)
def test_bad_cases_name_file_record_field(
    tmp_path: Path, mutate: Any, record: str | None, field: str, text: str
) -> None:
    case = _case()
    mutate(case)
    root = _tree(tmp_path, [])
    path = root / "usermem" / "test_cases" / "layer1" / "case.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(case))
    with pytest.raises(DatasetError, match=text) as info:
        BENCHMARK.load(_req(root))
    assert info.value.path == str(path)
    assert info.value.record == record
    assert info.value.field == field


def test_duplicate_test_id(tmp_path: Path) -> None:
    root = _tree(tmp_path, [_case()])
    copy = root / "usermem" / "test_cases" / "layer1" / "zz_copy.yaml"
    copy.write_text(yaml.safe_dump(_case()))
    with pytest.raises(DatasetError, match="duplicate test_id") as info:
        BENCHMARK.load(_req(root))
    assert info.value.path == str(copy) and info.value.record == "layer1_01_bank"


def test_bad_gold_facts(tmp_path: Path) -> None:
    root = _tree(tmp_path, [_case()], {"layer1_99_typo": {"required_facts": ["x"]}})
    with pytest.raises(DatasetError, match="no YAML case") as info:
        BENCHMARK.load(_req(root))
    assert info.value.record == "layer1_99_typo"
    with pytest.raises(DatasetError, match="fact 1") as info:
        parse_gold_facts({"a": {"required_facts": ["ok", []]}}, "f.json")
    assert info.value.field == "required_facts"
    assert parse_gold_facts({"a": ["x", ["y", "z"]], "_c": "note"}, "f.json") == {
        "a": (("x",), ("y", "z"))
    }
    (root / "usermem" / "fixtures" / "gold_facts.json").write_text('{"a": ')
    with pytest.raises(
        DatasetError, match=r"invalid or truncated JSON at line 1, column .*at the end of the file"
    ):
        BENCHMARK.load(_req(root))


def test_score(tmp_path: Path) -> None:
    facts = {"layer1_01_bank": {"required_facts": ["4429853327", ["Chase Freedom", "Freedom"]]}}
    ds = BENCHMARK.load(_req(_tree(tmp_path, [_case(), _case("layer1_02", "layer1")], facts)))
    q1, q2 = ds.questions
    assert BENCHMARK.score(q1, Prediction(text="It is 4429853327 and   FREEDOM card")) == {
        "keyword_recall": 1.0
    }
    assert BENCHMARK.score(q1, Prediction(text="It is 4429853327")) == {"keyword_recall": 0.5}
    assert BENCHMARK.score(q2, Prediction(text="anything")) == {}  # no facts: not scored


# --------------------------------------------------------------------------- real data


def test_real_cases(real_data: Callable[..., Path]) -> None:
    ds = BENCHMARK.load(_req(real_data("usermem", "test_cases").parents[1]))
    assert len(ds.questions) == 60
    per_layer: dict[str, int] = defaultdict(int)
    for q in ds.questions:
        per_layer[q.category] += 1
        assert q.id.startswith(q.category + "_")
    assert dict(per_layer) == {"layer1": 20, "layer2": 20, "layer3": 20}
    histories = [len(ds.conversation(q.id).sessions) for q in ds.questions]
    assert sum(histories) == 140
    assert all(h == 1 for h in histories[:20])
    n_messages = sum(len(s.turns) for q in ds.questions for s in ds.conversation(q.id).sessions)
    assert n_messages == 13042
    assert sum(1 for q in ds.questions if q.meta["facts"]) == 8
    assert sum(1 for q in ds.questions if q.meta["expected_behavior"]) == 19
    q = next(q for q in ds.questions if q.id == "layer2_01_multiple_vehicles")
    assert q.question.startswith("I need to schedule service for my car.")
    assert q.gold.startswith("The agent should recognize the ambiguity")  # type: ignore[union-attr]
    assert q.meta["facts"] == (("Honda Accord",), ("Tesla Model 3",), ("FS-447291",))
    conv = ds.conversation(q.id)
    assert [s.id for s in conv.sessions] == ["auto_insurance_001", "auto_service_001"]
    assert conv.sessions[0].date == datetime(2024, 10, 15, 11, 0)
    assert conv.sessions[0].meta["metadata"]["business"] == "State Farm Insurance"


def test_replay_reproduces_published_keyword_recall(real_data: Callable[..., Path]) -> None:
    data = real_data("usermem", "fixtures", "system_responses.example.json").parents[2]
    ds = BENCHMARK.load(_req(data))
    by_id = {q.id: q for q in ds.questions}
    responses = json.loads(
        (data / "usermem" / "fixtures" / "system_responses.example.json").read_text()
    )
    results: dict[str, tuple[float, dict[str, float]]] = {}
    for system, answers in responses.items():
        if system.startswith("_"):
            continue
        per_layer: dict[str, list[float]] = defaultdict(list)
        for test_id, text in answers.items():
            scores = BENCHMARK.score(by_id[test_id], Prediction(text=text))
            per_layer[by_id[test_id].category].append(scores["keyword_recall"])
        values = [v for vs in per_layer.values() for v in vs]
        assert len(values) == 8
        results[system] = (
            round(sum(values) / len(values), 3),  # per-case (micro) mean, as published
            {layer: round(sum(v) / len(v), 3) for layer, v in sorted(per_layer.items())},
        )
    assert results["full_context"][0] == 1.0
    assert results["json_cards"][0] == 1.0
    assert results["simple_notes"] == (
        0.323,
        {"layer1": 0.417, "layer2": 0.333, "layer3": 0.125},
    )
    assert results["no_memory"][0] == 0.0
