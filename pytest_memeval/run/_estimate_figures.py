"""``--memeval-estimate``, run level and pytest-free: the answerer that hands the judges a
placeholder answer, and the estimate's figures and lines.

The estimate runs the real search and the real prompt rendering; the provider is swapped for
:class:`~pytest_memeval.llm._estimate.EstimatingProvider` (``LLMRuntime``). An answer that would be
paid for is replaced by a placeholder as long as the gold answer (its word count), so the judge
prompts built from it are as long as the real run's; an answer served from the cache is the
cached one, so the judges' cache keys are the real run's too.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..judges import gold_text
from ..llm import BATCH_DISCOUNT, EstimateCache, EstimatingProvider, PriceTable, TokenAccounting
from ..records import Memory, Prediction, Question

__all__ = [
    "DEFAULT_LATENCY",
    "Estimate",
    "PlaceholderAnswerer",
    "WallShape",
    "llm_wall",
    "placeholder_answer",
]

#: seconds an LLM call is assumed to take for the wall time (a short judge or answer reply)
DEFAULT_LATENCY = 1.0


@dataclass(frozen=True)
class WallShape:
    """What bounds a run's LLM wall time besides its calls: ``--memeval-llm-concurrency`` (the
    window of each process), the processes (``-n N``), the questions and conversations the calls
    are for (0: unknown), ``--memeval-ingest-ahead``, ``--memeval-llm-rpm`` / ``-tpm`` and
    ``--memeval-llm-limiter`` (None: the machine's file limiter)."""

    concurrency: int
    processes: int = 1
    questions: int = 0
    conversations: int = 0
    ingest_ahead: int = 32
    rpm: int | None = None
    tpm: int | None = None
    limiter: str | None = None


def llm_wall(calls: int, tokens: int, shape: WallShape, latency: float) -> tuple[float, str]:
    """The LLM calls' wall time and what bounds it (pure).

    Each process keeps up to its window of questions in flight, one call of each at a time (a
    question's answer, then its judges, in a row): ``min(window, questions it can reach)`` calls,
    where a window reaches into at most ``ingest_ahead`` conversations ahead (0: only the current
    one's questions) and never beyond the process's share of the questions. The last question's
    calls run in a row as the window drains: ``(calls a question - 1) x latency`` more. Then the
    rate limits: ``calls x 60 / rpm`` and ``tokens x 60 / tpm`` when longer; the file limiter's
    budget is the machine's (its processes share it), a redis:// limiter's is shared with every
    host drawing on it, so the figure is then a lower bound."""
    if calls <= 0:
        return 0.0, "no LLM call"
    processes = max(1, shape.processes)
    window = max(1, shape.concurrency)
    per_call = ""
    depth = 1
    if shape.questions > 0:
        depth = max(1, math.ceil(calls / shape.questions))
        share = shape.questions / processes
        per_conversation = shape.questions / max(1, shape.conversations or shape.questions)
        reach = min(share, per_conversation * (1 + max(0, shape.ingest_ahead)))
        window = max(1, min(window, math.floor(reach)))
    in_flight = window * processes
    wall = calls * latency / in_flight + (depth - 1) * latency
    if depth > 1:
        per_call = f" + the last question's {depth} calls in a row"
    where = f"{processes} processes x " if processes > 1 else ""
    bound = f"{in_flight} calls in flight ({where}a window of {window}) x {latency:g} s a call"
    bound += per_call
    shared = (
        " (one budget for every host on the redis limiter: a lower bound)"
        if shape.limiter
        else f" (one budget for this machine's {processes} processes)"
        if processes > 1
        else ""
    )
    if shape.rpm is not None and calls * 60.0 / shape.rpm > wall:
        wall, bound = calls * 60.0 / shape.rpm, f"--memeval-llm-rpm={shape.rpm}{shared}"
    if shape.tpm is not None and tokens * 60.0 / shape.tpm > wall:
        wall, bound = tokens * 60.0 / shape.tpm, f"--memeval-llm-tpm={shape.tpm}{shared}"
    return wall, bound


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
        questions: int = 0,
        conversations: int = 0,
        ingest_ahead: int = 32,
        limiter: str | None = None,
    ) -> Estimate:
        """``batch_roles``: the roles whose calls ``--memeval-llm-batch`` sends through the
        providers' batch APIs, priced at the batch discount. ``repeats``: the requests the
        estimate's cache served from what the run itself would have written
        (``EstimateCache.repeats``, summed over the processes); the accounting counts them as
        cache hits, but only requests found in the on-disk cache before the run are.
        ``questions`` / ``conversations`` (0: unknown), ``ingest_ahead`` and ``limiter``: see
        :func:`llm_wall`."""
        acc = TokenAccounting.from_dict(tokens)
        total = acc.total()
        by_role = {role: usage.calls for role, usage in acc.by_role().items() if usage.calls}
        wall, bound = llm_wall(
            total.calls,
            total.input_tokens + total.output_tokens,
            WallShape(
                concurrency=concurrency,
                processes=processes,
                questions=questions,
                conversations=conversations,
                ingest_ahead=ingest_ahead,
                rpm=rpm,
                tpm=tpm,
                limiter=limiter,
            ),
            latency,
        )
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
