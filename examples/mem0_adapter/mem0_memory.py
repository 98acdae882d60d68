"""A pytest-memeval adapter for mem0 (the ``mem0ai`` package), on any OpenAI-compatible endpoint.

mem0 is configured with:

- ``llm``: provider ``openai`` (fact extraction: one chat completion per ``add`` call);
- ``embedder``: provider ``openai`` (``POST /v1/embeddings`` on the same endpoint);
- ``vector_store``: ``qdrant`` in local mode, in memory (no server, nothing on disk);
- ``history_db_path``: an SQLite file in a private temporary folder, removed by ``close()``.

Telemetry is switched off (``MEM0_TELEMETRY=False``) before mem0 is imported; if mem0 was already
imported with telemetry on, the adapter refuses to run.

Settings come from the constructor or, with :meth:`Mem0Memory.from_env`, from the environment:

==============================  ==========================  ====================================
variable                        default                     meaning
==============================  ==========================  ====================================
``OPENAI_BASE_URL``             ``https://api.openai.com/v1``  the OpenAI-compatible endpoint
``OPENAI_API_KEY``              (required)                  its key
``MEMEVAL_MEM0_LLM``            ``gpt-4o-mini``             chat model for fact extraction
``MEMEVAL_MEM0_EMBEDDER``       ``text-embedding-3-small``  embedding model
``MEMEVAL_MEM0_DIMS``           ``1536``                    embedding dimensions
``MEMEVAL_MEM0_INFER``          ``1``                       ``0``: store raw turns, no LLM calls
``MEMEVAL_MEM0_TURNS_PER_ADD``  ``2``                       turns sent to mem0 per ``add`` call
==============================  ==========================  ====================================
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pytest_memeval import Conversation, Memory, Question, Session, Turn

__all__ = ["Mem0Memory", "import_mem0"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def import_mem0() -> Any:
    """Import mem0 with telemetry off. Raises RuntimeError if it is not installed or was already
    imported with telemetry on."""
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is imported
    try:
        mem0 = importlib.import_module("mem0")
        telemetry = importlib.import_module("mem0.memory.telemetry")
    except ImportError as exc:
        raise RuntimeError(
            f"the mem0 adapter needs mem0ai: pip install pytest-memeval[mem0] ({exc})"
        ) from exc
    if telemetry.MEM0_TELEMETRY:
        raise RuntimeError(
            "mem0 was imported with telemetry on: set MEM0_TELEMETRY=False before it is imported"
        )
    return mem0


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


class Mem0Memory:
    """mem0 as a pytest-memeval MemorySystem: one mem0 ``user_id`` per conversation."""

    name = "mem0"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        llm_model: str = "gpt-4o-mini",
        embedding_model: str = "text-embedding-3-small",
        embedding_dims: int = 1536,
        infer: bool = True,
        turns_per_add: int = 2,
    ) -> None:
        if os.environ.get("OPENROUTER_API_KEY"):
            # mem0's openai LLM silently switches to OpenRouter when this variable is set
            raise RuntimeError(
                "OPENROUTER_API_KEY is set: mem0 would send its LLM calls to OpenRouter instead "
                f"of {base_url}. Unset it for this run."
            )
        if turns_per_add < 1:
            raise ValueError("turns_per_add must be >= 1")
        self.base_url = base_url
        self.llm_model = llm_model
        self.embedding_model = embedding_model
        self.embedding_dims = embedding_dims
        self.infer = infer
        self.turns_per_add = turns_per_add
        self.add_calls = 0
        self._api_key = api_key
        self._user: str | None = None
        self._workdir = tempfile.mkdtemp(prefix="memeval-mem0-")
        mem0 = import_mem0()
        qdrant = importlib.import_module("qdrant_client")
        config = self.config()
        config["vector_store"]["config"]["client"] = qdrant.QdrantClient(location=":memory:")
        self.memory: Any = mem0.Memory.from_config(config)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Mem0Memory:
        env = os.environ if environ is None else environ
        api_key = env.get("OPENAI_API_KEY")
        if not api_key:
            raise RuntimeError("the mem0 adapter needs OPENAI_API_KEY (and OPENAI_BASE_URL)")
        return cls(
            api_key=api_key,
            base_url=env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            llm_model=env.get("MEMEVAL_MEM0_LLM", "gpt-4o-mini"),
            embedding_model=env.get("MEMEVAL_MEM0_EMBEDDER", "text-embedding-3-small"),
            embedding_dims=int(env.get("MEMEVAL_MEM0_DIMS", "1536")),
            infer=env.get("MEMEVAL_MEM0_INFER", "1") not in ("0", "false", "False", ""),
            turns_per_add=int(env.get("MEMEVAL_MEM0_TURNS_PER_ADD", "2")),
        )

    def config(self) -> dict[str, Any]:
        """The mem0 configuration (without the in-memory Qdrant client added at construction)."""
        return {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": self.llm_model,
                    "api_key": self._api_key,
                    "openai_base_url": self.base_url,
                    "temperature": 0.0,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": self.embedding_model,
                    "api_key": self._api_key,
                    "openai_base_url": self.base_url,
                    "embedding_dims": self.embedding_dims,
                },
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memeval",
                    "embedding_model_dims": self.embedding_dims,
                },
            },
            "history_db_path": os.path.join(self._workdir, "history.db"),
        }

    # -- the MemorySystem protocol ----------------------------------------------------------
    def reset(self) -> None:
        if self._user is not None:
            self.memory.delete_all(user_id=self._user)
            self._user = None

    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        self._user = conversation.id
        for session in conversation.sessions_by_date():
            turns = list(session.turns)
            for start in range(0, len(turns), self.turns_per_add):
                chunk = turns[start : start + self.turns_per_add]
                self.memory.add(
                    [turn_message(session, t) for t in chunk],
                    user_id=conversation.id,
                    metadata={
                        "session_id": session.id,
                        "session_date": session.date.isoformat() if session.date else "",
                        "turn_ids": ",".join(t.id for t in chunk),
                    },
                    infer=self.infer,
                )
                self.add_calls += 1

    def search(self, question: Question, k: int) -> list[Memory]:
        if k <= 0 or self._user is None or not question.question.strip():
            return []  # mem0 refuses an empty or whitespace-only query (ValueError)
        found = self.memory.search(question.question, filters={"user_id": self._user}, top_k=k)
        out: list[Memory] = []
        for item in found.get("results", []):
            meta = item.get("metadata") or {}
            turn_ids = tuple(t for t in str(meta.get("turn_ids", "")).split(",") if t)
            session_id = str(meta.get("session_id", ""))
            date = meta.get("session_date") or None
            out.append(
                Memory(
                    text=str(item.get("memory", "")),
                    id=str(item.get("id")),
                    date=datetime.fromisoformat(date) if date else None,
                    score=item.get("score"),
                    source_ids=turn_ids + ((session_id,) if session_id else ()),
                )
            )
        return out

    def close(self) -> None:
        self.reset()
        shutil.rmtree(self._workdir, ignore_errors=True)
