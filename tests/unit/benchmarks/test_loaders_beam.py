"""BEAM loader: GitHub, 10M plan and Hugging Face row layouts; bad input; offline scoring."""

from __future__ import annotations

import builtins
import io
import json
import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.benchmarks._base import Benchmark, LoadRequest
from pytest_memeval.benchmarks.beam import ABILITIES, BENCHMARK, GOLD_FIELDS
from pytest_memeval.benchmarks.beam import _loader as beam
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import Prediction


def _msg(mid: int, role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "id": mid, "content": text, **extra}


def _chat(
    first_id: int = 0, anchors: tuple[str, ...] = ("March-15-2024", "April-05-2024")
) -> list[Any]:
    batches = []
    mid = first_id
    for b, anchor in enumerate(anchors, start=1):
        turns = []
        for t in range(2):
            user_extra: dict[str, Any] = {"question_type": "main_question", "index": f"{b},{t + 1}"}
            if t == 0:
                user_extra["time_anchor"] = anchor
            turns.append(
                [
                    _msg(mid, "user", f"user says {mid}", **user_extra),
                    _msg(mid + 1, "assistant", f"reply {mid + 1}"),
                ]
            )
            mid += 2
        batches.append({"batch_number": b, "turns": turns, "time_anchor": None})
    return batches


def _probing() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for ability, gold_field in GOLD_FIELDS.items():
        out[ability] = [
            {
                "question": f"{ability} question {i}?",
                gold_field: f"gold {ability} {i}",
                "difficulty": "easy",
                "rubric": ["first event", "second event", "third event"]
                if ability == "event_ordering"
                else [f"LLM response should state: gold {ability} {i}"],
                "source_chat_ids": [1, 3] if i == 0 else {"first": [5], "second": [7]},
            }
            for i in range(2)
        ]
    return out


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _github(root: Path, size: str = "100K", n: int = 2) -> Path:
    for i in range(1, n + 1):
        conv = root / "beam" / size / str(i)
        _write_json(conv / "chat.json", _chat())
        _write_json(conv / "probing_questions" / "probing_questions.json", _probing())
    return root


def _req(root: Path | None, variant: str | None = None) -> LoadRequest:
    return LoadRequest(data_dir=root, cache_dir=Path("/nonexistent-cache"), variant=variant)


def test_protocol() -> None:
    assert isinstance(BENCHMARK, Benchmark)
    assert list(BENCHMARK.categories) == list(ABILITIES)
    assert len(BENCHMARK.categories) == 10
    assert tuple(BENCHMARK.metrics) == ("f1", "ordering", "ordering_tau")
    assert BENCHMARK.pass_metric == "f1"


def test_github_layout_records(tmp_path: Path) -> None:
    ds = BENCHMARK.load(_req(_github(tmp_path)))
    assert ds.variant == "100K"
    assert len(ds.questions) == 40
    assert ds.conversation_ids() == ["beam-100K-1", "beam-100K-2"]
    q = ds.questions[0]
    assert q.id == "beam-100K-1-abstention-0"
    assert q.category == "abstention" and q.category_id == "abstention" and q.abstention
    assert q.gold == "gold abstention 0"
    assert q.evidence == ("1", "3")
    assert q.meta["rubric"] == ("LLM response should state: gold abstention 0",)
    assert [x.index for x in ds.questions] == list(range(40))
    eo = next(x for x in ds.questions if x.id == "beam-100K-1-event_ordering-1")
    assert eo.meta["ordering_reference"] == ("first event", "second event", "third event")
    assert eo.evidence == ("5", "7")
    assert eo.gold == "gold event_ordering 1" and not eo.abstention
    conv = ds.conversation("beam-100K-2")
    assert [s.id for s in conv.sessions] == ["batch-1", "batch-2"]
    assert [s.date for s in conv.sessions] == [datetime(2024, 3, 15), datetime(2024, 4, 5)]
    assert conv.sessions[1].date_raw == "April-05-2024"
    turns = conv.sessions[0].turns
    assert [t.id for t in turns] == ["0", "1", "2", "3"]
    assert [t.speaker for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[2].meta == {"question_type": "main_question", "index": "1,2", "turn": 2}
    assert set(ds.sha256) == {
        "100K/1/probing_questions/probing_questions.json",
        "100K/1/chat.json",
        "100K/2/probing_questions/probing_questions.json",
        "100K/2/chat.json",
    }


def test_pickle_files_are_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _github(tmp_path, n=1)
    marker = tmp_path / "UNPICKLED"
    # a protocol-0 pickle that would run `touch MARKER` if anything unpickled it
    payload = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    conv_dir = root / "beam" / "100K" / "1"
    for name in ("chat.pickle", "probing_questions/probing_questions.pickle", "plan.pickle"):
        (conv_dir / name).write_bytes(payload)
    real_open = builtins.open

    def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
        assert not str(file).endswith(".pickle"), f"opened {file}"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)
    ds = BENCHMARK.load(_req(root))
    assert len(ds.conversation("beam-100K-1").sessions) == 2
    assert not marker.exists()
    assert all(not str(p).endswith(".pickle") for p in ds.files)


