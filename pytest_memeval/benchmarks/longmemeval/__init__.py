"""LongMemEval's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (upstream commit and the evaluation file's hash, the
  Hugging Face release of the cleaned files);
- :mod:`._loader`: the streamed, indexed JSON file -> questions and lazily loaded conversations,
  the offline proxies, and the suite object (``BENCHMARK``, registered as ``longmemeval``) with
  its hook;
- :mod:`._judge`: the official judge (``--memeval-protocol=longmemeval``).

docs/scoring.md#longmemeval describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._loader import (
        BENCHMARK,
        DEVIATIONS,
        QUESTION_TYPES,
        VARIANT_FILES,
        LongMemEval,
        iter_json_array,
        parse_longmemeval_date,
    )
    from ._pins import HF_URL, PINS, UPSTREAM

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
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "DEVIATIONS": "._loader",
    "HF_URL": "._pins",
    "PINS": "._pins",
    "QUESTION_TYPES": "._loader",
    "UPSTREAM": "._pins",
    "VARIANT_FILES": "._loader",
    "LongMemEval": "._loader",
    "iter_json_array": "._loader",
    "parse_longmemeval_date": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
