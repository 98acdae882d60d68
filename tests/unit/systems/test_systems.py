"""Built-in memory systems, replay files and ``--memsys`` resolution (pytest-free modules)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Conversation, Memory, Question, Session, Turn
from pytest_memeval.systems import (
    BUILTIN_SYSTEMS,
    BM25System,
    FullContextSystem,
    MemorySystem,
    NoMemorySystem,
    OracleSystem,
    ReplaySystem,
    available_systems,
    ensure_memory_system,
    load_replay,
    resolve_system,
    turn_text,
)
from pytest_memeval.systems import _builtin as builtin_mod
from pytest_memeval.systems import _resolve as resolve_mod
from pytest_memeval.systems._text import content_tokens, light_stem

# --------------------------------------------------------------------------------------------
# fixtures


def make_conversation() -> Conversation:
    """Three sessions stored out of date order; one undated; one image turn."""
    later = Session(
        id="S2",
        date=datetime(2023, 6, 9, 10, 0),
        date_raw="10:00 am on 9 June, 2023",
        turns=(
            Turn("D2:1", "Caroline", "I went hiking with my dad last week."),
            Turn(
                "D2:2",
                "Melanie",
                "Look what the kids made!",
                meta={"blip_caption": "a photo of a clay cup with a dog face"},
            ),
        ),
    )
    earlier = Session(
        id="S1",
        date=datetime(2023, 5, 8, 13, 56),
        date_raw="1:56 pm on 8 May, 2023",
        turns=(
            Turn("D1:1", "Caroline", "I went to a LGBTQ support group yesterday."),
            Turn("D1:2", "Melanie", "I signed up for a pottery class."),
            Turn("D1:3", "Caroline", "I have been researching adoption agencies."),
        ),
    )
    undated = Session(
        id="S3",
        date=None,
        date_raw="sometime",
        turns=(Turn("D3:1", "Melanie", "Running helps me destress."),),
    )
    return Conversation(id="conv-t", sessions=(later, undated, earlier))


def q(text: str, qid: str = "q1") -> Question:
    return Question(qid, "conv-t", "single-hop", text, gold="x")


# --------------------------------------------------------------------------------------------
# tokenisation


def test_light_stem_matches_inflections() -> None:
    assert {light_stem(w) for w in ("hike", "hiked", "hiking", "hikes")} == {"hik"}
    assert light_stem("running") == light_stem("run") == "run"
    assert light_stem("agencies") == light_stem("agency") == "agency"
    assert light_stem("took") == light_stem("take")
    assert light_stem("class") == "class"
    assert light_stem("2023") == "2023"


def test_content_tokens_drop_stopwords_and_single_letters() -> None:
    assert content_tokens("I've been researching THE adoption agencies, a b 7") == [
        "research",
        "adoption",
        "agency",
        "7",
    ]


# --------------------------------------------------------------------------------------------
# full-context / no-memory


def test_turn_text_with_and_without_caption() -> None:
    assert turn_text(Turn("D1:1", "Ann", "Hi")) == "Ann: Hi"
    assert (
        turn_text(Turn("D1:2", "Ann", "Look", meta={"blip_caption": "a cat"}))
        == "Ann: Look [shares: a cat]"
    )


def test_full_context_returns_every_turn_in_date_order() -> None:
    system = FullContextSystem()
    system.ingest(make_conversation())
    memories = system.search(q("anything"), k=1)  # k is ignored
    assert [m.id for m in memories] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D3:1"]
    assert memories[0] == Memory(
        text="Caroline: I went to a LGBTQ support group yesterday.",
        id="D1:1",
        date=datetime(2023, 5, 8, 13, 56),
        source_ids=("D1:1", "S1"),
        speaker="Caroline",  # the turn's speaker (the Mem0 answer protocol files by it)
    )
    assert (
        memories[4].text
        == "Melanie: Look what the kids made! [shares: a photo of a clay cup with a dog face]"
    )
    assert memories[4].date == datetime(2023, 6, 9, 10, 0)
    assert memories[5].date == "sometime"  # undated session: the raw string
    assert all(m.score is None for m in memories)


def test_full_context_empty_before_ingest_and_replaced_on_reingest() -> None:
    system = FullContextSystem()
    assert system.search(q("x"), 5) == []
    system.ingest(make_conversation())
    system.ingest(Conversation("c2", (Session("S1", None, (Turn("D1:1", "A", "hello"),)),)))
    assert [m.text for m in system.search(q("x"), 5)] == ["A: hello"]


def test_no_memory() -> None:
    system = NoMemorySystem()
    system.ingest(make_conversation())
    assert system.search(q("What did Caroline research?"), 10) == []
    assert isinstance(system, MemorySystem)


# --------------------------------------------------------------------------------------------
# bm25


def test_bm25_ranks_the_matching_turn_first() -> None:
    system = BM25System()
    system.ingest(make_conversation())
    hits = system.search(q("What did Caroline research about adoption?"), k=3)
    assert hits[0].id == "D1:3"
    assert hits[0].source_ids == ("D1:3", "S1")
    assert hits[0].date == datetime(2023, 5, 8, 13, 56)
    assert hits[0].score is not None and hits[0].score > 0
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert len(hits) <= 3


def test_bm25_matches_inflections_and_captions() -> None:
    system = BM25System()
    system.ingest(make_conversation())
    assert system.search(q("Who hikes?"), 1)[0].id == "D2:1"
    assert system.search(q("What did the dog face cup look like?"), 1)[0].id == "D2:2"


def test_bm25_only_positive_scores_and_k() -> None:
    system = BM25System()
    system.ingest(make_conversation())
    hits = system.search(q("pottery"), k=10)
    assert [h.id for h in hits] == ["D1:2"]
    assert system.search(q("pottery"), k=0) == []


def test_bm25_ties_keep_turn_order() -> None:
    turns = tuple(Turn(f"D1:{i}", "A", "same words here") for i in range(1, 6))
    conv = Conversation("c", (Session("S1", datetime(2023, 1, 1), turns),))
    system = BM25System()
    system.ingest(conv)
    hits = system.search(q("same words"), k=3)
    assert [h.id for h in hits] == ["D1:1", "D1:2", "D1:3"]
    assert len({h.score for h in hits}) == 1


def test_bm25_unknown_tokens_and_empty_corpus_return_nothing() -> None:
    system = BM25System()
    assert system.search(q("anything"), 5) == []  # before ingest
    system.ingest(Conversation("empty", ()))
    assert system.search(q("anything"), 5) == []
    system.ingest(make_conversation())
    assert system.search(q("zebra xylophone"), 5) == []
    assert system.search(q("what is it?"), 5) == []  # only stopwords
    assert system.scores(q("zebra")) == [0.0] * 6


def test_bm25_turns_without_tokens() -> None:
    conv = Conversation("c", (Session("S1", None, (Turn("D1:1", "A", "..."),)),))
    system = BM25System()
    system.ingest(conv)  # "A: ..." has no token at all: an empty index
    assert system.search(q("Who is A?"), 5) == []
    assert system.search(q("nothing"), 5) == []
    turns = (Turn("D1:1", "A", "..."), Turn("D1:2", "Bob", "A pottery class!"))
    system.ingest(Conversation("c", (Session("S1", None, turns),)))
    assert [(m.id, m.date) for m in system.search(q("pottery"), 5)] == [("D1:2", None)]


def test_bm25_is_deterministic_and_silent(capsys: pytest.CaptureFixture[str]) -> None:
    conv = make_conversation()
    runs = []
    for _ in range(2):
        system = BM25System()
        system.ingest(conv)
        runs.append([(m.id, m.score) for m in system.search(q("Caroline went to a group"), 4)])
    assert runs[0] == runs[1]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_bm25_on_a_locomo_sized_conversation() -> None:
    words = [f"w{i}" for i in range(3000)]
    turns = tuple(
        Turn(
            f"D1:{i}", "A" if i % 2 else "B", " ".join(words[(i * 7 + j) % 3000] for j in range(25))
        )
        for i in range(600)
    )
    conv = Conversation("big", (Session("S1", datetime(2023, 1, 1), turns),))
    system = BM25System()
    system.ingest(conv)
    hits = system.search(q("w10 w20 w30"), 10)
    assert len(hits) == 10
    assert all(any(w in h.text.split() for w in ("w10", "w20", "w30")) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_bm25_on_locomo(real_data: Callable[..., Path]) -> None:
    path = real_data("locomo", "locomo10.json")
    with path.open(encoding="utf-8") as fh:
        sample = json.load(fh)[0]
    raw = sample["conversation"]
    sessions = []
    n = 1
    while f"session_{n}" in raw:
        date_raw = raw[f"session_{n}_date_time"]
        date = datetime.strptime(date_raw, "%I:%M %p on %d %B, %Y")
        turns = tuple(Turn(t["dia_id"], t["speaker"], t["text"]) for t in raw[f"session_{n}"])
        sessions.append(Session(f"session_{n}", date, turns, date_raw=date_raw))
        n += 1
    system = BM25System()
    system.ingest(Conversation(sample["sample_id"], tuple(sessions)))
    hits = system.search(q("When did Caroline go to the LGBTQ support group?"), 10)
    assert len(hits) == 10
    assert "D1:3" in [h.id for h in hits]


# --------------------------------------------------------------------------------------------
# replay


def write_json(tmp_path: Path, data: Any, name: str = "answers.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_replay_flat(tmp_path: Path) -> None:
    path = write_json(tmp_path, {"q1": "Paris", "q2": 2022, "q3": 1.5, "_note": {"x": 1}})
    assert load_replay(path) == {"": {"q1": "Paris", "q2": "2022", "q3": "1.5"}}
    (name, factory), *rest = resolve_system(f"replay:{path}")
    assert rest == []
    assert name == f"replay:{path}"
    system = factory()
    assert isinstance(system, ReplaySystem)
    system.ingest(make_conversation())
    assert system.search(q("x", "q1"), 5) == []
    assert system.answer(q("x", "q1")) == "Paris"
    assert system.answer(q("x", "q2")) == "2022"
    assert factory() is not system  # a fresh instance per conversation


def test_replay_nested(tmp_path: Path) -> None:
    path = write_json(
        tmp_path,
        {"_comment": "saved runs", "mem0": {"q1": "a"}, "zep": {"q1": "b", "_x": "skip"}},
    )
    pairs = resolve_system(f"replay:{path}")
    assert [n for n, _ in pairs] == ["mem0", "zep"]
    answers = [f().answer(q("x", "q1")) for _, f in pairs]  # type: ignore[attr-defined]
    assert answers == ["a", "b"]


def test_replay_from_a_json_report(tmp_path: Path) -> None:
    report = {
        "schema": "pytest-memeval/1",
        "runs": [
            {
                "benchmark": "demo",
                "system": "bm25",
                "questions": [{"id": "q1", "prediction": "yes"}, {"id": "q2", "prediction": None}],
            },
            {
                "benchmark": "demo",
                "system": "full-context",
                "questions": [{"id": "q1", "prediction": "no"}],
            },
        ],
        "provenance": {},
    }
    path = write_json(tmp_path, report)
    assert load_replay(path) == {"bm25": {"q1": "yes"}, "full-context": {"q1": "no"}}


def test_replay_missing_question_names_file_and_id(tmp_path: Path) -> None:
    path = write_json(tmp_path, {"q1": "a"})
    [(_, factory)] = resolve_system(f"replay:{path}")
    with pytest.raises(AdapterError) as info:
        factory().answer(q("x", "conv-26-q7"))  # type: ignore[attr-defined]
    assert str(path) in str(info.value)
    assert "'conv-26-q7'" in str(info.value)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"q1": None}, "key 'q1' must map to a string or a number, got NoneType"),
        ({"q1": True}, "key 'q1' must map to a string or a number, got bool"),
        ({"q1": ["a"]}, "key 'q1' must map to a string or a number, got list"),
        ({"q1": "a", "q2": {"x": "y"}}, "key 'q2' must map to a string or a number, got dict"),
        ({"s": {"q1": [1]}}, "system 's': key 'q1' must map"),
        (["q1"], "expected a JSON object"),
    ],
)
def test_replay_bad_values(tmp_path: Path, data: Any, fragment: str) -> None:
    path = write_json(tmp_path, data)
    with pytest.raises(AdapterError, match="replay file") as info:
        load_replay(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_replay_invalid_json_missing_file_and_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"q1": "a",\n oops}', encoding="utf-8")
    with pytest.raises(AdapterError, match=r"invalid JSON at line 2 column 2"):
        load_replay(bad)
    with pytest.raises(AdapterError, match="cannot read it"):
        load_replay(tmp_path / "missing.json")
    with pytest.raises(AdapterError, match="needs a path"):
        resolve_system("replay:")
    big = write_json(tmp_path, {"q1": "a" * 100}, "big.json")
    monkeypatch.setattr(builtin_mod, "REPLAY_MAX_BYTES", 50)
    with pytest.raises(AdapterError, match="larger than the 50 byte limit"):
        load_replay(big)


# --------------------------------------------------------------------------------------------
# resolution


def test_builtins_resolve_to_fresh_instances() -> None:
    for name, cls in [
        ("full-context", FullContextSystem),
        ("bm25", BM25System),
        ("no-memory", NoMemorySystem),
        ("oracle", OracleSystem),
    ]:
        [(resolved, factory)] = resolve_system(name)
        assert resolved == name
        a, b = factory(), factory()
        assert isinstance(a, cls) and a is not b
    assert sorted(BUILTIN_SYSTEMS) == ["bm25", "embedding", "full-context", "no-memory", "oracle"]


def test_unknown_system_lists_what_is_available() -> None:
    with pytest.raises(AdapterError) as info:
        resolve_system("nope")
    msg = str(info.value)
    assert msg.startswith("--memsys: unknown memory system 'nope'. Available: ")
    assert "bm25, embedding, full-context, no-memory, oracle, replay:PATH" in msg
    assert available_systems()[:6] == [
        "bm25",
        "embedding",
        "full-context",
        "no-memory",
        "oracle",
        "replay:PATH",
    ]


SYSTEM_MODULE = """
class Good:
    def ingest(self, conversation):
        self.n = len(conversation.sessions)
    def search(self, question, k):
        return ["hello"][:k]

