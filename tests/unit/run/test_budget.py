"""Context tokens, --memeval-context-budget, the Pareto front, the top-k warning and the
``oracle`` system (unit tests; the tokenizer is the real cl100k_base)."""

from __future__ import annotations

from datetime import datetime

import pytest

from pytest_memeval.analysis import ConversationSize, context_figures, pareto_front, top_k_warnings
from pytest_memeval.records import Conversation, Memory, Question, QuestionResult, Session, Turn
from pytest_memeval.run._budget import (
    CL100K_SHA256,
    apply_budget,
    context_for_answer,
    count_tokens,
    get_tokenizer,
    tokenizer_label,
)
from pytest_memeval.systems import BUILTIN_SYSTEMS, OracleSystem


def test_tokenizer_is_cl100k_offline() -> None:
    enc = get_tokenizer()
    # cl100k_base facts: "hello world" is 2 tokens, " world" one id; the special-token string is
    # counted as plain text
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    assert count_tokens(["hello world", "", "<|endoftext|>"]) == [2, 0, 7]
    assert "cl100k_base" in tokenizer_label() and CL100K_SHA256[:12] in tokenizer_label()


def _memories(*texts: str) -> tuple[Memory, ...]:
    return tuple(Memory(text=t, id=f"m{i}") for i, t in enumerate(texts))


def test_budget_keeps_rank_order_and_cuts_the_crossing_memory() -> None:
    mems = _memories("one two three four five", "six seven eight nine ten", "red green")
    sizes = count_tokens([m.text for m in mems])
    assert sizes == [5, 5, 2]
    kept, cut = apply_budget(mems, 7)
    assert [m.id for m in kept] == ["m0", "m1"]
    assert kept[0].text == mems[0].text and kept[1].text == "six seven"
    assert (cut.tokens_before, cut.tokens_after, cut.memories_kept, cut.partial) == (12, 7, 2, 1)
    assert cut.memories_before == 3
    assert cut.dropped == ("m2",) and cut.cut
    assert cut.to_dict()["dropped"] == ["m2"]


def test_budget_exact_fit_and_no_cut() -> None:
    mems = _memories("one two three four five", "six seven eight nine ten")
    kept, cut = apply_budget(mems, 10)
    assert kept == mems and not cut.cut and cut.partial is None and cut.dropped == ()
    kept, cut = apply_budget(mems, 5)  # the second memory has no room left: dropped, not cut
    assert [m.id for m in kept] == ["m0"] and cut.partial is None and cut.dropped == ("m1",)


def test_budget_never_exceeds_the_limit_on_multibyte_text() -> None:
    mems = _memories("北京 上海 東京 ソウル " * 20, "naïve café " * 30)
    for limit in (1, 3, 17, 50, 101):
        kept, cut = apply_budget(mems, limit)
        assert cut.tokens_after <= limit
        assert sum(count_tokens([m.text for m in kept])) == cut.tokens_after


def test_context_for_answer_records_tokens_and_budget() -> None:
    mems = _memories("one two three four five", "six seven")
    same, details = context_for_answer(mems, None)
    assert same == mems and details == {"context_tokens": 7}
    kept, details = context_for_answer(mems, 5)
    assert details["context_tokens"] == 5 and details["context_budget"]["dropped"] == ["m1"]
    assert len(kept) == 1


def _result(tokens: object, budget: object = None) -> QuestionResult:
    details: dict[str, object] = {"context_tokens": tokens}
    if budget is not None:
        details["context_budget"] = budget
    return QuestionResult(
        benchmark="b", system="s", question_id="q", conversation_id="c", category="x",
        category_id=1, question="?", gold="g", prediction="p", status="CORRECT", details=details,
    )  # fmt: skip


def test_context_figures() -> None:
    results = [
        _result(10, {"tokens_before": 30, "tokens_after": 10, "dropped": ["a", "b"]}),
        _result(20, {"tokens_before": 20, "tokens_after": 20, "dropped": []}),
        _result(None),  # answered by the system itself: not counted
    ]
    figures = context_figures(results)
    assert figures["questions"] == 2 and figures["mean"] == 15.0 and figures["max"] == 20.0
    assert figures["budget_cut"] == 1 and figures["memories_dropped"] == 2
    assert "budget_cut" not in context_figures([_result(5)])


