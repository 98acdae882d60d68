"""The MCP adapter's server processes: a failed start is tried once per process, every child is
reaped (session end, Ctrl-C, a dead worker), and a reply over ``#max_bytes`` errors its question.

The server is a tiny hand-written JSON-RPC script (no SDK import: cheap to start) that appends
its pid, and the pid of a sleeping child it starts in its process group, to files the test
reads after pytest exits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import INNER_ADDOPTS, read_json

pytest.importorskip("mcp", reason="the MCP adapter needs `pip install pytest-memeval[mcp]`")
pytestmark = pytest.mark.usefixtures("memeval_env")

FAKE_SERVER = r"""
import json, os, subprocess, sys, time
mode, state = sys.argv[1], sys.argv[2]
def note(name, pid):
    with open(os.path.join(state, name), "a") as f:
        f.write(f"{pid}\n")
note("starts", os.getpid())
note("pids", os.getpid())
if mode != "exit":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    note("pids", child.pid)
if mode == "exit":
    sys.exit(3)
if mode == "hang":
    time.sleep(600)
TOOLS = [
    {"name": "ingest", "inputSchema": {"type": "object", "properties": {"conversation": {"type": "object"}}}},
    {"name": "search", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}}}},
]
searches = 0
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    result = {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        text = "ok"
        if msg["params"]["name"] == "search":
            searches += 1
            if mode == "big" and searches % 2:
                text = "x" * 300000
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""

#: systems around the MCP adapter that stop the run once the server is up
WRAPPERS = """
import os, sys
import pytest
from pytest_memeval.systems._mcp import mcp_factories

SPEC = {spec!r}

class Stops:
    def __init__(self):
        ((_, make),) = mcp_factories(SPEC)
        self.inner = make()

    def ingest(self, conversation):
        self.inner.ingest(conversation)

    def search(self, question, k):
        found = self.inner.search(question, k)
        if {how!r} == "interrupt":
            raise KeyboardInterrupt
        os._exit(13)

@pytest.fixture(scope="session")
def stops():
    return Stops
"""

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request: pytest.FixtureRequest) -> list[str]:
    return list(MODES[request.param])


def _spec(tmp_path: Path, mode: str, settings: str = "timeout=20", name: str = "fake") -> str:
    server = tmp_path / "fake_mcp.py"
    server.write_text(FAKE_SERVER, encoding="utf-8")
    return f"mcp:{sys.executable} {server} {mode} {tmp_path}#{settings}&name={name}"


