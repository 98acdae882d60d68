"""LongMemEval-V2's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`.loader`: questions, trajectories and haystacks -> conversations and questions, and the
  suite object (``BENCHMARK``, registered as ``longmemeval-v2``) with its hooks;
- :mod:`.scorer`: the offline scorer, upstream's ``evaluation/qa_eval_metrics.py`` rule by rule;
- :mod:`.judge`: the official judge (``--memeval-protocol=longmemeval-v2`` and its corrected
  variant);
- :mod:`.answer`: upstream's reader request under those protocols.

docs/scoring.md#longmemeval-v2 describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .loader import BENCHMARK, CATEGORIES, DEVIATIONS, DOMAINS, LongMemEvalV2
    from .pins import PINS, TIERS, UPSTREAM
    from .scorer import EvalSpec, extract_boxed, parse_spec, score_reply

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DEVIATIONS",
    "DOMAINS",
    "PINS",
    "TIERS",
    "UPSTREAM",
    "EvalSpec",
    "LongMemEvalV2",
    "extract_boxed",
    "parse_spec",
    "score_reply",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": ".loader",
    "CATEGORIES": ".loader",
    "DEVIATIONS": ".loader",
    "DOMAINS": ".loader",
    "EvalSpec": ".scorer",
    "LongMemEvalV2": ".loader",
    "PINS": ".pins",
    "TIERS": ".pins",
    "UPSTREAM": ".pins",
    "extract_boxed": ".scorer",
    "parse_spec": ".scorer",
    "score_reply": ".scorer",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