def test_pareto_front() -> None:
    points: list[tuple[float | None, float | None]] = [
        (100.0, 0.5),  # front
        (50.0, 0.3),  # front (cheaper)
        (200.0, 0.4),  # dominated by the first
        (0.0, 0.0),  # front (cheapest)
        (100.0, 0.5),  # a tie is not dominated
        (None, 0.9),  # no tokens counted: never on the front
    ]
    assert pareto_front(points) == [True, True, False, True, True, False]


def test_top_k_warning() -> None:
    sizes = [ConversationSize("a", 19, 400), ConversationSize("b", 32, 600)]
    assert top_k_warnings("locomo", sizes, [("bm25", 10)]) == []
    (line,) = top_k_warnings("locomo", sizes, [("bm25@30", 30), ("bm25", 10)])
    assert line.startswith("locomo · bm25@30: top-k 30 >= the session count of 1 of 2")
    assert "sessions per conversation 19-32" in line and "top-k below 19" in line
    (line,) = top_k_warnings("x", [ConversationSize("a", 2, 5)], [("s", 5)])
    assert "and the turn count of 1" in line
    assert top_k_warnings("x", [], [("s", 5)]) == []


def _conversation() -> Conversation:
    d1, d2 = datetime(2023, 5, 8), datetime(2023, 5, 20)
    return Conversation(
        id="c",
        sessions=(
            Session("S2", d2, (Turn("D2:1", "A", "later"), Turn("D2:2", "B", "reply"))),
            Session(
                "S1",
                d1,
                (
                    Turn("D1:1", "A", "first"),
                    Turn("D1:2", "B", "second", {"has_answer": True}),
                    Turn("D1:3", "A", "third"),
                ),
            ),
        ),
    )


def _question(*evidence: str) -> Question:
    return Question(id="q", conversation_id="c", category="x", question="?", gold="g",
                    evidence=evidence)  # fmt: skip


def test_oracle_returns_exactly_the_evidence_in_date_order() -> None:
    oracle = BUILTIN_SYSTEMS["oracle"]()
    assert isinstance(oracle, OracleSystem) and oracle.ignores_top_k is True
    oracle.ingest(_conversation())
    found = oracle.search(_question("D2:1", "D1:3", "D2:1"), 1)  # k does not cut evidence
    assert [m.id for m in found] == ["D1:3", "D2:1"]
    assert found[0].source_ids == ("D1:3", "S1") and found[0].text == "A: third"
    # a session id: its has_answer turns, or the whole session when none is marked
    assert [m.id for m in oracle.search(_question("S1"), 10)] == ["D1:2"]
    assert [m.id for m in oracle.search(_question("S2"), 10)] == ["D2:1", "D2:2"]
    # LoCoMo's malformed evidence strings still name their turns; unknown ids give nothing
    assert [m.id for m in oracle.search(_question("D1:1; D2:2"), 10)] == ["D1:1", "D2:2"]
    assert oracle.search(_question("D9:9"), 10) == [] and oracle.search(_question(), 10) == []


def test_oracle_forgets_the_previous_conversation() -> None:
    oracle = OracleSystem()
    oracle.ingest(_conversation())
    oracle.ingest(Conversation(id="d", sessions=(Session("S1", None, (Turn("D1:1", "Z", "z"),)),)))
    assert [m.text for m in oracle.search(_question("D1:1", "D2:1"), 5)] == ["Z: z"]


@pytest.mark.parametrize("name", ["full-context", "no-memory", "oracle"])
def test_systems_exempt_from_the_top_k_warning(name: str) -> None:
    assert getattr(BUILTIN_SYSTEMS[name], "ignores_top_k", False) is True


def test_top_k_warning_by_what_the_system_retrieves() -> None:
    """Issue 22: a turn-level system (bm25) is warned only where k reaches the turn count, in
    words about turns; a session-level system at the session count; an undeclared one at the
    session count, worded as a condition."""
    sizes = [ConversationSize("a", 2, 30), ConversationSize("b", 3, 8)]
    assert top_k_warnings("demo", sizes, [("bm25", 5, "turns")]) == []
    (line,) = top_k_warnings("demo", sizes, [("bm25", 10, "turns")])
    assert "turn count of 1 of 2 conversations (turns per conversation 8-30)" in line
    assert "it retrieves turns" in line and "sessions" not in line
    (line,) = top_k_warnings("demo", sizes, [("sessions", 5, "sessions")])
    assert ": it retrieves whole sessions, so it gets the whole history" in line
    (line,) = top_k_warnings("demo", sizes, [("mine", 5, None)])
    assert ": if it retrieves whole sessions, it gets the whole history" in line
