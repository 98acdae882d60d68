"""The MCP connections of one run (``systems.mcp.McpConnections``, held by ``RunState.mcp``),
without an inner pytest run: one server per ``--memsys`` value shared by its factories, a failed
start tried once and remembered, everything closed and forgotten when the run's state closes
its services (the plugin's session end)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_memeval.errors import AdapterError
from pytest_memeval.run import RunState, Settings
from pytest_memeval.systems._mcp import McpConnections, mcp_factories
from pytest_memeval.systems._resolve import resolve_system

pytest.importorskip("mcp")  # the adapter's SDK (an extra)

REPO = Path(__file__).resolve().parents[3]
MCP_SERVER = REPO / "examples" / "mcp_server" / "memeval_mcp_server.py"

#: a server that notes each start in the file it is given, then exits before the handshake
EXITS = "import sys; open(sys.argv[1], 'a').write('start\\n'); sys.exit(3)"


def _exits(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "exits.py"
    script.write_text(EXITS, encoding="utf-8")
    starts = tmp_path / "starts"
    return f"mcp:{sys.executable} {script} {starts}#timeout=5&name=exits", starts


def _starts(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def test_a_failed_start_is_remembered_until_the_run_closes(tmp_path: Path) -> None:
    spec, starts = _exits(tmp_path)
    state = RunState(Settings())
    ((_, factory),) = resolve_system(spec, mcp=state.mcp)
    with pytest.raises(AdapterError, match="not started again in this process") as first:
        factory()
    with pytest.raises(AdapterError) as again:
        factory()
    assert str(again.value) == str(first.value)
    assert _starts(starts) == 1
    registry = state.mcp()
    state.close_services()  # the session's end: the next session starts it afresh
    assert state.mcp() is not registry
    ((_, factory),) = resolve_system(spec, mcp=state.mcp)
    with pytest.raises(AdapterError, match="not started again"):
        factory()
    assert _starts(starts) == 2
    state.close_services()


def test_the_runs_connections_are_shared_and_closed_with_it() -> None:
    tools = "ingest=store_memory&search=search_memory"
    spec = f"mcp:{sys.executable} {MCP_SERVER} bm25#{tools}&timeout=60&name=shared"
    connections = McpConnections()
    ((_, one),) = mcp_factories(spec, connections)
    ((_, two),) = mcp_factories(spec, connections)
    first, second = one(), two()
    conn = first.conn  # type: ignore[attr-defined]
    assert second.conn is conn  # type: ignore[attr-defined]
    assert conn.thread.is_alive()
    connections.close()
    conn.thread.join(timeout=10)
    assert not conn.thread.is_alive()
    ((_, three),) = mcp_factories(spec, connections)
    third = three()  # a closed run's registry starts a new server when asked again
    assert third.conn is not conn  # type: ignore[attr-defined]
    connections.close()
