"""HaluMem: loader (shape, errors naming file / record / field), the judgment arithmetic against
upstream ``eval/evaluation.py`` (recorded vectors always; live when the pinned snapshot is
present, tests/halumem_upstream.py), the QA judge of ``--memeval-protocol=halumem`` (prompt
rendered as upstream's ``evaluation_for_question`` renders it, reply read as its regex reads it),
the refused download, and the optional ``dump`` hook."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedClient, make_question, make_result
from halumem_upstream import (
    STORAGE_REPLIES,
    constructed_records,
    load_judging,
    load_upstream,
    pick_reply,
    pooled_figures,
    storage_case,
    storage_records,
    storage_user,
    upstream_figures,
    upstream_file_bytes,
    upstream_user,
)

from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.benchmarks.halumem import (
    aggregate,
    compute_f1,
    memory_type_accuracy,
    parse_users,
)
from pytest_memeval.benchmarks.halumem._figures import halumem_official
from pytest_memeval.benchmarks.halumem._judge import (
    HaluMemOfficialJudge,
    halumem_label,
    storage_plan,
)
from pytest_memeval.errors import DatasetError
from pytest_memeval.protocols import load_protocol
from pytest_memeval.records import (
    PENDING_VERDICT,
    Conversation,
    Memory,
    Pending,
    Question,
    Session,
    Turn,
)
from pytest_memeval.systems import (
    NO_DUMP_REASON,
    BM25System,
    FullContextSystem,
    NoMemorySystem,
    stored_memories,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "halumem"
DATA = FIXTURES / "data"
MEDIUM = DATA / "halumem" / "HaluMem-Medium.jsonl"
VECTORS = [
    json.loads(line)
    for line in (FIXTURES / "upstream_vectors.jsonl").read_text("utf-8").splitlines()
]
UPSTREAM = load_upstream()
TOOLS = upstream_file_bytes("eval/eval_tools.py")
live = pytest.mark.skipif(UPSTREAM is None, reason="no upstream HaluMem snapshot here")
with_tools = pytest.mark.skipif(TOOLS is None, reason="no upstream HaluMem snapshot here")


def _ours(records: dict[str, list[dict[str, Any]]]) -> Any:
    return aggregate(records["integrity"], records["accuracy"], records["update"], records["qa"])


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, dict):
        return set(ours) == set(theirs) and all(_same(ours[k], theirs[k]) for k in theirs)
    return bool(math.isclose(ours, theirs, rel_tol=0, abs_tol=1e-12))


# --------------------------------------------------------------------------- arithmetic


def test_recorded_upstream_vectors_equal_ours() -> None:
    compared = errors = 0
    for row in VECTORS:
        ours = _ours(row["records"])
        if "error" in row["upstream"]:
            # upstream divides by zero: ours gives None for the figure(s) with no denominator
            errors += 1
            assert any(
                v is None
                for group in ours.values()
                for v in (group.values() if isinstance(group, dict) else [group])
            )
            continue
        assert _same(ours, row["upstream"]), row
        compared += 1
    assert compared >= 40 and errors == 3


@live
@pytest.mark.parametrize("seed", range(30))
def test_live_upstream_equals_ours(seed: int) -> None:
    assert UPSTREAM is not None
    records = constructed_records(random.Random(10_000 + seed))
    theirs = upstream_figures(UPSTREAM, records)
    if "error" not in theirs:
        assert _same(_ours(records), theirs)


@live
@pytest.mark.parametrize(("p", "r"), [(0.0, 0.0), (1.0, 0.0), (0.5, 0.25), (0.3, 0.9), (1, 1)])
def test_compute_f1_is_upstreams(p: float, r: float) -> None:
    assert UPSTREAM is not None
    assert compute_f1(p, r) == UPSTREAM["compute_f1"](p, r)


def test_memory_type_accuracy_by_hand() -> None:
    """Upstream's per-type table: interference and unscored integrity records count in the
    total; an update record counts when Correct; a type without records has None figures
    (upstream divides by zero) and a record of another type is left out (upstream: KeyError)."""
    integrity = [
        {"memory_type": "Event Memory", "importance": 1, "memory_integrity_score": 2},
        {"memory_type": "Event Memory", "importance": 1, "memory_integrity_score": None},
        {"memory_type": "Event Memory", "importance": 1, "memory_integrity_score": 0,
         "memory_source": "interference"},
        {"memory_type": "Other Memory", "importance": 1, "memory_integrity_score": 2},
    ]  # fmt: skip
    update = [
        {"memory_type": "Event Memory", "importance": 1, "memory_update_type": "Correct"},
        {"memory_type": "Persona Memory", "importance": 1, "memory_update_type": "Omission"},
        {"memory_type": "Persona Memory", "memory_update_type": "Correct"},  # no importance
    ]
    got = memory_type_accuracy(integrity, update)
    assert got["Event Memory"] == {
        "memory_integrity_acc": 1 / 4,
        "memory_update_acc": 1 / 4,
        "total_num": 4,
        "memory_acc": 1 / 2,
    }
    assert got["Persona Memory"]["total_num"] == 1 and got["Persona Memory"]["memory_acc"] == 0
    assert got["Relationship Memory"]["memory_acc"] is None
    assert set(got) == {"Event Memory", "Persona Memory", "Relationship Memory"}


def test_extraction_recall_by_hand() -> None:
    """Recall counts only score 2 of non-interference points; interference points scored 0 count
    as resisted; weighted recall is 0.5 * score * importance over the importance sum."""
    integrity = [
        {"memory_source": "primary", "importance": 1.0, "memory_integrity_score": 2},
        {"memory_source": "primary", "importance": 0.5, "memory_integrity_score": 1},
        {"memory_source": "secondary", "importance": 0.5, "memory_integrity_score": None},
        {"memory_source": "interference", "importance": 0.2, "memory_integrity_score": 0},
    ]
    figures = aggregate(integrity, [], [], [])
    mi = figures["memory_integrity"]
    assert isinstance(mi, dict)
    assert mi["recall(all)"] == pytest.approx(1 / 3)
    assert mi["recall(valid)"] == pytest.approx(1 / 2)
    assert mi["weighted_recall(all)"] == pytest.approx((1.0 + 0.25) / 2.0)
    acc = figures["memory_accuracy"]
    assert isinstance(acc, dict)
    assert acc["interference_accuracy(all)"] == 1.0
    assert acc["target_accuracy(all)"] is None  # no accuracy record: upstream divides by zero
    assert figures["memory_extraction_f1"] is None


# --------------------------------------------------------------------------- QA judge (protocol)

PROTOCOL_FIXTURE = FIXTURES.parent / "protocols" / "halumem"


def _upstream_functions(source: bytes) -> dict[str, Any]:
    """The ``EVALUATION_PROMPT_FOR_*`` constants and ``evaluation_for_*`` functions of an
    upstream(-shaped) eval_tools.py, executed from its source with the LLM call replaced by one
    that returns the prompt (test only)."""
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.Assign | ast.FunctionDef)]
    ns: dict[str, Any] = {"llm_request_for_json": lambda prompt: prompt}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "eval_tools.py", "exec"), ns)
    return ns


def _check_judge(source_dir: Path) -> None:
    loaded = load_protocol("halumem", source_dir=source_dir, cache_dir=Path("/x"))
    assert set(loaded.templates) == {"question", "integrity", "accuracy", "update"}
    judge = loaded.judge()
    assert isinstance(judge, HaluMemOfficialJudge)
    upstream = _upstream_functions((source_dir / "eval" / "eval_tools.py").read_bytes())
    question = make_question(
        id="medium-u-q1",
        question="Where does Ada work {now}?",
        gold="Bristol",
        meta={"key_memory_points": "Ada moved to Bristol.\nAda is a botanist."},
    )
    for reply, score in [
        ('```json\n{"evaluation_result": "Correct"}\n```', 1.0),
        ('x ```json {"evaluation_result": "Hallucination", "r": "}"} ``` y', 0.0),
        ("Correct", 0.0),  # no JSON block: upstream's call raises, counted in (all) as not correct
    ]:
        client = ScriptedClient(reply=reply)
        result = judge.judge(question, "In Bristol {x}", client)
        assert result.scores == {"judge_halumem_official": score}
        (call,) = client.calls
        want = upstream["evaluation_for_question"](
            "Where does Ada work {now}?",
            "Bristol",
            "Ada moved to Bristol.\nAda is a botanist.",
            "In Bristol {x}",
        )
        assert call.prompt == want
        assert call.kwargs["temperature"] == 0.0 and call.kwargs["max_tokens"] == 16384


def test_official_judge_renders_as_the_upstream_shaped_file() -> None:
    _check_judge(PROTOCOL_FIXTURE)


@with_tools
def test_official_judge_renders_as_the_pinned_upstream_file(tmp_path: Path) -> None:
    assert TOOLS is not None
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "eval_tools.py").write_bytes(TOOLS)
    loaded = load_protocol("halumem", source_dir=tmp_path, cache_dir=tmp_path)
    assert all(s.matches_pin for s in loaded.sources.values())
    _check_judge(tmp_path)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('```json\n{"evaluation_result": "Omission"}\n```', "Omission"),
        (
            '```json {"evaluation_result": "Correct"} ``` ```json {"evaluation_result": "x"} ```',
            "Correct",
        ),
        ("```json\n{not json}\n```", None),
        ('```json\n["Correct"]\n```', None),
        ('```JSON\n{"evaluation_result": "Correct"}\n```', None),
        ('{"evaluation_result": "Correct"}', None),
    ],
)
def test_reply_label_as_upstream_reads_it(reply: str, label: str | None) -> None:
    assert halumem_label(reply) == label


# --------------------------------------------------------------------------- loader


def _load(data_dir: Path | None, variant: str | None = None) -> Any:
    return get_benchmark("halumem").load(LoadRequest(data_dir, Path("/nonexistent"), variant))


def test_loads_the_fixture() -> None:
    ds = _load(DATA)
    assert [q.category for q in ds.questions] == [
        "basic_fact_recall",
        "memory_boundary",
        "dynamic_update",
        "multi_hop_inference",
    ]
    conv = ds.conversations["medium-u-alpha"]
    assert [s.id for s in conv.sessions] == ["S1", "S2"]
    assert conv.sessions[0].turns[0].id == "S1:T1" and conv.sessions[0].turns[0].speaker == "user"
    assert conv.sessions[1].date is not None and conv.sessions[1].date.month == 2
    q = ds.questions[2]
    assert q.gold == "Bristol" and q.meta["question_type"] == "Dynamic Update"
    assert q.meta["key_memory_points"] == "Ada Quill moved her work to Bristol."
    assert ds.sha256 == {"halumem/HaluMem-Medium.jsonl": ds.sha256["halumem/HaluMem-Medium.jsonl"]}


def test_missing_file_and_unknown_variant(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"HaluMem-Long\.jsonl"):
        _load(DATA, "long")
    with pytest.raises(DatasetError, match="unknown variant 'short'"):
        _load(DATA, "short")


def _user(**session: Any) -> bytes:
    base: dict[str, Any] = {
        "start_time": "Jan 05, 2025, 10:00:00",
        "memory_points": [POINT],
        "dialogue": [{"role": "user", "content": "hi"}],
    }
    return json.dumps({"uuid": "u1", "sessions": [base | session]}).encode()


POINT = {"memory_content": "x", "memory_source": "primary", "is_update": "False", "importance": 0.5}


@pytest.mark.parametrize(
    ("raw", "record", "fieldname", "message"),
    [
        (b'{"sessions": []}', "user[0]", "uuid", "must be a str"),
        (b'{"uuid": "u", "sessions": {}}', "user[0]", "sessions", "must be a list"),
        (_user(dialogue=[{"role": "user"}]), "user[0].sessions[0].dialogue[0]", "content", ""),
        (_user(memory_points=None), "user[0].sessions[0]", "memory_points", "must be a list"),
        (
            _user(memory_points=[POINT | {"importance": "high"}]),
            "user[0].sessions[0].memory_points[0]",
            "importance",
            "must be a number",
        ),
        (
            _user(memory_points=[{"memory_content": "x", "importance": 1}]),
            "user[0].sessions[0].memory_points[0]",
            "memory_source",
            "must be a str",
        ),
        (
            _user(memory_points=[POINT | {"original_memories": "old"}]),
            "user[0].sessions[0].memory_points[0]",
            "original_memories",
            "list of strings",
        ),
        (
            _user(questions=[{"question": "q", "answer": "a", "question_type": "Trivia"}]),
            "user[0].sessions[0].questions[0]",
            "question_type",
            "unknown question type 'Trivia'",
        ),
        (
            _user(questions=[{"question": "q", "answer": 3, "question_type": "Memory Boundary"}]),
            "user[0].sessions[0].questions[0]",
            "answer",
            "is a int",
        ),
    ],
)
def test_errors_name_file_record_and_field(
    raw: bytes, record: str, fieldname: str, message: str
) -> None:
    with pytest.raises(DatasetError) as info:
        parse_users(raw, "HaluMem-Medium.jsonl")
    text = str(info.value)
    assert "HaluMem-Medium.jsonl" in text and record in text and fieldname in text, text
    assert message in text


def test_bad_json_line_and_bad_date(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="line 2 is not valid JSON"):
        parse_users(_user() + b"\n{oops\n", "f.jsonl")
    folder = tmp_path / "halumem"
    folder.mkdir()
    (folder / "HaluMem-Medium.jsonl").write_bytes(_user(start_time="yesterday"))
    with pytest.raises(DatasetError, match="'yesterday' is not a date") as info:
        _load(tmp_path)
    assert "start_time" in str(info.value) and "user[0].sessions[0]" in str(info.value)


def test_generated_qa_sessions_need_no_memory_points() -> None:
    users = parse_users(_user(memory_points=None, is_generated_qa_session=True), "f.jsonl")
    assert len(users) == 1


# --------------------------------------------------------------------------- the dump hook


def _conversation() -> Conversation:
    turns = (Turn("S1:T1", "user", "I keep orchids"), Turn("S1:T2", "assistant", "Nice orchids"))
    return Conversation("c1", (Session("S1", None, turns),), ("user", "assistant"))


@pytest.mark.parametrize("cls", [BM25System, FullContextSystem])
def test_builtins_dump_what_they_stored(cls: type) -> None:
    system = cls()
    system.ingest(_conversation())
    stored = stored_memories(system, "c1")
    assert stored is not None and len(stored) == 2
    assert all(isinstance(m, Memory) for m in stored) and "orchids" in stored[0].text
    assert stored_memories(system, "other") == ()


def test_no_memory_dumps_nothing_and_a_system_without_dump_is_none() -> None:
    assert stored_memories(NoMemorySystem(), "c1") == ()

    class Plain:
        def ingest(self, conversation: Conversation) -> None: ...

        def search(self, question: Question, k: int) -> list[str]:
            return []

    assert stored_memories(Plain(), "c1") is None
    assert "dump" in NO_DUMP_REASON


def test_dump_strings_become_memories_and_bad_returns_are_named() -> None:
    class Strings:
        def dump(self, conversation_id: str) -> list[str]:
            return ["Ada keeps orchids"]

    assert stored_memories(Strings(), "c1") == (Memory(text="Ada keeps orchids"),)

    class Bad:
        def dump(self, conversation_id: str) -> str:
            return "one string"

    with pytest.raises(TypeError, match=r"Bad\.dump\('c1'\) returned str"):
        stored_memories(Bad(), "c1")


# --------------------------------------------------------------------------- storage judgments


def _check_storage(source_dir: Path, tools: bytes, seed: int) -> None:
    loaded = load_protocol("halumem", source_dir=source_dir, cache_dir=Path("/x"))
    judge = loaded.judge()
    assert isinstance(judge, HaluMemOfficialJudge)
    conv, stored, extracted = storage_case({0: [0, 1, 2], 1: [0, 3]})
    client = ScriptedClient(reply=lambda prompt, _i: pick_reply(prompt, seed))
    plan = storage_plan(conv, stored)
    assert plan.granularity == "session"
    ours = judge.judge_storage(plan, client)
    upstream = load_judging(tools, lambda prompt: pick_reply(prompt, seed))
    assert upstream is not None
    ns, requests = upstream
    theirs = ns["process_user"](1, upstream_user(storage_user(), extracted), 1)
    # the same prompts, one call each, with upstream's parameters
    assert sorted(client.prompts) == sorted(r["messages"][0]["content"] for r in requests)
    assert len(requests) == len(plan.calls) == ours["calls"]
    for call, request in zip(client.calls, requests, strict=True):
        assert call.kwargs["temperature"] == request["temperature"] == 0.0
        assert call.kwargs["max_tokens"] == request["max_tokens"] == 16384
        assert [m.role for m in call.messages] == [m["role"] for m in request["messages"]]
    # the same readings of the same replies
    assert storage_records(ours) == storage_records(
        {
            "integrity": theirs["memory_integrity_records"],
            "accuracy": theirs["memory_accuracy_records"],
            "update": theirs["memory_update_records"],
        }
    )
    qa = [{"result_type": "Correct"}, {"result_type": "Omission"}]
    theirs["question_answering_records"] = [dict(r) for r in qa]
    want = pooled_figures(ns, [theirs])
    got = aggregate(ours["integrity"], ours["accuracy"], ours["update"], qa)
    if "error" in want:  # upstream divides by zero: ours has no value there
        assert None in _leaves(got)
    else:
        assert _same({k: v for k, v in got.items()}, want)


def _leaves(figures: Any) -> list[Any]:
    if isinstance(figures, dict):
        return [x for v in figures.values() for x in _leaves(v)]
    return [figures]


judging = pytest.mark.skipif(
    load_judging(b"", lambda p: "") is None, reason="no upstream HaluMem snapshot here"
)


@judging
@pytest.mark.parametrize("seed", range(6))
def test_storage_judged_as_upstream_process_user(seed: int) -> None:
    """Extraction and update judgments: prompts, parameters, reply readings and figures equal
    upstream's ``process_user`` + ``aggregate_eval_results`` (pinned) on the same inputs."""
    _check_storage(
        PROTOCOL_FIXTURE, (PROTOCOL_FIXTURE / "eval" / "eval_tools.py").read_bytes(), seed
    )


