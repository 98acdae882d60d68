"""LoCoMo-Plus's home: everything the plugin knows about the suite.

- :mod:`.pins`: what is pinned, as one record (upstream commit, the judge file's hash, the data
  file);
- :mod:`.loader`: the cue / trigger pairs stitched into the LoCoMo-10 conversations, the offline
  ``cue_recall``, and the suite object (``BENCHMARK``, registered as ``locomo-plus``) with its
  hook;
- :mod:`.judge`: the official judge (``--memeval-protocol=locomo-plus``).

docs/scoring.md#locomo-plus describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from ..locomo import LOCOMO_PINS
    from .loader import (
        BENCHMARK,
        CATEGORIES,
        CUE_SESSION,
        DEVIATIONS,
        LocomoPlusBenchmark,
        pairing_rule,
        parse_locomo_plus,
        parse_time_gap,
    )
    from .pins import LOCOMO_PLUS_PINS, LOCOMO_PLUS_SHA256, UPSTREAM

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
#: pins record (``.pins``, as protocols/profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "BENCHMARK": ".loader",
    "CATEGORIES": ".loader",
    "CUE_SESSION": ".loader",
    "DEVIATIONS": ".loader",
    "LOCOMO_PINS": "..locomo",
    "LOCOMO_PLUS_PINS": ".pins",
    "LOCOMO_PLUS_SHA256": ".pins",
    "LocomoPlusBenchmark": ".loader",
    "UPSTREAM": ".pins",
    "pairing_rule": ".loader",
    "parse_locomo_plus": ".loader",
    "parse_time_gap": ".loader",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
