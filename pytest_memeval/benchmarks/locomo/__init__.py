"""LoCoMo's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (the upstream commit followed, the data file);
- :mod:`.loader`: ``locomo10.json`` -> conversations and questions, the offline scorer
  (``score_locomo``: the official per-category F1 and the A-Mem / Mem0 lexical metrics), and the
  suite object (``BENCHMARK``, registered as ``locomo``);
- :mod:`.audit`: the LoCoMo audit's wrong answers (judge calibration);
- :mod:`.demo`: the ``demo`` suite, two LoCoMo-shaped conversations shipped as package data
  (``benchmarks/data/demo.json``), read and scored by the same rules.

docs/scoring.md#locomo describes the suite.
"""

from __future__ import annotations

from .loader import (
    BENCHMARK,
    CATEGORIES,
    DATE_FORMAT,
    DEVIATIONS,
    METRICS,
    LocomoBenchmark,
    ParsedLocomo,
    build_dataset,
    evidence_text,
    load_locomo_file,
    parse_locomo,
    score_locomo,
)
from .pins import LOCOMO_FILE, LOCOMO_PINS, LOCOMO_SHA256, LOCOMO_URL, UPSTREAM

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DATE_FORMAT",
    "DEVIATIONS",
    "LOCOMO_FILE",
    "LOCOMO_PINS",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "METRICS",
    "UPSTREAM",
    "LocomoBenchmark",
    "ParsedLocomo",
    "build_dataset",
    "evidence_text",
    "load_locomo_file",
    "parse_locomo",
    "score_locomo",
]