@judging
@with_tools
def test_storage_judged_as_upstream_with_the_pinned_prompts(tmp_path: Path) -> None:
    assert TOOLS is not None
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "eval_tools.py").write_bytes(TOOLS)
    _check_storage(tmp_path, TOOLS, 1)


STORAGE_VECTORS = [
    json.loads(line)
    for line in (FIXTURES / "upstream_storage_vectors.jsonl").read_text("utf-8").splitlines()
]


@pytest.mark.parametrize("vector", STORAGE_VECTORS, ids=lambda v: f"seed{v['seed']}")
def test_recorded_upstream_storage_vectors_equal_ours(vector: dict[str, Any]) -> None:
    """Offline: what upstream's pinned ``process_user`` sent (prompt sha256) and recorded, and
    its figures, for the constructed user and the upstream-shaped prompts (recorded by
    ``python tests/halumem_upstream.py --storage FILE``), equal ours."""
    loaded = load_protocol("halumem", source_dir=PROTOCOL_FIXTURE, cache_dir=Path("/x"))
    judge = loaded.judge()
    assert isinstance(judge, HaluMemOfficialJudge)
    keep = {int(k): v for k, v in vector["keep"].items()}
    conv, stored, _ = storage_case(keep)
    client = ScriptedClient(reply=lambda prompt, _i: pick_reply(prompt, vector["seed"]))
    ours = judge.judge_storage(storage_plan(conv, stored), client)
    digests = sorted(hashlib.sha256(p.encode()).hexdigest() for p in client.prompts)
    assert digests == vector["prompts_sha256"]
    assert json.loads(json.dumps(storage_records(ours))) == vector["records"]
    got = aggregate(ours["integrity"], ours["accuracy"], ours["update"], vector["qa"])
    if "error" in vector["upstream"]:
        assert None in _leaves(got)
    else:
        assert _same(got, vector["upstream"])


