"""LoCoMo and demo loaders: the real file, the shipped demo data, validation errors, scores."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from file_server import serve_files

from pytest_memeval.benchmarks import Benchmark, LoadRequest, get_benchmark
from pytest_memeval.benchmarks._categories import shared_category
from pytest_memeval.benchmarks.locomo import (
    BENCHMARK as LOCOMO,
)
from pytest_memeval.benchmarks.locomo import (
    LOCOMO_SHA256,
    LOCOMO_URL,
    load_locomo_file,
    parse_locomo,
)
from pytest_memeval.benchmarks.locomo._demo import BENCHMARK as DEMO
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Memory, Prediction, Question


def _request(data_dir: Path | None, tmp_path: Path) -> LoadRequest:
    return LoadRequest(data_dir=data_dir, cache_dir=tmp_path / "cache")


# --------------------------------------------------------------------------- a small valid file

SMALL: list[dict[str, Any]] = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Oslo."},
                {
                    "speaker": "Bob",
                    "dia_id": "D1:2",
                    "text": "Look at my cat!",
                    "blip_caption": "a photo of a cat",
                    "re-download": True,
                },
            ],
            "session_2_date_time": "9:00 AM on 1 June, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "I ran 10 km."}],
            "session_10_date_time": "not a date",
            "session_10": [{"speaker": "Ann", "dia_id": "D10:1", "text": "Hi."}],
            "session_11_date_time": "10:00 am on 2 June, 2023",
        },
        "qa": [
            {"question": "Where?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4},
            {"question": "Year?", "answer": 2023, "evidence": ["D8:6; D9:17"], "category": 2},
            {
                "question": "Dog?",
                "evidence": ["D1:2"],
                "category": 5,
                "adversarial_answer": "a dog",
            },
        ],
    }
]


def _write(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _data_dir(tmp_path: Path, obj: object) -> Path:
    root = tmp_path / "data"
    _write(root / "locomo" / "locomo10.json", obj)
    return root


def test_small_file_records(tmp_path: Path) -> None:
    root = _data_dir(tmp_path, SMALL)
    ds = LOCOMO.load(_request(root, tmp_path))
    assert ds.benchmark == "locomo"
    assert ds.files == [root / "locomo" / "locomo10.json"]
    conv = ds.conversation("conv-1")
    assert conv.speakers == ("Ann", "Bob")
    # numeric session order, S-prefixed ids; a date key without a session adds nothing
    assert [s.id for s in conv.sessions] == ["S1", "S2", "S10"]
    s1, s2, s10 = conv.sessions
    assert s1.date is not None and (s1.date.hour, s1.date.minute, s1.date.day) == (13, 56, 8)
    assert s1.date_raw == "1:56 pm on 8 May, 2023"
    assert s2.date is not None and s2.date.month == 6 and s2.date.hour == 9
    assert s10.date is None and s10.date_raw == "not a date"
    assert [t.id for t in s1.turns] == ["D1:1", "D1:2"]
    assert s1.turns[0].meta == {}
    assert s1.turns[1].meta == {"blip_caption": "a photo of a cat"}
    q1, q2, q3 = ds.questions
    assert (q1.id, q1.index, q1.category, q1.category_id, q1.gold) == (
        "conv-1-q1",
        1,
        "single-hop",
        4,
        "Oslo",
    )
    assert q2.gold == 2023 and isinstance(q2.gold, int)
    assert q2.evidence == ("D8:6; D9:17",)  # malformed evidence kept as-is
    assert q2.meta["malformed_evidence"] is True
    assert q3.gold is None and q3.category == "adversarial" and q3.abstention
    assert q3.meta["adversarial_answer"] == "a dog"
    assert ds.meta["sha256_mismatch"] is True  # not the official file: recorded, not refused
    raw = (root / "locomo" / "locomo10.json").read_bytes()
    assert ds.sha256 == {"locomo/locomo10.json": hashlib.sha256(raw).hexdigest()}


def test_bom_is_accepted(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + json.dumps(SMALL).encode()
    parsed = parse_locomo(data, "bom.json")
    assert len(parsed.questions) == 3


def test_file_is_parsed_once_and_reparsed_when_changed(tmp_path: Path) -> None:
    root = _data_dir(tmp_path, SMALL)
    path = root / "locomo" / "locomo10.json"
    first = load_locomo_file(path)
    assert load_locomo_file(path) is first
    a = LOCOMO.load(_request(root, tmp_path))
    b = LOCOMO.load(_request(root, tmp_path))
    assert a is not b and a.questions is not b.questions  # fresh Dataset around shared records
    assert a.questions[0] is b.questions[0]
    changed = copy.deepcopy(SMALL)
    changed[0]["qa"].pop()
    _write(path, changed)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert len(load_locomo_file(path).questions) == 2


def test_missing_data_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        LOCOMO.load(_request(tmp_path / "nowhere", tmp_path))
    msg = str(info.value)
    assert str(tmp_path / "nowhere" / "locomo" / "locomo10.json") in msg
    assert "DIR/locomo/locomo10.json" in msg
    assert LOCOMO_URL in msg


# --------------------------------------------------------------------------- validation


def _mutated(path: str, value: object, *, delete: bool = False) -> list[dict[str, Any]]:
    """SMALL with one nested key (dotted path, numeric parts index lists) replaced or deleted."""
    obj = copy.deepcopy(SMALL)
    node: Any = obj
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last: Any = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
    if delete:
        del node[last]
    else:
        node[last] = value
    return obj


INVALID = [
    ("missing sample_id", _mutated("0.sample_id", None, delete=True), "[0]", "sample_id"),
    (
        "missing conversation",
        _mutated("0.conversation", None, delete=True),
        "conv-1",
        "conversation",
    ),
    ("missing qa", _mutated("0.qa", None, delete=True), "conv-1", "qa"),
    ("qa not a list", _mutated("0.qa", {"x": 1}), "conv-1", "qa"),
    (
        "missing question",
        _mutated("0.qa.1.question", None, delete=True),
        "conv-1 qa[1]",
        "question",
    ),
    ("question not str", _mutated("0.qa.1.question", 5), "conv-1 qa[1]", "question"),
    (
        "missing category",
        _mutated("0.qa.0.category", None, delete=True),
        "conv-1 qa[0]",
        "category",
    ),
    ("category 6", _mutated("0.qa.0.category", 6), "conv-1 qa[0]", "category"),
    ("category string", _mutated("0.qa.0.category", "4"), "conv-1 qa[0]", "category"),
    ("category bool", _mutated("0.qa.0.category", True), "conv-1 qa[0]", "category"),
    (
        "missing answer cat 4",
        _mutated("0.qa.0.answer", None, delete=True),
        "conv-1 qa[0]",
        "answer",
    ),
    ("null answer cat 2", _mutated("0.qa.1.answer", None), "conv-1 qa[1]", "answer"),
    ("answer a list", _mutated("0.qa.0.answer", ["Oslo"]), "conv-1 qa[0]", "answer"),
    ("evidence a string", _mutated("0.qa.0.evidence", "D1:1"), "conv-1 qa[0]", "evidence"),
    ("evidence ints", _mutated("0.qa.0.evidence", [1]), "conv-1 qa[0]", "evidence"),
    (
        "turn missing dia_id",
        _mutated("0.conversation.session_1.1.dia_id", None, delete=True),
        "conv-1 session_1[1]",
        "dia_id",
    ),
    (
        "turn missing text",
        _mutated("0.conversation.session_2.0.text", None, delete=True),
        "conv-1 session_2[0]",
        "text",
    ),
    (
        "turn missing speaker",
        _mutated("0.conversation.session_1.0.speaker", None, delete=True),
        "conv-1 session_1[0]",
        "speaker",
    ),
    (
        "turn text not str",
        _mutated("0.conversation.session_1.0.text", 3),
        "conv-1 session_1[0]",
        "text",
    ),
    ("session not a list", _mutated("0.conversation.session_2", "x"), "conv-1 session_2", None),
    ("duplicate sample_id", SMALL + SMALL, "[1]", "sample_id"),
    ("top level object", {"conv-1": SMALL[0]}, None, None),
]


@pytest.mark.parametrize(
    ("obj", "record", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_records_raise_dataset_error(
    tmp_path: Path, obj: object, record: str | None, field: str | None
) -> None:
    root = _data_dir(tmp_path, obj)
    path = root / "locomo" / "locomo10.json"
    with pytest.raises(DatasetError) as info:
        LOCOMO.load(_request(root, tmp_path))
    err = info.value
    msg = str(err)
    assert str(path.resolve()) in msg
    assert err.record == record
    if record:
        assert f"record {record}" in msg
    assert err.field == field
    if field:
        assert repr(field) in msg
    assert "\n" not in msg


def test_category5_may_omit_the_answer_but_may_also_have_one(tmp_path: Path) -> None:
    obj = _mutated("0.qa.2.answer", "No")
    parsed = parse_locomo(json.dumps(obj).encode(), "x.json")
    assert parsed.questions[2].gold == "No"
    assert parsed.questions[2].meta["adversarial_answer"] == "a dog"


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(SMALL, indent=1)
    with pytest.raises(DatasetError) as info:
        parse_locomo(text[: len(text) // 2].encode(), "cut.json")
    msg = str(info.value)
    assert msg.startswith("cut.json: invalid or truncated JSON at line ")
    assert ", column " in msg and "at the end of the file" in msg


def test_invalid_json_in_the_middle(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        parse_locomo(b'[\n  {"sample_id": "a",,}\n]', "bad.json")
    assert "line 2, column" in str(info.value)
    assert "at the end of the file" not in str(info.value)


def test_invalid_utf8(tmp_path: Path) -> None:
    data = json.dumps(SMALL).encode().replace(b"Oslo", b"Osl\xff")
    with pytest.raises(DatasetError) as info:
        parse_locomo(data, "latin.json")
    assert "not valid UTF-8 at byte" in str(info.value)
    assert str(info.value).startswith("latin.json: ")


# --------------------------------------------------------------------------- protocol, registry


def test_benchmark_protocol_and_categories() -> None:
    for bench, name in ((LOCOMO, "locomo"), (DEMO, "demo")):
        assert isinstance(bench, Benchmark)
        assert get_benchmark(name) is bench
        assert bench.name == name
        assert tuple(bench.metrics) == ("f1", "set_f1", "bleu1")
        assert bench.pass_metric == "f1"
        names = {int(k): c.name for k, c in bench.categories.items()}
        assert names == {
            1: "multi-hop",
            2: "temporal",
            3: "open-domain",
            4: "single-hop",
            5: "adversarial",
        }
        assert [c.id for c in bench.categories.values()] == [4, 1, 2, 3, 5]
        assert {k: c.in_overall for k, c in bench.categories.items()} == {
            1: True,
            2: True,
            3: True,
            4: True,
            5: False,
        }
        for c in bench.categories.values():
            assert c.shared == shared_category(name, c.name)
    assert LOCOMO.categories[3].shared == "world-knowledge"
    assert LOCOMO.categories[5].shared == "abstention"


# --------------------------------------------------------------------------- download path


@pytest.fixture
def locomo_server() -> Iterator[tuple[str, Counter[str], bytes]]:
    body = json.dumps(SMALL).encode()
    with serve_files({"/locomo10.json": body}) as srv:
        yield srv.url("/locomo10.json"), srv.hits, body


def test_downloads_into_the_cache_when_no_data_dir(
    tmp_path: Path, locomo_server: tuple[str, Counter[str], bytes]
) -> None:
    url, hits, body = locomo_server
    sha = hashlib.sha256(body).hexdigest()
    bench = dataclasses.replace(LOCOMO, url=url, sha256=sha)
    ds = bench.load(_request(None, tmp_path))
    dest = tmp_path / "cache" / "data" / "locomo" / "locomo10.json"
    assert ds.files == [dest]
    assert dest.read_bytes() == body
    assert ds.sha256 == {"locomo/locomo10.json": sha}
    assert "sha256_mismatch" not in ds.meta
    assert len(ds.questions) == 3
    bench.load(_request(None, tmp_path))
    assert hits["/locomo10.json"] == 1  # cached


def test_download_with_the_wrong_pin_fails_cleanly(
    tmp_path: Path, locomo_server: tuple[str, Counter[str], bytes]
) -> None:
    url, _, body = locomo_server
    bench = dataclasses.replace(LOCOMO, url=url)  # pinned to the official sha256
    with pytest.raises(DatasetError) as info:
        bench.load(_request(None, tmp_path))
    assert LOCOMO_SHA256 in str(info.value)
    assert hashlib.sha256(body).hexdigest() in str(info.value)
    assert list((tmp_path / "cache" / "data" / "locomo").iterdir()) == []


# --------------------------------------------------------------------------- demo


def test_demo_dataset(tmp_path: Path) -> None:
    ds = DEMO.load(_request(tmp_path / "ignored", tmp_path))
    assert ds.benchmark == "demo"
    assert ds.conversation_ids() == ["demo-1", "demo-2"]
    assert set(ds.sha256) == {"demo.json"}
    assert ds.files[0].name == "demo.json" and ds.files[0].is_file()
    assert 12 <= len(ds.questions) <= 16
    assert {q.category_id for q in ds.questions} == {1, 2, 3, 4, 5}
    for conv in ds.conversations.values():
        assert 2 <= len(conv.sessions) <= 3
        assert 10 <= sum(len(s.turns) for s in conv.sessions) <= 16
        assert all(s.date is not None for s in conv.sessions)
        turn_ids = {t.id for s in conv.sessions for t in s.turns}
        for s in conv.sessions:
            assert all(t.id.startswith(f"D{s.id[1:]}:") for t in s.turns)
        for q in ds.questions:
            if q.conversation_id == conv.id:
                assert q.evidence and set(q.evidence) <= turn_ids, q.id
    by_cat: dict[int, list[Question]] = {}
    for q in ds.questions:
        assert isinstance(q.category_id, int)
        by_cat.setdefault(q.category_id, []).append(q)
    assert any(isinstance(q.gold, str) and "," in q.gold for q in by_cat[1])
    assert any(isinstance(q.gold, int) for q in ds.questions)
    assert any(isinstance(q.gold, str) and ";" in q.gold for q in by_cat[3])
    assert any(q.gold is None and "adversarial_answer" in q.meta for q in by_cat[5])
    assert [q.id for q in ds.questions[:2]] == ["demo-1-q1", "demo-1-q2"]


# --------------------------------------------------------------------------- scoring


def _q(category: int, gold: object, evidence: tuple[str, ...] = ("D1:1", "D2:3")) -> Question:
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    return Question(
        id="x-q1",
        conversation_id="x",
        category=names[category],
        question="?",
        gold=gold,  # type: ignore[arg-type]
        evidence=evidence,
        category_id=category,
    )


def test_score_categories_1_to_4() -> None:
    s = LOCOMO.score(_q(4, "Oslo"), Prediction("Oslo"))
    assert s == {"f1": 1.0, "set_f1": 1.0, "bleu1": 1.0}
    # category 1 splits on commas; extra predicted parts are not penalised
    # (docs/scoring.md#locomo-per-category-score)
    s = LOCOMO.score(_q(1, "Pixel, Comet"), Prediction("Comet, Pixel, Rex"))
    assert s["f1"] == 1.0
    assert s["set_f1"] == pytest.approx(0.8)
    # integer gold; category 2 does not split
    assert LOCOMO.score(_q(2, 2022), Prediction("2022"))["f1"] == 1.0
    # "7 May 2023" vs "7 May, 2023" for category 1 = (0.8 + 0.5) / 2
    assert LOCOMO.score(_q(1, "7 May, 2023"), Prediction("7 May 2023"))["f1"] == pytest.approx(0.65)
    # category 3 keeps only the gold's first ';' segment
    s = LOCOMO.score(_q(3, "Likely no; since it went badly"), Prediction("likely no"))
    assert s["f1"] == 1.0 and s["set_f1"] < 1.0


def test_score_category5_has_only_f1() -> None:
    s = DEMO.score(_q(5, None), Prediction("That was not mentioned in the conversation."))
    assert s == {"f1": 1.0}
    assert DEMO.score(_q(5, "No"), Prediction("No"))["f1"] == 0.0


def test_score_adds_evidence_recall_when_memories_name_sources() -> None:
    q = _q(4, "Oslo")
    assert "evidence_recall" not in LOCOMO.score(q, Prediction("Oslo", (Memory("m"),)))
    mems = (
        Memory("a", source_ids=("D1:1",)),
        Memory("b"),
        Memory("c", source_ids=("D1:1", "D9:9")),
    )
    assert LOCOMO.score(q, Prediction("Oslo", mems))["evidence_recall"] == 0.5
    sessions = (Memory("s", source_ids=("S1", "S2")),)
    assert LOCOMO.score(q, Prediction("x", sessions))["evidence_recall"] == 1.0


# --------------------------------------------------------------------------- the real file


@pytest.fixture(scope="module")
def real(real_data: Callable[..., Path]) -> Any:
    root = real_data("locomo", "locomo10.json").parents[1]
    return LOCOMO.load(LoadRequest(data_dir=root, cache_dir=Path("/nonexistent")))


def test_real_file_counts(real: Any) -> None:
    qs: list[Question] = real.questions
    assert len(qs) == 1986
    assert Counter(q.category_id for q in qs) == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert Counter(q.category for q in qs)["single-hop"] == 841
    convs = real.conversations
    assert len(convs) == 10
    assert list(convs) == real.conversation_ids()
    assert real.conversation_ids()[0] == "conv-26"
    assert sum(len(c.sessions) for c in convs.values()) == 272
    assert sum(len(s.turns) for c in convs.values() for s in c.sessions) == 5882
    assert len(convs["conv-26"].sessions) == 19
    assert sum(1 for q in qs if isinstance(q.gold, int)) == 6
    assert real.sha256 == {"locomo/locomo10.json": LOCOMO_SHA256}
    assert "sha256_mismatch" not in real.meta


def test_real_file_details(real: Any) -> None:
    qs: list[Question] = real.questions
    assert qs[0].id == "conv-26-q1" and qs[0].index == 1
    assert qs[0].gold == "7 May 2023" and qs[0].evidence == ("D1:3",)
    assert qs[1].gold == 2022
    assert len({q.id for q in qs}) == 1986
    cat5 = [q for q in qs if q.category_id == 5]
    assert sum(1 for q in cat5 if q.gold is None) == 444
    assert sorted(q.gold for q in cat5 if q.gold is not None) == ["No", "No"]
    assert all("adversarial_answer" in q.meta for q in cat5)
    evidence = [e for q in qs for e in q.evidence]
    for bad in ("D8:6; D9:17", "D", "D:11:26"):
        assert bad in evidence
    assert sum(1 for q in qs if q.meta.get("malformed_evidence")) == 6
    sessions = [s for c in real.conversations.values() for s in c.sessions]
    assert all(s.date is not None for s in sessions)
    c26 = real.conversations["conv-26"]
    assert c26.speakers == ("Caroline", "Melanie")
    assert c26.sessions[0].id == "S1" and c26.sessions[0].date_raw == "1:56 pm on 8 May, 2023"
    image_turns = [t for s in sessions for t in s.turns if "blip_caption" in t.meta]
    assert len(image_turns) == 1226
    assert sum(1 for t in image_turns if "img_url" in t.meta) == 709 + 179 + 22


def test_real_local_fork_with_other_sha256_is_allowed(
    tmp_path: Path, real_data: Callable[..., Path]
) -> None:
    obj = json.loads(real_data("locomo", "locomo10.json").read_bytes())
    obj[0]["qa"][0]["answer"] = "8 May 2023"
    root = _data_dir(tmp_path, obj)
    ds = LOCOMO.load(_request(root, tmp_path))
    assert ds.meta["sha256_mismatch"] is True
    assert ds.sha256["locomo/locomo10.json"] != LOCOMO_SHA256
    assert ds.questions[0].gold == "8 May 2023"
