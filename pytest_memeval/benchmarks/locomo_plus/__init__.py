"""LoCoMo-Plus's home: everything the plugin knows about the suite.

- :mod:`._pins`: what is pinned, as one record (upstream commit, the judge file's hash, the data
  file);
- :mod:`._loader`: the cue / trigger pairs stitched into the LoCoMo-10 conversations, the offline
  ``cue_recall``, and the suite object (``BENCHMARK``, registered as ``locomo-plus``) with its
  hook;
- :mod:`._judge`: the official judge (``--memeval-protocol=locomo-plus``).

docs/scoring.md#locomo-plus describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ..locomo import LOCOMO_PINS
    from ._loader import (
        BENCHMARK,
        CATEGORIES,
        CUE_SESSION,
        DEVIATIONS,
        LocomoPlusBenchmark,
        pairing_rule,
        parse_locomo_plus,
        parse_time_gap,
    )
    from ._pins import LOCOMO_PLUS_PINS, LOCOMO_PLUS_SHA256, UPSTREAM

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "CUE_SESSION",
    "DEVIATIONS",
    "LOCOMO_PINS",
    "LOCOMO_PLUS_PINS",
    "LOCOMO_PLUS_SHA256",
    "UPSTREAM",
    "LocomoPlusBenchmark",
    "pairing_rule",
    "parse_locomo_plus",
    "parse_time_gap",
]

#: LOCOMO_PINS is the LoCoMo file the suite also reads (LoCoMo's own pin). The protocol card
#: (report/cards.py) lists this home's own release (``.pins.UPSTREAM.data``) and names that one
#: as also read
#:
#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": "._loader",
    "CATEGORIES": "._loader",
    "CUE_SESSION": "._loader",
    "DEVIATIONS": "._loader",
    "LOCOMO_PINS": "..locomo",
    "LOCOMO_PLUS_PINS": "._pins",
    "LOCOMO_PLUS_SHA256": "._pins",
    "UPSTREAM": "._pins",
    "LocomoPlusBenchmark": "._loader",
    "pairing_rule": "._loader",
    "parse_locomo_plus": "._loader",
    "parse_time_gap": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
