"""MemoryAgentBench's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (upstream commit and file hashes, the dataset
  release);
- :mod:`._loader`: the split files -> conversations and questions, and the suite object
  (``BENCHMARK``, registered as ``memoryagentbench``) with its hooks;
- :mod:`._scorer`: the offline scorer, upstream's ``utils/eval_other_utils.py`` rule by rule;
- :mod:`._judge`: the official judges (``--memeval-protocol=memoryagentbench``);
- :mod:`._answer`: upstream's answer request under that protocol.

docs/scoring.md#memoryagentbench describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._loader import (
        BENCHMARK,
        CATEGORIES,
        CHUNK_WORDS,
        DEVIATIONS,
        SPLITS,
        MemoryAgentBench,
        chunk_context,
        parse_records,
    )
    from ._pins import PINS, UPSTREAM
    from ._scorer import score_memoryagentbench, score_source, shared_rouge_scorer

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
    "shared_rouge_scorer",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "CATEGORIES": "._loader",
    "CHUNK_WORDS": "._loader",
    "DEVIATIONS": "._loader",
    "PINS": "._pins",
    "SPLITS": "._loader",
    "UPSTREAM": "._pins",
    "MemoryAgentBench": "._loader",
    "chunk_context": "._loader",
    "parse_records": "._loader",
    "score_memoryagentbench": "._scorer",
    "score_source": "._scorer",
    "shared_rouge_scorer": "._scorer",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
