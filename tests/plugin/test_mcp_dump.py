"""The MCP adapter's optional ``dump`` (issue 24: the dump capability in the HTTP and MCP
adapters): a server with a ``dump`` tool (or ``#dump=TOOL``) lists what it stored; a server
without one gives a system without ``dump``, whose storage metrics are UNSCORED, never zero."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO

from pytest_memeval.records import Conversation, Question, Session, Turn
from pytest_memeval.systems.base import stored_memories

pytest.importorskip("mcp", reason="the MCP adapter needs `pip install pytest-memeval[mcp]`")

MCP_SERVER = REPO / "examples" / "mcp_server" / "memeval_mcp_server.py"

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

CONV = Conversation(
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


@pytest.mark.parametrize("mapping", ["", "dump=dump&"], ids=["by-name", "mapped"])
def test_mcp_server_with_a_dump_tool_lists_what_it_stored(mapping: str) -> None:
    from pytest_memeval.systems.mcp import mcp_factories

    spec = f"mcp:{sys.executable} {MCP_SERVER} bm25#{mapping}ingest=add_turn&search=search_text"
    ((_, factory),) = mcp_factories(f"{spec}&name=dumps{len(mapping)}")
    system = factory()
    system.ingest(CONV)
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
    from pytest_memeval.systems.mcp import mcp_factories

    server = tmp_path / "bare_mcp.py"
    server.write_text(BARE_SERVER, encoding="utf-8")
    ((_, factory),) = mcp_factories(f"mcp:{sys.executable} {server}#timeout=20&name=bare")
    system = factory()
    assert not hasattr(system, "dump")
    assert stored_memories(system, "c9") is None  # the storage metrics: UNSCORED with the reason


def test_mapping_dump_to_a_missing_tool_names_the_tools(tmp_path: Path) -> None:
    from pytest_memeval.errors import AdapterError
    from pytest_memeval.systems.mcp import mcp_factories

    server = tmp_path / "bare_mcp.py"
    server.write_text(BARE_SERVER, encoding="utf-8")
    ((_, factory),) = mcp_factories(f"mcp:{sys.executable} {server}#dump=list_all&name=bare2")
    with pytest.raises(AdapterError, match=r"#dump=list_all is not a tool of the MCP server"):
        factory()
