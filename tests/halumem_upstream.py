"""Test-only: upstream HaluMem's judgment arithmetic, executed from its own source.

``eval/evaluation.py`` is read at the pinned commit from a local snapshot of ``MemTensor/HaluMem``
(``MEMEVAL_HALUMEM_UPSTREAM``: a git directory or a checkout; default the ``fetch`` mirror), its
sha256 checked, and ``compute_f1`` and ``aggregate_eval_results`` taken out with ``ast`` and
executed unchanged (its imports of tqdm, ProcessPoolExecutor and the LLM-calling eval_tools are
left out: these two functions use none of them). Nothing of it is copied into the repository;
``make_vectors`` writes what the unit tests compare with
(``python tests/halumem_upstream.py tests/fixtures/halumem/upstream_vectors.jsonl``), and
``make_storage_vectors`` what upstream's ``process_user`` sends and records for a constructed user
(``python tests/halumem_upstream.py --storage tests/fixtures/halumem/upstream_storage_vectors.jsonl``).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mab_upstream import snapshot_file_bytes

from pytest_memeval.benchmarks.halumem import UPSTREAM as PINNED
from pytest_memeval.benchmarks.halumem import build
from pytest_memeval.records import Conversation, Memory

SCORER = "eval/evaluation.py"
#: upstream's LLM call (``llm_request_for_json``: the request and the reply's JSON reading)
LLMS = "eval/llms.py"
#: the judgment functions of ``eval/evaluation.py`` taken out for the storage checks
JUDGING = ("compute_f1", "aggregate_eval_results", "process_user")
#: what ``eval/llms.py`` reads from its ``.env`` (``eval/.env-example``'s values)
COMMON_PARAMS = {"max_tokens": 16384, "temperature": 0.0, "timeout": 300}
DEFAULT = "/work/.mirror/MemTensor+HaluMem/repo"
FUNCTIONS = ("compute_f1", "aggregate_eval_results")
TYPES = ("Event Memory", "Persona Memory", "Relationship Memory")


def upstream_file_bytes(path: str) -> bytes | None:
    root = Path(os.environ.get("MEMEVAL_HALUMEM_UPSTREAM", DEFAULT))
    return snapshot_file_bytes(root, PINNED.commit, path)


def load_upstream() -> dict[str, Any] | None:
    """Upstream's functions by name, or None when no snapshot is present."""
    raw = upstream_file_bytes(SCORER)
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PINNED.files[SCORER]:
        raise AssertionError(f"{SCORER}: sha256 {digest}, pinned {PINNED.files[SCORER]}")
    tree = ast.parse(raw)
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS]
    assert {n.name for n in keep} == set(FUNCTIONS)
    ns: dict[str, Any] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), SCORER, "exec"), ns)  # tests only
    return ns


class SyncExecutor:
    """Stands for ``ProcessPoolExecutor`` in upstream's ``process_user``: runs each submitted
    call at once (same results, submission order; test only)."""

    def __init__(self, max_workers: int | None = None) -> None:
        del max_workers

    def __enter__(self) -> SyncExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # handed to upstream's own except, as a pool would
            future.set_exception(exc)
        return future


def _functions(source: bytes, names: Iterable[str] | None, where: str) -> ast.Module:
    """The module-level constants and functions of ``source`` (``names``: only those
    functions), decorators dropped (upstream's ``@retry``), imports left out."""
    tree = ast.parse(source)
    keep: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and (names is None or node.name in names):
            node.decorator_list = []
            keep.append(node)
        elif isinstance(node, ast.Assign) and names is None:
            keep.append(node)
    return ast.Module(body=keep, type_ignores=[])


