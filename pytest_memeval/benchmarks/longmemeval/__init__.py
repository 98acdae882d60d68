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

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
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

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": ".loader",
    "DEVIATIONS": ".loader",
    "HF_URL": ".pins",
    "LongMemEval": ".loader",
    "PINS": ".pins",
    "QUESTION_TYPES": ".loader",
    "UPSTREAM": ".pins",
    "VARIANT_FILES": ".loader",
    "iter_json_array": ".loader",
    "parse_longmemeval_date": ".loader",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
