"""``--memsys=mcp:COMMAND`` (stdio) and ``--memsys=mcp+http:URL`` (streamable HTTP): a memory
system behind an MCP server, through the official ``mcp`` SDK (``pip install
"pytest-memeval[mcp]"``).

Tools map to the protocol by name, set after ``#`` (never passed to the server)::

    --memsys="mcp:python my_server.py#ingest=store_memory&search=search_memory&timeout=30&name=mymem"

``ingest`` and ``search`` are required (defaults: tools named ``ingest`` and ``search``);
``answer``, ``reset``, ``ready`` and ``dump`` are used when mapped, or when the server has tools
of those names. Arguments follow each tool's input schema:

- ingest: a tool with a ``conversation`` property gets the whole conversation once (the wire
  format of :mod:`._wire`); otherwise it is called once per turn, in date order, with those of
  ``text`` / ``content`` / ``memory`` (``"speaker: text"``), ``conversation_id`` / ``user_id`` /
  ``namespace``, ``speaker``, ``turn_id``, ``session_id``, ``date`` and ``metadata`` that its
  schema declares;
- search: ``question`` (the wire question) when declared, else ``query`` / ``text``; and ``k`` /
  ``limit`` / ``top_k``, ``conversation_id`` / ``user_id`` / ``namespace``;
- answer: ``question`` or ``query``; reset, ready and dump: ``conversation_id`` / ``user_id`` /
  ``namespace`` (ready returns true when searches see everything ingested; dump returns every
  memory the server stored for the conversation, read as a search result is: the optional
  ``dump`` capability of docs/scoring.md#the-dump-hook-what-a-system-stored).

A search result is the tool's structured content, or its text content parsed as JSON when it is
JSON, else one memory per text block: a list of memories, or an object whose ``memories`` /
``results`` / ``result`` holds one; a memory is a string or an object with ``text`` (or
``memory`` / ``content``) and optional ``id``, ``date``, ``score``, ``source_ids``.

One server connection per run of a process (:class:`McpConnections`, held by the run's state),
shared by its conversations (the tools get the conversation id), opened on first use and closed
at the session's end (at exit when nothing closed it). Every call has a timeout; a tool error, a timeout or
a dead server is an :class:`AdapterError` for that question, never a hung run.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import AdapterError, terminal_safe
from ..records import Conversation, Memory, Question
from ._wire import (
    MAX_REPLY_BYTES,
    conversation_to_dict,
    memory_from_wire,
    question_to_dict,
    reply_too_large,
    spec_number,
    spec_settings,
)

__all__ = ["McpConnections", "McpMemorySystem", "McpSettings", "mcp_factories", "parse_mcp_spec"]

MSG_NO_MCP = (
    "--memsys={spec}: the MCP adapter needs the official MCP SDK: pip install "
    '"pytest-memeval[mcp]" (or pip install mcp)'
)
_ROLES = ("ingest", "search", "answer", "reset", "ready", "dump")


@dataclass(frozen=True)
class McpSettings:
    transport: str  # "stdio" or "http"
    target: str  # the command line, or the URL
    tools: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    poll: float = 0.1
    max_bytes: int = MAX_REPLY_BYTES


def parse_mcp_spec(spec: str) -> tuple[str, McpSettings]:
    """``mcp:COMMAND[#...]`` / ``mcp+http:URL[#...]`` -> (system name, settings)."""
    if spec.startswith("mcp+http:"):
        transport, body = "http", spec[len("mcp+http:") :]
    elif spec.startswith("mcp:"):
        transport, body = "stdio", spec[len("mcp:") :]
    else:
        raise AdapterError(f"--memsys={spec}: expected mcp:COMMAND or mcp+http:URL")
    target, _, fragment = body.partition("#")
    target = target.strip()
    if not target:
        raise AdapterError(
            f"--memsys={spec}: no {'URL' if transport == 'http' else 'command'} after the prefix, "
            'e.g. --memsys="mcp:python my_server.py#ingest=store_memory&search=search_memory"'
        )
    options = spec_settings(spec, fragment, {*_ROLES, "timeout", "poll", "max_bytes", "name"})
    numbers: dict[str, Any] = {
        k: spec_number(options[k], k, spec) for k in ("timeout", "poll") if k in options
    }
    if "max_bytes" in options:
        numbers["max_bytes"] = int(
            spec_number(options["max_bytes"], "max_bytes", spec, integer=True)
        )
    tools = {role: options[role] for role in _ROLES if options.get(role)}
    name = options.get("name") or spec.partition("#")[0]
    return name, McpSettings(transport, target, tools, **numbers)


#: a small process that outlives a worker killed without notice (os._exit, SIGKILL, the OOM
#: killer): it holds the read end of a pipe only the worker writes to, and when that pipe ends
#: without a word it kills the server's process group (SIGTERM, then SIGKILL); one byte tells it
#: the worker closed the server itself. Its own session keeps Ctrl-C away.
_WATCHDOG = """
import os, select, signal, sys, time
pgid = int(sys.argv[1])
def alive():
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
while alive():
    if select.select([0], [], [], 0.5)[0]:
        if os.read(0, 1):
            break  # the worker closed the server itself
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                break
            end = time.monotonic() + 2
            while alive() and time.monotonic() < end:
                time.sleep(0.05)
        break
"""

#: how long a server gets to exit after its stdin closes, and after SIGTERM
_GRACE = 1.0

#: a JSON-RPC error code of our own: the reply to this request was over #max_bytes
_OVERSIZE = -32099

_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
)


