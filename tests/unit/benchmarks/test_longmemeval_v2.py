"""LongMemEval-V2: loader of questions / trajectories / haystack tiers (shape, errors naming file /
record / field), and the scorer against upstream ``evaluation/qa_eval_metrics.py`` (recorded
verdicts always; live on random inputs when the pinned upstream snapshot is present, see
tests/lme2_upstream.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lme2_upstream import expand, load_upstream, upstream_file_bytes, upstream_verdict

from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.benchmarks.longmemeval_v2._loader import (
    parse_questions,
    parse_trajectories,
    stream_jsonl,
)
from pytest_memeval.benchmarks.longmemeval_v2._pins import UPSTREAM as PINNED
from pytest_memeval.benchmarks.longmemeval_v2._scorer import extract_boxed, parse_spec, score_reply
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Prediction

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "longmemeval_v2"
DATA = FIXTURES / "data"
VECTORS = json.loads((FIXTURES / "upstream_vectors.json").read_text("utf-8"))
UPSTREAM = load_upstream()
live = pytest.mark.skipif(UPSTREAM is None, reason="no upstream LongMemEval-V2 snapshot here")


def _load(tmp_path: Path, data_dir: Path | None = DATA, variant: str | None = None) -> Any:
    return get_benchmark("longmemeval-v2").load(LoadRequest(data_dir, tmp_path, variant))


def test_recorded_upstream_vectors_equal_ours() -> None:
    rows = expand(VECTORS)
    mismatches = [
        (spec, reply, answer, want)
        for spec, reply, answer, want in rows
        if score_reply(parse_spec(spec), reply, answer) != want
    ]
    assert len(rows) > 10000 and mismatches == []
    positives = VECTORS["score"].count("1")
    assert positives > 500  # the vectors exercise matches, not only misses


@live
def test_loader_files_are_the_pinned_ones() -> None:
    import hashlib

    for path, digest in PINNED.loader.items():
        raw = upstream_file_bytes(path)
        assert raw is not None and hashlib.sha256(raw).hexdigest() == digest, path


_SPEC = st.sampled_from(
    [
        "norm_phrase_set_match",
        "norm_phrase_set_match|separators=",
        "norm_phrase_set_match|strip_punct=false|lower=false",
        "norm_phrase_set_match_ordered",
        "norm_phrase_set_match_ordered|separators=,",
        "mc_choice_match",
        "mc_choice_match|strip_chars=.)",
        "mc_choice_set_match",
        "llm_abstention_checker",
    ]
)
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@live
@settings(max_examples=400, deadline=None)
@given(
    spec=_SPEC,
    reply=_TEXT
    | st.sampled_from(["\\boxed{A, C}", "\\boxed{UNKNOWN}", "Option b.", "\\boxed{x {y}"]),
    answer=_TEXT | st.sampled_from(["A", "A, C", "Sales; Report", "-_-", "x y"]),
)
def test_live_upstream_equals_ours(spec: str, reply: str, answer: str) -> None:
    assert UPSTREAM is not None
    assert score_reply(parse_spec(spec), reply, answer) == upstream_verdict(
        UPSTREAM, spec, reply, answer
    )


def test_extract_boxed_and_unknown() -> None:
    assert extract_boxed("a \\boxed{x} b \\boxed{ {y} z }") == "{y} z"
    assert extract_boxed("  \\boxed{ }  ") == "\\boxed{ }"
    assert score_reply(parse_spec("llm_gotchas_checker"), "\\boxed{Unknown}", "x") == {
        "lme2_unknown": 1.0,
        "lme2_score": 0.0,
    }
    assert score_reply(parse_spec("llm_gotchas_checker"), "verify e-mail", "x") == {
        "lme2_unknown": 0.0
    }


def test_loader_items_categories_and_haystacks(tmp_path: Path) -> None:
    ds = _load(tmp_path)
    by_id = {q.id: q for q in ds.questions}
    assert [q.id for q in ds.questions][:2] == ["q_static_1", "q_proc_1"]
    assert len(ds.questions) == 6
    assert by_id["q_static_abs_1"].abstention and not by_id["q_static_1"].abstention
    assert by_id["q_dyn_1"].category == "dynamic-environment"
    # questions sharing a haystack share a conversation
    assert by_id["q_static_1"].conversation_id == by_id["q_dyn_1"].conversation_id
    assert by_id["q_gotcha_1"].conversation_id != by_id["q_static_1"].conversation_id
    conv = ds.conversation(by_id["q_gotcha_1"].conversation_id)
    assert [s.id for s in conv.sessions] == ["web_traj_001", "web_traj_002", "web_traj_003"]
    first = conv.sessions[0].turns
    assert first[0].text.startswith("Goal: Find the monthly sales report")
    assert "Action: click [Reports]" in first[2].text and "Reports > Sales" in first[2].text
    assert set(ds.sha256) == {
        "longmemeval-v2/questions.jsonl",
        "longmemeval-v2/trajectories.jsonl",
        "longmemeval-v2/haystacks/lme_v2_small.json",
    }
    medium = _load(tmp_path, variant="medium")
    assert len({q.conversation_id for q in medium.questions}) == 2
    with pytest.raises(DatasetError, match="unknown tier 'large'"):
        _load(tmp_path, variant="large")


def test_scores_use_the_question_spec(tmp_path: Path) -> None:
    bench = get_benchmark("longmemeval-v2")
    by_id = {q.id: q for q in _load(tmp_path).questions}
    assert bench.score(by_id["q_static_1"], Prediction("\\boxed{Sales under Reports}")) == {
        "lme2_unknown": 0.0,
        "lme2_score": 1.0,
    }
    ordered = bench.score(by_id["q_proc_1"], Prediction("Orders, Sales, Reports"))
    assert ordered["lme2_score"] == 0.0
    assert bench.score(by_id["q_dyn_1"], Prediction("\\boxed{Option B.}"))["lme2_score"] == 1.0
    assert bench.score(by_id["q_ent_1"], Prediction("\\boxed{A, B}"))["lme2_score"] == 0.0
    assert "lme2_score" not in bench.score(by_id["q_gotcha_1"], Prediction("verify it"))


_GOOD = {
    "id": "q1",
    "domain": "web",
    "question_type": "procedure",
    "question": "How?",
    "image": None,
    "answer": "a",
    "eval_function": "norm_phrase_set_match",
}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"id": ""}, "record line 1, field 'id'"),
        ({"question_type": "other"}, "record q1, field 'question_type': unknown question type"),
        ({"domain": "mobile"}, "field 'domain'"),
        ({"question": "  "}, "field 'question'"),
        ({"answer": 3}, "field 'answer'"),
        ({"eval_function": "exact_match"}, "field 'eval_function': unknown eval function"),
        ({"eval_function": "mc_choice_match|oops"}, "invalid option 'oops'"),
        ({"eval_function": "norm_phrase_set_match|strip_chars=x"}, "no option 'strip_chars'"),
        ({"eval_function": "norm_phrase_set_match|separators=[1]"}, "separators must be"),
        ({"eval_function": "llm_abstention_checker"}, "needs an -abs question_type"),
        ({"image": ""}, "field 'image'"),
        ({"answer": "\ud800"}, "lone UTF-16"),
    ],
)
def test_bad_questions_name_file_record_field(change: dict[str, Any], needle: str) -> None:
    raw = json.dumps({**_GOOD, **change}).encode()
    with pytest.raises(DatasetError) as exc:
        parse_questions(raw, "DIR/longmemeval-v2/questions.jsonl")
    assert "questions.jsonl" in str(exc.value) and needle in str(exc.value)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "d")
    return tmp_path / "d" / "longmemeval-v2"


def test_bad_trajectories_and_haystacks(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "trajectories.jsonl").write_text('{"id": "t1", "goal": "g", "states": 3}\n')
    with pytest.raises(DatasetError, match=r"trajectories\.jsonl.*record t1, field 'states'"):
        _load(tmp_path / "c", tmp_path / "d")
    (folder / "trajectories.jsonl").write_text('{"id": "t1", "goal": "g", "states": []}\n{x\n')
    with pytest.raises(DatasetError, match=r"trajectories\.jsonl: line 2 is not valid JSON"):
        _load(tmp_path / "c", tmp_path / "d")
    (folder / "trajectories.jsonl").write_bytes(b'{"id": "t1", "goal": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"trajectories\.jsonl: line 1 is not valid UTF-8"):
        _load(tmp_path / "c", tmp_path / "d")
    (folder / "trajectories.jsonl").write_text('{"id": "t1", "goal": "\\ud800", "states": []}')
    with pytest.raises(DatasetError, match=r"trajectories\.jsonl.*line 1.*lone UTF-16"):
        _load(tmp_path / "c", tmp_path / "d")
    shutil.copy(DATA / "longmemeval-v2" / "trajectories.jsonl", folder)
    hay = folder / "haystacks" / "lme_v2_small.json"
    hay.write_text(json.dumps({"q_static_1": ["web_traj_001", "nope"]}))
    with pytest.raises(DatasetError, match=r"lme_v2_small\.json.*q_static_1.*unknown trajectory"):
        _load(tmp_path / "c", tmp_path / "d")
    hay.write_text(json.dumps({"q_static_1": ["web_traj_001"]}))
    with pytest.raises(DatasetError, match="no haystack entry for question 'q_proc_1'"):
        _load(tmp_path / "c", tmp_path / "d")
    hay.unlink()
    with pytest.raises(DatasetError, match=r"lme_v2_small\.json.*missing.*upstream's layout"):
        _load(tmp_path / "c", tmp_path / "d")


def test_trajectories_stream_and_keep_only_the_haystacks(tmp_path: Path) -> None:
    import hashlib

    path = DATA / "longmemeval-v2" / "trajectories.jsonl"
    digest = hashlib.sha256()
    kept = parse_trajectories(stream_jsonl(path, digest), str(path), {"web_traj_002"})
    assert list(kept) == ["web_traj_002"]
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    ds = _load(tmp_path)
    assert ds.sha256["longmemeval-v2/trajectories.jsonl"] == digest.hexdigest()
    with pytest.raises(DatasetError, match="not a regular file"):
        list(stream_jsonl(DATA, hashlib.sha256()))
