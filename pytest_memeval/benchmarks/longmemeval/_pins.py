"""What LongMemEval's home pins, as one record: the upstream commit whose evaluation it follows
(with the sha256 of ``evaluate_qa.py``, whose judge prompts the official protocol reads) and the
Hugging Face release of the cleaned files."""

from __future__ import annotations

from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = ["HF_URL", "NAME", "PINS", "UPSTREAM"]

#: the suite's name and its folder below ``--memeval-data``
NAME = "longmemeval"
#: the release: xiaowu0162/longmemeval-cleaned at a revision; variant -> its file
PINS = Pins(
    host="huggingface",
    repo="xiaowu0162/longmemeval-cleaned",
    revision="98d7416c24c778c2fee6e6f3006e7a073259d48f",
    files={
        "oracle": PinnedFile(
            "longmemeval_oracle.json",
            f"{NAME}/longmemeval_oracle.json",
            "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c",
            15_388_478,
        ),
        "s": PinnedFile(
            "longmemeval_s_cleaned.json",
            f"{NAME}/longmemeval_s_cleaned.json",
            "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
            277_383_467,
        ),
        "m": PinnedFile(
            "longmemeval_m_cleaned.json",
            f"{NAME}/longmemeval_m_cleaned.json",
            "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f",
            2_737_100_077,
        ),
    },
)
#: where the pinned files live (the default endpoint; ``HF_ENDPOINT`` replaces it at run time)
HF_URL = f"https://huggingface.co/datasets/{PINS.repo}/resolve/{PINS.revision}/{{file}}"

#: the upstream repository at the commit the official protocol reads: ``evaluate_qa.py`` (the
#: judge prompts and their choice by question type); its data is the release above
UPSTREAM = SuitePins(
    repo="xiaowu0162/LongMemEval",
    commit="9e0b455f4ef0e2ab8f2e582289761153549043fc",
    scorer=MappingProxyType(
        {
            "src/evaluation/evaluate_qa.py": (
                "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"
            ),
        }
    ),
    loader=MappingProxyType({}),
    data=PINS,
)
