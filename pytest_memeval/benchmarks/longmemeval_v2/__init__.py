"""LongMemEval-V2's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`._loader`: questions, trajectories and haystacks -> conversations and questions, and the
  suite object (``BENCHMARK``, registered as ``longmemeval-v2``) with its hooks;
- :mod:`._scorer`: the offline scorer, upstream's ``evaluation/qa_eval_metrics.py`` rule by rule;
- :mod:`._judge`: the official judge (``--memeval-protocol=longmemeval-v2`` and its corrected
  variant);
- :mod:`._answer`: upstream's reader request under those protocols.

docs/scoring.md#longmemeval-v2 describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._loader import BENCHMARK, CATEGORIES, DEVIATIONS, DOMAINS, LongMemEvalV2
    from ._pins import PINS, TIERS, UPSTREAM
    from ._scorer import LLM_FUNCTIONS, EvalSpec, extract_boxed, parse_spec, score_reply

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DEVIATIONS",
    "DOMAINS",
    "LLM_FUNCTIONS",
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
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "CATEGORIES": "._loader",
    "DEVIATIONS": "._loader",
    "DOMAINS": "._loader",
    "LLM_FUNCTIONS": "._scorer",
    "PINS": "._pins",
    "TIERS": "._pins",
    "UPSTREAM": "._pins",
    "EvalSpec": "._scorer",
    "LongMemEvalV2": "._loader",
    "extract_boxed": "._scorer",
    "parse_spec": "._scorer",
    "score_reply": "._scorer",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
