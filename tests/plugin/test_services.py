"""Memory systems behind services: ``--memsys=http:URL`` and ``--memsys=mcp:COMMAND``.

Every server here listens on 127.0.0.1 only; every wait is bounded."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import INNER_ADDOPTS, REPO, read_json

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Conversation, Question, Session, Turn
from pytest_memeval.systems import (
    HttpClient,
    conversation_from_dict,
    conversation_to_dict,
    http_factories,
    parse_http_spec,
    question_to_dict,
    stored_memories,
)

pytestmark = pytest.mark.usefixtures("memeval_env")

SERVER = REPO / "examples" / "http_server" / "memeval_http_server.py"
MCP_SERVER = REPO / "examples" / "mcp_server" / "memeval_mcp_server.py"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env.pop("MEMEVAL_DATA_DIR", None)
    return env


def _pytest(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def _reference_server() -> Iterator[str]:
    """The reference server around the built-in bm25, as a separate process: its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--system", "bm25", "--port", "0", "--ready-delay", "1.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the server prints its address once it listens
        assert line.startswith("listening on http://127.0.0.1:"), line + proc.stderr.read()
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


# ---- wire format -----------------------------------------------------------------------------


def test_wire_roundtrip_keeps_what_systems_use() -> None:
    from datetime import datetime

    conv = Conversation(
        "c1",
        (
            Session(
                "s1",
                datetime(2023, 5, 8, 13, 56),
                (Turn("D1:1", "Ann", "hi", {"blip_caption": "a dog"}),),
                "1:56 pm on 8 May, 2023",
            ),
        ),
        ("Ann", "Bob"),
    )
    back = conversation_from_dict(json.loads(json.dumps(conversation_to_dict(conv))))
    assert back == conv and back.sessions[0].turns[0].meta == {"blip_caption": "a dog"}
    q = Question("q1", "c1", "temporal", "When?", "secret gold", evidence=("D1:1",))
    wire = question_to_dict(q)
    assert "secret gold" not in json.dumps(wire) and "evidence" not in wire and "gold" not in wire


def test_http_spec_parsing() -> None:
    name, s = parse_http_spec("http:http://127.0.0.1:9/#timeout=2&retries=1&name=remote")
    assert (name, s.url, s.timeout, s.retries) == ("remote", "http://127.0.0.1:9", 2.0, 1)
    with pytest.raises(AdapterError, match="http:// or https://"):
        parse_http_spec("http:ftp://x")
    with pytest.raises(AdapterError, match="unknown setting"):
        parse_http_spec("http:http://127.0.0.1:9#colour=red")
    with pytest.raises(AdapterError, match="timeout"):
        parse_http_spec("http:http://127.0.0.1:9#timeout=0")


# ---- the same scores as in-process -----------------------------------------------------------


def _same_scores(
    report: dict[str, Any], remote: str, bench: str = "demo", local: str = "bm25"
) -> int:
    scores = {
        (run["system"], run.get("flow", ""), q["id"]): (q["scores"], q["prediction"], q["status"])
        for run in report["runs"]
        if run["benchmark"] == bench
        for q in run["questions"]
    }
    mine = {q: v for (s, _, q), v in scores.items() if s == remote}
    theirs = {q: v for (s, _, q), v in scores.items() if s == local}
    assert mine == theirs and mine
    return len(mine)


def _run_of(report: dict[str, Any], system: str, bench: str = "demo") -> dict[str, Any]:
    return next(r for r in report["runs"] if r["system"] == system and r["benchmark"] == bench)


#: MEMEVAL_DATA_DIR as conftest made it absolute at import (before the tests' fixtures unset it)
_DATA = os.environ.get("MEMEVAL_DATA_DIR")
LOCOMO = Path(_DATA) / "locomo" / "locomo10.json" if _DATA else None
#: the -n 2 run's limit: 3 questions a conversation (the demo's 2 conversations: 6 of its 15)
N2_LIMIT = 3