class _ServerGroup:
    """A stdio server started in a session (process group) of its own, and its watchdog."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.watchdog: subprocess.Popen[bytes] | None = None
        self.lifeline: int | None = None
        if os.name == "posix":
            read, self.lifeline = os.pipe()
            try:
                self.watchdog = subprocess.Popen(
                    [sys.executable, "-c", _WATCHDOG, str(pid)],
                    stdin=read,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,
                )
            finally:
                os.close(read)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the server and every process it started in its group (never raises)."""
        with contextlib.suppress(OSError):
            if os.name == "posix":
                os.killpg(self.pid, sig)
            else:  # pragma: no cover - the server itself only
                os.kill(self.pid, sig)

    def alive(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass
        return True

    def release(self) -> None:
        """End the watchdog (the group is gone or killed) and reap it."""
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                os.write(self.lifeline, b"x")
            with contextlib.suppress(OSError):
                os.close(self.lifeline)
            self.lifeline = None
        if self.watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watchdog.wait(5.0)
            self.watchdog = None


class McpConnection:
    """One MCP client session, run by an asyncio loop in a daemon thread; calls are submitted
    from the caller's thread and waited for with a timeout. A stdio server runs in a process
    group of its own, watched for a worker that dies, and is killed with its group on close."""

    def __init__(self, settings: McpSettings, name: str) -> None:
        self.settings = settings
        self.name = name
        self.loop = asyncio.new_event_loop()
        self.session: Any = None
        self.tools: dict[str, dict[str, Any]] = {}
        self.group: _ServerGroup | None = None
        self._ready = concurrent.futures.Future[None]()
        self._scope: Any = None  # the anyio CancelScope around the session
        self._closing = False
        self._failure: BaseException | None = None
        self._oversize: str | None = None  # an oversize reply whose request id was not found
        self.thread = threading.Thread(target=self._run, name=f"memeval-mcp[{name}]", daemon=True)
        self.thread.start()
        try:
            self._ready.result(settings.timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise AdapterError(
                f"{name}: the MCP server ({_where(settings)}) did not start and initialize "
                f"within #timeout={settings.timeout:g}s"
            ) from None
        except Exception as exc:
            self.close()
            raise AdapterError(
                f"{name}: cannot start or reach the MCP server ({_where(settings)}): "
                f"{_exc_name(exc)}: {_exc_text(exc)}"
            ) from None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except BaseException as exc:
            self._failure = exc
        finally:
            if not self._ready.done():
                self._ready.set_exception(
                    self._failure or ConnectionError("the MCP server closed the connection")
                )
            self.loop.close()

    async def _main(self) -> None:
        import anyio
        from mcp import ClientSession

        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._closing:
                return
            async with (
                self._transport() as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                for tool in listed.tools:
                    schema = getattr(tool, "input_schema", None) or getattr(
                        tool, "inputSchema", None
                    )
                    self.tools[tool.name] = dict(schema or {})
                self.session = session
                self._ready.set_result(None)
                await anyio.sleep_forever()

    def _transport(self) -> Any:
        s = self.settings
        if s.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(s.target)
        return self._stdio(shlex.split(s.target))

    @contextlib.asynccontextmanager
    async def _stdio(self, argv: list[str]) -> AsyncIterator[tuple[Any, Any]]:
        """The stdio transport: newline-delimited JSON-RPC over the server's stdin/stdout, read
        in 64 KiB chunks; a line over ``#max_bytes`` is skipped to its end, never held, and
        answered with an error for its request."""
        import anyio
        from mcp.client.stdio import get_default_environment
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        # the SDK's environment for servers (PATH, HOME, ...: no secrets of this process)
        env = get_default_environment()
        process = await anyio.open_process(argv, stderr=None, env=env, start_new_session=True)
        self.group = group = _ServerGroup(process.pid)
        limit = self.settings.max_bytes
        to_session, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_session = anyio.create_memory_object_stream[Any](0)
        assert process.stdout is not None and process.stdin is not None
        stdout, stdin = process.stdout, process.stdin

        def parse(line: bytes) -> Any:
            try:
                return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValueError as exc:
                return exc

        def oversize(head: bytes) -> Any:
            message = reply_too_large(f"{self.name}: an MCP reply", limit)
            found = _ID.match(head)
            if found is None:
                self._oversize = message  # the waiting call reports it at its timeout
                return ValueError(message)
            ident = json.loads(found.group(1))
            error = {
                "jsonrpc": "2.0",
                "id": ident,
                "error": {"code": _OVERSIZE, "message": message},
            }
            return SessionMessage(jsonrpc_message_adapter.validate_python(error, by_name=False))

        async def read() -> None:
            buffer = bytearray()
            head = b""
            skipping = False
            async with to_session:
                while True:
                    try:
                        chunk = await stdout.receive(65536)
                    except (
                        anyio.EndOfStream,
                        anyio.ClosedResourceError,
                        anyio.BrokenResourceError,
                    ):
                        return
                    lines = chunk.split(b"\n")
                    for i, part in enumerate(lines):
                        if not skipping:
                            if len(buffer) + len(part) > limit:
                                head = bytes(buffer[:1024]) + part[: max(0, 1024 - len(buffer))]
                                buffer.clear()
                                skipping = True
                            else:
                                buffer += part
                        if i == len(lines) - 1:
                            break  # the line goes on in the next chunk
                        if skipping:
                            item, skipping = oversize(head), False
                        else:
                            item = parse(bytes(buffer)) if buffer.strip() else None
                        buffer.clear()
                        if item is None:
                            continue
                        try:
                            await to_session.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return

        async def write() -> None:
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await stdin.send(data.encode() + b"\n")
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        await to_session.aclose()
                        return

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read)
                tasks.start_soon(write)
                try:
                    yield from_server, to_server
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    await stdin.aclose()
                await _wait(lambda: process.returncode is None, _GRACE)
                group.kill(signal.SIGTERM)  # also what the server started and left behind
                await _wait(group.alive, _GRACE)
                group.kill(signal.SIGKILL)
                await _wait(lambda: process.returncode is None, _GRACE)
                group.release()
                with contextlib.suppress(Exception):
                    await stdout.aclose()
                with contextlib.suppress(Exception):
                    await process.aclose()

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self.session is None or not self.thread.is_alive():
            reason = f" ({_exc_text(self._failure)})" if self._failure else ""
            raise AdapterError(f"{self.name}: the MCP server connection is closed{reason}")
        self._oversize = None
        future = asyncio.run_coroutine_threadsafe(
            self.session.call_tool(tool, arguments), self.loop
        )
        try:
            result = future.result(self.settings.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            if self._oversize is not None:
                raise AdapterError(self._oversize) from None
            raise AdapterError(
                f"{self.name}: tool {tool!r} did not return within #timeout="
                f"{self.settings.timeout:g}s"
            ) from None
        except Exception as exc:
            if getattr(getattr(exc, "error", None), "code", None) == _OVERSIZE:
                raise AdapterError(
                    reply_too_large(f"{self.name}: tool {tool!r}", self.settings.max_bytes)
                ) from None
            raise AdapterError(
                f"{self.name}: tool {tool!r} failed ({type(exc).__name__}: {_exc_text(exc)})"
            ) from None
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            raise AdapterError(f"{self.name}: tool {tool!r} returned an error: {_texts(result)}")
        return result

    def close(self) -> None:
        """Stop the session and the server's process group; bounded, and never raises. Called at
        session end, at exit and after a failed start, from any thread."""
        self._closing = True
        scope = self._scope
        if scope is not None and self.thread.is_alive() and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self.loop.call_soon_threadsafe(scope.cancel)
        self.thread.join(4 * _GRACE + 2.0)
        group = self.group
        if group is not None and (self.thread.is_alive() or group.watchdog is not None):
            group.kill(signal.SIGKILL)  # the loop is stuck: the last resort, from this thread
            group.release()


async def _wait(busy: Callable[[], bool], seconds: float) -> None:
    import anyio

    with anyio.move_on_after(seconds):
        while busy():
            await anyio.sleep(0.02)


def _where(settings: McpSettings) -> str:
    what = "URL" if settings.transport == "http" else "command"
    return f"{what} {terminal_safe(settings.target, 500)!r}"


def _exc_name(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup from anyio's task group
    return _exc_name(inner[0]) if inner else type(exc).__name__


def _exc_text(exc: BaseException | None) -> str:
    if exc is None:
        return ""
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup from anyio's task group
    if inner:
        return _exc_text(inner[0])
    return terminal_safe(" ".join(str(exc).split()), 300) or type(exc).__name__


def _texts(result: Any) -> str:
    parts = [str(getattr(c, "text", "")) for c in getattr(result, "content", None) or ()]
    return " ".join(p for p in parts if p)[:300]


def _structured(result: Any) -> Any:
    for attr in ("structured_content", "structuredContent"):
        value = getattr(result, attr, None)
        if value is not None:
            return value
    texts = [str(getattr(c, "text", "")) for c in getattr(result, "content", None) or ()]
    texts = [t for t in texts if getattr(t, "strip", None) and t.strip()]
    if len(texts) == 1:
        try:
            return json.loads(texts[0])
        except ValueError:
            return texts
    parsed = []
    for t in texts:
        try:
            parsed.append(json.loads(t))
        except ValueError:
            parsed.append(t)
    return parsed


def _memories(value: Any, where: str) -> list[Memory]:
    if isinstance(value, Mapping):
        for key in ("memories", "results", "result"):
            if key in value:
                return _memories(value[key], where)
        value = [value]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise AdapterError(f"{where}: expected a list of memories, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping) and not isinstance(item.get("text"), str):
            alias = item.get("memory", item.get("content"))
            if isinstance(alias, str):
                item = {**item, "text": alias}
        try:
            out.append(memory_from_wire(item, f"{where}: memory {i}"))
        except ValueError as exc:
            raise AdapterError(str(exc)) from None
    return out


def _props(schema: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    return set(props) if isinstance(props, Mapping) else set(), set(map(str, required))


class McpMemorySystem:
    """One conversation's view of an MCP memory server."""

    def __init__(self, connection: McpConnection, tools: Mapping[str, str]) -> None:
        self.conn = connection
        self.tools = tools
        self.conversation_id = ""

    def _args(self, role: str, candidates: dict[str, Any]) -> dict[str, Any]:
        tool = self.tools[role]
        props, required = _props(self.conn.tools.get(tool, {}))
        if not props:
            first = next(iter(candidates))
            return {first: candidates[first]}
        missing = sorted(required - set(candidates))
        if missing:
            raise AdapterError(
                f"{self.conn.name}: tool {tool!r} ({role}) requires {', '.join(missing)}, which "
                "the adapter cannot fill; see pytest_memeval/systems/_mcp.py for the arguments "
                "it passes"
            )
        return {k: v for k, v in candidates.items() if k in props}

    def _conv(self) -> dict[str, str]:
        c = self.conversation_id
        return {"conversation_id": c, "user_id": c, "namespace": c}

    def ingest(self, conversation: Conversation) -> None:
        self.conversation_id = conversation.id
        tool = self.tools["ingest"]
        props, _ = _props(self.conn.tools.get(tool, {}))
        if "conversation" in props:
            self.conn.call(tool, {"conversation": conversation_to_dict(conversation)})
            return
        for session, turn in conversation.turns():
            line = f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text
            date = session.date.isoformat() if session.date is not None else session.date_raw
            args = self._args(
                "ingest",
                {
                    "text": line,
                    "content": line,
                    "memory": line,
                    **self._conv(),
                    "speaker": turn.speaker,
                    "turn_id": turn.id,
                    "session_id": session.id,
                    "date": date,
                    "metadata": {"turn_id": turn.id, "session_id": session.id, "date": date},
                },
            )
            self.conn.call(tool, args)

    def search(self, question: Question, k: int) -> list[Memory]:
        tool = self.tools["search"]
        props, _ = _props(self.conn.tools.get(tool, {}))
        if "question" in props:
            args: dict[str, Any] = {"question": question_to_dict(question), "k": k}
            args = {key: v for key, v in args.items() if key in props}
        else:
            args = self._args(
                "search",
                {
                    "query": question.question,
                    "text": question.question,
                    "k": k,
                    "limit": k,
                    "top_k": k,
                    **self._conv(),
                },
            )
        result = self.conn.call(tool, args)
        return _memories(_structured(result), f"{self.conn.name}: tool {tool!r}")

    def wait_ready(self, timeout: float) -> bool:
        if "ready" not in self.tools:
            return True
        import time

        deadline = time.monotonic() + timeout
        while True:
            value = _structured(
                self.conn.call(self.tools["ready"], self._args("ready", self._conv()))
            )
            if isinstance(value, Mapping):
                value = value.get("ready", value.get("result"))
            if value is True or (isinstance(value, list) and value == [True]):
                return True
            if isinstance(value, (str, list)) and str(value).strip("[]' ").lower() == "true":
                return True
            if time.monotonic() + self.conn.settings.poll > deadline:
                return False
            time.sleep(self.conn.settings.poll)

    def reset(self) -> None:
        if "reset" in self.tools and self.conversation_id:
            self.conn.call(self.tools["reset"], self._args("reset", self._conv()))


class AnsweringMcpSystem(McpMemorySystem):
    def answer(self, question: Question) -> str:
        tool = self.tools["answer"]
        props, _ = _props(self.conn.tools.get(tool, {}))
        if "question" in props:
            args: dict[str, Any] = {"question": question_to_dict(question)}
        else:
            args = self._args("answer", {"query": question.question, **self._conv()})
        value = _structured(self.conn.call(tool, args))
        if isinstance(value, Mapping):
            value = value.get("answer", value.get("result"))
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, str):
            raise AdapterError(f"{self.conn.name}: tool {tool!r} (answer) returned no text")
        return value


class DumpingMcpSystem(McpMemorySystem):
    """A server with a ``dump`` tool: it lists what it stored for a conversation."""

    def dump(self, conversation_id: str) -> list[Memory]:
        tool = self.tools["dump"]
        ids = {"conversation_id": conversation_id, "user_id": conversation_id}
        result = self.conn.call(tool, self._args("dump", {**ids, "namespace": conversation_id}))
        return _memories(_structured(result), f"{self.conn.name}: tool {tool!r} (dump)")


class DumpingAnsweringMcpSystem(AnsweringMcpSystem, DumpingMcpSystem):
    """A server that answers by itself and lists what it stored."""


_CLASSES: dict[tuple[bool, bool], type[McpMemorySystem]] = {
    (False, False): McpMemorySystem,
    (True, False): AnsweringMcpSystem,
    (False, True): DumpingMcpSystem,
    (True, True): DumpingAnsweringMcpSystem,
}


class McpConnections:
    """The open connections of one run (``RunState.mcp``: each pytest session of each process has
    its own), and the first failure of each ``--memsys`` value whose server did not start: it is
    not started again in that session (each xdist worker tries once), and the system's remaining
    questions error at once with that line. :meth:`close` (the plugin's session end, which Ctrl-C
    reaches too; atexit is the fallback) closes them and forgets the failures: a second session
    in the same process (``pytest.main`` in a loop, pytester) starts its servers afresh."""

    def __init__(self) -> None:
        self._connections: dict[str, McpConnection] = {}
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()
        self._at_exit = False

    def connect(self, spec: str, settings: McpSettings, name: str) -> McpConnection:
        """The open connection of ``spec``, started at the first call (and again when its thread
        died); a start that failed raises the same AdapterError on every later call."""
        with self._lock:
            failed = self._failed.get(spec)
            if failed is not None:
                raise AdapterError(failed)
            conn = self._connections.get(spec)
            if conn is None or not conn.thread.is_alive():
                try:
                    conn = McpConnection(settings, name)
                except AdapterError as exc:
                    self._failed[spec] = failed = (
                        f"{exc}; not started again in this process: the system's remaining "
                        "questions error"
                    )
                    raise AdapterError(failed) from None
                self._connections[spec] = conn
                if not self._at_exit:  # the fallback when no session end closes them
                    atexit.register(self.close)
                    self._at_exit = True
            return conn

    def close(self) -> None:
        """Close every connection and reap its server processes; forget the failed starts."""
        with self._lock:
            connections = list(self._connections.values())
            self._connections.clear()
            self._failed.clear()
            if self._at_exit:
                atexit.unregister(self.close)
                self._at_exit = False
        for conn in connections:
            conn.close()


def mcp_factories(
    spec: str, connections: McpConnections | None = None
) -> list[tuple[str, Callable[[], object]]]:
    """``[(name, factory)]`` for ``--memsys=mcp:...``; the server starts at the first
    conversation of each process (so resolving the name never spawns anything), as a connection
    of ``connections`` (the run's, ``RunState.mcp``; None: one of the factory's own, closed at
    exit)."""
    name, settings = parse_mcp_spec(spec)
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise AdapterError(MSG_NO_MCP.format(spec=spec)) from None
    registry = connections if connections is not None else McpConnections()

    def factory() -> object:
        conn = registry.connect(spec, settings, name)
        tools = {role: settings.tools.get(role, role) for role in _ROLES}
        for role in ("ingest", "search"):
            if tools[role] not in conn.tools:
                raise AdapterError(
                    f"{name}: the MCP server has no tool {tools[role]!r} for {role}; its tools: "
                    f"{', '.join(sorted(conn.tools)) or 'none'}; map one with #{role}=TOOL"
                )
        for role in ("answer", "reset", "ready", "dump"):
            if tools[role] not in conn.tools:
                if role in settings.tools:
                    raise AdapterError(
                        f"{name}: #{role}={tools[role]} is not a tool of the MCP server; its "
                        f"tools: {', '.join(sorted(conn.tools))}"
                    )
                del tools[role]
        return _CLASSES["answer" in tools, "dump" in tools](conn, tools)

    factory.__qualname__ = factory.__name__ = f"mcp_factory[{name}]"
    return [(name, factory)]