def test_chats_folder_and_variant_spelling(tmp_path: Path) -> None:
    for i in (1, 10, 2):  # numeric order, not text order
        conv = tmp_path / "beam" / "chats" / "500K" / str(i)
        _write_json(conv / "chat.json", _chat())
        _write_json(conv / "probing_questions" / "probing_questions.json", _probing())
    (tmp_path / "beam" / "chats" / "500K" / "topics.json").write_text("{}")
    ds = BENCHMARK.load(_req(tmp_path, "500k"))
    assert ds.variant == "500K"
    assert ds.conversation_ids() == ["beam-500K-1", "beam-500K-2", "beam-500K-10"]


def test_missing_data(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"github\.com/mohammadtavakoli78/BEAM"):
        BENCHMARK.load(_req(None))
    with pytest.raises(DatasetError, match="no BEAM 1M data"):
        BENCHMARK.load(_req(tmp_path, "1M"))
    with pytest.raises(DatasetError, match="unknown BEAM variant '2M'"):
        BENCHMARK.load(_req(tmp_path, "2M"))
    conv = tmp_path / "beam" / "100K" / "1"
    _write_json(conv / "probing_questions" / "probing_questions.json", _probing())
    with pytest.raises(DatasetError, match=r"chat\.json not found") as info:
        BENCHMARK.load(_req(tmp_path))
    assert info.value.path == str(conv / "chat.json")


def _bad(tmp_path: Path, mutate: Any) -> DatasetError:
    root = _github(tmp_path, n=1)
    path = root / "beam" / "100K" / "1" / "probing_questions" / "probing_questions.json"
    data = _probing()
    mutate(data)
    _write_json(path, data)
    with pytest.raises(DatasetError) as info:
        BENCHMARK.load(_req(root))
    assert info.value.path == str(path)
    return info.value


def test_missing_ability(tmp_path: Path) -> None:
    err = _bad(tmp_path, lambda d: d.pop("summarization"))
    assert err.record == "beam-100K-1" and err.field == "summarization"
    assert "ability missing" in str(err)


def test_unknown_ability(tmp_path: Path) -> None:
    err = _bad(tmp_path, lambda d: d.update(mind_reading=[]))
    assert err.field == "mind_reading" and "unknown ability" in str(err)


@pytest.mark.parametrize("rubric", [[], "a string", [1, 2], [""], None])
def test_malformed_rubric(tmp_path: Path, rubric: Any) -> None:
    err = _bad(tmp_path, lambda d: d["knowledge_update"][1].update(rubric=rubric))
    assert err.record == "knowledge_update[1]" and err.field == "rubric"
    assert "malformed rubric" in str(err)


def test_missing_gold_field(tmp_path: Path) -> None:
    err = _bad(tmp_path, lambda d: d["summarization"][0].pop("ideal_summary"))
    assert err.record == "summarization[0]" and err.field == "ideal_summary"


def test_truncated_and_wrong_type_chat(tmp_path: Path) -> None:
    root = _github(tmp_path, n=1)
    chat = root / "beam" / "100K" / "1" / "chat.json"
    chat.write_text(json.dumps(_chat())[:-30])
    ds = BENCHMARK.load(_req(root))  # chats are parsed when first needed
    with pytest.raises(DatasetError, match="truncated") as info:
        ds.conversation("beam-100K-1")
    assert info.value.path == str(chat)
    bad = _chat()
    bad[1]["turns"][0][1]["content"] = 7
    chat.write_text(json.dumps(bad))
    with pytest.raises(DatasetError, match="message 1") as info:
        BENCHMARK.load(_req(root)).conversation("beam-100K-1")
    assert info.value.record == "batch #1" and info.value.field == "content"


def test_duplicate_message_ids(tmp_path: Path) -> None:
    root = _github(tmp_path, n=1)
    chat = _chat()
    chat[1]["turns"][0][0]["id"] = 0
    path = _write_json(root / "beam" / "100K" / "1" / "chat.json", chat)
    with pytest.raises(DatasetError, match="duplicate message id 0") as info:
        BENCHMARK.load(_req(root)).conversation("beam-100K-1")
    assert info.value.path == str(path) and info.value.record == "batch-2"
    assert info.value.field == "id"