def test_storage_plan_routes_points_as_upstream() -> None:
    """Per session: the update point goes to the update judge only when its session stored
    something; a session that stored nothing scores its points 0 without a call."""
    conv, stored, _ = storage_case({0: [0], 1: [1]})
    plan = storage_plan(conv, stored)
    kinds = {(c.kind, c.record["memory_content"]) for c in plan.calls}
    assert ("update", "S1 update") in kinds
    assert {r["memory_content"] for r in plan.settled} == {
        "S2 fact 0 {braces}",
        "S2 fact 1 {braces}",
        "S2 fact 2 {braces}",
        "S2 distractor",
        "S2 update",
    }
    assert all(r["memory_integrity_score"] == 0 for r in plan.settled)
    accuracy = [c for c in plan.calls if c.kind == "accuracy"]
    assert [c.fields["candidate_memory"] for c in accuracy] == [m.text for m in stored]
    assert "S0 distractor" not in accuracy[0].fields["golden_memories"]
    assert accuracy[0].fields["dialogue"] == (
        "[t00]user: S0 user turn 0\n[t01]assistant: S0 assistant turn 1\n\n"
        "[t02]user: S0 user turn 2\n[t03]assistant: S0 assistant turn 3\n"
    )


def test_memories_without_turn_ids_are_judged_per_conversation() -> None:
    """A stored memory naming no turn of the conversation: every session's points against
    everything stored (granularity ``conversation``), said in the plan."""
    conv, stored, _ = storage_case({0: [0], 2: [1]}, source_ids=False)
    plan = storage_plan(conv, stored)
    assert plan.granularity == "conversation" and not plan.settled
    integrity = [c for c in plan.calls if c.kind == "integrity"]
    assert {c.record["session"] for c in plan.calls} == {"all"}
    assert all(
        c.fields["memories"] == "mem S0 user turn 0\nmem S2 assistant turn 1" for c in integrity
    )
    assert len([c for c in plan.calls if c.kind == "update"]) == 2


