"""Memory systems: the protocol, the built-ins and ``--memsys`` resolution (pytest-free)."""

from __future__ import annotations

from ._base import AnsweringSystem, MemorySystem
from ._builtin import (
    BUILTIN_SYSTEMS,
    REPLAY_PREFIX,
    BM25System,
    FullContextSystem,
    NoMemorySystem,
    OracleSystem,
    ReplaySystem,
    conversation_memories,
    load_replay,
    replay_factories,
    turn_memory,
    turn_text,
)
from ._resolve import (
    ENTRY_POINT_GROUP,
    Factory,
    available_systems,
    ensure_memory_system,
    resolve_system,
)

__all__ = [
    "BUILTIN_SYSTEMS",
    "ENTRY_POINT_GROUP",
    "REPLAY_PREFIX",
    "AnsweringSystem",
    "BM25System",
    "Factory",
    "FullContextSystem",
    "MemorySystem",
    "NoMemorySystem",
    "OracleSystem",
    "ReplaySystem",
    "available_systems",
    "conversation_memories",
    "ensure_memory_system",
    "load_replay",
    "replay_factories",
    "resolve_system",
    "turn_memory",
    "turn_text",
]
