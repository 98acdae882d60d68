"""Judges: parsers on canned replies (edge cases of docs/scoring.md#judges), the judge flow through
a scripted fake LLM client, templates, the registry and Cohen's kappa. No HTTP."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from fakes import ScriptedClient, make_question

from pytest_memeval.errors import JudgeError
from pytest_memeval.judges import (
    DEFAULT_STYLE,
    BeamNuggetJudge,
    GradedJudge,
    JudgeResult,
    LongMemEvalJudge,
    Mem0Judge,
    UserMemJudge,
    cohen_kappa,
    get_judge,
    load_template,
    template_sha256,
)
from pytest_memeval.judges._base import extract_json_mem0, parse_json_object
from pytest_memeval.judges._beam import (
    item_value,
    official_rubric_score,
    parse_beam_json,
)
from pytest_memeval.judges._graded import graded_stats, parse_graded_score
from pytest_memeval.judges._longmemeval import official_yes, rule_set_for, strict_yes_no
from pytest_memeval.judges._mem0 import parse_mem0_label
from pytest_memeval.judges._usermem import parse_usermem_reward

# --------------------------------------------------------------------------- fake client


FakeClient = ScriptedClient  # replies ``reply(prompt, run_index)``; records every call


def const(text: str) -> ScriptedClient:
    return ScriptedClient(text)


q = make_question


# --------------------------------------------------------------------------- mem0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"reasoning": "same country", "label": "CORRECT"}', 1.0),
        ('{"label": "WRONG"}', 0.0),
        ('```json\n{"label": "CORRECT"}\n```', 1.0),
        ('Reason: matches.\n{"label": "CORRECT"} done', 1.0),
        ('{"label": "correct"}', 0.0),  # Mem0 compares case-sensitively
        ('{"verdict": "CORRECT"}', None),  # missing key: upstream raises -> UNSCORED
        ("CORRECT", 1.0),  # not JSON, but nothing else: read with a warning
        ("**WRONG**.", 0.0),
        ("Label: CORRECT", 1.0),
        ("**Label:** wrong", 0.0),
        ('{"reasoning": "he said "no" twice", "label": "WRONG"}', 0.0),  # broken JSON
        ("", None),
        ("{broken json", None),
        ("CORRECT or WRONG, hard to say", None),
    ],
)
def test_mem0_parser(reply: str, expected: float | None) -> None:
    value, _reasoning, _warnings = parse_mem0_label(reply)
    assert value == expected


def test_mem0_label_outside_json_warns() -> None:
    value, _, warnings = parse_mem0_label("Label: CORRECT")
    assert value == 1.0
    assert len(warnings) == 1 and "not the JSON" in warnings[0]
    assert parse_mem0_label('{"label": "CORRECT"}')[2] == []


#: Replies SmolLM2-135M-Instruct (Q4_1) gave to the mem0 prompt on LoCoMo (tests/plugin/test_realmodel.py):
#: none has a label, and prose such as "the incorrect answer" must not be read as one.
REAL_SMOLLM2_MEM0_REPLIES = [
    "The answer is: John",
    "The answer is not mentioned.",
    'The answer is: "No problem, always here to have your back."',
    'The reason for the incorrect answer is that the reference answer "improving shooting '
    'percentage" does not match the subject of the reference.',
    "The reason for the incorrect answer is that the reference answer was longer than the "
    "subject of the project, which\nwas a drone.",
    'The answer to the question "Which year did Audrey adopt the first three of her dogs?" is '
    "2023-11-04.",
    "I'm glad to hear that you're enjoying the support group and have a great team. I'll make "
    "sure to keep it upbeat, and I hope we can continue to support each other in the future."
    '\n\nYour answer:\n"2023-05-14 (Monday) 13:56: Caroline: Thank you, Melanie!"',
]


@pytest.mark.parametrize("reply", REAL_SMOLLM2_MEM0_REPLIES)
def test_mem0_real_small_model_replies_are_unscored(reply: str) -> None:
    assert parse_mem0_label(reply) == (None, None, [])


def test_mem0_real_small_model_bare_label() -> None:
    # SmolLM2's whole reply on conv-41-q1 (prediction "John"); Mem0's own parser would raise
    value, _, warnings = parse_mem0_label("CORRECT\n")
    assert value == 1.0 and len(warnings) == 1


def test_mem0_extract_json_order() -> None:
    assert extract_json_mem0('  ```\n{"a": 1}\n```  ') == '{"a": 1}'
    assert extract_json_mem0('x {"a": {"b": 2}} y') == '{"a": {"b": 2}}'
    assert extract_json_mem0("no json here") == "no json here"


def test_mem0_lowercase_label_warns() -> None:
    value, _, warnings = parse_mem0_label('{"label": "correct"}')
    assert value == 0.0
    assert len(warnings) == 1 and "case-sensitive" in warnings[0]


def test_mem0_judge_flow() -> None:
    client = const('{"reasoning": "Same place.", "label": "CORRECT"}')
    result = Mem0Judge().judge(q(), "from Sweden", client)
    assert result.scores == {"judge_mem0": 1.0}
    assert not result.unscored and not result.skipped
    assert result.reasoning == "Same place."
    assert result.raw == ['{"reasoning": "Same place.", "label": "CORRECT"}']
    (call,) = client.calls
    assert call.temperature == 0.0 and call.role == "judge"
    assert "Where did Caroline move from?" in call.prompt
    assert "Sweden" in call.prompt and "from Sweden" in call.prompt


def test_mem0_judge_unscored_keeps_raw() -> None:
    result = Mem0Judge().judge(q(), "x", const("I think it is right"))
    assert result.unscored
    assert result.scores == {"judge_mem0": None}
    assert result.raw == ["I think it is right"]
    d = result.to_dict()
    assert d["unscored"] is True and d["raw"] == ["I think it is right"]
    assert JudgeResult.from_dict(json.loads(json.dumps(d))) == result


def test_mem0_skips_locomo_category_5() -> None:
    client = const('{"label": "CORRECT"}')
    result = Mem0Judge().judge(q(category="adversarial", category_id=5, gold=None), "x", client)
    assert result.skipped
    assert result.scores == {}
    assert not result.unscored
    assert client.calls == []


# --------------------------------------------------------------------------- graded


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"score": 85, "explanation": "close"}', 85.0),
        ('```json\n{"score": 72.5, "explanation": "ok"}\n```', 72.5),
        ('{"score": "90"}', 90.0),
        ('{"score": 150}', None),  # JSON score out of range: the run failed
        ("I would give it 85/100.", 85.0),
        ("85 out of 100", 85.0),
        ("**Score:** 70", 70.0),
        ('score = "90"', 90.0),
        ("85", 85.0),
        ("Score: -5 then 40", None),  # the score given is out of range; 40 is not a score
        ("Rating 250 out of 1000", None),
        ("It matches 2 of the 3 facts.", None),  # a count is not a score
        ("no number at all", None),
        ("", None),
    ],
)
def test_graded_parser(reply: str, expected: float | None) -> None:
    assert parse_graded_score(reply)[0] == expected


#: Replies SmolLM2-135M-Instruct (Q4_1) gave to the graded prompt at temperature 0.5 on LoCoMo
#: (tests/plugin/test_realmodel.py), with the score each must give. Before the parser stopped taking
#: "the first number in [0, 100]", the dates and ids in them were read as scores (19, 13, 10, 1).
REAL_SMOLLM2_GRADED_REPLIES = [
    ('{"score": 1, "explanation": "[<three sentences>]"}', 1.0),
    ('JSON:\n{\n  "score": 0,\n  "explanation": <single sentence>\n}', 0.0),  # invalid JSON
    (
        '```json\n{\n  "score": 0,\n  "explanation": "The answer is: "No problem, always here '
        'to have your back.""\n}',
        0.0,
    ),
    ("19 January, 2023\nJon: Hey Gina, I'm excited about starting my own business!", None),
    ("A: 1\nThe answer is: John", None),
    (
        'JSON:\n{\n  "id": 10,\n  "name": {\n    "description": {\n      "category": '
        '"long-term memory",\n      "referenced_by": "Shelly"\n    }\n  }\n}',
        None,
    ),
    (
        '{\n  "id": 1,\n  "games_played": [\n    {\n      "game_title": "2023-09-21 (Thursday) '
        '20:17: Tim",\n      "player_score": "48.6"\n    }\n  ]\n}',
        None,
    ),
    ('"2023-06-14: 7.9\nYou are correct, I was right and the answer is 2023-06-14."', None),
    ("You are a helpful AI assistant named SmolLM, trained by Hugging Face", None),
    ("The assistant's answer is 7, and it involves a small omission or imprecision.", None),
    ('"No problem, always here to have your back.\nYour answer is a lie."', None),
    ('{\n  "category": "multi-hop",\n  "type": "match_score"\n}', None),
]


@pytest.mark.parametrize(("reply", "expected"), REAL_SMOLLM2_GRADED_REPLIES)
def test_graded_real_small_model_replies(reply: str, expected: float | None) -> None:
    assert parse_graded_score(reply)[0] == expected


def test_graded_stats_seed_example() -> None:
    scores = [70, 72, 68, 71, 73, 69, 70, 72, 71, 70]
    mean, std = graded_stats([float(s) for s in scores])
    assert mean == pytest.approx(70.6)
    assert std == pytest.approx(1.5055, abs=1e-4)  # sample std (n-1), not 1.4283
    assert graded_stats([55.0]) == (55.0, 0.0)
    assert graded_stats([]) == (None, None)


def _graded_client(scores: Sequence[int | None]) -> FakeClient:
    def reply(_prompt: str, run_index: int) -> str:
        s = scores[run_index]
        return (
            "garbage" if s is None else json.dumps({"score": s, "explanation": f"run {run_index}"})
        )

    return FakeClient(reply)


def test_graded_judge_ten_runs() -> None:
    client = _graded_client([70, 72, 68, 71, 73, 69, 70, 72, 71, 70])
    result = GradedJudge(runs=10).judge(q(), "Sweden", client)
    assert result.scores["judge_graded"] == pytest.approx(0.706)
    assert result.scores["judge_graded_std"] == pytest.approx(0.015055, abs=1e-6)
    assert result.scores["judge_graded_runs"] == 10
    assert not result.unscored and result.warnings == []
    assert len(result.raw) == 10
    assert sorted(c.run_index for c in client.calls) == list(range(10))
    assert {c.temperature for c in client.calls} == {0.5}
    assert {c.max_tokens for c in client.calls} == {256}
    assert "single-hop" in client.calls[0].prompt  # category label is in the prompt


def test_graded_two_failures_no_warning() -> None:
    # docs/scoring.md#graded-judge: 8 of 10 successes is not "fewer than half"
    result = GradedJudge(runs=10).judge(q(), "x", _graded_client([80] * 8 + [None, None]))
    assert result.scores["judge_graded_runs"] == 8
    assert result.scores["judge_graded"] == pytest.approx(0.8)
    assert result.scores["judge_graded_std"] == 0.0
    assert result.warnings == []


def test_graded_fewer_than_half_warns() -> None:
    result = GradedJudge(runs=10).judge(q(), "x", _graded_client([60, 80, 70, 90] + [None] * 6))
    assert not result.unscored
    assert result.scores["judge_graded_runs"] == 4
    assert result.scores["judge_graded"] == pytest.approx(0.75)
    # sample std of 60,70,80,90 = sqrt(1666.67/3) = 12.9099
    assert result.scores["judge_graded_std"] == pytest.approx(0.129099, abs=1e-6)
    assert len(result.warnings) == 1 and "4 of 10" in result.warnings[0]
    assert result.details["individual_scores"][4] is None


def test_graded_half_exactly_no_warning() -> None:
    result = GradedJudge(runs=4).judge(q(), "x", _graded_client([50, 50, None, None]))
    assert result.warnings == []
    assert result.scores["judge_graded_runs"] == 2


def test_graded_all_failed_unscored() -> None:
    result = GradedJudge(runs=3).judge(q(), "x", const("cannot say"))
    assert result.unscored
    assert result.scores["judge_graded"] is None
    assert result.raw == ["cannot say"] * 3


def test_graded_runs_go_out_in_parallel() -> None:
    barrier = threading.Barrier(5, timeout=60)  # only reached if the runs were sequential

    def reply(_p: str, _i: int) -> str:
        barrier.wait()  # would time out if the runs were sequential
        return '{"score": 50}'

    result = GradedJudge(runs=5).judge(q(), "x", FakeClient(reply))
    assert result.scores["judge_graded_runs"] == 5


# --------------------------------------------------------------------------- longmemeval


@pytest.mark.parametrize(
    ("reply", "strict", "official"),
    [
        ("yes", True, True),
        ("Yes.", True, True),
        ("no", False, False),
        ("No.", False, False),
        ("no, not yes", None, True),
        ("", None, False),
        ("  **YES**  ", True, True),
        ("The answer matches.\nyes", True, True),
        ("yes\nActually, no", True, True),
        ("Yes\n\nNo.\n", False, True),
        ("maybe", None, False),
        ("Yesterday", None, True),
        ('"no"', False, False),
    ],
)
def test_longmemeval_parsers(reply: str, strict: bool | None, official: bool) -> None:
    assert strict_yes_no(reply) is strict
    assert official_yes(reply) is official


@pytest.mark.parametrize(
    ("category", "qid", "abstention", "rule"),
    [
        ("single-session-user", "a1b2c3d4", False, "standard"),
        ("single-session-assistant", "a1b2c3d4", False, "standard"),
        ("multi-session", "gpt4_12345678", False, "standard"),
        ("temporal-reasoning", "a1b2c3d4", False, "temporal"),
        ("knowledge-update", "a1b2c3d4", False, "knowledge-update"),
        ("single-session-preference", "a1b2c3d4", False, "preference"),
        ("multi-session", "a1b2c3d4_abs", False, "abstention"),
        ("temporal-reasoning", "a1b2c3d4", True, "abstention"),
    ],
)
def test_longmemeval_rule_selection(category: str, qid: str, abstention: bool, rule: str) -> None:
    question = q(id=qid, category=category, category_id=category, abstention=abstention)
    assert rule_set_for(question) == rule


def test_longmemeval_unknown_type_raises() -> None:
    with pytest.raises(JudgeError, match="unknown question type"):
        rule_set_for(q(category="mystery", category_id=None))


def test_longmemeval_templates_differ_by_rule() -> None:
    judge = LongMemEvalJudge()
    prompts = {}
    for category, qid in [
        ("single-session-user", "x"),
        ("temporal-reasoning", "x"),
        ("knowledge-update", "x"),
        ("single-session-preference", "x"),
        ("multi-session", "x_abs"),
    ]:
        client = const("yes")
        judge.judge(q(id=qid, category=category), "resp", client)
        (call,) = client.calls
        assert call.temperature == 0.0 and call.max_tokens == 10
        prompts[category] = call.prompt
    assert len(set(prompts.values())) == 5
    assert "off by one" in prompts["temporal-reasoning"]
    assert "rubric" in prompts["single-session-preference"].lower()
    assert "unanswerable" in prompts["multi-session"]
    assert len(judge.prompt_hashes) == 5


def test_longmemeval_judge_scores_and_disagreement() -> None:
    judge = LongMemEvalJudge()
    question = q(category="single-session-user")
    agree = judge.judge(question, "r", const("Yes."))
    assert agree.scores == {"judge_lme": 1.0, "judge_lme_substring": 1.0}
    assert agree.warnings == [] and agree.details["official_differs"] is False

    differ = judge.judge(question, "r", const("no, not yes"))
    assert differ.unscored
    assert differ.scores == {"judge_lme": None, "judge_lme_substring": 1.0}
    assert differ.details["official_differs"] is True
    assert "UNSCORED" in differ.warnings[0]

    empty = judge.judge(question, "r", const(""))
    assert empty.unscored and empty.scores["judge_lme_substring"] == 0.0

    flipped = judge.judge(question, "r", const("yes\nno"))
    assert flipped.scores == {"judge_lme": 0.0, "judge_lme_substring": 1.0}
    assert "differs" in flipped.warnings[0]


def test_longmemeval_template_folder_override(tmp_path: Path) -> None:
    (tmp_path / "longmemeval_temporal.txt").write_text(
        "TEMPORAL {question} | {gold} | {prediction}", encoding="utf-8"
    )
    judge = get_judge("longmemeval", template_path=str(tmp_path))
    client = const("yes")
    judge.judge(q(category="temporal-reasoning", gold="19 days"), "18 days", client)
    assert client.calls[0].prompt == "TEMPORAL Where did Caroline move from? | 19 days | 18 days"
    client2 = const("yes")
    judge.judge(q(category="multi-session"), "x", client2)
    assert client2.calls[0].prompt.startswith("You check whether")  # built-in kept


# --------------------------------------------------------------------------- beam


def test_beam_parser_variants() -> None:
    assert parse_beam_json('{"score": 1.0, "reason": "ok"}') == {"score": 1.0, "reason": "ok"}
    assert parse_beam_json('```json\n{"score": 0.5, "reason": "part"}\n```') == {
        "score": 0.5,
        "reason": "part",
    }
    assert parse_beam_json('Here: {"score": 0.0} end') == {"score": 0.0}
    assert parse_beam_json("total junk") is None


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (1.0, 1.0),
        (0.5, 0.5),
        (0, 0.0),
        ("1", 1.0),
        ("0.5", 0.5),
        (0.8, 1.0),
        (2, None),
        (None, None),
        (True, None),
        ("nan", None),
        (10**400, None),  # beyond float range: unscored, not an OverflowError
    ],
)
def test_beam_item_value(raw: object, value: float | None) -> None:
    assert item_value(raw)[0] == value


def test_scores_beyond_float_range_are_unscored() -> None:
    huge = "1" + "0" * 400
    assert parse_graded_score('{"score": ' + huge + "}")[0] is None
    assert parse_usermem_reward('{"reward": ' + huge + "}")[0] is None


#: the rubric-aggregation vectors (docs/scoring.md#rubric-nuggets;
#: shared/vectors/retrieval_and_beam_vectors.json,
#: "beam" entries with a judge_json): (case, rubric length, judge reply, official score or None
#: where upstream raised ValueError)
BEAM_RUBRIC_VECTORS = [
    ("score 1.0 each", 2, '{"score": 1.0}', 1.0),
    ("score 0.5 each (int-truncated)", 2, '{"score": 0.5}', 0.0),
    ("score 0.5 as string", 1, '{"score": "0.5"}', None),
    ("score 1 as string", 1, '{"score": "1"}', 1.0),
    ("score 1.0 as string", 1, '{"score": "1.0"}', None),
    ("fenced json", 1, '```json\n{"score": 1.0, "reason": "ok"}\n```', 1.0),
]


@pytest.mark.parametrize(("case", "n", "reply", "expected"), BEAM_RUBRIC_VECTORS)
def test_beam_official_score_vectors(case: str, n: int, reply: str, expected: float | None) -> None:
    parsed = parse_beam_json(reply)
    assert isinstance(parsed, dict), case
    assert official_rubric_score([parsed["score"]] * n) == expected


def test_beam_vectors_file_agrees(real_data: Callable[..., Path]) -> None:
    """The shared vectors file sits beside $MEMEVAL_DATA_DIR."""
    path = real_data().parent / "vectors" / "retrieval_and_beam_vectors.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    beam = json.loads(path.read_text(encoding="utf-8"))["beam"]
    rows = [v for v in beam if "judge_json" in v]
    assert len(rows) == len(BEAM_RUBRIC_VECTORS)
    for v, (case, n, reply, expected) in zip(rows, BEAM_RUBRIC_VECTORS, strict=True):
        assert (v["case"], v["rubric_len"], v["judge_json"]) == (case, n, reply)
        if isinstance(v["llm_judge_score"], str):
            assert v["llm_judge_score"].startswith("EXCEPTION ValueError") and expected is None
        else:
            assert v["llm_judge_score"] == expected


def test_beam_judge_keeps_half_and_truncates_official() -> None:
    replies = {
        "likes tea": '{"score": 1.0, "reason": "stated"}',
        "mentions Paris": '```json\n{"score": 0.5, "reason": "partly"}\n```',
        "no invented dates": '{"score": 0.0, "reason": "invented"}',
    }

    def reply(prompt: str, _i: int) -> str:
        return next(r for item, r in replies.items() if f"Rubric item: {item}" in prompt)

    client = FakeClient(reply)
    question = q(category="information_extraction", meta={"rubric": list(replies)})
    result = BeamNuggetJudge().judge(question, "some response", client)
    assert result.scores["nugget"] == pytest.approx(0.5)
    assert result.scores["nugget_beam_rule"] == pytest.approx(1 / 3)
    assert len(client.calls) == 3
    assert all(c.temperature == 0.0 for c in client.calls)
    assert all("Where did Caroline move from?" in c.prompt for c in client.calls)
    assert result.details["items_scored"] == 3


def test_beam_event_ordering_official_keeps_half() -> None:
    question = q(category="event_ordering", meta={"rubric": ["a", "b"]})
    result = BeamNuggetJudge().judge(question, "r", const('{"score": 0.5}'))
    assert result.scores == {"nugget": 0.5, "nugget_beam_rule": 0.5}


def test_beam_unparseable_item_is_unscored() -> None:
    def reply(prompt: str, _i: int) -> str:
        return "I refuse" if "Rubric item: b" in prompt else '{"score": 1.0}'

    question = q(category="summarization", meta={"rubric": ["a", "b"]})
    result = BeamNuggetJudge().judge(question, "r", FakeClient(reply))
    assert not result.unscored
    assert result.scores["nugget"] == 1.0  # mean over the scored item
    assert result.scores["nugget_beam_rule"] is None
    assert result.details["items_scored"] == 1
    assert any("item 2" in w for w in result.warnings)


def test_beam_string_half_score() -> None:
    question = q(category="summarization", meta={"rubric": ["a"]})
    result = BeamNuggetJudge().judge(question, "r", const('{"score": "0.5"}'))
    assert result.scores == {"nugget": 0.5, "nugget_beam_rule": None}


def test_beam_all_items_unparseable() -> None:
    question = q(category="summarization", meta={"rubric": ["a", "b"]})
    result = BeamNuggetJudge().judge(question, "r", const("junk"))
    assert result.unscored and result.scores["nugget"] is None
    assert result.raw == ["junk", "junk"]


def test_beam_no_rubric() -> None:
    client = const('{"score": 1}')
    result = BeamNuggetJudge().judge(q(meta={}), "r", client)
    assert result.unscored and client.calls == []


# --------------------------------------------------------------------------- usermem


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ('```json\n{"reward": 0.85, "reasoning": "good"}\n```', 0.85),
        ('```\n{"reward": 0.4}\n```', 0.4),
        ('{"score": 0.7}', 0.7),
        ('{"reward": 1.4}', 1.0),
        ('{"reward": -0.2}', 0.0),
        ('Sure! {"reward": 0.6, "reasoning": "partial"} Hope that helps.', 0.6),
        ("reward: 0.3 (broken {json", 0.3),
        ('{"reasoning": "no number"}', None),
        ("I cannot evaluate this.", None),  # upstream would default to 0.5
        ("", None),
    ],
)
def test_usermem_parser(reply: str, reward: float | None) -> None:
    assert parse_usermem_reward(reply)[0] == reward


def test_usermem_judge_flow() -> None:
    reply = (
        '```json\n{"reward": 0.9, "reasoning": "All details.", '
        '"required_info_found": {"account number": true, "branch": 0.5}}\n```'
    )
    client = const(reply)
    question = q(
        id="layer1_01_bank_account",
        category="layer1",
        question="What is my account number?",
        gold=None,
        meta={
            "title": "Bank account",
            "description": "User opened an account",
            "evaluation_criteria": "Must give account 1234 {exact}",
            "expected_behavior": "States the number",
        },
    )
    result = UserMemJudge().judge(question, "It is 1234", client)
    assert result.scores == {"judge_usermem": 0.9}
    assert result.details["passed"] is True
    assert result.details["required_info_found"] == {"account number": 1.0, "branch": 0.5}
    assert result.reasoning == "All details."
    prompt = client.calls[0].prompt
    assert "Must give account 1234 {exact}" in prompt
    assert "States the number" in prompt and "Bank account" in prompt


def test_usermem_unparseable_is_unscored_not_half() -> None:
    result = UserMemJudge().judge(q(meta={"evaluation_criteria": "c"}), "r", const("hmm"))
    assert result.unscored and result.scores == {"judge_usermem": None}
    assert result.raw == ["hmm"]


# --------------------------------------------------------------------------- templates


def test_template_hash_and_override(tmp_path: Path) -> None:
    text = 'Q={question} G={gold} P={prediction} -> {{"label": "CORRECT"}}'
    path = tmp_path / "mine.txt"
    path.write_text(text, encoding="utf-8")
    judge = get_judge("mem0", template_path=str(path))
    assert judge.prompt_hashes == {"mem0_judge.txt": template_sha256(text)}
    assert template_sha256(text) == __import__("hashlib").sha256(text.encode()).hexdigest()
    client = const('{"label": "CORRECT"}')
    judge.judge(q(), "Sweden", client)
    assert client.calls[0].prompt == (
        'Q=Where did Caroline move from? G=Sweden P=Sweden -> {"label": "CORRECT"}'
    )
    default_hash = get_judge("mem0").prompt_hashes["mem0_judge.txt"]
    assert default_hash != template_sha256(text) and len(default_hash) == 64


def test_braces_in_values_are_not_formatted() -> None:
    client = const('{"label": "WRONG"}')
    nasty = "{gold} {0} {prediction.__class__} {{ } {"
    question = q(question=nasty, gold="{question}")
    result = Mem0Judge().judge(question, "}{ {x}", client)
    assert result.scores == {"judge_mem0": 0.0}
    prompt = client.calls[0].prompt
    assert nasty in prompt and "{question}" in prompt and "}{ {x}" in prompt


@pytest.mark.parametrize(
    "text",
    ["{unknown}", "{question.__class__}", "{question!r}", "{0}", "literal { brace", "{question"],
)
def test_bad_user_templates_rejected(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JudgeError, match=r"bad\.txt"):
        get_judge("graded", template_path=str(path))


def test_missing_template_file(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="cannot read prompt template"):
        get_judge("usermem", template_path=str(tmp_path / "nope.txt"))


def test_builtin_templates_load() -> None:
    for style in ("mem0", "graded", "longmemeval", "beam-nugget", "usermem"):
        judge = get_judge(style)
        assert judge.name == style
        assert judge.prompt_hashes
        assert all(len(h) == 64 for h in judge.prompt_hashes.values())
    tpl = load_template("beam_nugget.txt", ("question", "rubric_item", "prediction", "category"))
    assert tpl.fields == {"question", "rubric_item", "prediction"}


# --------------------------------------------------------------------------- registry


def test_registry() -> None:
    assert DEFAULT_STYLE == {
        "locomo": "mem0",
        "demo": "mem0",
        "longmemeval": "longmemeval",
        "beam": "beam-nugget",
        "usermem": "usermem",
    }
    graded = get_judge("graded", runs=3)
    assert isinstance(graded, GradedJudge) and graded.runs == 3
    with pytest.raises(JudgeError, match="unknown judge style"):
        get_judge("nope")
    with pytest.raises(JudgeError, match="at least 1"):
        get_judge("graded", runs=0)


def test_parse_json_object() -> None:
    assert parse_json_object('text ```json\n{"a": {"b": 1}}\n``` more') == {"a": {"b": 1}}
    assert parse_json_object('prefix {"a": {"b": 1}} suffix') == {"a": {"b": 1}}
    assert parse_json_object("[1, 2]") is None
    assert parse_json_object("nothing") is None


# --------------------------------------------------------------------------- kappa


def test_cohen_kappa_known_values() -> None:
    # textbook example: 50 items; yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    # p_o 0.75, p_e 0.5 -> 0.5
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
    # p_o 0.5, p_e 0.5 -> 0
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.0)


def test_cohen_kappa_degenerate() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1: undefined
    k = cohen_kappa([1, 1, 1, 1], [1, 1, 1, 0])
    assert k is not None and math.isclose(k, 0.0, abs_tol=1e-12)
    with pytest.raises(ValueError, match="length"):
        cohen_kappa([1], [1, 0])


# --------------------------------------------------------------------------- real small-model replies

#: Replies SmolLM2-135M-Instruct (Q4_1) gave to the beam-nugget, usermem and longmemeval prompts
#: (tests/plugin/test_realmodel.py, BEAM 100K conversation 1, usermem layer1_01 / layer2_01, LongMemEval
#: oracle items).
REAL_SMOLLM2_BEAM_REPLY = (
    '"Sure, I can help with that. Here is a JSON response:\n{\n  "score": 1.0,\n  '
    '"reason": "short reason"\n}\n```'
)
REAL_SMOLLM2_BEAM_PROSE = (
    "Sprint 2:\n- **Today:** User: I'm working on sprint 1 which targets analytics by April 19, "
    "and I've completed it with user auth. Can you help me with that?\n\nRubric item: LLM "
    "response should state: March 29"
)
#: a JSON object with no reward; the "score" values nested in it are not the reward
REAL_SMOLLM2_USERMEM_REPLY = (
    '```json\n{\n  "id": 123456789,\n  "description": {\n    "type": "user",\n    "name": '
    '"Bank Account Setup",\n    "level": "admin"\n  },\n  "evaluation_criteria": [\n    {\n'
    '      "id": "0.0-0.2",\n      "score": 15\n    },\n    {\n      "id": "0.4-0.6",\n'
    '      "score": 98\n    }\n  ]\n}\n```'
)


def test_beam_real_small_model_replies() -> None:
    # prose before the JSON and a closing fence without an opening one
    parsed = parse_beam_json(REAL_SMOLLM2_BEAM_REPLY)
    assert parsed == {"score": 1.0, "reason": "short reason"}
    assert item_value(1.0) == (1.0, None)
    assert parse_beam_json(REAL_SMOLLM2_BEAM_PROSE) is None


def test_usermem_real_small_model_reply_is_unscored() -> None:
    reward, data = parse_usermem_reward(REAL_SMOLLM2_USERMEM_REPLY)
    assert reward is None
    assert data["id"] == 123456789


def test_longmemeval_real_small_model_reply() -> None:
    assert strict_yes_no("No") is False and official_yes("No") is False
