"""LoCoMo's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (the upstream commit followed, the data file);
- :mod:`._loader`: ``locomo10.json`` -> conversations and questions, the offline scorer
  (``score_locomo``: the official per-category F1 and the A-Mem / Mem0 lexical metrics), and the
  suite object (``BENCHMARK``, registered as ``locomo``);
- :mod:`._audit`: the LoCoMo audit's wrong answers (judge calibration);
- :mod:`._demo`: the ``demo`` suite, two LoCoMo-shaped conversations shipped as package data
  (``benchmarks/data/demo.json``), read and scored by the same rules.

docs/scoring.md#locomo describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._audit import (
        AUDIT_COMMIT,
        AUDIT_SETS,
        WrongAnswerSet,
        load_audit_set,
        load_wrong_file,
        match_answers,
        parse_audit,
    )
    from ._demo import load_demo
    from ._loader import (
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
    from ._pins import LOCOMO_FILE, LOCOMO_PINS, LOCOMO_SHA256, LOCOMO_URL, UPSTREAM

__all__ = [
    "AUDIT_COMMIT",
    "AUDIT_SETS",
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
    "WrongAnswerSet",
    "build_dataset",
    "evidence_text",
    "load_audit_set",
    "load_demo",
    "load_locomo_file",
    "load_wrong_file",
    "match_answers",
    "parse_audit",
    "parse_locomo",
    "score_locomo",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "AUDIT_COMMIT": "._audit",
    "AUDIT_SETS": "._audit",
    "BENCHMARK": "._loader",
    "CATEGORIES": "._loader",
    "DATE_FORMAT": "._loader",
    "DEVIATIONS": "._loader",
    "LOCOMO_FILE": "._pins",
    "LOCOMO_PINS": "._pins",
    "LOCOMO_SHA256": "._pins",
    "LOCOMO_URL": "._pins",
    "METRICS": "._loader",
    "UPSTREAM": "._pins",
    "LocomoBenchmark": "._loader",
    "ParsedLocomo": "._loader",
    "WrongAnswerSet": "._audit",
    "build_dataset": "._loader",
    "evidence_text": "._loader",
    "load_audit_set": "._audit",
    "load_demo": "._demo",
    "load_locomo_file": "._loader",
    "load_wrong_file": "._audit",
    "match_answers": "._audit",
    "parse_audit": "._audit",
    "parse_locomo": "._loader",
    "score_locomo": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
