"""The Mem0 answer protocol's pure parts: filing memories under speakers, timestamps, Jinja
rendering, the speaker field through every wire, and the configure-time checks."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from fakes import ScriptedClient

from pytest_memeval.answerers import Mem0Answerer, file_memories, filing_totals, locomo_date_text
from pytest_memeval.errors import AdapterError, JudgeError
from pytest_memeval.llm import ChatMessage
from pytest_memeval.protocols._profiles import PROFILES
from pytest_memeval.protocols._setup import (
    ProtocolSourceError,
    answer_model_warnings,
    check_answer_options,
)
from pytest_memeval.protocols._source import Template
from pytest_memeval.records import (
    Conversation,
    Memory,
    Question,
    QuestionResult,
    Session,
    Turn,
)
from pytest_memeval.systems import conversation_memories, memory_from_dict, normalise_memory

CONV = Conversation(
    id="c1",
    sessions=(
        Session(
            "S1",
            datetime(2023, 5, 8, 13, 56),
            (Turn("D1:1", "Ann_Lee", "I moved to Oslo."), Turn("D1:2", "Bo", "Nice!")),
            date_raw="1:56 pm on 8 May, 2023",
        ),
        Session(
            "S2",
            datetime(2023, 6, 1, 9, 5),
            (Turn("D2:1", "Bo", "I got a cat."), Turn("D2:2", "Ann_Lee", "Cute.")),
            date_raw="9:05 am on 1 June, 2023",
        ),
    ),
    speakers=("Ann_Lee", "Bo"),
)
QUESTION = Question(
    id="q1", conversation_id="c1", category="single-hop", question="Where?", gold=""
)


def test_memories_are_filed_by_speaker_in_rank_order_with_the_sessions_raw_date() -> None:
    memories = [
        Memory("B's cat", source_ids=("D2:1",)),  # speaker from the first source id
        Memory("A moved", source_ids=("D1:1", "S1")),
        Memory("A said cute", speaker="Ann_Lee", source_ids=("D2:2",)),  # newer, ranked later
        Memory("B replied", speaker="Bo", date=datetime(2020, 1, 1), source_ids=("S1",)),
    ]
    filing = file_memories(CONV, memories)
    # upstream renders the user id's part before the first "_" ("Ann_Lee_0" -> "Ann")
    assert (filing.speaker_1, filing.speaker_2) == ("Ann", "Bo")
    assert filing.speaker_1_lines == (
        "1:56 pm on 8 May, 2023: A moved",
        "9:05 am on 1 June, 2023: A said cute",
    )
    assert filing.speaker_2_lines == (
        "9:05 am on 1 June, 2023: B's cat",
        "1:56 pm on 8 May, 2023: B replied",  # a session id names the session; not its own date
    )
    assert (filing.unattributed, filing.untimed) == (0, 0)


def test_unattributed_memories_go_to_speaker_1_at_their_rank_and_are_counted() -> None:
    memories = [
        Memory("plain string"),
        Memory("Bo fact", speaker="Bo"),
        Memory("a third person", speaker="Cy", date="last spring"),
        Memory("later id only", source_ids=("x", "D1:2")),  # only the first id names a speaker
        Memory("dated", date=datetime(2024, 3, 4, 0, 7)),
    ]
    filing = file_memories(CONV, memories)
    assert filing.speaker_1_lines == (
        "plain string",
        "last spring: a third person",
        "1:56 pm on 8 May, 2023: later id only",  # the session is still known from D1:2
        "12:07 am on 4 March, 2024: dated",
    )
    assert filing.speaker_2_lines == ("Bo fact",)
    assert filing.unattributed == 4 and filing.untimed == 2
    assert filing.details()["speaker_1_memories"] == 4
    assert filing.details()["speaker_2_memories"] == 1


def test_an_unknown_conversation_files_everything_under_speaker_1() -> None:
    filing = file_memories(None, [Memory("m", speaker="Bo")])
    assert filing.speaker_1_lines == ("m",) and filing.unattributed == 1


def test_locomo_date_text() -> None:
    assert locomo_date_text(datetime(2023, 5, 8, 13, 56)) == "1:56 pm on 8 May, 2023"
    assert locomo_date_text(datetime(2023, 5, 8, 12, 0)) == "12:00 pm on 8 May, 2023"
    assert locomo_date_text(datetime(2023, 12, 31, 0, 30)) == "12:30 am on 31 December, 2023"


def _recorder() -> ScriptedClient:
    return ScriptedClient("  Oslo\nANSWER: not this\n", label="openai:gpt-4o-mini")


def _answerer(text: str, client: Any = None) -> Mem0Answerer:
    shape = PROFILES["mem0"].answer
    assert shape is not None
    answerer = Mem0Answerer(client or _recorder(), Template((text,)), shape)
    answerer.add_dataset("demo", [CONV], [QUESTION])
    return answerer


def test_rendering_is_jinjas_and_json_dumps() -> None:
    text = (
        "{{speaker_1_user_id}} {{speaker_1_memories}}\n{{speaker_2_user_id}} "
        "{{speaker_2_memories}} {{speaker_2_graph_memories}}\nQ: {{question}}\n"
    )
    memories = [Memory('café {{x}} "q"', speaker="Bo", source_ids=("D2:1",))]
    rendered = _answerer(text).render(QUESTION, memories)
    line = json.dumps(['9:05 am on 1 June, 2023: café {{x}} "q"'], indent=4)
    assert "\\u00e9" in line  # json.dumps' ensure_ascii, as upstream
    # Jinja drops the template's single trailing newline; values are never templates
    assert rendered == f"Ann []\nBo {line} null\nQ: Where?"


def test_answer_sends_one_system_message_and_keeps_the_whole_reply() -> None:
    client = _recorder()
    answerer = _answerer("{{question}}", client)
    prediction = answerer.answer(QUESTION, [Memory("m")])
    messages, kwargs = list(client.calls[0].messages), client.calls[0].kwargs
    assert messages == [ChatMessage("system", "Where?")]
    assert kwargs == {"temperature": 0.0, "max_tokens": None, "role": "answerer"}
    assert prediction.text == "  Oslo\nANSWER: not this\n"
    assert prediction.details["answer_prompt"]["unattributed"] == 1
    assert answerer.prompt_hashes == {"mem0:ANSWER_PROMPT": Template(("{{question}}",)).sha256}
    prov = answerer.provenance()
    assert prov["request"]["max_tokens"] is None and prov["answerer"] == client.label


def test_filing_totals_sum_the_details() -> None:
    details = [
        {"answer_prompt": {"speaker_1_memories": 2, "speaker_2_memories": 1, "unattributed": 1}},
        {"answer_prompt": {"speaker_1_memories": 0, "speaker_2_memories": 3, "untimed": 2}},
        {"answered_by": "extractive"},
    ]
    assert filing_totals(details) == {
        "answers": 2,
        "memories": 6,
        "unattributed_memories": 1,
        "untimed_memories": 2,
    }


def test_speaker_travels_through_every_wire_and_old_results_still_load() -> None:
    memory = conversation_memories(CONV)[0]
    assert memory.speaker == "Ann_Lee"
    data = memory.to_dict()
    assert data["speaker"] == "Ann_Lee"
    assert Memory.from_dict(data).speaker == "Ann_Lee"
    assert memory_from_dict(data).speaker == "Ann_Lee"
    assert "speaker" not in Memory("x").to_dict()  # reports of systems without speakers unchanged
    old = {"benchmark": "demo", "system": "s", "id": "q", "memories": [{"text": "t"}]}
    assert QuestionResult.from_dict(old).memories[0].speaker is None
    assert normalise_memory(memory, system="s", question_id="q").speaker == "Ann_Lee"
    with pytest.raises(AdapterError, match="field 'speaker': expected a string or None"):
        normalise_memory(Memory("x", speaker=3), system="s", question_id="q")  # type: ignore[arg-type]


def test_answer_model_warning_and_prompt_conflict() -> None:
    assert answer_model_warnings("mem0", "openai:gpt-4o-mini") == []
    assert answer_model_warnings("mem0", "extractive") == []
    assert answer_model_warnings("longmemeval", "openai:gpt-4.1") == []  # no answer protocol
    (message,) = answer_model_warnings("mem0", "anthropic:claude-sonnet-4-6")
    assert "answers with gpt-4o-mini; claude-sonnet-4-6 gives numbers" in message
    check_answer_options("mem0", "openai:gpt-4o-mini", None)
    check_answer_options("longmemeval", "openai:gpt-4o-mini", "p.txt")
    with pytest.raises(ProtocolSourceError, match="drop --memeval-answer-prompt"):
        check_answer_options("mem0", "openai:gpt-4o-mini", "p.txt")
    with pytest.raises(ProtocolSourceError, match="one system message, which the Anthropic"):
        check_answer_options("mem0", "anthropic:claude-sonnet-4-6", None)
    check_answer_options("mem0", "openai-compatible:llama3.1:8b", None)
    check_answer_options("mem0", "extractive", "p.txt")


def test_the_prompt_is_rendered_in_jinjas_sandbox() -> None:
    """A local checkout's ANSWER_PROMPT is used even off the pin: it is rendered, never run."""
    reach = "{{ ''.__class__.__mro__[1] }} {{question}}"
    with pytest.raises(JudgeError, match="does what the Jinja sandbox refuses"):
        _answerer(reach).render(QUESTION, [])
    with pytest.raises(JudgeError, match=r"uses a call \(range\(\), a method\)"):
        _answerer("{{ ''.__class__.__mro__[1].__subclasses__() }} {{question}}")
    with pytest.raises(JudgeError, match=r"not a template Jinja can read .*line 1"):
        _answerer("{{ question")
