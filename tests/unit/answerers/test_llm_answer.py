"""The LLM answerer through a scripted fake client: prompt content, memory order, dates, no scores,
ANSWER: extraction, template override and hashing. No HTTP."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from fakes import ScriptedClient, make_question

from pytest_memeval.answerers._llm import (
    LLMAnswerer,
    extract_answer,
    format_date,
    format_memories,
    order_memories,
)
from pytest_memeval.errors import JudgeError
from pytest_memeval.records import Memory, Prediction, Question


def client_with(reply: str) -> ScriptedClient:
    return ScriptedClient(reply, label="fake:model-1")


def question(**kw: object) -> Question:
    base: dict[str, object] = {
        "category": "temporal",
        "question": "When did Melanie paint a sunrise?",
        "gold": "2022",
        "category_id": 2,
    }
    return make_question(**{**base, **kw})


MEMORIES = [
    Memory(
        "Melanie painted a lake sunrise last year.", date=datetime(2023, 5, 8, 13, 56), score=0.91
    ),
    Memory("Caroline went to an LGBTQ support group.", date=datetime(2023, 5, 7), score=0.42),
    Memory("Undated note about pottery.", score=0.1234),
    Memory("Melanie ran a charity race.", date="2023-05-20", score=0.77),
]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("ANSWER: 2022", "2022"),
        ("Reasoning: she said last year in May 2023.\nANSWER:  2022 \n", "2022"),
        ("ANSWER: wrong\nOn reflection...\nANSWER: 7 May 2023", "7 May 2023"),
        ("**ANSWER:** Sweden", "Sweden"),
        ("  Sweden  ", "Sweden"),
        ("Answer: lower-case marker", "lower-case marker"),
        ("**Final answer:** Paris", "Paris"),
        ("ANSWER: Paris\n\nExplanation: the memories say so.", "Paris"),  # first line only
        ("ANSWER:\nParis", "Paris"),
        ('ANSWER: "Paris"', "Paris"),
        ("ANSWER:", ""),
    ],
)
def test_extract_answer(reply: str, expected: str) -> None:
    assert extract_answer(reply) == expected


#: Replies SmolLM2-135M-Instruct (Q4_1, llama-cpp-python server) gave to our answer prompt on
#: LoCoMo questions (tests/plugin/test_realmodel.py). It never wrote the ANSWER: marker.
REAL_SMOLLM2_ANSWERS = [
    ("The answer is: John", "John"),
    ("The answer is: 2023-06-14", "2023-06-14"),
    (
        'The answer is: "No problem, always here to have your back."',
        "No problem, always here to have your back.",
    ),
    (
        'The answer to the question "When did Calvin first travel to Tokyo?" is: 2023-06-14',
        "2023-06-14",
    ),
    ("The answer is not mentioned.", "The answer is not mentioned."),  # no marker: kept whole
    (
        "Jolene: A project to create a drone that can fly in the air and see what's on the "
        "other side",
        "Jolene: A project to create a drone that can fly in the air and see what's on the "
        "other side",
    ),
]


@pytest.mark.parametrize(("reply", "expected"), REAL_SMOLLM2_ANSWERS)
def test_extract_answer_real_small_model_replies(reply: str, expected: str) -> None:
    assert extract_answer(reply) == expected


def test_answer_flow() -> None:
    client = client_with("She said 'last year'.\nANSWER: 2022")
    answerer = LLMAnswerer(client)
    pred = answerer.answer(question(), MEMORIES)
    assert pred == Prediction(text="2022", memories=tuple(MEMORIES), answered_by="fake:model-1")
    assert answerer.label == "fake:model-1"
    assert [c.kwargs for c in client.calls] == [
        {"temperature": 0.0, "max_tokens": 256, "role": "answerer"}
    ]


def test_prompt_memories_oldest_first_with_dates_no_scores() -> None:
    client = client_with("ANSWER: 2022")
    LLMAnswerer(client).answer(question(), MEMORIES)
    prompt = client.prompts[0]
    lines = [line for line in prompt.splitlines() if line.startswith("- ")]
    assert lines == [
        "- 2023-05-07 (Sunday): Caroline went to an LGBTQ support group.",
        "- 2023-05-08 (Monday) 13:56: Melanie painted a lake sunrise last year.",
        "- 2023-05-20 (Saturday): Melanie ran a charity race.",
        "- undated: Undated note about pottery.",
    ]
    for score in ("0.91", "0.42", "0.1234", "0.77"):
        assert score not in prompt
    # no question date: the newest memory date is "today"
    assert "Today's date is 2023-05-20 (Saturday)." in prompt
    assert "When did Melanie paint a sunrise?" in prompt


def test_reference_date_precedence() -> None:
    client = client_with("ANSWER: x")
    answerer = LLMAnswerer(client)
    answerer.answer(question(question_date=datetime(2023, 6, 1, 9, 30)), MEMORIES)
    assert "Today's date is 2023-06-01 (Thursday) 09:30." in client.prompts[-1]
    answerer.answer(question(question_date_raw="2023/05/30 (Tue) 21:05"), MEMORIES)
    assert "Today's date is 2023-05-30 (Tuesday) 21:05." in client.prompts[-1]
    answerer.answer(question(), MEMORIES, reference_date=datetime(2023, 7, 4))
    assert "Today's date is 2023-07-04 (Tuesday)." in client.prompts[-1]
    answerer.answer(question(), [Memory("plain")])
    assert "Today's date is unknown." in client.prompts[-1]


def test_order_is_stable_and_handles_mixed_dates() -> None:
    aware = datetime(2023, 5, 8, 12, 0, tzinfo=timezone(timedelta(hours=2)))  # 10:00 UTC
    mems = [
        Memory("b", date="1:56 pm on 8 May, 2023"),
        Memory("a", date=aware),
        Memory("c", date="not a date"),
        Memory("d"),
        Memory("e", date=datetime(2023, 5, 8, 10, 0, tzinfo=UTC)),
    ]
    assert [m.text for m in order_memories(mems)] == ["a", "e", "b", "c", "d"]
    assert format_date("not a date") == "not a date"
    assert format_date(None) == "undated"
    assert format_date("1:56 pm on 8 May, 2023") == "2023-05-08 (Monday) 13:56"


def test_no_memories() -> None:
    assert format_memories([]) == "(no memories were retrieved)"


def test_braces_in_memories_and_question_do_not_crash() -> None:
    client = client_with("ANSWER: {ok}")
    mems = [Memory("config was {'a': {1}} and {memories} {0} {", date=datetime(2023, 1, 1))]
    pred = LLMAnswerer(client).answer(question(question="What is {question}?}"), mems)
    assert pred.text == "{ok}"
    prompt = client.prompts[0]
    assert "config was {'a': {1}} and {memories} {0} {" in prompt
    assert "What is {question}?}" in prompt


def test_template_override_and_hash(tmp_path: Path) -> None:
    text = "DATE={reference_date}\n{memories}\nQ: {question}\nReply as {{json}}. ANSWER: ..."
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    client = client_with("ANSWER: Paris")
    answerer = LLMAnswerer(client, template_path=str(path))
    assert answerer.prompt_sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert answerer.prompt_sha256 != LLMAnswerer(client).prompt_sha256
    pred = answerer.answer(question(), [Memory("x", date=datetime(2023, 5, 7))])
    assert pred.text == "Paris"
    assert client.prompts[0] == (
        "DATE=2023-05-07 (Sunday)\n- 2023-05-07 (Sunday): x\n"
        "Q: When did Melanie paint a sunrise?\nReply as {json}. ANSWER: ..."
    )


def test_bad_answer_template(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("{memories} {gold}", encoding="utf-8")
    with pytest.raises(JudgeError, match="gold"):
        LLMAnswerer(client_with(""), template_path=str(path))
