"""What LoCoMo-Plus's home pins, as one record: the upstream commit whose data and judge it
follows (with the sha256 of the judge's file) and the data file at that commit (its LoCoMo-10 base
is LoCoMo's own pin)."""

from __future__ import annotations

from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = [
    "LOCOMO_PLUS_COMMIT",
    "LOCOMO_PLUS_FILE",
    "LOCOMO_PLUS_PINS",
    "LOCOMO_PLUS_SHA256",
    "LOCOMO_PLUS_URL",
    "UPSTREAM",
]

LOCOMO_PLUS_COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
#: path of the file below --memeval-data (and below the cache's ``data`` folder)
LOCOMO_PLUS_FILE = "locomo-plus/locomo_plus.json"
#: the release: upstream's file at that commit
LOCOMO_PLUS_PINS = Pins(
    host="github",
    repo="xjtuleeyf/Locomo-Plus",
    revision=LOCOMO_PLUS_COMMIT,
    files={
        "locomo_plus": PinnedFile(
            "data/locomo_plus.json",
            LOCOMO_PLUS_FILE,
            "af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23",
        )
    },
)
LOCOMO_PLUS_URL = LOCOMO_PLUS_PINS.url(LOCOMO_PLUS_PINS.files["locomo_plus"])
LOCOMO_PLUS_SHA256 = LOCOMO_PLUS_PINS.files["locomo_plus"].sha256

#: the upstream repository at that commit: ``llm_as_judge.py`` (its parsing and scoring are
#: reproduced in :mod:`._judge`, checked against the file in tests/unit/benchmarks/test_locomo_plus.py); the
#: loading (``data/unified_input.py``, ``data/build_conv.py``) is followed, not hashed
UPSTREAM = SuitePins(
    repo="xjtuleeyf/Locomo-Plus",
    commit=LOCOMO_PLUS_COMMIT,
    scorer=MappingProxyType(
        {
            "evaluation_framework/task_eval/llm_as_judge.py": (
                "9ca4997392b1e97a03635379ca601ec5fadfe09ead471542f10433f9af071a33"
            ),
        }
    ),
    loader=MappingProxyType({}),
    data=LOCOMO_PLUS_PINS,
)
