"""The hosted-service adapters (``--memsys=zep``, ``letta``, ``supermemory``), each through its
official SDK against the loopback server in ``tests/hosted_server.py`` that speaks the service's
HTTP API: ``--memeval=demo`` runs with the same top-k and context tokens as the built-ins, and
the contract holds, without xdist and with ``-n 2``. Skipped when the extra is not installed."""

from __future__ import annotations

import gc
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hosted_server import HostedServer
from test_contract import outcomes

pytestmark = pytest.mark.usefixtures("memeval_env")

#: system name -> the SDK's import name
SDKS = {"zep": "zep_cloud", "letta": "letta_client", "supermemory": "supermemory"}
KEY = "hk-loopback-27182818"
#: contract items that do not apply, and why (the system's own declarations)
NOT_APPLICABLE = {"zep": {"determinism"}, "letta": {"dump"}, "supermemory": {"determinism"}}


@pytest.fixture(params=list(SDKS))
def hosted(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[HostedServer]:
    """The loopback server of one service, its base URL and key in the environment (the SDK is
    imported here, before any in-process inner run: see ``tests/conftest.py``)."""
    name = request.param
    try:
        importlib.import_module(SDKS[name])
    except ImportError:
        pytest.skip(f"the {name} SDK is not installed (pytest-memeval[{name}])")
    with HostedServer(name, api_key=KEY) as srv:
        for var, value in srv.env().items():
            monkeypatch.setenv(var, value)
        yield srv


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _stores_made(srv: HostedServer) -> int:
    """How many stores (Zep graphs, Letta archives, Supermemory namespaces) the run made."""
    posts = [path for method, path, *_ in srv.requests if method == "POST"]
    if srv.api == "zep":
        return posts.count("/api/v4/graphs")
    if srv.api == "letta":
        return posts.count("/v1/archives/")
    return len({p.split("/")[2] for p in posts if p.endswith("/document")})


def test_demo_runs_through_the_sdk(
    pytester: pytest.Pytester, hosted: HostedServer, run_mode: list[str]
) -> None:
    name = hosted.api
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        f"--memsys={name}",
        "--memeval-top-k=3",
        f"--memeval-json={out}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    assert "warnings" not in result.parseoutcomes(), result.stdout.str()
    text = out.read_text(encoding="utf-8")
    assert KEY not in text and KEY not in result.stdout.str() + result.stderr.str()
    [run] = _read(out)["runs"]
    questions = {q["id"]: q for q in run["questions"]}
    assert run["system"] == name and len(questions) == 15
    assert all(q["status"] in ("CORRECT", "WRONG") for q in questions.values())
    # the memories came from the service: top-k respected, context tokens counted, source ids
    # of the conversation (turns for Zep and Letta, sessions for Supermemory's documents)
    assert all(len(q["memories"]) <= 3 for q in questions.values())
    assert all(q["details"]["context_tokens"] > 0 for q in questions.values() if q["memories"])
    q1 = questions["demo-1-q1"]
    assert any("beagle" in m["text"] for m in q1["memories"]), q1["memories"]
    assert all(m["source_ids"] and m["date"].startswith("2024-") for m in q1["memories"])
    assert run["summary"]["overall"]["evidence_recall"] > 0
    # one store per conversation, each deleted when its instance is dropped (the run keeps the
    # last one until it ends); every request carried the key the environment gave
    gc.collect()
    conversations = {q["conversation"] for q in questions.values()}
    assert _stores_made(hosted) == len(conversations) == len(hosted.deleted)
    assert hosted.stores == {}
    schemes = {"zep": f"Api-Key {KEY}"}
    assert {r[4] for r in hosted.requests} == {schemes.get(name, f"Bearer {KEY}")}


def test_contract_holds(
    pytester: pytest.Pytester, hosted: HostedServer, run_mode: list[str]
) -> None:
    """``pytest --memsys=NAME --memeval-contract``: every property that applies holds; the ones a
    system declares away (an LLM-extracting service is not deterministic; none lists its store)
    are skipped with that reason (Letta's SDK offers no listing of an archive's passages)."""
    name = hosted.api
    xml = pytester.path / "contract.xml"
    result = pytester.runpytest(
        f"--memsys={name}", "--memeval-contract", f"--junitxml={xml}", "-rs", *run_mode
    )
    assert result.ret == 0, result.stdout.str()
    found = outcomes(xml)
    skipped = {key.split("::")[1] for key, (outcome, _) in found.items() if outcome == "SKIPPED"}
    assert skipped == NOT_APPLICABLE[name], found
    passed = {key for key, (outcome, _) in found.items() if outcome == "PASSED"}
    assert len(passed) == 9 - len(skipped), found
    holds = 9 - len(skipped)
    result.stdout.fnmatch_lines(
        [
            "*= memeval contract =*",
            # with -n 2 the skipped items are listed in the order they finished
            f"{name}: holds the contract ({holds} properties); not applicable: *; scale: *",
        ]
    )
    assert "warnings" not in result.parseoutcomes(), result.stdout.str()
    assert KEY not in result.stdout.str()
    # the scale item sent the LongMemEval-S-sized conversation to the service
    assert len(hosted.requests) > 50


def test_a_wrong_key_fails_without_showing_it(
    pytester: pytest.Pytester, hosted: HostedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers 401 and echoes the key it got: the run errors, naming the service and
    the call, and the key is nowhere in the output or the report."""
    wrong = "hk-wrong-key-5772156649"
    monkeypatch.setenv(f"{hosted.api.upper()}_API_KEY", wrong)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", f"--memsys={hosted.api}", "--memeval-limit=1", f"--memeval-json={out}"
    )
    assert result.ret != 0
    shown = result.stdout.str() + result.stderr.str() + out.read_text(encoding="utf-8")
    assert wrong not in shown and "401" in shown
    assert f"{hosted.api} (" in shown


def _dumped_everything(system: Any, conversation: Any, srv: HostedServer, path: str) -> None:
    """``dump`` of a LongMemEval-S-sized conversation lists all its 500 turns (the stand-in
    extraction makes one memory of each), reading every page, and nothing for another id."""
    stored = system.dump(conversation.id)
    assert len(stored) == 500 and len({m.id for m in stored}) == 500
    assert {m.source_ids[-1] for m in stored} == {s.id for s in conversation.sessions}
    assert system.dump("another-conversation") == []
    assert srv.count("POST", path) == 5  # 100 a page


def _demo() -> tuple[Any, list[Any]]:
    from pytest_memeval.run import demo_conversation, demo_questions

    return demo_conversation("demo-1"), list(demo_questions("demo-1"))


def test_zep_waits_for_processing_and_searches_episodes() -> None:
    """Unprocessed episodes are not searchable: ``wait_ready`` says False when they stay so,
    True once they are; ``MEMEVAL_ZEP_SCOPE=episodes`` returns the stored turns."""
    pytest.importorskip("zep_cloud", reason="the zep extra is not installed")
    from pytest_memeval.systems.zep import ZepSystem

    conversation, questions = _demo()
    with HostedServer("zep", api_key=KEY, ready_delay=60.0) as srv:
        slow = ZepSystem(environ=srv.env())
        slow.ingest(conversation)
        assert slow.search(questions[0], 3) == []
        assert slow.wait_ready(0.3) is False
        slow.reset()
        assert srv.stores == {} and len(srv.deleted) == 1
    with HostedServer("zep", api_key=KEY) as srv:
        system = ZepSystem(environ={**srv.env(), "MEMEVAL_ZEP_SCOPE": "episodes"})
        system.ingest(conversation)
        assert system.wait_ready(10.0) is True
        found = system.search(questions[0], 2)
        assert 1 <= len(found) <= 2
        assert "beagle" in found[0].text and found[0].speaker == "Jonas"
        assert found[0].source_ids == ("D1:6", "S1")
        searches = [r for r in srv.requests if r[1].endswith("/search/episodes")]
        assert searches and searches[-1][2]["page_size"] == ["2"]
        sent = len(srv.requests)
        assert system.search(questions[0], 0) == []  # k <= 0: nothing asked of the service
        assert len(srv.requests) == sent
        system.reset()
        assert system.dump(conversation.id) == []


def test_zep_and_supermemory_dump_every_page() -> None:
    pytest.importorskip("zep_cloud", reason="the zep extra is not installed")
    pytest.importorskip("supermemory", reason="the supermemory extra is not installed")
    from pytest_memeval.run import scale_conversation
    from pytest_memeval.systems.supermemory import SupermemorySystem
    from pytest_memeval.systems.zep import ZepSystem

    conversation = scale_conversation()
    for api, cls, path in (
        ("zep", ZepSystem, "/edges/list"),
        ("supermemory", SupermemorySystem, "/list/memories"),
    ):
        with HostedServer(api, api_key=KEY, ready_delay=0.0) as srv:
            system = cls(environ=srv.env())
            system.ingest(conversation)
            assert system.wait_ready(30.0) is True
            _dumped_everything(system, conversation, srv, path)
            system.reset()


def test_supermemory_waits_for_documents() -> None:
    pytest.importorskip("supermemory", reason="the supermemory extra is not installed")
    from pytest_memeval.systems.supermemory import SupermemorySystem

    conversation, questions = _demo()
    with HostedServer("supermemory", api_key=KEY, ready_delay=60.0) as srv:
        system = SupermemorySystem(environ=srv.env())
        system.ingest(conversation)
        # one document per session, each with its session id and date
        posts = [r[3] for r in srv.requests if r[0] == "POST" and r[1].endswith("/document")]
        assert [p["metadata"]["memeval_session"] for p in posts] == [
            s.id for s in conversation.sessions_by_date()
        ]
        assert all(p["date"].startswith("2024-") for p in posts)
        assert system.search(questions[0], 3) == []
        assert system.wait_ready(0.3) is False
        system.reset()
        assert srv.stores == {}
