"""What MemoryAgentBench's home pins, as one record: the upstream commit whose loader and scorer
it follows (with the sha256 of those files) and the Hugging Face dataset release it downloads."""

from __future__ import annotations

from types import MappingProxyType

from .._download import PinnedFile, Pins, SuitePins

__all__ = ["FOLDER", "HF_DATASET", "PINS", "UPSTREAM"]

HF_DATASET = "ai-hyz/MemoryAgentBench"
#: the sub-folder of ``--memeval-data`` (and of the download cache) holding the splits
FOLDER = "memoryagentbench"


def _shard(path: str, sha256: str, size: int | None) -> PinnedFile:
    return PinnedFile.below(FOLDER, path, sha256, size)


#: the release: the Hugging Face dataset at a revision, one parquet shard per split and the
#: recommendation split's movie table (``entity2id.json`` at the root, fetched with
#: Test_Time_Learning; its size is left open: only one public source records it)
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="7ea066982b140a19337e17e60d45d4076e042faf",
    files={
        "Accurate_Retrieval": _shard(
            "data/Accurate_Retrieval-00000-of-00001.parquet",
            "56c3cd80fb6731a3e53cd1a6be3148f54df60ff2d290ee50e28f8acebf9655c1",
            20_024_386,
        ),
        "Test_Time_Learning": _shard(
            "data/Test_Time_Learning-00000-of-00001.parquet",
            "5338753be48f925d03318eed66117286e3489025fabe050a547bd086cd7d79c0",
            3_947_476,
        ),
        "Long_Range_Understanding": _shard(
            "data/Long_Range_Understanding-00000-of-00001.parquet",
            "5ab175461954db67770d4a4cb69e569b513ebb96aceb9ee79b57f67488bcd539",
            49_342_452,
        ),
        "Conflict_Resolution": _shard(
            "data/Conflict_Resolution-00000-of-00001.parquet",
            "24d5c3f09ce0ce15625cb9f8a98f44f0d864ca6c94d7b4ad04eb697ca3a5ff45",
            1_491_588,
        ),
        "entity2id": _shard(
            "entity2id.json",
            "63353aca481bc9558b502f91cb98f6fa26438796fdd7e0bc06b5a1532126e8b5",
            None,
        ),
    },
)
#: the upstream repository at the commit whose loader and scorer this home follows:
#: ``utils/eval_other_utils.py`` (the scorer the tests compare against), the loader files read
#: (``utils/eval_data_utils.py``, ``conversation_creator.py``), and the data release above
UPSTREAM = SuitePins(
    repo="HUST-AI-HYZ/MemoryAgentBench",
    commit="455306dcabc3842526eb83cd4e225e5d486c5c5d",
    scorer=MappingProxyType(
        {
            "utils/eval_other_utils.py": "d77976be409298970614d477a9d8003850caddb0510e56a7e821a037d98493a2",
        }
    ),
    loader=MappingProxyType(
        {
            "utils/eval_data_utils.py": "f5d564996d63a07454999e94ab01087d4d07939f69936045c700fd57d338cb68",
            "conversation_creator.py": "9a527e88c9791b37d378b59adac50d9308aac49e714f1d8ddaf3e14bb3f3bec5",
        }
    ),
    data=PINS,
)