def test_probing_json_with_bom(tmp_path: Path) -> None:
    root = _github(tmp_path, n=1)
    path = root / "beam" / "100K" / "1" / "probing_questions" / "probing_questions.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert len(BENCHMARK.load(_req(root)).questions) == 20


def test_10m_top_level_plan_layout(tmp_path: Path) -> None:
    conv = tmp_path / "beam" / "10M" / "1"
    top = [{"plan-1": _chat(0)}, {"plan-2": _chat(100, ("May-01-2024",))}]
    _write_json(conv / "chat.json", top)
    _write_json(conv / "probing_questions" / "probing_questions.json", _probing())
    ds = BENCHMARK.load(_req(tmp_path, "10M"))
    c = ds.conversation("beam-10M-1")
    assert [s.id for s in c.sessions] == ["plan-1/batch-1", "plan-1/batch-2", "plan-2/batch-1"]
    assert c.sessions[2].date == datetime(2024, 5, 1)
    assert c.sessions[2].turns[0].id == "100"


def test_10m_per_plan_files(tmp_path: Path) -> None:
    conv = tmp_path / "beam" / "10M" / "3"
    _write_json(conv / "probing_questions" / "probing_questions.json", _probing())
    _write_json(conv / "plan-0" / "chat.json", _chat())
    _write_json(conv / "plan-1" / "chat.json", _chat(anchors=("June-02-2024",)))
    c = BENCHMARK.load(_req(tmp_path, "10M")).conversation("beam-10M-3")
    assert [s.id for s in c.sessions] == ["plan-0/batch-1", "plan-0/batch-2", "plan-1/batch-1"]
    assert c.sessions[0].turns[0].id == "plan-0/0" and c.sessions[2].turns[0].id == "plan-1/0"
    (conv / "plan-1" / "chat.json").unlink()
    with pytest.raises(DatasetError, match=r"plan-\*/chat\.json") as info:
        BENCHMARK.load(_req(tmp_path, "10M"))
    assert info.value.path == str(conv)


def _hf_chat() -> list[list[dict[str, Any]]]:
    return [[m for t in b["turns"] for m in t] for b in _chat()]


def test_hugging_face_rows_with_python_literals(tmp_path: Path) -> None:
    rows = [
        {"conversation_id": "1", "chat": _hf_chat(), "probing_questions": repr(_probing())},
        {"conversation_id": "2", "chat": repr(_hf_chat()), "probing_questions": _probing()},
    ]
    path = tmp_path / "beam" / "1M.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ds = BENCHMARK.load(_req(tmp_path, "1M"))
    assert len(ds.questions) == 40 and ds.meta["layout"] == "huggingface-rows"
    for cid in ("beam-1M-1", "beam-1M-2"):
        c = ds.conversation(cid)
        assert [s.id for s in c.sessions] == ["batch-1", "batch-2"]
        assert c.sessions[1].date == datetime(2024, 4, 5)
        assert len(c.sessions[0].turns) == 4


def test_rows_json_error_names_the_line_it_is_on(tmp_path: Path) -> None:
    path = tmp_path / "beam" / "100K.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        '[\n  {"conversation_id": 1,\n   "chat": [],\n   "probing_questions": ,\n  }\n]\n'
    )
    with pytest.raises(DatasetError, match="at column") as info:
        BENCHMARK.load(_req(tmp_path))
    assert info.value.record == "line 4"


def test_python_literals_are_never_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "EVALUATED"
    code = f"__import__('os').system('touch {marker}')"
    path = tmp_path / "beam" / "100K.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"conversation_id": 1, "chat": [], "probing_questions": code}))
    with pytest.raises(DatasetError, match="not a valid Python literal") as info:
        BENCHMARK.load(_req(tmp_path))
    assert not marker.exists()
    assert info.value.field == "probing_questions" and info.value.record == "beam-100K-1"
    monkeypatch.setattr(beam, "MAX_LITERAL_CHARS", 50)
    path.write_text(
        json.dumps({"conversation_id": 1, "chat": [], "probing_questions": repr(_probing())})
    )
    with pytest.raises(DatasetError, match="exceeds the limit of 50"):
        BENCHMARK.load(_req(tmp_path))


# --------------------------------------------------------------------------- scoring