def make():
    return Good()

class Holder:
    @staticmethod
    def create():
        return Good()

def broken():
    return object()

NOT_CALLABLE = 42
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"memsys_user_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(SYSTEM_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_import_path_forms(user_module: str) -> None:
    for attr in ("make", "Good", "Holder.create"):
        [(name, factory)] = resolve_system(f"{user_module}:{attr}")
        assert name == f"{user_module}:{attr}"
        system = factory()
        assert type(system).__name__ == "Good"
        assert system.search(q("x"), 1) == ["hello"]
        assert factory() is not system


def test_import_path_errors(user_module: str) -> None:
    with pytest.raises(AdapterError, match="is a int, not a factory"):
        resolve_system(f"{user_module}:NOT_CALLABLE")
    with pytest.raises(AdapterError, match="has no attribute 'missing'"):
        resolve_system(f"{user_module}:missing")
    with pytest.raises(AdapterError, match="cannot import module 'no_such_mod_xyz'"):
        resolve_system("no_such_mod_xyz:make")
    [(_, factory)] = resolve_system(f"{user_module}:broken")
    with pytest.raises(AdapterError, match=r"has no callable ingest or search"):
        factory()


def make_dist(tmp_path: Path, entries: dict[str, str], dist: str = "memsys_plugin") -> None:
    info = tmp_path / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[pytest_memeval.systems]\n{lines}", encoding="utf-8")


