"""The MemorySystem contract's properties (``run/_contract_kit.py``), pure: a sound system passes
every one; each broken system fails the property it breaks with one sentence naming it and the
evidence; a property that does not apply is skipped with the reason."""

from __future__ import annotations

import time
from collections.abc import Callable

import contract_systems as cs
import pytest

from pytest_memeval.llm import get_tokenizer
from pytest_memeval.run._contract_data import MARKER, peak_growth, scale_conversation
from pytest_memeval.run._contract_kit import (
    PROPERTIES,
    ContractLimits,
    ContractSkip,
    ContractViolation,
    SystemSource,
    check_property,
)


def _source(obtain: Callable[[], object], name: str = "sys", **kw: float) -> SystemSource:
    return SystemSource(name, obtain, {}, timeout=kw.get("timeout"))


def _violation(
    prop: str, obtain: Callable[[], object], limits: ContractLimits | None = None
) -> str:
    with pytest.raises(ContractViolation) as info:
        check_property(prop, _source(obtain), limits or ContractLimits())
    return str(info.value)


@pytest.fixture(autouse=True)
def _empty_class_stores() -> None:
    cs.SharedList.everything.clear()
    cs.LeakyDump.seen.clear()


@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_a_sound_factory_passes_every_property(prop: str) -> None:
    check_property(prop, _source(lambda: cs.Sound), ContractLimits())


@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_one_shared_instance_is_reset_between_conversations(prop: str) -> None:
    """A session-scoped fixture's single object: reset() before each new ingest."""
    one = cs.Sound()
    check_property(prop, _source(lambda: one), ContractLimits())


def test_a_class_level_list_fails_isolation() -> None:
    message = _violation("isolation", lambda: cs.SharedList)
    assert message.startswith("isolation: searching conversation contract-b for 'zephyrquill'")
    assert "memory(ies) of contract-a" in message and MARKER in message
    assert "\n" not in message


def test_a_shared_instance_whose_reset_forgets_nothing_fails_isolation() -> None:
    class NoReset(cs.SharedList):
        def reset(self) -> None:
            pass

    one = NoReset()
    assert _violation("isolation", lambda: one).startswith("isolation:")


def test_shuffled_results_fail_determinism() -> None:
    message = _violation("determinism", lambda: cs.Shuffled)
    assert message.startswith(
        "determinism: two ingests of conversation demo-1 returned different memories for question"
    )


def test_a_declared_random_system_skips_determinism() -> None:
    with pytest.raises(
        ContractSkip, match="determinism: the system declares deterministic = False"
    ):
        check_property("determinism", _source(lambda: cs.DeclaredRandom), ContractLimits())


def test_more_than_k_fails_top_k_unless_declared() -> None:
    message = _violation("top-k", lambda: cs.TooMany)
    assert message.startswith("top-k and source ids: search(question demo-1-q1, k=1) returned 2")

    class Declared(cs.TooMany):
        ignores_top_k = True

    check_property("top-k", _source(lambda: Declared), ContractLimits())


def test_foreign_source_ids_fail_top_k() -> None:
    message = _violation("top-k", lambda: cs.ForeignIds)
    assert "returned source ids ['X9:99']" in message
    assert "no turn or session id of conversation demo-1" in message


def test_a_false_thread_safe_claim_fails() -> None:
    message = _violation("thread-safe", lambda: cs.Racy)
    assert message.startswith("thread safety: with thread_safe = True, concurrent searches")


def test_without_the_claim_thread_safety_is_skipped() -> None:
    class Plain(cs.Sound):
        thread_safe = False

    with pytest.raises(ContractSkip, match="does not declare thread_safe = True"):
        check_property("thread-safe", _source(lambda: Plain), ContractLimits())


def test_a_dump_of_other_conversations_fails() -> None:
    message = _violation("dump", lambda: cs.LeakyDump)
    assert message.startswith("dump: dump('contract-b') returned")
    assert "of conversation contract-a" in message