def test_empty_dump_scores_every_point_zero_without_a_call() -> None:
    conv, stored, _ = storage_case({})
    plan = storage_plan(conv, stored)
    assert plan.calls == () and plan.granularity == "session"
    assert len(plan.settled) == 14  # 3 sessions x 4 points + 2 update points (nothing to update)


class _Refused(Exception):
    """A call that failed after the LLM layer's retries (a 400 for a too-long prompt, say)."""


@judging
def test_a_failed_storage_call_is_a_none_judgment_as_upstream() -> None:
    """Upstream's ``except Exception`` around each judgment makes a failed call a None score;
    ours records the same (and counts it by type), never an error of the question."""

    def reply(prompt: str) -> str:
        if "S0 fact 1" in prompt or "mem S1 user turn 0" in prompt:
            raise _Refused("prompt too long")
        return STORAGE_REPLIES[0]

    loaded = load_protocol("halumem", source_dir=PROTOCOL_FIXTURE, cache_dir=Path("/x"))
    judge = loaded.judge()
    assert isinstance(judge, HaluMemOfficialJudge)
    conv, stored, extracted = storage_case({0: [0, 1], 1: [0, 3]})
    ours = judge.judge_storage(
        storage_plan(conv, stored), ScriptedClient(reply=lambda p, _i: reply(p))
    )
    upstream = load_judging((PROTOCOL_FIXTURE / "eval" / "eval_tools.py").read_bytes(), reply)
    assert upstream is not None
    ns, _ = upstream
    theirs = ns["process_user"](1, upstream_user(storage_user(), extracted), 1)
    assert storage_records(ours) == storage_records(
        {
            "integrity": theirs["memory_integrity_records"],
            "accuracy": theirs["memory_accuracy_records"],
            "update": theirs["memory_update_records"],
        }
    )
    assert ours["failed"] and set(ours["failed"]) == {"_Refused"}
    assert None in [r["memory_integrity_score"] for r in ours["integrity"]]
    assert None in [r["memory_accuracy_score"] for r in ours["accuracy"]]


