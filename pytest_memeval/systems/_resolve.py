"""Resolve a ``--memsys`` value to memory-system factories (pure Python; no pytest).

The conftest-fixture form is handled by the pytest glue, which asks this module only for the
other forms, tried in this order:

1. an entry point named ``name`` in group ``pytest_memeval.systems`` (its object is a factory or a
   class, called with no arguments once per conversation);
2. a built-in (``full-context``, ``bm25``, ``no-memory``);
3. ``replay:PATH`` (one system per key of a nested replay file), ``http:URL`` (a JSON-over-HTTP
   service, :mod:`._http`), ``mcp:COMMAND`` / ``mcp+http:URL`` (an MCP server, :mod:`._mcp`);
4. an import path ``package.module:factory`` (``factory`` may be dotted: ``module:Class.create``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, cast

from ..errors import MSG_UNKNOWN_SYSTEM, AdapterError, UnknownSystemError
from ._base import MemorySystem
from ._builtin import BUILTIN_SYSTEMS, REPLAY_PREFIX, replay_factories

if TYPE_CHECKING:
    from ._mcp import McpConnections

__all__ = [
    "ENTRY_POINT_GROUP",
    "Factory",
    "available_systems",
    "ensure_memory_system",
    "resolve_system",
    "unknown_system_message",
]

ENTRY_POINT_GROUP = "pytest_memeval.systems"

#: a zero-argument callable returning a fresh MemorySystem (called once per conversation)
Factory = Callable[[], MemorySystem]


def _entry_points(group: str) -> dict[str, EntryPoint]:
    eps: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        eps.setdefault(ep.name, ep)  # first distribution wins, deterministically
    return eps


def available_systems(*, entry_points_group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Built-in names, ``replay:PATH``, then entry-point names (sorted, without duplicates)."""
    names = [*sorted(BUILTIN_SYSTEMS), f"{REPLAY_PREFIX}PATH", "http:URL", "mcp:COMMAND"]
    names += [n for n in sorted(_entry_points(entry_points_group)) if n not in names]
    return names


def unknown_system_message(name: str, known: Iterable[str], *, available: str = "") -> str:
    """The one-line error for a ``--memsys`` value nothing knows, with "did you mean" over every
    name the caller can see (built-ins, entry points, fixtures) when one is close."""
    candidates = sorted(
        {k for k in known if k and k != name and not k.endswith(("PATH", "URL", "COMMAND"))}
    )
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    message = MSG_UNKNOWN_SYSTEM.format(
        name=name, available=available or ", ".join(available_systems())
    )
    if close:
        head, _, tail = message.partition(". ")
        hint = " or ".join(repr(c) for c in close)
        message = f"{head}; did you mean {hint}? {tail}"
    return message


def ensure_memory_system(obj: object, name: str) -> MemorySystem:
    """Return ``obj`` typed as a MemorySystem, or raise AdapterError naming the system and what is
    missing: callable ``ingest`` and ``search``; ``answer`` / ``reset`` callable when present."""
    missing = [m for m in ("ingest", "search") if not callable(getattr(obj, m, None))]
    if missing:
        raise AdapterError(
            f"memory system {name!r} ({type(obj).__name__}) has no callable "
            f"{' or '.join(missing)}: a MemorySystem needs ingest(conversation) and "
            "search(question, k)"
        )
    bad = [m for m in ("answer", "reset") if hasattr(obj, m) and not callable(getattr(obj, m))]
    if bad:
        raise AdapterError(
            f"memory system {name!r} ({type(obj).__name__}): {' and '.join(bad)} is not callable"
        )
    return cast(MemorySystem, obj)


def _checked(target: Callable[[], object], name: str) -> Factory:
    """Wrap a user factory so every instance it makes is checked by :func:`ensure_memory_system`."""

    def factory() -> MemorySystem:
        return ensure_memory_system(target(), name)

    factory.__qualname__ = factory.__name__ = f"memsys_factory[{name}]"
    factory.__wrapped__ = target  # type: ignore[attr-defined]
    return factory


def _require_callable(obj: object, name: str, origin: str) -> Callable[[], object]:
    if not callable(obj):
        raise AdapterError(
            f"memory system {name!r}: {origin} is a {type(obj).__name__}, not a factory; it "
            "must be a class or a zero-argument callable returning a fresh MemorySystem"
        )
    return cast(Callable[[], object], obj)


def _import_path(name: str) -> Callable[[], object]:
    module_name, _, attr_path = name.partition(":")
    if not module_name or not attr_path:
        raise AdapterError(f"memory system {name!r}: an import path is 'package.module:factory'")
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise AdapterError(
            f"memory system {name!r}: cannot import module {module_name!r} ({exc})"
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AdapterError(
                f"memory system {name!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return _require_callable(obj, name, f"{module_name}:{attr_path}")


def _service_factories(
    name: str, mcp: Callable[[], McpConnections] | None = None
) -> list[tuple[str, Factory]] | None:
    """``http:URL`` and ``mcp:COMMAND`` / ``mcp+http:URL``: memory systems behind a service."""
    if name.startswith("http:"):
        from ._http import http_factories

        return cast(list[tuple[str, Factory]], http_factories(name))
    if name.startswith(("mcp:", "mcp+http:")):
        from ._mcp import mcp_factories

        return cast(
            list[tuple[str, Factory]], mcp_factories(name, mcp() if mcp is not None else None)
        )
    return None


def resolve_system(
    name: str,
    *,
    entry_points_group: str = ENTRY_POINT_GROUP,
    mcp: Callable[[], McpConnections] | None = None,
) -> list[tuple[str, Factory]]:
    """Resolve one ``--memsys`` value (not a conftest fixture) to ``[(system_name, factory)]``.

    Order: entry point, built-in, ``replay:PATH`` (several pairs for a nested replay file), import
    path. Unknown names raise UnknownSystemError with ``MSG_UNKNOWN_SYSTEM`` listing the built-ins and
    entry points (the caller adds conftest fixture names). Factories of entry points and import
    paths check each instance with :func:`ensure_memory_system`. ``mcp`` gives the run's MCP
    connections (``RunState.mcp``, asked for by an ``mcp:`` value only), where that system's
    server is started, and which the run closes at its end.
    """
    name = name.strip()
    eps = _entry_points(entry_points_group)
    if name in eps:
        ep = eps[name]
        try:
            loaded = ep.load()
        except Exception as exc:
            raise AdapterError(
                f"memory system {name!r}: entry point {ep.value!r} in group "
                f"{entry_points_group!r} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        origin = f"entry point {ep.value!r}"
        return [(name, _checked(_require_callable(loaded, name, origin), name))]
    builtin = BUILTIN_SYSTEMS.get(name)
    if builtin is not None:
        return [(name, builtin)]
    if name.startswith(REPLAY_PREFIX):
        return replay_factories(name)
    service = _service_factories(name, mcp)
    if service is not None:
        return service
    if ":" in name and not name.startswith(":"):
        return [(name, _checked(_import_path(name), name))]
    raise UnknownSystemError(
        MSG_UNKNOWN_SYSTEM.format(
            name=name,
            available=", ".join(available_systems(entry_points_group=entry_points_group)),
        )
    )