def load_judging(
    tools: bytes, reply: Callable[[str], str]
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """Upstream's ``process_user`` and ``aggregate_eval_results`` (pinned ``eval/evaluation.py``)
    calling the ``evaluation_for_*`` functions of ``tools`` (an ``eval_tools.py`` source), which
    call the pinned ``eval/llms.py`` ``llm_request_for_json`` whose OpenAI client is a fake: it
    records each ``chat.completions.create`` keyword set and answers ``reply(prompt)``. None
    without a snapshot. Returns (namespace, recorded requests)."""
    ev = upstream_file_bytes(SCORER)
    llms = upstream_file_bytes(LLMS)
    if ev is None or llms is None:
        return None
    for path, raw in ((SCORER, ev), (LLMS, llms)):
        digest = hashlib.sha256(raw).hexdigest()
        if digest != PINNED.files[path]:
            raise AssertionError(f"{path}: sha256 {digest}, pinned {PINNED.files[path]}")
    requests: list[dict[str, Any]] = []

    def create(**kwargs: Any) -> Any:
        requests.append(copy.deepcopy(kwargs))
        content = reply(kwargs["messages"][0]["content"])
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    llm_ns: dict[str, Any] = {
        "re": re,
        "json": json,
        "client": client,
        "MODEL": "gpt-4o",
        "common_params": dict(COMMON_PARAMS),
    }
    exec(compile(_functions(llms, ["llm_request_for_json"], LLMS), LLMS, "exec"), llm_ns)  # tests
    tools_ns: dict[str, Any] = {"llm_request_for_json": llm_ns["llm_request_for_json"]}
    exec(compile(_functions(tools, None, "eval_tools.py"), "eval_tools.py", "exec"), tools_ns)
    ns: dict[str, Any] = {
        "copy": copy,
        "tqdm": lambda it, **kwargs: it,
        "ProcessPoolExecutor": SyncExecutor,
        "as_completed": list,
        **{k: v for k, v in tools_ns.items() if k.startswith("evaluation_for_")},
    }
    exec(compile(_functions(ev, JUDGING, SCORER), SCORER, "exec"), ns)  # tests only
    return ns, requests


def upstream_user(
    user: dict[str, Any], extracted: dict[int, list[str]], responses: dict[str, str] | None = None
) -> dict[str, Any]:
    """The record upstream's ``process_user`` reads (what its ``eval_memzero.py`` writes) for a
    raw HaluMem user record: session ``i``'s ``extracted_memories`` = ``extracted[i]``; an update
    point (``is_update`` not ``"False"``, with ``original_memories``) gets ``memories_from_system``
    = the same list (our stand-in for upstream's top-10 search); each question's
    ``system_response`` = ``responses[question]`` (no questions when ``responses`` is None)."""
    out: dict[str, Any] = {"uuid": user["uuid"], "user_name": user["uuid"], "sessions": []}
    for sid, session in enumerate(user["sessions"]):
        new = copy.deepcopy(session)
        out["sessions"].append(new)
        if session.get("is_generated_qa_session", False):
            continue
        new["extracted_memories"] = list(extracted.get(sid, []))
        for point in new["memory_points"]:
            if point["is_update"] == "False" or not point["original_memories"]:
                continue
            point["memories_from_system"] = list(extracted.get(sid, []))
        if responses is None:
            new.pop("questions", None)
        else:
            for qa in new.get("questions", []):
                qa["system_response"] = responses[qa["question"]]
    return out


def pooled_figures(ns: dict[str, Any], results: list[dict[str, Any]]) -> Any:
    """Upstream ``main``'s pooling of ``process_user`` results, then ``aggregate_eval_results``
    (figures only, as :func:`upstream_figures`)."""
    records: dict[str, list[dict[str, Any]]] = {"integrity": [], "accuracy": [], "update": []}
    records["qa"] = []
    for r in results:
        records["integrity"].extend(r["memory_integrity_records"])
        records["accuracy"].extend(r["memory_accuracy_records"])
        records["update"].extend(r["memory_update_records"])
        records["qa"].extend(r["question_answering_records"])
    return upstream_figures(ns, records)


# ------------------------------------------------------------ storage: constructed inputs

#: replies every storage judge reads its own key from (score / accuracy_score + inclusion /
#: evaluation_result), including the ones upstream's reading turns into None or "false"
STORAGE_REPLIES = (
    '```json\n{"score": "2", "accuracy_score": "2", "is_included_in_golden_memories": "true", '
    '"evaluation_result": "Correct"}\n```',
    '```json {"score": 1, "accuracy_score": "1", "is_included_in_golden_memories": "True", '
    '"evaluation_result": "Hallucination"} ```',
    '```json {"score": "0", "accuracy_score": "0", "evaluation_result": "Omission"} ```',
    '```json {"score": "2|1|0", "accuracy_score": "x", "is_included_in_golden_memories": "true", '
    '"evaluation_result": "Other"} ```',
    'no block {"score": "2", "evaluation_result": "Correct"}',
    '```json {"score": " 2 ", "accuracy_score": 2.0, "is_included_in_golden_memories": "false", '
    '"evaluation_result": "correct"} ```',
    '```json {"score": 2, "accuracy_score": 2, "is_included_in_golden_memories": "true", '
    '"evaluation_result": "Correct"} ```',
)


def pick_reply(prompt: str, seed: int = 0) -> str:
    """A reply chosen by the prompt (the same for our judge and upstream's fake client)."""
    digest = hashlib.sha256(f"{seed}:{prompt}".encode()).digest()
    return STORAGE_REPLIES[digest[0] % len(STORAGE_REPLIES)]


def _point(content: str, kind: str, source: str = "primary", **extra: Any) -> dict[str, Any]:
    return {
        "memory_content": content,
        "memory_type": kind,
        "memory_source": source,
        "is_update": "False",
        "original_memories": [],
        "importance": extra.pop("importance", 0.5),
        **extra,
    }


def storage_user() -> dict[str, Any]:
    """A constructed user (our own text): three sessions, every memory type, an interference
    point, an update point, a session the system stores nothing from."""
    types = ("Persona Memory", "Event Memory", "Relationship Memory")
    sessions = []
    for s in range(3):
        points = [
            _point(f"S{s} fact {i} {{braces}}", types[i % 3], importance=0.2 + 0.2 * i)
            for i in range(3)
        ]
        points.append(_point(f"S{s} distractor", types[s], "interference", importance=0.3))
        if s:
            points.append(
                _point(
                    f"S{s} update",
                    "Event Memory",
                    is_update="True",
                    original_memories=[f"S{s - 1} fact 0 {{braces}}", "older"],
                )
            )
        sessions.append(
            {
                "start_time": f"Jan 0{s + 1}, 2025, 10:00:00",
                "memory_points": points,
                "dialogue": [
                    {"role": r, "content": f"S{s} {r} turn {t}", "timestamp": f"t{s}{t}"}
                    for t, r in enumerate(("user", "assistant", "user", "assistant"))
                ],
            }
        )
    return {"uuid": "u-store", "sessions": sessions}


def storage_case(
    keep: dict[int, list[int]], source_ids: bool = True
) -> tuple[Conversation, list[Memory], dict[int, list[str]]]:
    user = storage_user()
    (conv,), _ = build("medium", [user])
    stored: list[Memory] = []
    extracted: dict[int, list[str]] = {}
    for s, turns in keep.items():
        for t in turns:
            turn = conv.sessions[s].turns[t]
            stored.append(
                Memory(text=f"mem {turn.text}", source_ids=(turn.id,) if source_ids else ())
            )
            extracted.setdefault(s, []).append(f"mem {turn.text}")
    return conv, stored, extracted


def storage_records(got: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "integrity": sorted(
            (r["memory_content"], repr(r["memory_integrity_score"])) for r in got["integrity"]
        ),
        "accuracy": sorted(
            (
                r["memory_content"],
                repr(r["memory_accuracy_score"]),
                repr(r["is_included_in_golden_memories"]),
            )
            for r in got["accuracy"]
        ),
        "update": sorted(
            (r["memory_content"], repr(r["memory_update_type"])) for r in got["update"]
        ),
    }


def _skeleton() -> dict[str, Any]:
    """The ``eval_results`` dict upstream ``main`` hands to ``aggregate_eval_results``."""
    acc = {t: {"memory_integrity_acc": 0, "memory_update_acc": 0, "total_num": 0} for t in TYPES}
    return {
        "overall_score": {
            "memory_integrity": {},
            "memory_accuracy": {},
            "memory_extraction_f1": 0,
            "memory_update": {},
            "question_answering": {},
            "memory_type_accuracy": acc,
        },
    }


def upstream_figures(ns: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> Any:
    """Upstream's ``overall_score`` (without the counts, ``total_num`` of
    ``memory_type_accuracy`` kept), or ``{"error": name}`` when upstream raises."""
    eval_results = _skeleton() | copy.deepcopy(
        {
            "memory_integrity_records": records["integrity"],
            "memory_accuracy_records": records["accuracy"],
            "memory_update_records": records["update"],
            "question_answering_records": records["qa"],
        }
    )
    try:
        out = ns["aggregate_eval_results"](eval_results)["overall_score"]
    except ZeroDivisionError as exc:
        return {"error": type(exc).__name__}
    for name, group in out.items():
        if isinstance(group, dict) and name != "memory_type_accuracy":
            for key in [k for k in group if not k.endswith(")")]:
                del group[key]  # the counts (*_num, *_sum): not figures
    return out


def constructed_records(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """One random set of judged records in upstream's field names (every memory type present,
    as upstream's per-type division needs)."""
    integrity = []
    for n in range(rng.randint(3, 12)):
        integrity.append(
            {
                "memory_source": rng.choice(["primary", "secondary", "interference"])
                if n >= 3
                else "primary",
                "importance": rng.choice([0.1, 0.25, 0.5, 0.75, 1.0]),
                "memory_integrity_score": rng.choice([0, 1, 2, 2, None]),
                "memory_type": TYPES[n % 3],
            }
        )
    integrity.append(
        {
            "memory_source": "interference",
            "importance": 0.3,
            "memory_integrity_score": rng.choice([0, 2]),
            "memory_type": TYPES[0],
        }
    )
    accuracy = [
        {
            "memory_accuracy_score": rng.choice([0, 1, 2, None]),
            "is_included_in_golden_memories": rng.choice(["true", "True", "false", "FALSE"]),
        }
        for _ in range(rng.randint(2, 10))
    ]
    accuracy.append(
        {"memory_accuracy_score": rng.choice([1, 2]), "is_included_in_golden_memories": "true"}
    )
    update = [
        {
            "memory_update_type": rng.choice(
                ["Correct", "Hallucination", "Omission", "Other", None, "correct"]
            ),
            "importance": 0.5,
            "memory_type": rng.choice(TYPES),
        }
        for _ in range(rng.randint(1, 6))
    ]
    update.append({"memory_update_type": "Correct", "importance": 0.5, "memory_type": TYPES[1]})
    qa = [
        {"result_type": rng.choice(["Correct", "Hallucination", "Omission", None, "Other"])}
        for _ in range(rng.randint(1, 8))
    ]
    qa.append({"result_type": "Omission"})
    return {"integrity": integrity, "accuracy": accuracy, "update": update, "qa": qa}


def edge_records() -> list[dict[str, list[dict[str, Any]]]]:
    """Sets on which upstream divides by zero (no update records; no target memory)."""
    rng = random.Random(7)
    base = constructed_records(rng)
    return [
        base | {"update": []},
        base
        | {"accuracy": [{"memory_accuracy_score": 2, "is_included_in_golden_memories": "false"}]},
        base | {"qa": []},
    ]


def make_vectors() -> list[dict[str, Any]]:
    ns = load_upstream()
    if ns is None:
        raise SystemExit(f"no upstream snapshot (set MEMEVAL_HALUMEM_UPSTREAM; default {DEFAULT})")
    rng = random.Random(2511)
    sets = [constructed_records(rng) for _ in range(40)] + edge_records()
    return [{"records": r, "upstream": upstream_figures(ns, r)} for r in sets]


#: the upstream-shaped eval_tools.py the storage vectors are recorded with (our own text)
FIXTURE_TOOLS = Path(__file__).resolve().parent / "fixtures/protocols/halumem/eval/eval_tools.py"
#: what the constructed system stored: session -> turn indices
STORAGE_KEEP = {0: [0, 1, 2], 1: [0, 3]}
STORAGE_QA = [{"result_type": "Correct"}, {"result_type": "Omission"}]


def make_storage_vectors() -> list[dict[str, Any]]:
    """Upstream's pinned ``process_user`` on the constructed user, one vector per reply mix: the
    sha256 of every prompt it sent, its records (:func:`storage_records`) and its figures."""
    rows = []
    for seed in range(6):
        loaded = load_judging(FIXTURE_TOOLS.read_bytes(), lambda p, s=seed: pick_reply(p, s))
        if loaded is None:
            raise SystemExit(
                f"no upstream snapshot (set MEMEVAL_HALUMEM_UPSTREAM; default {DEFAULT})"
            )
        ns, requests = loaded
        _, _, extracted = storage_case(STORAGE_KEEP)
        theirs = ns["process_user"](1, upstream_user(storage_user(), extracted), 1)
        records = storage_records(
            {
                "integrity": theirs["memory_integrity_records"],
                "accuracy": theirs["memory_accuracy_records"],
                "update": theirs["memory_update_records"],
            }
        )
        theirs["question_answering_records"] = copy.deepcopy(STORAGE_QA)
        rows.append(
            {
                "seed": seed,
                "keep": STORAGE_KEEP,
                "prompts_sha256": sorted(
                    hashlib.sha256(r["messages"][0]["content"].encode()).hexdigest()
                    for r in requests
                ),
                "records": records,
                "qa": STORAGE_QA,
                "upstream": pooled_figures(ns, [theirs]),
            }
        )
    return rows


if __name__ == "__main__":
    storage = sys.argv[1] == "--storage"
    out = Path(sys.argv[-1])
    rows = make_storage_vectors() if storage else make_vectors()
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    out.write_text("\n".join(lines) + "\n", "utf-8")
