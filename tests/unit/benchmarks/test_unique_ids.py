"""Repeated ids in a benchmark's records: the suites' parts gathered by ``load_parts`` refuse a
conversation id an earlier file of the suite already used, and ``check_unique_ids`` (which the
plugin runs on every loaded dataset) a repeated question id, each naming the file and the record."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_memeval.benchmarks._base import (
    Dataset,
    LoadRequest,
    Parsed,
    check_unique_ids,
    load_parts,
)
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Conversation, Question


def _question(qid: str, conv: str) -> Question:
    return Question(qid, conv, "recall", "What?", "this", index=1)


def test_a_conversation_id_in_two_parts_is_refused(tmp_path: Path) -> None:
    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for f in files:
        f.write_text("{}\n")

    def parse(paths: tuple[str, ...], key: str, stats: object) -> Parsed:
        # both parts hold conversation "c1" (a suite whose ids do not carry the part's name)
        conv = Conversation("c1", ())
        return Parsed((conv,), (_question(f"{key}-q1", "c1"),), ("0" * 64,))

    parts = [("a", [files[0]]), ("b", [files[1]])]
    request = LoadRequest(tmp_path, tmp_path / "cache")
    with pytest.raises(DatasetError) as info:
        load_parts(request, "x", parts, parse, "missing", {})
    assert str(info.value).startswith(f"{files[1]}, record c1: duplicate conversation id 'c1'")
    # one part alone loads
    assert load_parts(request, "x", parts[:1], parse, "missing", {}).conversations.keys() == {"c1"}


def test_check_unique_ids_names_files_and_record() -> None:
    questions = [_question("q1", "c1"), _question("q2", "c1"), _question("q1", "c2")]
    dataset = Dataset("x", questions, [Path("d/one.json"), Path("d/two.json")], {})
    with pytest.raises(DatasetError) as info:
        check_unique_ids(dataset)
    assert str(info.value) == (
        "d/one.json, d/two.json, record q1: duplicate question id 'q1' (questions #1 and #3); "
        "every question id must be unique: fix the file or remove the repeated record"
    )
    check_unique_ids(Dataset("x", questions[:2], [], {}))  # distinct ids: nothing to say
