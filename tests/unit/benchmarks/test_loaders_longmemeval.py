"""LongMemEval loader: schema, lazy per-item conversations, bad input, offline scoring."""

from __future__ import annotations

import importlib.util
import json
import math
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_memeval.benchmarks import _download as download_module
from pytest_memeval.benchmarks._base import Benchmark, LoadRequest
from pytest_memeval.benchmarks.longmemeval._loader import (
    BENCHMARK,
    iter_json_array,
    parse_longmemeval_date,
    ranked_session_ids,
)
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Memory, Prediction

ROOT = Path(__file__).resolve().parents[3]


def _item(qid: str = "q1", qtype: str = "single-session-user", **over: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "question_id": qid,
        "question_type": qtype,
        "question": "What degree did I graduate with?",
        "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_1", "answer_x1", "answer_x2"],
        "haystack_dates": [
            "2023/05/20 (Sat) 02:21",
            "2023/05/21 (Sun) 10:00",
            "2023/05/22 (Mon) 11:30",
        ],
        "haystack_sessions": [
            [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
            [
                {
                    "role": "user",
                    "content": "I graduated in Business Administration",
                    "has_answer": True,
                },
                {"role": "assistant", "content": "Congrats café ☕", "has_answer": False},
            ],
            [{"role": "user", "content": "no marked turn"}, {"role": "assistant", "content": "ok"}],
        ],
        "answer_session_ids": ["answer_x1", "answer_x2"],
    }
    item.update(over)
    return item


def _write(path: Path, items: Any, *, bom: bool = False, indent: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(items, indent=indent, ensure_ascii=False)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def _load(path: Path, data_dir: Path | None = None) -> Any:
    return BENCHMARK.load(LoadRequest(data_dir=data_dir, cache_dir=path.parent, variant=str(path)))


def test_protocol_and_declared_metrics() -> None:
    assert isinstance(BENCHMARK, Benchmark)
    assert BENCHMARK.name == "longmemeval"
    assert list(BENCHMARK.categories) == [
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
    ]
    assert tuple(BENCHMARK.metrics) == (
        "f1",
        "recall_all@5",
        "ndcg_any@5",
        "recall_all@10",
        "ndcg_any@10",
    )
    assert BENCHMARK.pass_metric == "f1"


def test_date_parsing() -> None:
    assert parse_longmemeval_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40)
    assert parse_longmemeval_date("2023/05/30 23:40") == datetime(2023, 5, 30, 23, 40)
    assert parse_longmemeval_date("yesterday") is None


def test_records_from_a_small_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.json", [_item("a1"), _item("b2_abs", "multi-session", answer=3)])
    ds = _load(path)
    assert [q.id for q in ds.questions] == ["a1", "b2_abs"]
    q1, q2 = ds.questions
    assert q1.conversation_id == "a1" and q1.category == "single-session-user"
    assert q1.question_date == datetime(2023, 5, 30, 23, 40)
    assert q1.question_date_raw == "2023/05/30 (Tue) 23:40"
    assert q1.evidence == ("answer_x1", "answer_x2")
    # answer_x2 has no user turn marked has_answer -> not a retrieval target
    # (docs/scoring.md#longmemeval-records)
    assert q1.meta["retrieval_correct_ids"] == ("answer_x1",)
    assert not q1.abstention and q2.abstention
    assert q2.gold == "3"  # str(answer)
    assert ds.conversations == {}  # lazy
    conv = ds.conversation("a1")
    assert [s.id for s in conv.sessions] == ["s_1", "answer_x1", "answer_x2"]
    assert conv.sessions[1].date == datetime(2023, 5, 21, 10, 0)
    assert conv.sessions[1].date_raw == "2023/05/21 (Sun) 10:00"
    turns = conv.sessions[1].turns
    assert [t.id for t in turns] == ["answer_x1:1", "answer_x1:2"]
    assert [t.speaker for t in turns] == ["user", "assistant"]
    assert turns[1].text == "Congrats café ☕"
    assert turns[0].meta["has_answer"] is True and turns[1].meta["has_answer"] is False
    assert conv.sessions[0].turns[0].meta["has_answer"] is False
    assert next(iter(ds.sha256.values())) == download_module.file_sha256(path)


