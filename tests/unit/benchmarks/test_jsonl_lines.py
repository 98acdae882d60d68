"""A JSON Lines dataset whose line fails to parse, however it fails, is one DatasetError naming the
file and the line (HaluMem, MemoryAgentBench's .jsonl export, LongMemEval-V2's questions and
trajectories all read their lines through ``benchmarks.base.parse_json_line``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_memeval.benchmarks import halumem
from pytest_memeval.benchmarks.longmemeval_v2 import _loader as longmemeval_v2
from pytest_memeval.benchmarks.memoryagentbench import _loader as memoryagentbench
from pytest_memeval.errors import DatasetError

#: nested past the JSON decoder's recursion limit (a RecursionError, not a ValueError)
DEEP = "[" * 100_000 + "]" * 100_000
BAD = {
    "nested-too-deeply": (DEEP, "nested too deeply"),
    "syntax": ('{"id": ', "not valid JSON (Expecting value"),
    "huge-int": ("1" * 5000, "not valid JSON (Exceeds the limit"),
}


def _stream(path: Path) -> None:
    list(longmemeval_v2.stream_jsonl(path, hashlib.sha256()))


READERS: dict[str, Callable[[Path], object]] = {
    "halumem": lambda p: halumem.parse_users(p.read_bytes(), str(p)),
    "memoryagentbench": lambda p: memoryagentbench.parse_records(p.read_bytes(), str(p)),
    "longmemeval-v2-questions": lambda p: longmemeval_v2.parse_questions(p.read_bytes(), str(p)),
    "longmemeval-v2-trajectories": _stream,
}


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_a_bad_line_is_one_error_naming_file_and_line(
    tmp_path: Path, reader: Callable[[Path], object], bad: tuple[str, str]
) -> None:
    line, message = bad
    path = tmp_path / "data.jsonl"
    path.write_text('{"id": "q1"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        reader(path)
    text = str(info.value)
    assert text.startswith(f"{path}: line 3 is not valid JSON"), text
    assert message in text and "\n" not in text