# --------------------------------------------------------------------------- run figures

METRIC = "judge_halumem_official"


def _judged(
    qid: str, conv: str, index: int, label: str | None, storage: dict[str, Any] | None = None
) -> Any:
    inner: dict[str, Any] = {"protocol": "halumem", "label": label}
    if storage is not None:
        inner["storage"] = storage
    return make_result(
        qid,
        conversation_id=conv,
        benchmark="halumem",
        details={"index": index, METRIC: {"details": inner, "label": "openai:gpt-4o"}},
    )


def test_run_figures_pool_conversations_once_each() -> None:
    """The summary's figures are ``aggregate`` over every conversation's storage records (a
    conversation carried twice, as a resumed run may, counts once: the lowest index) and every
    judged question's label; skipped and batch-pending judgments are left out."""
    first = {
        "granularity": "session",
        "integrity": [
            {"memory_source": "primary", "importance": 0.5, "memory_integrity_score": 2},
            {"memory_source": "interference", "importance": 0.3, "memory_integrity_score": 0},
        ],
        "accuracy": [{"memory_accuracy_score": 2, "is_included_in_golden_memories": "true"}],
        "update": [{"memory_update_type": "Omission"}],
    }
    again = first | {
        "integrity": [{"memory_source": "primary", "importance": 1.0, "memory_integrity_score": 0}]
    }
    other = {
        "granularity": "conversation",
        "integrity": [{"memory_source": "primary", "importance": 1.0, "memory_integrity_score": 1}],
        "accuracy": [{"memory_accuracy_score": None, "is_included_in_golden_memories": "false"}],
        "update": [],
    }
    pending = make_result(
        "c-q9",
        conversation_id="c",
        benchmark="halumem",
        pending=(Pending(PENDING_VERDICT, "halumem", ("k",), METRIC),),
    )
    results = [
        _judged("a-q2", "a", 2, "Correct", again),
        _judged("a-q1", "a", 1, "Hallucination", first),
        _judged("b-q1", "b", 1, "Correct", other),
        _judged("b-q2", "b", 2, None),
        pending,
    ]
    got = halumem_official(results, METRIC)
    want = aggregate(
        first["integrity"] + other["integrity"],
        first["accuracy"] + other["accuracy"],
        first["update"],
        [{"result_type": x} for x in ("Correct", "Hallucination", "Correct", None)],
    )
    assert got.figures == want
    assert (got.conversations, got.conversations_total, got.questions) == (2, 3, 4)
    assert got.granularity == {"session": 1, "conversation": 1}
    assert got.storage_unscored is None


def test_run_figures_of_a_system_without_dump_are_unscored_not_zero() -> None:
    result = _judged("a-q1", "a", 1, "Correct")
    result.details["stored_unscored"] = NO_DUMP_REASON
    got = halumem_official([result], METRIC)
    assert got.storage_unscored == NO_DUMP_REASON
    assert set(got.figures) == {"question_answering"}
    assert got.to_dict()["figures"]["question_answering"]["correct_qa_ratio(all)"] == 1.0
