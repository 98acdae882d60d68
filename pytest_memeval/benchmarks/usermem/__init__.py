"""The user-memory suite's home (``usermem``): everything the plugin knows about it.

- :mod:`._loader`: the YAML cases and gold facts -> conversations and questions, the offline
  ``keyword_recall``, and the suite object (``BENCHMARK``, registered as ``usermem``).

The suite has no official download and no official protocol, so it has no pins and no judge of
its own (its judge style, ``usermem``, is one of the built-in styles in ``judges/``).
docs/scoring.md#user-memory-suite describes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._loader import BENCHMARK, DEVIATIONS, LAYERS, UserMemory, parse_gold_facts

__all__ = ["BENCHMARK", "DEVIATIONS", "LAYERS", "UserMemory", "parse_gold_facts"]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "DEVIATIONS": "._loader",
    "LAYERS": "._loader",
    "UserMemory": "._loader",
    "parse_gold_facts": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