def test_bom_and_pretty_printing_are_accepted(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.json", [_item("a"), _item("b")], bom=True, indent=2)
    ds = _load(path)
    assert [q.id for q in ds.questions] == ["a", "b"]
    assert ds.conversation("b").sessions[1].turns[1].text == "Congrats café ☕"


def test_streaming_offsets_are_exact_bytes(tmp_path: Path) -> None:
    items = [_item(f"q{i}", question="ü" * i + "€") for i in range(7)]
    path = _write(tmp_path / "f.json", items, bom=True, indent=1)
    raw = path.read_bytes()
    got = list(iter_json_array(path, chunk_size=37))  # items straddle many chunks
    assert [g[0] for g in got] == items
    for item, offset, length in got:
        assert json.loads(raw[offset : offset + length].decode("utf-8")) == item


def test_empty_list(tmp_path: Path) -> None:
    assert _load(_write(tmp_path / "f.json", [])).questions == []


@pytest.mark.parametrize("content", ["[] garbage", '[{"a": 1}] garbage'])
def test_data_after_the_closing_bracket_is_rejected(tmp_path: Path, content: str) -> None:
    # the empty list used to return before this check
    path = tmp_path / "f.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match="unexpected data after the closing"):
        list(iter_json_array(path))


def test_digest_fed_while_parsing_is_the_file_hash(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "f.json"
    path.write_bytes(b"\xef\xbb\xbf  [" + b'{"k": "' + b"x" * 5000 + b'"}, {"k": 2}]  \n\n')
    digest = hashlib.sha256()
    assert len(list(iter_json_array(path, chunk_size=64, digest=digest))) == 2
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("mutate", "record", "field", "text"),
    [
        (lambda it: it.pop("haystack_dates"), "x (#0)", "haystack_dates", "missing key"),
        (
            lambda it: it["haystack_dates"].pop(),
            "x (#0)",
            "haystack_dates",
            "same length",
        ),
        (lambda it: it.update(question=5), "x (#0)", "question", "expected str"),
        (lambda it: it.update(question_type="bogus"), "x (#0)", "question_type", "unknown"),
        (
            lambda it: it["haystack_sessions"][0].append({"role": "user"}),
            "x (#0)",
            "haystack_sessions",
            "turn 3",
        ),
        (
            lambda it: it.update(haystack_session_ids=["a", "a", "b"]),
            "x (#0)",
            "haystack_session_ids",
            "duplicate",
        ),
        (lambda it: it.pop("question_id"), "#0", "question_id", "missing key"),
    ],
)
def test_bad_items_name_file_record_field(
    tmp_path: Path, mutate: Any, record: str, field: str, text: str
) -> None:
    item = _item("x")
    mutate(item)
    path = _write(tmp_path / "bad.json", [item])
    with pytest.raises(DatasetError, match=text) as info:
        _load(path)
    assert info.value.path == str(path)
    assert info.value.record == record
    assert info.value.field == field


def test_duplicate_ids(tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.json", [_item("same"), _item("same")])
    with pytest.raises(DatasetError, match="duplicate question_id") as info:
        _load(path)
    assert info.value.record == "same (#1)" and info.value.field == "question_id"


@pytest.mark.parametrize("cut", [1, 200, -40, -1])
def test_truncated_file(tmp_path: Path, cut: int) -> None:
    full = json.dumps([_item("a"), _item("b")]).encode()
    path = tmp_path / "trunc.json"
    path.write_bytes(full[:cut])
    with pytest.raises(DatasetError, match="truncated") as info:
        _load(path)
    assert info.value.path == str(path)
    assert info.value.record is not None


def test_not_a_list(tmp_path: Path) -> None:
    path = _write(tmp_path / "obj.json", {"question_id": "a"})
    with pytest.raises(DatasetError, match="JSON list"):
        _load(path)
    path = _write(tmp_path / "list.json", ["a"])
    with pytest.raises(DatasetError, match="expected a question object") as info:
        _load(path)
    assert info.value.record == "#0"


def test_variant_files_in_data_dir(tmp_path: Path) -> None:
    folder = tmp_path / "longmemeval"
    _write(folder / "longmemeval_oracle.json", [_item("o")])
    _write(folder / "longmemeval_s.json", [_item("s_old")])  # pre-cleaning name accepted
    req = LoadRequest(data_dir=tmp_path, cache_dir=tmp_path / "cache", variant="oracle")
    assert [q.id for q in BENCHMARK.load(req).questions] == ["o"]
    req = LoadRequest(data_dir=tmp_path, cache_dir=tmp_path / "cache")  # default: s
    ds = BENCHMARK.load(req)
    assert [q.id for q in ds.questions] == ["s_old"] and ds.variant == "s"
    _write(folder / "longmemeval_s_cleaned.json", [_item("s_new")])
    assert [q.id for q in BENCHMARK.load(req).questions] == ["s_new"]
    # a file name relative to DIR/longmemeval/
    req = LoadRequest(data_dir=tmp_path, cache_dir=tmp_path, variant="longmemeval_oracle.json")
    assert [q.id for q in BENCHMARK.load(req).questions] == ["o"]
    with pytest.raises(DatasetError, match=r"longmemeval_m_cleaned\.json") as info:
        BENCHMARK.load(LoadRequest(data_dir=tmp_path, cache_dir=tmp_path, variant="m"))
    assert "huggingface.co" in str(info.value)
    with pytest.raises(DatasetError, match="unknown LongMemEval variant 'xl'"):
        BENCHMARK.load(LoadRequest(data_dir=tmp_path, cache_dir=tmp_path, variant="xl"))
    with pytest.raises(DatasetError, match="no such file"):
        BENCHMARK.load(LoadRequest(data_dir=None, cache_dir=tmp_path, variant="nope.json"))


def test_offline_download_error_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(url: str, dest: Path, sha256: str | None = None, **_: Any) -> Path:
        raise DatasetError(f"could not download {url}; pass --memeval-data=DIR")

    monkeypatch.setattr(download_module, "download", offline)
    with pytest.raises(DatasetError, match="--memeval-data"):
        BENCHMARK.load(LoadRequest(data_dir=None, cache_dir=tmp_path, variant="s"))


def _perf_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_longmemeval", ROOT / "perf/gen_longmemeval.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_file_loads_with_memory_well_below_its_size(tmp_path: Path) -> None:
    gen = _perf_module()
    path = tmp_path / "s.json"
    gen.generate(path, size_mb=12, n_questions=96, seed=1)
    size = path.stat().st_size
    assert 10e6 < size < 16e6
    tracemalloc.start()
    try:
        ds = _load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(ds.questions) == 96
    # one item (~125 kB here) plus a 256 kB read buffer, not the 12 MB file
    assert peak < size / 4, f"peak {peak} bytes for a {size}-byte file"
    conv = ds.conversation(ds.questions[5].id)
    assert 40 <= len(conv.sessions) <= 60
    assert conv.sessions == tuple(sorted(conv.sessions, key=lambda s: s.date or datetime.min))
    for q in ds.questions:
        assert set(q.evidence) <= set(q.meta["haystack_session_ids"])
        assert all("answer" in e for e in q.evidence)


# --------------------------------------------------------------------------- scoring


def test_score_f1_and_session_retrieval(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "f.json",
        [
            _item(
                "a",
                haystack_session_ids=["s_1", "answer_x1", "s_3"],
                answer_session_ids=["answer_x1"],
            )
        ],
    )
    q = _load(path).questions[0]
    pred = Prediction(
        text="Business Administration",
        memories=(
            Memory(text="m1", source_ids=("s_1:1", "s_1:2")),
            Memory(text="m2", source_ids=("answer_x1:1",)),
            Memory(text="m3", source_ids=("s_3",)),
        ),
    )
    scores = BENCHMARK.score(q, pred)
    assert set(scores) == set(BENCHMARK.metrics)
    assert scores["f1"] == 1.0
    assert ranked_session_ids(pred) == ["s_1", "answer_x1", "s_3"]
    assert scores["recall_all@5"] == 1.0 and scores["recall_all@10"] == 1.0
    # correct doc at rank 2: positions 1 and 2 both weigh 1 in LongMemEval's DCG -> 1.0
    assert scores["ndcg_any@5"] == 1.0
    pred3 = Prediction(
        text="something else",
        memories=(
            Memory(text="m1", source_ids=("s_1:1",)),
            Memory(text="m3", source_ids=("s_3:2",)),
            Memory(text="m2", source_ids=("answer_x1:1",)),
        ),
    )
    scores = BENCHMARK.score(q, pred3)
    assert scores["f1"] == 0.0
    assert math.isclose(scores["ndcg_any@5"], 0.630930, abs_tol=1e-6)


def test_score_without_source_ids_or_for_abstention(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.json", [_item("a"), _item("b_abs")])
    qa, qb = _load(path).questions
    mem = (Memory(text="x", source_ids=("answer_x1:1",)),)
    assert set(BENCHMARK.score(qa, Prediction(text="x", memories=(Memory(text="x"),)))) == {"f1"}
    assert set(BENCHMARK.score(qb, Prediction(text="x", memories=mem))) == {"f1"}
    partial = BENCHMARK.score(qa, Prediction(text="Business", memories=mem))
    assert math.isclose(partial["f1"], 2 / 3)
    assert partial["recall_all@5"] == 1.0


# --------------------------------------------------------------------------- real data


def test_real_oracle_items(real_data: Callable[..., Path]) -> None:
    data = real_data("longmemeval", "longmemeval_oracle_items.json").parents[1]
    ds = BENCHMARK.load(
        LoadRequest(
            data_dir=data,
            cache_dir=data,
            variant=str(data / "longmemeval" / "longmemeval_oracle_items.json"),
        )
    )
    assert [q.id for q in ds.questions] == ["6a1eabeb", "gpt4_70e84552_abs"]
    ku, tr = ds.questions
    assert ku.category == "knowledge-update" and not ku.abstention
    assert ku.gold == "25 minutes and 50 seconds (or 25:50)"
    assert ku.question_date == datetime(2023, 6, 1, 0, 58)
    assert ku.evidence == ("answer_a25d4a91_1", "answer_a25d4a91_2")
    assert tr.category == "temporal-reasoning" and tr.abstention
    conv = ds.conversation("6a1eabeb")
    assert [s.id for s in conv.sessions] == ["answer_a25d4a91_1", "answer_a25d4a91_2"]
    assert conv.sessions[0].date == datetime(2023, 5, 25, 20, 21)
    assert sum(len(s.turns) for s in conv.sessions) == 24
    assert any(t.meta["has_answer"] for s in conv.sessions for t in s.turns)


def test_real_s_item(real_data: Callable[..., Path]) -> None:
    data = real_data("longmemeval", "longmemeval_s_items.json").parents[1]
    req = LoadRequest(data_dir=data, cache_dir=data, variant="longmemeval_s_items.json")
    ds = BENCHMARK.load(req)
    (q,) = ds.questions
    assert q.id == "e47becba" and q.category == "single-session-user"
    assert q.gold == "Business Administration"
    assert q.evidence == ("answer_280352e9",)
    conv = ds.conversation(q.id)
    assert len(conv.sessions) == 53
    assert sum(len(s.turns) for s in conv.sessions) == 550
    evidence = next(s for s in conv.sessions if s.id == "answer_280352e9")
    assert any(t.meta["has_answer"] and t.speaker == "user" for t in evidence.turns)
    dates = [s.date for s in conv.sessions]
    assert all(d is not None for d in dates)


def test_lazy_conversation_is_parsed_once_for_consecutive_systems() -> None:
    """Items of one conversation run one system after another: each asks the dataset for the
    conversation, and the loader must parse it once (LongMemEval-M items are megabytes)."""
    from pytest_memeval.benchmarks._base import Dataset
    from pytest_memeval.records import Conversation

    calls: list[str] = []

    def loader(conversation_id: str) -> Conversation:
        calls.append(conversation_id)
        return Conversation(id=conversation_id, sessions=())

    ds = Dataset(benchmark="x", questions=[], files=[], sha256={}, conversation_loader=loader)
    first = ds.conversation("a")
    assert ds.conversation("a") is first
    ds.conversation("b")
    ds.conversation("a")
    assert calls == ["a", "b", "a"]