def _run(tmp_path: Path, memsys: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env.pop("MEMEVAL_DATA_DIR", None)
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--memeval=demo"),
            *(f"--memsys={memsys}", f"--memeval-json={tmp_path / 'r.json'}"),
            *(f"--memeval-cache-dir={tmp_path / 'c'}", *extra),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _lines(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _survivors(tmp_path: Path) -> list[int]:
    """The server processes still running, after a generous grace period for the watchdog of a
    dead worker (a bound on a hang, not a speed target)."""
    pids = _lines(tmp_path / "pids")
    assert pids, "the fake server never started"
    deadline = time.monotonic() + 30
    while (alive := [p for p in pids if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in alive:  # never leave them behind, whatever the verdict
        os.kill(pid, 9)
    return alive


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _errors(tmp_path: Path, system: str) -> dict[str, set[str]]:
    """The questions' errors of ``system``, by status."""
    report = read_json(tmp_path / "r.json")
    out: dict[str, set[str]] = {}
    for run in report["runs"]:
        if run["system"] != system:
            continue
        for q in run["questions"]:
            out.setdefault(q["status"], set()).add(q.get("error") or "")
    assert out, f"no questions of {system}"
    return out


#: the servers of the shared run of each mode, each its own system ``fake-<server>`` with its
#: own state folder: every failed start (exit, hang and a missing command without xdist; exit
#: under -n 2, each worker starting it at most once; the hang's handshake timeout is costlier to
#: run twice), one whose every other reply is over #max_bytes and a healthy one (both reaped at
#: session end). One run per mode instead of one per server: the systems share nothing but the
#: pytest process (CI time: each run is a pytest start, three with -n 2).
SHARED = {"no-xdist": ("exit", "hang", "missing", "big", "ok"), "n2": ("exit", "big", "ok")}
SETTINGS = {"big": "timeout=20&max_bytes=65536", "ok": "timeout=20"}


def _server_spec(root: Path, server: str) -> str:
    name = f"fake-{server}"
    if server == "missing":
        return f"mcp:{root / 'no-such-server'} --flag#timeout=2&name={name}"
    state = root / server
    state.mkdir()
    return _spec(state, server, SETTINGS.get(server, "timeout=2"), name)


@pytest.fixture(scope="module")
def shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str], tuple[Path, subprocess.CompletedProcess[str]]]]:
    """``get(mode)``: the state folder and the result of that mode's shared run (run once)."""
    done: dict[str, tuple[Path, subprocess.CompletedProcess[str]]] = {}

    def get(mode: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
        if mode not in done:
            root = tmp_path_factory.mktemp(f"mcp-{mode}")
            memsys = ",".join(_server_spec(root, server) for server in SHARED[mode])
            done[mode] = (root, _run(root, memsys, *MODES[mode]))
        return done[mode]

    yield get
    for root, _ in done.values():  # never leave a server behind, whatever the verdicts
        for pids in root.glob("*/pids"):
            for pid in _lines(pids):
                if _running(pid):
                    os.kill(pid, 9)


@needs_proc
@pytest.mark.parametrize(
    ("server", "mode"),
    [
        ("exit", "no-xdist"),
        ("exit", "n2"),  # each worker starts it at most once
        ("hang", "no-xdist"),  # the handshake timeout: a hang is costlier to run twice
        ("missing", "no-xdist"),  # a spawn error
    ],
    ids=["exit-no-xdist", "exit-n2", "hang-no-xdist", "missing-no-xdist"],
)
def test_failed_start_is_tried_once_and_fails_the_rest(
    shared_run: Callable[[str], tuple[Path, subprocess.CompletedProcess[str]]],
    mode: str,
    server: str,
) -> None:
    root, r = shared_run(mode)
    state = root / server
    starts = _lines(state / "starts")
    assert len(starts) <= (2 if mode == "n2" else 1), starts
    by_status = _errors(root, f"fake-{server}")
    assert set(by_status) == {"ERROR"}, r.stdout[-2000:]
    (error,) = by_status["ERROR"]  # one and the same line for every question
    assert "\n" not in error
    assert (
        f"AdapterError: fake-{server}: cannot start" in error
        or f"AdapterError: fake-{server}: the MCP" in error
    )
    assert ("no-such-server --flag" if server == "missing" else "fake_mcp.py") in error
    first = {
        "exit": "Connection closed",
        "hang": "#timeout=2",
        "missing": "FileNotFoundError",
    }[server]
    assert first in error, error
    if server != "missing":
        assert starts and not _survivors(state)


@needs_proc
def test_server_processes_are_reaped_at_session_end(
    shared_run: Callable[[str], tuple[Path, subprocess.CompletedProcess[str]]], mode: list[str]
) -> None:
    """The servers and the children they started in their process groups are gone once pytest
    exits: the healthy one and the one with errored replies. (The shared run fails the items of
    the systems that error; the healthy server's questions all run.)"""
    root, r = shared_run("n2" if "-n" in mode else "no-xdist")
    assert r.returncode == pytest.ExitCode.TESTS_FAILED, r.stdout[-2000:] + r.stderr[-2000:]
    assert "ERROR" not in _errors(root, "fake-ok")
    assert not _survivors(root / "ok")
    assert not _survivors(root / "big")


@needs_proc
@pytest.mark.parametrize("how", ["interrupt", "crash"])
def test_server_processes_are_reaped_on_ctrl_c_and_worker_death(
    tmp_path: Path, mode: list[str], how: str
) -> None:
    """Ctrl-C during a question, or a worker that dies (os._exit) with the server running."""
    (tmp_path / "conftest.py").write_text(
        WRAPPERS.format(spec=_spec(tmp_path, "ok"), how=how), encoding="utf-8"
    )
    r = _run(tmp_path, "stops", "--memeval-limit=1", *mode)
    assert r.returncode != 0
    assert not _survivors(tmp_path)


def test_reply_over_max_bytes_errors_its_question_only(
    shared_run: Callable[[str], tuple[Path, subprocess.CompletedProcess[str]]], mode: list[str]
) -> None:
    root, r = shared_run("n2" if "-n" in mode else "no-xdist")
    by_status = _errors(root, "fake-big")
    assert "ERROR" in by_status and set(by_status) - {"ERROR"}, r.stdout[-2000:]
    for error in by_status["ERROR"]:
        assert error == (
            "pytest_memeval.errors.AdapterError: fake-big: tool 'search': the reply is larger than #max_bytes=65536; raise it in "
            "--memsys or return fewer memories"
        )


#: starts the fake server healthy once FLAG exists, else as a server that exits at once
LAUNCHER = """
import os, runpy, sys
flag, server, state = sys.argv[1:4]
sys.argv = [server, "ok" if os.path.exists(flag) else "exit", state]
runpy.run_path(server, run_name="__main__")
"""


@needs_proc
def test_a_failed_start_is_forgotten_when_its_session_ends(pytester: pytest.Pytester) -> None:
    """Two sessions in one process (``pytest.main`` in a loop; here pytester's in-process runs,
    with the adapter's module kept loaded between them, as a script's would be): the first
    session's failed start must not fail the second's questions once the server can start."""
    import pytest_memeval.systems._mcp  # noqa: F401  # loaded before either run: it stays loaded

    state = pytester.path / "state"
    state.mkdir()
    server = pytester.path / "fake_mcp.py"
    server.write_text(FAKE_SERVER, encoding="utf-8")
    launcher = pytester.path / "launcher.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    flag = pytester.path / "healthy"
    spec = f"mcp:{sys.executable} {launcher} {flag} {server} {state}#timeout=20&name=fake"
    args = ("--memeval=demo", f"--memsys={spec}", "-p", "no:xdist", "-p", "no:cacheprovider")
    try:
        first = pytester.runpytest(*args, f"--memeval-json={pytester.path / 'r1.json'}")
        assert first.parseoutcomes().get("errors") == 15, first.stdout.str()
        flag.touch()
        second = pytester.runpytest(*args, f"--memeval-json={pytester.path / 'r2.json'}")
        statuses = {
            q["status"]
            for run in read_json(pytester.path / "r2.json")["runs"]
            for q in run["questions"]
        }
        assert "ERROR" not in statuses, second.stdout.str()
        assert len(_lines(state / "starts")) == 2  # once per session
    finally:
        assert not _survivors(state)


def test_max_bytes_default_is_the_http_adapters() -> None:
    from pytest_memeval.systems._http import HttpSettings
    from pytest_memeval.systems._mcp import McpSettings, parse_mcp_spec

    assert McpSettings("stdio", "x").max_bytes == HttpSettings("http://x").max_bytes == 16 << 20
    assert parse_mcp_spec("mcp:x#max_bytes=100")[1].max_bytes == 100
