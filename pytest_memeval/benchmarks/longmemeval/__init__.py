"""LongMemEval's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (upstream commit and the evaluation file's hash, the
  Hugging Face release of the cleaned files);
- :mod:`.loader`: the streamed, indexed JSON file -> questions and lazily loaded conversations,
  the offline proxies, and the suite object (``BENCHMARK``, registered as ``longmemeval``) with
  its hook;
- :mod:`.judge`: the official judge (``--memeval-protocol=longmemeval``).

docs/scoring.md#longmemeval describes the suite.
"""

from __future__ import annotations

from .loader import (
    BENCHMARK,
    DEVIATIONS,
    QUESTION_TYPES,
    VARIANT_FILES,
    LongMemEval,
    iter_json_array,
    parse_longmemeval_date,
)
from .pins import HF_URL, PINS, UPSTREAM

__all__ = [
    "BENCHMARK",
    "DEVIATIONS",
    "HF_URL",
    "PINS",
    "QUESTION_TYPES",
    "UPSTREAM",
    "VARIANT_FILES",
    "LongMemEval",
    "iter_json_array",
    "parse_longmemeval_date",
]