def test_entry_point_from_a_real_dist_info(
    tmp_path: Path, user_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_dist(
        tmp_path,
        {
            "mine": f"{user_module}:make",
            "bm25": f"{user_module}:Good",  # an entry point wins over a built-in
            "bad": "no_such_mod_xyz:thing",
            "value": f"{user_module}:NOT_CALLABLE",
        },
    )
    [(name, factory)] = resolve_system("mine")
    assert name == "mine"
    assert type(factory()).__name__ == "Good"
    [(_, factory)] = resolve_system("bm25")
    assert type(factory()).__name__ == "Good"
    with pytest.raises(AdapterError, match=r"entry point 'no_such_mod_xyz:thing'.*failed to load"):
        resolve_system("bad")
    with pytest.raises(AdapterError, match="is a int, not a factory"):
        resolve_system("value")
    names = available_systems()
    assert {"mine", "bad", "value"} <= set(names)
    assert names.count("bm25") == 1
    with pytest.raises(AdapterError, match=r"Available: .*mine"):
        resolve_system("unknown-thing")


def test_entry_points_are_read_through_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib.metadata import EntryPoint

    seen: list[str] = []

    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        seen.append(group)
        return [EntryPoint("fake", "pytest_memeval.systems._builtin:NoMemorySystem", group)]

    monkeypatch.setattr(resolve_mod, "entry_points", fake_entry_points)
    [(name, factory)] = resolve_system("fake", entry_points_group="custom.group")
    assert name == "fake" and isinstance(factory(), NoMemorySystem)
    assert seen == ["custom.group"]


def test_ensure_memory_system() -> None:
    class OnlyIngest:
        def ingest(self, conversation: Conversation) -> None: ...

    class BadAnswer(NoMemorySystem):
        answer = "not callable"

    system = NoMemorySystem()
    assert ensure_memory_system(system, "x") is system
    with pytest.raises(AdapterError, match=r"'mine' \(OnlyIngest\) has no callable search"):
        ensure_memory_system(OnlyIngest(), "mine")
    with pytest.raises(AdapterError, match="has no callable ingest or search"):
        ensure_memory_system(object(), "mine")
    with pytest.raises(AdapterError, match="answer is not callable"):
        ensure_memory_system(BadAnswer(), "mine")