def test_a_dump_that_survives_reset_fails() -> None:
    class Sticky(cs.Sound):
        def reset(self) -> None:
            pass

    message = _violation("dump", lambda: Sticky)
    assert message.startswith("dump: dump('contract-b') still returned")
    assert "after reset()" in message


def test_an_empty_dump_beside_a_finding_search_fails() -> None:
    class Forgetful(cs.Sound):
        def dump(self, conversation_id: str) -> list[str]:
            return []

    assert "yet search() returned" in _violation("dump", lambda: Forgetful)


def test_no_dump_is_skipped() -> None:
    class NoDump:
        def ingest(self, conversation: object) -> None:
            pass

        def search(self, question: object, k: int) -> list[str]:
            return []

    with pytest.raises(ContractSkip, match="no dump"):
        check_property("dump", _source(lambda: NoDump), ContractLimits())


def test_a_mapping_fails_plain_values() -> None:
    message = _violation("plain-values", lambda: cs.DictResult)
    assert message.startswith("plain values: memory system 'sys', question demo-1-q1: search()")
    assert "got dict" in message


def test_a_non_string_answer_fails_plain_values() -> None:
    class NumberAnswer(cs.Sound):
        def answer(self, question: object) -> int:
            return 42

    assert "answer() must return a string, got int" in _violation(
        "plain-values", lambda: NumberAnswer
    )


def test_an_empty_question_that_raises_fails() -> None:
    message = _violation("empty-question", lambda: cs.EmptyQuestionCrash)
    assert message == (
        "empty question: search() of question contract-empty raised ValueError: empty query"
    )


def test_mangled_unicode_fails() -> None:
    message = _violation("unicode", lambda: cs.AsciiOnly)
    assert message.startswith("unicode: search() of 'Où est le café à Montréal?' returned mangled")


def test_an_ingest_over_the_timeout_fails_scale() -> None:
    limits = ContractLimits(scale_timeout=1.0)
    message = _violation("scale", lambda: cs.Slow, limits)
    assert message == (
        "scale: ingesting a LongMemEval-S-sized conversation (50 sessions, 500 turns, ~115k "
        "tokens) did not finish within 1 s (--memeval-timeout)"
    )


def test_an_ingest_over_the_memory_budget_fails_scale() -> None:
    message = _violation("scale", lambda: cs.Hungry, ContractLimits(memory_mib=20))
    assert message.startswith(
        "scale: ingesting a LongMemEval-S-sized conversation (50 sessions, 500 turns, ~115k "
        "tokens) grew this process by "
    )
    assert message.endswith("MiB, over the 20 MiB budget (--memeval-contract-memory)")
    source = _source(lambda: cs.Hungry)
    check_property("scale", source, ContractLimits(memory_mib=200))
    # what it measured is reported beside the verdict: the 40 MiB it keeps, and the time
    assert set(source.figures) == {"scale_ingest_seconds", "scale_growth_mib"}
    assert 35 <= source.figures["scale_growth_mib"] <= 200


def test_peak_growth_sees_memory_freed_before_the_end() -> None:
    with peak_growth() as grown:
        ballast = bytearray(64 * 2**20)
        ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page
        time.sleep(0.2)  # held for 10 samples
        del ballast
    assert grown[0] >= 48


def test_the_end_to_end_tests_name_every_property() -> None:
    assert tuple(PROPERTIES) == cs.PROPERTIES


def test_the_scale_conversation_is_longmemeval_s_sized() -> None:
    conversation = scale_conversation()
    turns = [t for _, t in conversation.turns()]
    assert (len(conversation.sessions), len(turns)) == (50, 500)
    tokens = sum(len(get_tokenizer().encode_ordinary(t.text)) for t in turns)
    assert 110_000 <= tokens <= 120_000, tokens
    assert scale_conversation() == conversation  # the same every time


def test_a_system_that_cannot_be_made_names_the_call() -> None:
    def broken() -> object:
        raise RuntimeError("no API key")

    assert _violation("isolation", lambda: broken) == (
        "isolation: sys: its factory raised RuntimeError: no API key"
    )
