"""What LoCoMo's home pins, as one record: the upstream commit whose scorer and QA prompts it
follows (branch ``code``) and the data file at its own commit."""

from __future__ import annotations

from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = ["LOCOMO_FILE", "LOCOMO_PINS", "LOCOMO_SHA256", "LOCOMO_URL", "UPSTREAM"]

#: path of the file below --memeval-data (and below the cache's ``data`` folder)
LOCOMO_FILE = "locomo/locomo10.json"
#: the release: snap-research/locomo at a commit (not ``main``), its one file's size and sha256
LOCOMO_PINS = Pins(
    host="github",
    repo="snap-research/locomo",
    revision="3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376",
    files={
        "locomo10": PinnedFile(
            "data/locomo10.json",
            LOCOMO_FILE,
            "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
            2_805_274,
        )
    },
)
LOCOMO_SHA256 = LOCOMO_PINS.files["locomo10"].sha256
LOCOMO_URL = LOCOMO_PINS.url(LOCOMO_PINS.files["locomo10"])

#: snap-research/locomo at the commit of branch ``code`` whose scorer and QA prompts this home
#: follows (the prompts' file is pinned with the ``locomo`` protocol profile; the scorer's rules
#: are followed, not hashed), and the data release above
UPSTREAM = SuitePins(
    repo="snap-research/locomo",
    commit="92286325a40764bee61f77824ddb95233b11c4d6",
    scorer=MappingProxyType({}),
    loader=MappingProxyType({}),
    data=LOCOMO_PINS,
)
