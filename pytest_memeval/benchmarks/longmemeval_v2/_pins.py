"""What LongMemEval-V2's home pins, as one record: the upstream commit whose loader and scorer it
follows (with the sha256 of those files) and the Hugging Face dataset release it downloads."""

from __future__ import annotations

from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = ["FOLDER", "HF_DATASET", "PINS", "TIERS", "UPSTREAM"]

HF_DATASET = "xiaowu0162/longmemeval-v2"
FOLDER = "longmemeval-v2"
TIERS: tuple[str, ...] = ("small", "medium")


def _file(path: str, sha256: str, size: int | None) -> PinnedFile:
    return PinnedFile.below(FOLDER, path, sha256, size)


#: the release: the Hugging Face dataset at a revision; its files and the release's own
#: ``checksums.sha256`` (pinned too: every downloaded file is also checked against its line)
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="f152293e235517d504809563c833d7190b8c713b",
    files={
        "questions": _file(
            "questions.jsonl",
            "0a3ae5ebea938c24d7800e1e0b0828e08ae1646f939a53853b2b8cdc08e292b7",
            286_186,
        ),
        "trajectories": _file(
            "trajectories.jsonl",
            "363cec9a8e87aa8d9101ce4e600aadbf7031d674056ebe4f969e8424abc5f3c6",
            1_195_604_539,
        ),
        "small": _file(
            "haystacks/lme_v2_small.json",
            "9b5301defb23a088a5f06e45ff8d5f35e569d78305a66d492046a9fff9b46593",
            822_632,
        ),
        "medium": _file(
            "haystacks/lme_v2_medium.json",
            "4756d5126347f0d18f045bb6c47b08cb3b23e9db24386cc48a9b2879e7969b59",
            None,
        ),
        "checksums": _file(
            "checksums.sha256",
            "b17a18daa52873f915808502217c3c5fab39d20638544f986401155c9e8d67a6",
            None,
        ),
    },
)

#: the upstream repository at the commit whose loader and scorer this home follows:
#: ``evaluation/qa_eval_metrics.py`` (the scorer the tests compare with, also the judge's file),
#: the loader files read (``data/public_data.py``, ``evaluation/harness.py``), and the release
UPSTREAM = SuitePins(
    repo="xiaowu0162/LongMemEval-V2",
    commit="be15ea6e995462f3391c1a610892df3f67dfa7bd",
    scorer=MappingProxyType(
        {
            "evaluation/qa_eval_metrics.py": "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac",
        }
    ),
    loader=MappingProxyType(
        {
            "data/public_data.py": "d2b868bfb0b6f8b66489c9445389eb6d0f26975f940a9c2365be154e63649c89",
            "evaluation/harness.py": "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1",
        }
    ),
    data=PINS,
)
