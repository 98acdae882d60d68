"""HaluMem's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`._loader`: the user files -> conversations and questions, and the suite object
  (``BENCHMARK``, registered as ``halumem``) with its hooks;
- :mod:`._scorer`: upstream's judgment arithmetic (``aggregate_eval_results``);
- :mod:`._judge`: the official judge (``--memeval-protocol=halumem``), QA and storage judgments;
- :mod:`._figures`: the run's official figures, the judged records pooled as upstream pools users.

docs/scoring.md#halumem describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._figures import HaluMemOfficial
    from ._loader import (
        BENCHMARK,
        CATEGORIES,
        DEVIATIONS,
        QUESTION_TYPES,
        HaluMem,
        build,
        parse_users,
    )
    from ._pins import FILES, PINS, UPSTREAM
    from ._scorer import MEMORY_TYPES, aggregate, compute_f1, memory_type_accuracy

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
    "HaluMemOfficial",
    "aggregate",
    "build",
    "compute_f1",
    "memory_type_accuracy",
    "parse_users",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "CATEGORIES": "._loader",
    "DEVIATIONS": "._loader",
    "FILES": "._pins",
    "MEMORY_TYPES": "._scorer",
    "PINS": "._pins",
    "QUESTION_TYPES": "._loader",
    "UPSTREAM": "._pins",
    "HaluMem": "._loader",
    "HaluMemOfficial": "._figures",
    "aggregate": "._scorer",
    "build": "._loader",
    "compute_f1": "._scorer",
    "memory_type_accuracy": "._scorer",
    "parse_users": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
