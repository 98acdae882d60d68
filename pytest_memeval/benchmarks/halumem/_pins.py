"""What HaluMem's home pins, as one record: the upstream commit whose scorer, judge prompts and
loader it follows (with the sha256 of those files) and the Hugging Face dataset release."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = ["FILES", "FOLDER", "HF_DATASET", "PINS", "UPSTREAM"]

HF_DATASET = "IAAR-Shanghai/HaluMem"
FOLDER = "halumem"
#: variant -> file name below DIR/halumem (the Hugging Face file names)
FILES: Mapping[str, str] = MappingProxyType(
    {"medium": "HaluMem-Medium.jsonl", "long": "HaluMem-Long.jsonl"}
)
#: the release: the Hugging Face dataset at a revision; variant -> its file
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="cb04336aa1b732d4b24f5186c552456b4099806e",
    files={
        "medium": PinnedFile(
            FILES["medium"],
            f"{FOLDER}/{FILES['medium']}",
            "486fbc130a5c8781a2af27ffa508a1d7855245137aa449c193ac4d29c45634e7",
            33_511_525,
        ),
        "long": PinnedFile(
            FILES["long"],
            f"{FOLDER}/{FILES['long']}",
            "dfdbed570b402b7b8c17e0d7808fc6f3ae7a53b6144f18feb16bbdd3f55cb0c9",
            106_535_674,
        ),
    },
)

#: the MemTensor/HaluMem commit whose scorer and loader this home follows: the scoring side
#: (``eval/evaluation.py``'s arithmetic, ``eval/eval_tools.py``'s judge prompts, ``eval/llms.py``'s
#: reading of replies, the final-result script), the loader side (``eval/eval_memzero.py``'s
#: sessions and dates), and the release above
UPSTREAM = SuitePins(
    repo="MemTensor/HaluMem",
    commit="59402b9d662507406b584047d1982e0cbf453a0f",
    scorer=MappingProxyType(
        {
            "eval/evaluation.py": "eee601e1b73aea91f13fa8e0dc3bdef6d39d611359c6e05990107240c5368c32",
            "eval/eval_tools.py": "0c08e5ecb8c93945bafc4bd0336bd6c9756b40d175f442ce44aca4a43169ee3b",
            "eval/llms.py": "3944e8133c3777506f2f17971884f18c83ab7379fc3d79d22dfd6a748c0b8547",
            "scripts/stage6_2_final_result_medium.py": (
                "bddcc2214a26858c79e703052eb5453027a72dc974c5dddb91cc8d8d0934c32c"
            ),
        }
    ),
    loader=MappingProxyType(
        {
            "eval/eval_memzero.py": "7fa34de7e45e1b9730bb63453ee17627925c8a4304645eda7249844eb24ca3c1",
        }
    ),
    data=PINS,
)
