"""MemoryAgentBench's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`.loader`: the split files -> conversations and questions, and the suite object
  (``BENCHMARK``, registered as ``memoryagentbench``) with its hooks;
- :mod:`.scorer`: the offline scorer, upstream's ``utils/eval_other_utils.py`` rule by rule;
- :mod:`.judge`: the official judges (``--memeval-protocol=memoryagentbench``);
- :mod:`.answer`: upstream's answer request under that protocol.

docs/scoring.md#memoryagentbench describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .loader import (
        BENCHMARK,
        CATEGORIES,
        CHUNK_WORDS,
        DEVIATIONS,
        SPLITS,
        MemoryAgentBench,
        chunk_context,
        parse_records,
    )
    from .pins import PINS, UPSTREAM
    from .scorer import score_memoryagentbench, score_source

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "CHUNK_WORDS",
    "DEVIATIONS",
    "PINS",
    "SPLITS",
    "UPSTREAM",
    "MemoryAgentBench",
    "chunk_context",
    "parse_records",
    "score_memoryagentbench",
    "score_source",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": ".loader",
    "CATEGORIES": ".loader",
    "CHUNK_WORDS": ".loader",
    "DEVIATIONS": ".loader",
    "MemoryAgentBench": ".loader",
    "PINS": ".pins",
    "SPLITS": ".loader",
    "UPSTREAM": ".pins",
    "chunk_context": ".loader",
    "parse_records": ".loader",
    "score_memoryagentbench": ".scorer",
    "score_source": ".scorer",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