def _services_run(tmp_path: Path, url: str, *args: str) -> dict[str, Any]:
    """bm25, the reference HTTP service and the MCP server around bm25, in one run."""
    out = tmp_path / "r.json"
    r = _pytest(
        tmp_path,
        f"--memsys=bm25,http:{url}#name=remote,{_mcp_spec(WHOLE, 'viamcp')}",
        f"--memeval-json={out}",
        f"--memeval-cache-dir={tmp_path / 'c'}",
        *args,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return read_json(out)


@pytest.fixture(scope="module")
def n2_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The -n 2 run shared by the demo test's n2 variant and the LoCoMo test (CI time: one -n 2
    run with its servers, not two): the demo and, when MEMEVAL_DATA_DIR has it, LoCoMo, 3
    questions a conversation."""
    locomo = LOCOMO is not None and LOCOMO.is_file()
    benches = "demo,locomo" if locomo else "demo"
    data = [f"--memeval-data={LOCOMO.parent.parent}"] if locomo and LOCOMO is not None else []
    tmp_path = tmp_path_factory.mktemp("services-n2")
    with _reference_server() as url:
        return _services_run(
            tmp_path, url, f"--memeval={benches}", *data, f"--memeval-limit={N2_LIMIT}", "-n", "2"
        )


def test_http_and_mcp_demo_reproduce_in_process(
    request: pytest.FixtureRequest, tmp_path: Path, run_mode: list[str]
) -> None:
    """The reference HTTP service and the MCP server around bm25, in one run beside the
    in-process bm25: each gives its scores. (The MCP spec is defined below, with the MCP tests.)
    Plain: the whole demo; -n 2: the run shared with the LoCoMo test, 3 questions a
    conversation."""
    if run_mode:
        report, questions = request.getfixturevalue("n2_report"), 2 * N2_LIMIT
    else:
        with _reference_server() as url:
            report, questions = _services_run(tmp_path, url, "--memeval=demo"), 15
    assert _same_scores(report, "remote") == questions
    remote = _run_of(report, "remote")
    # the asynchronous indexing wait (ready-delay 1 s) is its own latency, apart from ingest
    ready = [q["latency"]["ready"] for q in remote["questions"]]
    assert min(ready) >= 0.9
    assert all("ingest" in q["latency"] for q in remote["questions"])
    assert remote["summary"]["latency"]["ready"]["count"] == 2.0
    # over MCP
    assert _same_scores(report, "viamcp") == questions
    run = _run_of(report, "viamcp")
    assert all("ready" in q["latency"] for q in run["questions"])


def test_http_and_mcp_locomo_reproduce_in_process(
    n2_report: dict[str, Any], data_dir: Path
) -> None:
    """With -n 2 (the run shared with the demo test's n2 variant)."""
    assert _same_scores(n2_report, "remote", "locomo") == 30
    assert _same_scores(n2_report, "viamcp", "locomo") == 30


# ---- faults ----------------------------------------------------------------------------------


class FaultServer:
    """A misbehaving service: ``mode`` is ok | hang | 500 | flaky | big | notjson | dump (a good
    service that also lists what it stored) | baddump (whose ``/dump`` reply is malformed)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests: list[str] = []
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                owner.requests.append("GET " + self.path)
                if owner.mode in ("dump", "baddump"):
                    self._reply(200, b'{"ready": true, "answer": false, "dump": true}')
                    return
                self._reply(200, b'{"ready": true, "answer": false}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                owner.requests.append("POST " + self.path)
                if self.path == "/dump":
                    body = b'{"memories": ["Ann adopted a beagle", {"text": "Ann is 30"}]}'
                    self._reply(200, body if owner.mode == "dump" else b'{"stored": []}')
                    return
                if self.path != "/search":
                    self._reply(200, b"{}")
                    return
                mode = owner.mode
                if mode == "hang":
                    owner.stop.wait(300)  # far past any #timeout here (close ends it)
                    return
                searches = owner.requests.count("POST /search")
                if mode == "500" or (mode == "flaky" and searches <= 2):
                    # flaky: a 429, then a 500, then the answer
                    status = 429 if mode == "flaky" and searches == 1 else 500
                    self._reply(status, b'{"error": "boom"}')
                elif mode == "big":
                    self._reply(200, json.dumps({"memories": ["x" * 4000]}).encode())
                elif mode == "notjson":
                    self._reply(200, b"<html>oops</html>")
                else:
                    self._reply(200, b'{"memories": ["Ann: I adopted a beagle"]}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fault() -> Iterator[Any]:
    servers: list[FaultServer] = []

    def make(mode: str) -> FaultServer:
        servers.append(FaultServer(mode))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


CONV = Conversation("c1", (Session("s1", None, (Turn("D1:1", "Ann", "hi"),)),))
Q = Question("q1", "c1", "single-hop", "What pet?", "beagle")


def _system(url: str, settings: str) -> Any:
    ((_, factory),) = http_factories(f"http:{url}#{settings}")
    system = factory()
    system.ingest(CONV)
    return system


@pytest.mark.parametrize(
    ("mode", "message", "requests"),
    [
        ("hang", "no reply within #timeout=3s (after 2 attempt(s)", 2),
        ("500", "HTTP 500", 3),
        ("big", "more than #max_bytes=1000", 1),
        ("notjson", "the reply is not JSON", 1),
    ],
)
def test_http_faults_are_bounded_errors(fault: Any, mode: str, message: str, requests: int) -> None:
    server = fault(mode)
    retries = 1 if mode == "hang" else 2
    # 3 s bounds the healthy ingest too: a thousand times a loopback request, even at load 10
    system = _system(server.url, f"timeout=3&retries={retries}&backoff=0.01&max_bytes=1000")
    start = time.monotonic()
    with pytest.raises(AdapterError, match="/search") as info:
        system.search(Q, 5)
    assert message in str(info.value)
    assert time.monotonic() - start < 60  # two 3-s timeouts, not two 300-s hangs
    assert server.requests.count("POST /search") == requests


def test_http_dump_when_the_service_offers_it(fault: Any) -> None:
    plain = _system(fault("ok").url, "timeout=5")
    assert stored_memories(plain, "c1") is None  # no "dump": true in GET /ready
    server = fault("dump")
    stored = stored_memories(_system(server.url, "timeout=5"), "c1")
    assert stored is not None and [m.text for m in stored] == ["Ann adopted a beagle", "Ann is 30"]
    assert "POST /dump" in server.requests
    bad = _system(fault("baddump").url, "timeout=5")
    with pytest.raises(AdapterError, match=r"POST /dump: expected \{\"memories\""):
        stored_memories(bad, "c1")


def test_http_retries_429_and_500_then_succeeds(fault: Any) -> None:
    server = fault("flaky")
    system = _system(server.url, "retries=4&backoff=0.01")
    memories = system.search(Q, 5)
    assert [m.text for m in memories] == ["Ann: I adopted a beagle"]
    assert server.requests.count("POST /search") == 3


def test_http_connection_refused_is_an_error() -> None:
    client = HttpClient(parse_http_spec("http:http://127.0.0.1:9#retries=1&backoff=0.01")[1], "x")
    with pytest.raises(AdapterError, match="connection failed"):
        client.call("GET", "/ready")


def test_hanging_and_failing_services_error_per_question(
    tmp_path: Path, fault: Any, run_mode: list[str]
) -> None:
    """A service that hangs, or answers 500, errors exactly its questions; the run finishes."""
    hang, boom = fault("hang"), fault("500")
    out = tmp_path / "r.json"
    start = time.monotonic()
    r = _pytest(
        tmp_path,
        "--memeval=demo",
        "--memeval-limit=1",  # a question per conversation: each hang costs its 3 s
        "--memsys="
        + ",".join(
            [
                "bm25",
                f"http:{hang.url}#name=hangs&timeout=3&retries=0",
                f"http:{boom.url}#name=fails&retries=1&backoff=0.01",
            ]
        ),
        f"--memeval-json={out}",
        f"--memeval-cache-dir={tmp_path / 'c'}",
        *run_mode,
        timeout=600,
    )
    # 3-s timeouts and process starts (85 s with -n 2 at load 13); one uncut hang alone is 300 s
    assert time.monotonic() - start < 240
    report = read_json(out)
    statuses = {run["system"]: {q["status"] for q in run["questions"]} for run in report["runs"]}
    assert statuses["hangs"] == {"ERROR"} and statuses["fails"] == {"ERROR"}
    assert "ERROR" not in statuses["bm25"]
    errors = {
        q["error"] for run in report["runs"] if run["system"] != "bm25" for q in run["questions"]
    }
    assert any("no reply within #timeout=3s" in e for e in errors)
    assert any("HTTP 500" in e for e in errors)
    assert "4 error" in r.stdout.splitlines()[-1]


# ---- MCP ---------------------------------------------------------------------------------------

mcp = pytest.importorskip("mcp", reason="the MCP adapter needs `pip install pytest-memeval[mcp]`")


def _mcp_spec(settings: str, name: str) -> str:
    return f"mcp:{sys.executable} {MCP_SERVER} bm25#{settings}&name={name}"


WHOLE = "ingest=store_memory&search=search_memory&ready=is_ready&timeout=60"


#: a two-turn conversation for the MCP tool tests
BEAGLE = Conversation(
    "c9",
    (
        Session(
            "s1",
            None,
            (Turn("D1:1", "Ann", "I adopted a beagle named Rex"), Turn("D1:2", "Bob", "Nice!")),
            "2023-05-08",
        ),
    ),
)


def test_mcp_per_turn_tools_and_text_results(tmp_path: Path) -> None:
    """A server whose tools take one turn / a query text (mem0-like): arguments follow each
    tool's schema, results may be {"results": [{"memory": ...}]}."""
    from pytest_memeval.systems import mcp_factories

    ((_, factory),) = mcp_factories(_mcp_spec("ingest=add_turn&search=search_text", "turns"))
    system = factory()
    system.ingest(BEAGLE)
    found = system.search(Question("q", "c9", "x", "What dog did Ann adopt?", None), 1)
    assert [m.text for m in found] == ["Ann: I adopted a beagle named Rex"]
    assert found[0].id == "D1:1"


def test_mcp_errors_name_the_fix(tmp_path: Path) -> None:
    from pytest_memeval.systems import mcp_factories

    ((_, factory),) = mcp_factories(_mcp_spec("ingest=nope&search=search_memory", "bad"))
    with pytest.raises(AdapterError, match=r"no tool 'nope' for ingest; its tools: .*store_memory"):
        factory()
    ((_, factory),) = mcp_factories(f"mcp:{sys.executable} -c 'import sys; sys.exit(3)'#timeout=5")
    with pytest.raises(AdapterError, match=r"cannot start or reach the MCP server|did not start"):
        factory()
    with pytest.raises(AdapterError, match="unknown setting"):
        mcp_factories("mcp:x#colour=red")


# ---- wait_ready ------------------------------------------------------------------------------


class _SlowIndex:
    def __init__(self, ready_after: float, answer_ready: bool = True) -> None:
        self.ready_after = ready_after
        self.answer_ready = answer_ready
        self.calls: list[float] = []

    def ingest(self, conversation: Conversation) -> None:
        pass

    def wait_ready(self, timeout: float) -> bool:
        self.calls.append(timeout)
        time.sleep(min(self.ready_after, timeout))
        return self.answer_ready and self.ready_after <= timeout

    def search(self, question: Question, k: int) -> list[str]:
        return ["Ann: hi"]


def test_wait_ready_is_timed_apart_from_ingest() -> None:
    from pytest_memeval.answerers import ExtractiveAnswerer
    from pytest_memeval.run import SystemPool, run_question

    pool = SystemPool(timeout=2.0)
    system = _SlowIndex(0.3)
    ingested = pool.get("slow", lambda: CONV, "b/c1", lambda: system)
    _, latency = run_question(ingested, Q, k=3, answerer=ExtractiveAnswerer())
    assert latency["ready"] >= 0.3 > latency["ingest"]
    assert system.calls == [2.0]  # called once, with --memeval-timeout as its bound


def test_wait_ready_false_errors_the_conversation() -> None:
    from pytest_memeval.run import SystemPool

    pool = SystemPool(timeout=0.2)
    with pytest.raises(AdapterError, match=r"not ready 0\.2s after ingest"):
        pool.get("slow", lambda: CONV, "b/c1", lambda: _SlowIndex(5.0))
    with pytest.raises(AdapterError, match="not ready"):  # the same error, not a second wait
        pool.get("slow", lambda: CONV, "b/c1", lambda: _SlowIndex(0.0))


# the optional dump capability through MCP (issue 24: dump in the HTTP and MCP adapters): a server
# with a dump tool (or #dump=TOOL) lists what it stored; one without gives a system without dump,
# whose storage metrics are UNSCORED, never zero

#: a server with only ingest and search (hand-written JSON-RPC: no SDK import, cheap to start)
BARE_SERVER = r"""
import json, sys
TOOLS = [
    {"name": "ingest", "inputSchema": {"type": "object", "properties": {"conversation": {"type": "object"}}}},
    {"name": "search", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}}}},
]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bare", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "[]"}], "isError": False}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("mapping", ["", "dump=dump&"], ids=["by-name", "mapped"])
def test_mcp_server_with_a_dump_tool_lists_what_it_stored(mapping: str) -> None:
    from pytest_memeval.systems import mcp_factories

    spec = f"mcp:{sys.executable} {MCP_SERVER} bm25#{mapping}ingest=add_turn&search=search_text"
    ((_, factory),) = mcp_factories(f"{spec}&name=dumps{len(mapping)}")
    system = factory()
    system.ingest(BEAGLE)
    stored = stored_memories(system, "c9")
    assert stored is not None
    assert [(m.id, m.text) for m in stored] == [
        ("D1:1", "Ann: I adopted a beagle named Rex"),
        ("D1:2", "Bob: Nice!"),
    ]
    # the same memories a search over everything returns
    found = system.search(Question("q", "c9", "x", "beagle Rex Nice", None), 10)
    assert sorted(m.text for m in found) == sorted(m.text for m in stored)


def test_mcp_server_without_dump_gives_a_system_without_it(tmp_path: Path) -> None:
    from pytest_memeval.systems import mcp_factories

    server = tmp_path / "bare_mcp.py"
    server.write_text(BARE_SERVER, encoding="utf-8")
    ((_, factory),) = mcp_factories(f"mcp:{sys.executable} {server}#timeout=20&name=bare")
    system = factory()
    assert not hasattr(system, "dump")
    assert stored_memories(system, "c9") is None  # the storage metrics: UNSCORED with the reason


def test_mapping_dump_to_a_missing_tool_names_the_tools(tmp_path: Path) -> None:
    from pytest_memeval.systems import mcp_factories

    server = tmp_path / "bare_mcp.py"
    server.write_text(BARE_SERVER, encoding="utf-8")
    ((_, factory),) = mcp_factories(f"mcp:{sys.executable} {server}#dump=list_all&name=bare2")
    with pytest.raises(AdapterError, match=r"#dump=list_all is not a tool of the MCP server"):
        factory()
