"""The offline extractive answerer."""

from __future__ import annotations

from datetime import datetime

import pytest

from pytest_memeval.answerers._extractive import (
    NO_INFORMATION,
    Answerer,
    ExtractiveAnswerer,
    extractive_answer,
)
from pytest_memeval.records import Memory, Prediction, Question

MAY8 = datetime(2023, 5, 8, 13, 56)  # a Monday


def q(text: str) -> Question:
    return Question("q1", "c1", "single-hop", text, gold=None)


def answer(question: str, *texts: str, date: datetime | str | None = MAY8, **kw: int) -> str:
    return extractive_answer(q(question), [Memory(t, date=date) for t in texts], **kw)


def test_no_memories_means_no_information() -> None:
    assert extractive_answer(q("What did Caroline research?"), []) == NO_INFORMATION
    assert NO_INFORMATION == "No information available"


def test_answerer_protocol_and_prediction() -> None:
    answerer = ExtractiveAnswerer()
    assert isinstance(answerer, Answerer)
    assert answerer.label == "extractive"
    memories = [Memory("Caroline: I've been researching adoption agencies lately.", id="D1:3")]
    prediction = answerer.answer(q("What did Caroline research?"), memories)
    assert prediction == Prediction(
        text="adoption agencies", memories=tuple(memories), answered_by="extractive"
    )
    assert ExtractiveAnswerer(max_words=1).answer(
        q("What did Caroline research?"), memories
    ).text == ("adoption")


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        (
            "What did Caroline research?",
            "Caroline: I've been researching adoption agencies lately.",
            "adoption agencies",
        ),
        (
            "What pets does Melanie have?",
            "Melanie: We have two cats and a dog, Oliver and Luna.",
            "two cats dog",
        ),
        ("What instrument does Tom play?", "Tom: Great, thanks! I play the cello.", "cello"),
        (
            "How long has Melanie been practicing art?",
            "Melanie: I've been painting for seven years now.",
            "seven years",
        ),
    ],
)
def test_span_examples(question: str, text: str, expected: str) -> None:
    assert answer(question, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Caroline: I went to a LGBTQ support group yesterday.", "7 May 2023"),
        ("Caroline: I went to the group today!", "8 May 2023"),
        ("Caroline: I went to the group on 2 July!", "2 July 2023"),
        ("Caroline: I went to the group on July 2nd, 2021.", "2 July 2021"),
        ("Caroline: I went to the group in August.", "August 2023"),
        ("Caroline: I went to the group in 2016.", "2016"),
        ("Caroline: Last week I went to the group.", "the week before 8 May 2023"),
        ("Caroline: I went to the group last weekend.", "the weekend before 8 May 2023"),
        ("Caroline: I went to the group last Saturday.", "the saturday before 8 May 2023"),
        ("Caroline: I went to the group on Sunday.", "7 May 2023"),
        ("Caroline: I went to the group last month.", "April 2023"),
        ("Caroline: I went to the group last year.", "2022"),
        ("Caroline: I went to the group two days ago.", "6 May 2023"),
        ("Caroline: I may go to the group next month.", "June 2023"),
        ("Caroline: I went to the group, it was great.", "8 May 2023"),  # the memory's date
    ],
)
def test_when_questions(text: str, expected: str) -> None:
    assert answer("When did Caroline go to the support group?", text) == expected


def test_when_question_dates() -> None:
    raw = "1:56 pm on 8 May, 2023"  # LoCoMo's raw session date is parsed
    assert answer("When did Caroline go?", "Caroline: I went yesterday.", date=raw) == "7 May 2023"
    assert answer("When did Caroline go?", "Caroline: I went there.", date="long ago") == "long ago"
    # no date anywhere: fall back to the extractive span / clause
    assert answer("When did Caroline go?", "Caroline: I went there.", date=None) == "I went there."
    assert answer("What year did Caroline go?", "Caroline: I went there yesterday.") == "2023"


def test_picks_the_memory_with_most_overlap_ties_earliest() -> None:
    question = "What did Melanie paint at the lake?"
    memories = [
        Memory("Caroline: The weather is nice."),
        Memory("Melanie: I painted a sunset at the lake."),
        Memory("Melanie: I painted a tree at the lake."),
    ]
    assert extractive_answer(q(question), memories) == "sunset"
    assert extractive_answer(q(question), memories[::-1]) == "tree"


def test_picks_the_clause_with_most_overlap() -> None:
    text = "Melanie: Oh wow, thanks. The kids and I painted a sunset with a palm tree, so fun!"
    assert answer("What did Melanie and the kids paint?", text) == "sunset palm tree"


def test_max_words_and_fallbacks() -> None:
    text = "Caroline: I researched one two three four five six seven eight nine ten"
    assert answer("What did Caroline research?", text) == "one two three four five six seven eight"
    assert answer("What did Caroline research?", text, max_words=3) == "one two three"
    # every word is a question word or a stopword: the next clause is used
    assert (
        answer("What did Caroline research?", "Caroline: I researched it. Adoption!") == "Adoption"
    )


def test_plain_string_memories_without_speaker() -> None:
    assert answer("Where is the novel set?", "The novel is set in Edinburgh.") == "Edinburgh"


def test_deterministic() -> None:
    question = q("What did Caroline research about adoption agencies?")
    memories = [
        Memory(f"Caroline: memory {i} about agencies and research and many other words", date=MAY8)
        for i in range(10)
    ]
    first = extractive_answer(question, memories)
    assert first == "memory 0 many words"
    for _ in range(50):
        assert extractive_answer(question, memories) == first
