"""Token and call accounting per role (answerer, judge) and model, mergeable across xdist workers.

The wire format (``to_dict``) is plain JSON so it travels through ``workeroutput``::

    {"answerer": {"openai:gpt-4o-mini": {"input_tokens": 812, "output_tokens": 20, "calls": 4,
                                          "cache_hits": 6, "cache_misses": 4, "retries": 1,
                                          "failures": 0}},
     "judge": {...}}

``calls`` counts completions obtained from a provider (paid requests); cache hits cost nothing and
their tokens are not added. ``retries`` counts re-sent requests, ``failures`` calls that ended in
an error after the retry policy gave up. ``batch_input_tokens`` / ``batch_output_tokens`` (only
written when not 0) are the part of the tokens paid through a provider's batch API
(``--memeval-llm-batch``), priced at :data:`BATCH_DISCOUNT` of the table's price.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["BATCH_DISCOUNT", "PriceTable", "TokenAccounting", "Usage"]

#: what a batch API's token costs, as a share of the synchronous price: OpenAI's Batch API and
#: Anthropic's Message Batches both charge 50 % of the input and output prices
BATCH_DISCOUNT = 0.5

#: ``{model: {"input": dollars per million tokens, "output": dollars per million tokens}}``.
#: ``model`` is either the bare model name ("gpt-4o-mini") or the label ("openai:gpt-4o-mini");
#: the label wins when both are present.
PriceTable = Mapping[str, Mapping[str, float]]


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    retries: int = 0
    failures: int = 0
    #: of input_tokens / output_tokens: those paid through a batch API (half price)
    batch_input_tokens: int = 0
    batch_output_tokens: int = 0

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, int]:
        out = asdict(self)
        for name in ("batch_input_tokens", "batch_output_tokens"):
            if not out[name]:
                del out[name]
        return out

    def cost(self, price: Mapping[str, float], *, batch: bool = False) -> float:
        """Dollars at ``price`` (per million tokens); the batch tokens (all of them with
        ``batch``: a run that would send them through the batch) at :data:`BATCH_DISCOUNT`."""
        batch_in = self.input_tokens if batch else self.batch_input_tokens
        batch_out = self.output_tokens if batch else self.batch_output_tokens
        tokens_in = self.input_tokens - batch_in + BATCH_DISCOUNT * batch_in
        tokens_out = self.output_tokens - batch_out + BATCH_DISCOUNT * batch_out
        return (
            tokens_in * float(price.get("input", 0.0))
            + tokens_out * float(price.get("output", 0.0))
        ) / 1_000_000

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in data.items() if k in known})


def _price_for(label: str, prices: PriceTable) -> Mapping[str, float] | None:
    if label in prices:
        return prices[label]
    model = label.split(":", 1)[1] if ":" in label else label
    return prices.get(model)


class TokenAccounting:
    """Thread-safe counters keyed by (role, model label)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage: dict[str, dict[str, Usage]] = {}

    def _slot(self, role: str, label: str) -> Usage:
        return self._usage.setdefault(role, {}).setdefault(label, Usage())

    def record(
        self,
        role: str,
        label: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        calls: int = 0,
        cache_hits: int = 0,
        cache_misses: int = 0,
        retries: int = 0,
        failures: int = 0,
        batch: bool = False,
    ) -> None:
        """Add to (role, label)'s counters; ``batch``: the tokens were paid through a batch API."""
        delta = Usage(
            input_tokens,
            output_tokens,
            calls,
            cache_hits,
            cache_misses,
            retries,
            failures,
            input_tokens if batch else 0,
            output_tokens if batch else 0,
        )
        with self._lock:
            self._slot(role, label).add(delta)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        with self._lock:
            return {
                role: {label: usage.to_dict() for label, usage in sorted(models.items())}
                for role, models in sorted(self._usage.items())
            }

    def merge(self, data: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        """Add the counters of another ``to_dict()`` (e.g. from an xdist worker)."""
        with self._lock:
            for role, models in data.items():
                for label, counters in models.items():
                    self._slot(str(role), str(label)).add(Usage.from_dict(counters))

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> TokenAccounting:
        acc = cls()
        acc.merge(data)
        return acc

    def by_role(self) -> dict[str, Usage]:
        out: dict[str, Usage] = {}
        with self._lock:
            for role, models in self._usage.items():
                total = Usage()
                for usage in models.values():
                    total.add(usage)
                out[role] = total
        return dict(sorted(out.items()))

    def total(self) -> Usage:
        total = Usage()
        for usage in self.by_role().values():
            total.add(usage)
        return total

    def cost_by_role(
        self, prices: PriceTable, *, batch_roles: Collection[str] = ()
    ) -> dict[str, float | None]:
        """Dollars per role; ``None`` for a role using a model missing from the table. Batch
        tokens cost :data:`BATCH_DISCOUNT` of the price, and so do all the tokens of the roles in
        ``batch_roles`` (an estimate of a ``--memeval-llm-batch`` run)."""
        out: dict[str, float | None] = {}
        with self._lock:
            for role, models in sorted(self._usage.items()):
                cost: float | None = 0.0
                for label, usage in models.items():
                    price = _price_for(label, prices)
                    if price is None:
                        if usage.input_tokens or usage.output_tokens:
                            cost = None
                            break
                        continue
                    assert cost is not None
                    cost += usage.cost(price, batch=role in batch_roles)
                out[role] = cost
        return out

    def cost(self, prices: PriceTable, *, batch_roles: Collection[str] = ()) -> float | None:
        """Total dollars, or ``None`` if some model that used tokens has no price."""
        per_role = self.cost_by_role(prices, batch_roles=batch_roles)
        if any(v is None for v in per_role.values()):
            return None
        return sum(v for v in per_role.values() if v is not None)
