"""Memory systems: the protocol, the built-ins and ``--memsys`` resolution (pytest-free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
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

if TYPE_CHECKING:
    from ._base import NO_DUMP_REASON, STORED_META, stored_memories
    from ._builtin import MissingReplayAnswer
    from ._contract import materialise, normalise_answer, normalise_memories, normalise_memory
    from ._embedding import EmbeddingSystem
    from ._http import HttpClient, http_factories, parse_http_spec
    from ._mcp import McpConnections, mcp_factories
    from ._resolve import unknown_system_message
    from ._text import STOPWORDS, content_tokens, light_stem, words
    from ._wire import (
        conversation_from_dict,
        conversation_to_dict,
        memory_from_dict,
        memory_from_wire,
        question_from_dict,
        question_to_dict,
    )


__all__ = [
    "BUILTIN_SYSTEMS",
    "ENTRY_POINT_GROUP",
    "NO_DUMP_REASON",
    "REPLAY_PREFIX",
    "STOPWORDS",
    "STORED_META",
    "AnsweringSystem",
    "BM25System",
    "EmbeddingSystem",
    "Factory",
    "FullContextSystem",
    "HttpClient",
    "McpConnections",
    "MemorySystem",
    "MissingReplayAnswer",
    "NoMemorySystem",
    "OracleSystem",
    "ReplaySystem",
    "available_systems",
    "content_tokens",
    "conversation_from_dict",
    "conversation_memories",
    "conversation_to_dict",
    "ensure_memory_system",
    "http_factories",
    "light_stem",
    "load_replay",
    "materialise",
    "mcp_factories",
    "memory_from_dict",
    "memory_from_wire",
    "normalise_answer",
    "normalise_memories",
    "normalise_memory",
    "parse_http_spec",
    "question_from_dict",
    "question_to_dict",
    "replay_factories",
    "resolve_system",
    "stored_memories",
    "turn_memory",
    "turn_text",
    "unknown_system_message",
    "words",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "NO_DUMP_REASON": "._base",
    "STOPWORDS": "._text",
    "STORED_META": "._base",
    "EmbeddingSystem": "._embedding",
    "HttpClient": "._http",
    "McpConnections": "._mcp",
    "MissingReplayAnswer": "._builtin",
    "content_tokens": "._text",
    "conversation_from_dict": "._wire",
    "conversation_to_dict": "._wire",
    "http_factories": "._http",
    "light_stem": "._text",
    "materialise": "._contract",
    "mcp_factories": "._mcp",
    "memory_from_dict": "._wire",
    "memory_from_wire": "._wire",
    "normalise_answer": "._contract",
    "normalise_memories": "._contract",
    "normalise_memory": "._contract",
    "parse_http_spec": "._http",
    "question_from_dict": "._wire",
    "question_to_dict": "._wire",
    "stored_memories": "._base",
    "unknown_system_message": "._resolve",
    "words": "._text",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