def _eo_question(tmp_path: Path, reference: list[str]) -> Any:
    root = _github(tmp_path, n=1)
    path = root / "beam" / "100K" / "1" / "probing_questions" / "probing_questions.json"
    data = _probing()
    data["event_ordering"][0]["rubric"] = reference
    _write_json(path, data)
    ds = BENCHMARK.load(_req(root))
    return next(q for q in ds.questions if q.id == "beam-100K-1-event_ordering-0")


@pytest.mark.parametrize(
    ("reference", "lines", "tau_norm", "final"),
    [  # event-ordering vectors (docs/scoring.md#event-ordering)
        (["a", "b", "c", "d"], ["a", "b", "c", "d"], 1.0, 1.0),
        (["a", "b", "c", "d"], ["d", "c", "b", "a"], 0.0, 0.0),
        (["a", "b", "c", "d"], ["b", "a", "c", "d"], 0.833333, 0.833333),
        (["a", "b", "c", "d"], ["b", "c", "d"], 0.5, 0.428571),
        (["a", "b", "c"], ["a", "b", "x", "c"], 0.833333, 0.714286),
        (["a", "b", "c"], ["a", "", "b", "c"], 0.666667, 0.571429),
        (["a", "b", "c"], ["x", "y", "z"], 0.125, 0.0),
        (["a", "b", "c"], ["A", "B", "C"], 1.0, 1.0),
    ],
)
def test_event_ordering_scores(
    tmp_path: Path, reference: list[str], lines: list[str], tau_norm: float, final: float
) -> None:
    q = _eo_question(tmp_path, reference)
    scores = BENCHMARK.score(q, Prediction(text="\n".join(lines)))
    assert set(scores) == {"f1", "ordering", "ordering_tau"}
    assert math.isclose(scores["ordering_tau"], tau_norm, abs_tol=1e-6)
    assert math.isclose(scores["ordering"], final, abs_tol=1e-6)


def test_single_item_reference_leaves_ordering_out(tmp_path: Path) -> None:
    q = _eo_question(tmp_path, ["only"])
    assert set(BENCHMARK.score(q, Prediction(text="only"))) == {"f1"}


def test_f1_against_gold(tmp_path: Path) -> None:
    ds = BENCHMARK.load(_req(_github(tmp_path, n=1)))
    q = next(x for x in ds.questions if x.category == "information_extraction")
    assert BENCHMARK.score(q, Prediction(text=str(q.gold))) == {"f1": 1.0}
    assert BENCHMARK.score(q, Prediction(text="unrelated words")) == {"f1": 0.0}


# --------------------------------------------------------------------------- real data


def test_real_100k(real_data: Callable[..., Path]) -> None:
    ds = BENCHMARK.load(_req(real_data("beam", "100K").parents[1], "100K"))
    assert len(ds.questions) == 400
    ids = ds.conversation_ids()
    assert ids == [f"beam-100K-{n}" for n in range(1, 21)]
    assert Counter(q.category for q in ds.questions) == {a: 40 for a in ABILITIES}
    per_conv = Counter((q.conversation_id, q.category) for q in ds.questions)
    assert set(per_conv.values()) == {2} and len(per_conv) == 200
    assert len({q.id for q in ds.questions}) == 400
    eo = next(q for q in ds.questions if q.id == "beam-100K-1-event_ordering-0")
    assert eo.meta["ordering_reference"] == (
        "Core functionality",
        "Transaction error handling",
        "Security and deployment",
    )
    assert eo.evidence == ("4", "60", "116")
    assert eo.gold.startswith("You mentioned aspects of your personal budget tracker")  # type: ignore[union-attr]
    ab = next(q for q in ds.questions if q.id == "beam-100K-1-abstention-0")
    assert ab.gold == (
        "Based on the provided chat, there is no information related to how user feedback "
        "influenced UI/UX improvements."
    )
    conv = ds.conversation("beam-100K-1")
    assert [(s.id, s.date, len(s.turns)) for s in conv.sessions] == [
        ("batch-1", datetime(2024, 3, 15), 60),
        ("batch-2", datetime(2024, 4, 5), 56),
        ("batch-3", datetime(2024, 4, 25), 72),
    ]
    n_messages = 0
    for cid in ids:
        c = ds.conversation(cid)
        turn_ids = [t.id for s in c.sessions for t in s.turns]
        assert len(turn_ids) == len(set(turn_ids))
        assert all(s.date is not None for s in c.sessions)
        n_messages += len(turn_ids)
    assert math.isclose(n_messages / 20, 286.6, abs_tol=0.05)  # mean messages per 100K chat
    for q in ds.questions:
        if q.evidence:
            known = {t.id for s in ds.conversation(q.conversation_id).sessions for t in s.turns}
            assert set(q.evidence) <= known, q.id
