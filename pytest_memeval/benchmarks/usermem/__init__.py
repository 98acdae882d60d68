"""The user-memory suite's home (``usermem``): everything the plugin knows about it.

- :mod:`.loader`: the YAML cases and gold facts -> conversations and questions, the offline
  ``keyword_recall``, and the suite object (``BENCHMARK``, registered as ``usermem``).

The suite has no official download and no official protocol, so it has no pins and no judge of
its own (its judge style, ``usermem``, is one of the built-in styles in ``judges/``).
docs/scoring.md#user-memory-suite describes it.
"""

from __future__ import annotations

from .loader import BENCHMARK, DEVIATIONS, LAYERS, UserMemory, parse_gold_facts

__all__ = ["BENCHMARK", "DEVIATIONS", "LAYERS", "UserMemory", "parse_gold_facts"]
