"""HaluMem's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`.loader`: the user files -> conversations and questions, and the suite object
  (``BENCHMARK``, registered as ``halumem``) with its hooks;
- :mod:`.scorer`: upstream's judgment arithmetic (``aggregate_eval_results``);
- :mod:`.judge`: the official judge (``--memeval-protocol=halumem``), QA and storage judgments;
- :mod:`.figures`: the run's official figures, the judged records pooled as upstream pools users.

docs/scoring.md#halumem describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .loader import (
        BENCHMARK,
        CATEGORIES,
        DEVIATIONS,
        QUESTION_TYPES,
        HaluMem,
        build,
        parse_users,
    )
    from .pins import FILES, PINS, UPSTREAM
    from .scorer import MEMORY_TYPES, aggregate, compute_f1, memory_type_accuracy

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DEVIATIONS",
    "FILES",
    "MEMORY_TYPES",
    "PINS",
    "QUESTION_TYPES",
    "UPSTREAM",
    "HaluMem",
    "aggregate",
    "build",
    "compute_f1",
    "memory_type_accuracy",
    "parse_users",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": ".loader",
    "CATEGORIES": ".loader",
    "DEVIATIONS": ".loader",
    "FILES": ".pins",
    "HaluMem": ".loader",
    "MEMORY_TYPES": ".scorer",
    "PINS": ".pins",
    "QUESTION_TYPES": ".loader",
    "UPSTREAM": ".pins",
    "aggregate": ".scorer",
    "build": ".loader",
    "compute_f1": ".scorer",
    "memory_type_accuracy": ".scorer",
    "parse_users": ".loader",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
