"""``--memeval-estimate``, run level and pytest-free: the answerer that hands the judges a
placeholder answer, and the estimate's figures and lines.

The estimate runs the real search and the real prompt rendering; the provider is swapped for
:class:`~pytest_memeval.llm.estimate.EstimatingProvider` (``LLMRuntime``). An answer that would be
paid for is replaced by a placeholder as long as the gold answer (its word count), so the judge
prompts built from it are as long as the real run's; an answer served from the cache is the
cached one, so the judges' cache keys are the real run's too.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..judges.base import gold_text
from ..llm.accounting import BATCH_DISCOUNT, PriceTable, TokenAccounting
from ..llm.estimate import EstimateCache, EstimatingProvider
from ..records import Memory, Prediction, Question

__all__ = [
    "DEFAULT_LATENCY",
    "Estimate",
    "PlaceholderAnswerer",
    "placeholder_answer",
]

#: seconds an LLM call is assumed to take for the wall time (a short judge or answer reply)
DEFAULT_LATENCY = 1.0


def placeholder_answer(gold: object) -> str:
    """As many words as the gold answer (at least one)."""
    words = len(gold_text(gold).split())
    return " ".join(["answer"] * max(1, words))


class PlaceholderAnswerer:
    """The configured LLM answerer, whose paid answers become :func:`placeholder_answer`; so do
    the repeats of a paid answer (``cache``: the estimate's, which serves them), as the real run
    serves a repeat the answer it just paid for: the judges then see the same answer twice."""

    def __init__(
        self, inner: Any, provider: EstimatingProvider, cache: EstimateCache | None = None
    ) -> None:
        self.inner = inner
        self.provider = provider
        self.cache = cache

    @property
    def label(self) -> str:
        return str(self.inner.label)

    def _placeholders(self) -> tuple[int, int]:
        repeats = self.cache.repeats_here() if self.cache is not None else 0
        return self.provider.sent_here(), repeats

    def answer(self, question: Question, memories: Sequence[Memory]) -> Prediction:
        before = self._placeholders()
        prediction: Prediction = self.inner.answer(question, memories)
        if self._placeholders() == before:  # served from the on-disk cache: the real answer
            return prediction
        return replace(prediction, text=placeholder_answer(question.gold))


@dataclass(frozen=True)
class Estimate:
    """What the run would cost, from the estimate's merged token accounting."""

    calls: int
    input_tokens: int
    output_tokens: int
    cache_hits: int
    by_role: dict[str, int]
    cost: float | None
    wall_seconds: float
    wall_bound: str
    tokenizers: tuple[str, ...]
    approximate: tuple[str, ...]
    #: roles priced at the batch discount (--memeval-llm-batch)
    batch_roles: tuple[str, ...] = ()
    #: requests that repeated one the same process already counted (the real run sends it once
    #: and serves the repeat from the cache it wrote): neither a call nor a cache hit
    repeats: int = 0

    @classmethod
    def from_accounting(
        cls,
        tokens: Mapping[str, Any],
        *,
        prices: PriceTable | None,
        concurrency: int,
        processes: int,
        rpm: int | None,
        tpm: int | None,
        tokenizers: Mapping[str, str],
        approximate: Sequence[str] = (),
        latency: float = DEFAULT_LATENCY,
        batch_roles: Collection[str] = (),
        repeats: int = 0,
    ) -> Estimate:
        """``batch_roles``: the roles whose calls ``--memeval-llm-batch`` sends through the
        providers' batch APIs, priced at the batch discount. ``repeats``: the requests the
        estimate's cache served from what the run itself would have written
        (``EstimateCache.repeats``, summed over the processes); the accounting counts them as
        cache hits, but only requests found in the on-disk cache before the run are."""
        acc = TokenAccounting.from_dict(tokens)
        total = acc.total()
        by_role = {role: usage.calls for role, usage in acc.by_role().items() if usage.calls}
        in_flight = max(1, concurrency) * max(1, processes)
        wall = total.calls * latency / in_flight
        bound = f"{in_flight} calls in flight x {latency:g} s a call"
        if rpm is not None and total.calls * 60.0 / rpm > wall:
            wall, bound = total.calls * 60.0 / rpm, f"--memeval-llm-rpm={rpm}"
        if tpm is not None:
            by_tokens = (total.input_tokens + total.output_tokens) * 60.0 / tpm
            if by_tokens > wall:
                wall, bound = by_tokens, f"--memeval-llm-tpm={tpm}"
        return cls(
            calls=total.calls,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            cache_hits=max(0, total.cache_hits - repeats),
            by_role=by_role,
            cost=acc.cost(prices, batch_roles=batch_roles) if prices is not None else None,
            wall_seconds=wall,
            wall_bound=bound,
            tokenizers=tuple(f"{label}: {name}" for label, name in sorted(tokenizers.items())),
            approximate=tuple(sorted(set(approximate))),
            batch_roles=tuple(sorted(r for r in batch_roles if r in by_role)),
            repeats=repeats,
        )

    def lines(self, *, priced: bool) -> list[str]:
        cost = (
            "cost unknown (no --memeval-prices)"
            if not priced
            else "cost unknown (a model has no price)"
            if self.cost is None
            else f"${self.cost:.4f}"
        )
        if priced and self.cost is not None and self.batch_roles:
            roles = " and ".join(f"{role} calls" for role in self.batch_roles)
            cost += f" (batch pricing for the {roles}: {BATCH_DISCOUNT:.0%} of the price)"
        head = (
            f"estimate: {self.calls} LLM calls, {self.input_tokens} input tokens, "
            f"~{self.output_tokens} output tokens, {cost}, "
            f"wall ~{_duration(self.wall_seconds)}"
        )
        out = [head]
        roles = ", ".join(f"{role} {n}" for role, n in sorted(self.by_role.items()))
        repeated = (
            f"; {self.repeats} repeats of a request of this run (not counted again)"
            if self.repeats
            else ""
        )
        out.append(
            f"  calls by role: {roles or 'none'}; {self.cache_hits} served from the LLM cache "
            f"(not counted){repeated}"
        )
        out.append(f"  wall time bound by {self.wall_bound}")
        for line in self.tokenizers:
            out.append(f"  tokenizer {line}")
        out.extend(f"  {line}" for line in self.approximate)
        out.append("  no LLM call was made; output tokens are a rough guess (placeholder replies)")
        return out


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
