"""mem0 OSS (the ``mem0ai`` library) as a MemorySystem: one mem0 ``Memory`` per instance, an
in-memory local Qdrant, the bundled all-MiniLM-L6-v2 as embedder unless an OpenAI-compatible
embedding model is named, fact extraction (``infer=True``) on an OpenAI-compatible endpoint.
See README.md beside this file."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...errors import AdapterError
from ...records import Conversation, Memory, Question, Session, Turn
from .._hosted import cut_top_k, source_ids, store_name

__all__ = [
    "DEFAULT_BASE_URL",
    "LOCAL_DIMS",
    "Mem0Settings",
    "Mem0System",
    "import_mem0",
    "mem0_config",
    "turn_message",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: all-MiniLM-L6-v2's dimensions
LOCAL_DIMS = 384
#: where mem0's LLM client points when no endpoint is configured (raw mode): a discard port on
#: the loopback, so a call nobody expected fails at once instead of reaching a real service
NO_ENDPOINT = "http://127.0.0.1:9/v1"
EXTRA = "pip install 'pytest-memeval[mem0]'"


def import_mem0() -> Any:
    """Import mem0 with telemetry off (an AdapterError if it is not installed, or was already
    imported with telemetry on)."""
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is imported
        # mem0 creates MEM0_DIR (default ~/.mem0) on import: keep it out of the user's home
        os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="memeval-mem0-home-"))
    try:
        mem0 = importlib.import_module("mem0")
        telemetry = importlib.import_module("mem0.memory.telemetry")
    except ImportError as exc:
        raise AdapterError(f"memory system 'mem0' needs mem0ai: {EXTRA} ({exc})") from None
    if telemetry.MEM0_TELEMETRY:
        raise AdapterError(
            "memory system 'mem0': mem0 was imported with telemetry on: set "
            "MEM0_TELEMETRY=False before it is imported"
        )
    return mem0


def _flag(text: str) -> bool:
    return text.strip() not in ("0", "false", "False", "no", "")


def _date_text(session: Session) -> str:
    if session.date is not None:
        return session.date.strftime("%d %B %Y, %H:%M")
    return session.date_raw


def turn_message(session: Session, turn: Turn) -> dict[str, str]:
    """One mem0 message: the speaker and the session date go into the text, since LoCoMo's two
    speakers are both people (mem0's roles are user/assistant) and mem0 OSS has no timestamp
    parameter (its extraction prompt otherwise sees today's date)."""
    date = _date_text(session)
    prefix = f"[{date}] " if date else ""
    return {"role": "user", "content": f"{prefix}{turn.speaker}: {turn.text}"}


def _local_model_path() -> str:
    from .._embedding import model_path

    try:
        return str(model_path())
    except AdapterError as exc:
        raise AdapterError(f"memory system 'mem0': {exc} (or: {EXTRA})") from None


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar on stderr when the model is opened."""
    # a missing transformers is reported by mem0's import of sentence-transformers
    with contextlib.suppress(ImportError):
        importlib.import_module("transformers.utils.logging").disable_progress_bar()


@dataclass(frozen=True)
class Mem0Settings:
    """How mem0 is configured (``repr`` never shows the key). :meth:`from_env` reads the
    environment variables listed in README.md."""

    #: the OpenAI-compatible endpoint's key (None: no endpoint; raw turns, local embeddings only)
    api_key: str | None = field(default=None, repr=False)
    base_url: str = DEFAULT_BASE_URL
    #: mem0's fact extraction (an LLM call per ``add``); False stores the turns themselves
    infer: bool = False
    llm_model: str = "gpt-4o-mini"
    #: an embedding model on the endpoint; None: the bundled all-MiniLM-L6-v2, locally
    embedding_model: str | None = None
    embedding_dims: int = LOCAL_DIMS
    #: turns per ``add`` call when extracting (raw mode adds one turn per call)
    turns_per_add: int = 2

    def __post_init__(self) -> None:
        if self.turns_per_add < 1:
            raise AdapterError("memory system 'mem0': MEMEVAL_MEM0_TURNS_PER_ADD must be >= 1")
        if (self.infer or self.embedding_model) and self.api_key is None:
            needs = "fact extraction (MEMEVAL_MEM0_INFER=1)" if self.infer else "remote embeddings"
            raise AdapterError(
                f"memory system 'mem0': {needs} needs an OpenAI-compatible endpoint: set "
                "OPENAI_API_KEY (and OPENAI_BASE_URL); MEMEVAL_MEM0_INFER=0 stores raw turns "
                "with no LLM"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Mem0Settings:
        env = os.environ if environ is None else environ
        if env.get("OPENROUTER_API_KEY"):
            # mem0's openai LLM silently switches to OpenRouter when this variable is set
            raise AdapterError(
                "memory system 'mem0': OPENROUTER_API_KEY is set: mem0 would send its LLM calls "
                "to OpenRouter instead of the configured endpoint. Unset it for this run."
            )

        def get(name: str) -> str:
            return (env.get(name) or "").strip()

        api_key = get("OPENAI_API_KEY") or None
        infer_text = get("MEMEVAL_MEM0_INFER")
        embedding_model = get("MEMEVAL_MEM0_EMBEDDER") or None
        try:
            dims = int(get("MEMEVAL_MEM0_DIMS") or (1536 if embedding_model else LOCAL_DIMS))
            turns = int(get("MEMEVAL_MEM0_TURNS_PER_ADD") or 2)
        except ValueError as exc:
            raise AdapterError(f"memory system 'mem0': {exc}") from None
        return cls(
            api_key=api_key,
            base_url=get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            infer=_flag(infer_text) if infer_text else api_key is not None,
            llm_model=get("MEMEVAL_MEM0_LLM") or "gpt-4o-mini",
            embedding_model=embedding_model,
            embedding_dims=dims if embedding_model else LOCAL_DIMS,
            turns_per_add=turns,
        )


def mem0_config(settings: Mem0Settings) -> dict[str, Any]:
    """The configuration for ``mem0.Memory.from_config``, without the in-memory Qdrant client
    (added at construction). It holds the API key: never print it."""
    key = settings.api_key or "no-endpoint-configured"
    url = settings.base_url if settings.api_key else NO_ENDPOINT
    embedder: dict[str, Any]
    if settings.embedding_model is None:
        embedder = {
            "provider": "huggingface",
            "config": {
                "model": _local_model_path(),
                "embedding_dims": LOCAL_DIMS,
                # opened from the installed package's folder, never from a hub
                "model_kwargs": {"device": "cpu", "local_files_only": True},
            },
        }
    else:
        embedder = {
            "provider": "openai",
            "config": {
                "model": settings.embedding_model,
                "api_key": key,
                "openai_base_url": url,
                "embedding_dims": settings.embedding_dims,
            },
        }
    return {
        "llm": {
            "provider": "openai",
            "config": {
                "model": settings.llm_model,
                "api_key": key,
                "openai_base_url": url,
                "temperature": 0.0,
            },
        },
        "embedder": embedder,
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "memeval",
                "embedding_model_dims": settings.embedding_dims,
            },
        },
        # mem0's history of memory changes, in SQLite: in memory (on disk, a commit per change
        # made a raw ingest of 500 turns take 2 minutes instead of 1, mostly in fsync)
        "history_db_path": ":memory:",
    }


class Mem0System:
    """mem0 OSS through ``mem0.Memory.from_config`` (settings: :class:`Mem0Settings`, by default
    from the environment)."""

    name = "mem0"
    #: mem0's Memory and its Qdrant client are not documented as thread-safe: searched one at a time
    thread_safe = False

    def __init__(
        self, settings: Mem0Settings | None = None, *, environ: Mapping[str, str] | None = None
    ) -> None:
        self.settings = settings or Mem0Settings.from_env(environ)
        #: how many ``Memory.add`` calls this instance made
        self.add_calls = 0
        self._user: str | None = None
        self._conversation_id = ""
        self._known: frozenset[str] = frozenset()
        mem0 = import_mem0()
        try:
            qdrant = importlib.import_module("qdrant_client")
        except ImportError as exc:
            raise AdapterError(
                f"memory system 'mem0' needs qdrant-client: {EXTRA} ({exc})"
            ) from None
        config = mem0_config(self.settings)
        config["vector_store"]["config"]["client"] = qdrant.QdrantClient(location=":memory:")
        if self.settings.embedding_model is None:
            _quiet_transformers()
        try:
            with warnings.catch_warnings():
                # mem0 asks the local Qdrant for payload indexes, which it says it ignores
                warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
                self.memory: Any = mem0.Memory.from_config(config)
        except ImportError as exc:  # the huggingface embedder imports sentence-transformers
            raise AdapterError(f"memory system 'mem0': {exc} ({EXTRA})") from None

    @property
    def deterministic(self) -> bool:
        """Raw turns and a local embedder give the same memories twice; an LLM's extraction may
        not."""
        return not self.settings.infer

    # -- the MemorySystem protocol ----------------------------------------------------------
    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        self._user = user = store_name(conversation.id)  # mem0 refuses whitespace in a user_id
        self._conversation_id = conversation.id
        known: set[str] = set()
        for session in conversation.sessions_by_date():
            known.add(session.id)
            turns = list(session.turns)
            known.update(t.id for t in turns)
            step = self.settings.turns_per_add if self.settings.infer else 1
            for start in range(0, len(turns), step):
                chunk = turns[start : start + step]
                self.memory.add(
                    [turn_message(session, t) for t in chunk],
                    user_id=user,
                    metadata={
                        "session_id": session.id,
                        "session_date": session.date.isoformat() if session.date else "",
                        "turn_ids": ",".join(t.id for t in chunk),
                    },
                    infer=self.settings.infer,
                )
                self.add_calls += 1
        self._known = frozenset(known)

    def _memory(self, item: Mapping[str, Any]) -> Memory:
        meta = item.get("metadata") or {}
        turn_ids = [t for t in str(meta.get("turn_ids", "")).split(",") if t]
        date = meta.get("session_date") or None
        score = item.get("score")
        return Memory(
            text=str(item.get("memory", "")),
            id=str(item.get("id")),
            date=datetime.fromisoformat(date) if date else None,
            score=float(score) if score is not None else None,
            source_ids=source_ids([*turn_ids, meta.get("session_id")], self._known),
        )

    def search(self, question: Question, k: int) -> list[Memory]:
        if k <= 0 or self._user is None or not question.question.strip():
            return []  # mem0 refuses an empty or whitespace-only query (ValueError)
        found = self.memory.search(question.question, filters={"user_id": self._user}, top_k=k)
        return cut_top_k([self._memory(item) for item in found.get("results", [])], k)

    def dump(self, conversation_id: str) -> list[Memory]:
        """Every memory mem0 keeps for this conversation (``get_all``); ``[]`` for another
        conversation or after ``reset()``."""
        if self._user is None or conversation_id != self._conversation_id:
            return []
        found = self.memory.get_all(filters={"user_id": self._user}, top_k=1_000_000)
        return [self._memory(item) for item in found.get("results", [])]

    def reset(self) -> None:
        """Delete this conversation's memories from mem0 (the store stays open)."""
        user, self._user = self._user, None
        self._conversation_id = ""
        self._known = frozenset()
        if user is not None:
            self.memory.delete_all(user_id=user)

    def close(self) -> None:
        """The same as ``reset()`` (everything else is in memory, freed with the instance)."""
        self.reset()
