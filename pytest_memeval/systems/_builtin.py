"""Built-in memory systems: ``full-context``, ``bm25``, ``no-memory`` and ``replay:PATH``.

Each built-in is a class whose constructor takes no required argument, so the class itself is the
*factory* (a zero-argument callable returning a fresh MemorySystem) that the plugin calls once per
conversation. ``ingest`` replaces whatever an instance held before (one instance, one conversation).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._files import FileTooLarge, NotAFile, read_bounded
from ..errors import AdapterError
from ..records import Conversation, Memory, Question
from ._base import MemorySystem
from ._memories import conversation_memories, turn_memory, turn_text
from ._oracle import OracleSystem
from ._text import content_tokens

__all__ = [
    "BUILTIN_SYSTEMS",
    "REPLAY_MAX_BYTES",
    "REPLAY_PREFIX",
    "BM25System",
    "FullContextSystem",
    "NoMemorySystem",
    "OracleSystem",
    "ReplaySystem",
    "conversation_memories",
    "load_replay",
    "replay_factories",
    "turn_memory",
    "turn_text",
]

REPLAY_PREFIX = "replay:"
#: replay files larger than this are refused (they are answer maps, not datasets)
REPLAY_MAX_BYTES = 256 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# full-context / no-memory


class FullContextSystem:
    """Returns every turn of the conversation, in date order, whatever ``k`` is."""

    name = "full-context"
    #: every turn is the point: --memeval-top-k does not cut its list
    ignores_top_k = True
    #: ``search`` only reads what ``ingest`` built: the pipeline may search concurrently
    thread_safe = True

    def __init__(self) -> None:
        self._memories: tuple[Memory, ...] = ()
        self._conversation_id = ""

    def ingest(self, conversation: Conversation) -> None:
        self._memories = tuple(conversation_memories(conversation))
        self._conversation_id = conversation.id

    def search(self, question: Question, k: int) -> list[Memory]:
        return list(self._memories)

    def dump(self, conversation_id: str) -> list[Memory]:
        """What was stored for ``conversation_id`` (every ingested turn; ``[]`` for another id)."""
        return list(self._memories) if conversation_id == self._conversation_id else []


class NoMemorySystem:
    """Remembers nothing: ``search`` always returns ``[]`` (a floor for every benchmark)."""

    name = "no-memory"
    #: nothing is retrieved, so no top-k can bypass retrieval (no top-k warning)
    ignores_top_k = True
    #: no state at all
    thread_safe = True

    def ingest(self, conversation: Conversation) -> None:
        return None

    def search(self, question: Question, k: int) -> list[Memory]:
        return []

    def dump(self, conversation_id: str) -> list[Memory]:
        """Nothing is stored."""
        return []


# --------------------------------------------------------------------------------------------
# bm25


class BM25System:
    """Lexical retrieval over turns with the ``bm25s`` library (Lucene BM25, k1=1.5, b=0.75).

    One document per turn (text per :func:`turn_text`). Tokenisation is our own
    (:func:`pytest_memeval.systems._text.content_tokens`: lower-case words, a small English stopword
    list, a light suffix stemmer; nothing downloaded), fed to bm25s as token ids, so bm25s never
    tokenises, downloads, logs or shows progress.

    ``search(question, k)`` returns at most ``k`` turns with a positive score, best first, with
    ``Memory.score`` set; equal scores keep turn order (date order). Documented edge cases: an empty
    conversation, ``k <= 0``, or a question none of whose tokens occurs in the conversation returns
    ``[]`` (nothing matched, so nothing is retrieved).
    """

    name = "bm25"
    #: one memory per turn: only a top-k at least the turn count returns the whole history
    retrieves = "turns"
    #: ``search`` only reads the index and vocabulary ``ingest`` built (bm25s' scoring allocates
    #: its own arrays per query): the pipeline may search concurrently
    thread_safe = True

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._memories: tuple[Memory, ...] = ()
        self._conversation_id = ""
        self._vocab: dict[str, int] = {}
        self._index: Any = None

    def ingest(self, conversation: Conversation) -> None:
        memories = conversation_memories(conversation)
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        for memory in memories:
            ids = []
            for token in content_tokens(memory.text):
                tid = vocab.get(token)
                if tid is None:
                    tid = vocab[token] = len(vocab)
                ids.append(tid)
            corpus_ids.append(ids)
        self._memories = tuple(memories)
        self._conversation_id = conversation.id
        self._vocab = vocab
        self._index = None
        if not vocab:
            return
        import bm25s  # lazy: keeps `import pytest_memeval` light

        index = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        index.index((corpus_ids, dict(vocab)), create_empty_token=False, show_progress=False)
        self._index = index

    def _raw_scores(self, question: Question) -> Any:
        """bm25s' score array over the ingested turns; None when no query word is indexed."""
        query = [self._vocab[t] for t in content_tokens(question.question) if t in self._vocab]
        if self._index is None or not query:
            return None
        return self._index.get_scores_from_ids(query)

    def scores(self, question: Question) -> list[float]:
        """The BM25 score of every ingested turn (all zeros when nothing matches)."""
        raw = self._raw_scores(question)
        if raw is None:
            return [0.0] * len(self._memories)
        return [float(s) for s in raw]

    def search(self, question: Question, k: int) -> list[Memory]:
        scores = self._raw_scores(question) if k > 0 else None
        if scores is None:
            return []
        import numpy as np

        order = np.argsort(-scores, kind="stable")[:k]
        out: list[Memory] = []
        for i in order.tolist():
            score = float(scores[i])
            if score <= 0.0:
                break
            out.append(replace(self._memories[i], score=score))
        return out

    def dump(self, conversation_id: str) -> list[Memory]:
        """What was stored for ``conversation_id`` (every ingested turn; ``[]`` for another id)."""
        return list(self._memories) if conversation_id == self._conversation_id else []


# --------------------------------------------------------------------------------------------
# replay


def _answer_map(path: Path, where: str, data: Mapping[str, Any]) -> dict[str, str]:
    answers: dict[str, str] = {}
    for key, value in data.items():
        if key.startswith("_"):
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise AdapterError(
                f"replay file {path}: {where}key {key!r} must map to a string or a number, "
                f"got {type(value).__name__}"
            )
        answers[key] = str(value)
    return answers


def _report_runs(path: Path, runs: object) -> dict[str, dict[str, str]]:
    """A pytest-memeval JSON report: one system per run, ``id -> prediction``."""
    if not isinstance(runs, list):
        raise AdapterError(f"replay file {path}: 'runs' must be a list")
    systems: dict[str, dict[str, str]] = {}
    for n, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("questions"), list):
            raise AdapterError(f"replay file {path}: runs[{n}] has no 'questions' list")
        answers = systems.setdefault(str(run.get("system", "replay")), {})
        for q in run["questions"]:
            if not isinstance(q, dict) or "id" not in q:
                raise AdapterError(f"replay file {path}: runs[{n}] has a question without 'id'")
            pred = q.get("prediction")
            if pred is None:
                continue  # errored item: nothing to replay
            if isinstance(pred, bool) or not isinstance(pred, str | int | float):
                raise AdapterError(
                    f"replay file {path}: runs[{n}] question {q['id']!r}: prediction must be a "
                    f"string or a number, got {type(pred).__name__}"
                )
            answers[str(q["id"])] = str(pred)
    return systems


def load_replay(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """Read a replay file into ``{system_name: {question_id: answer}}``.

    Accepted shapes (JSON only): the flat ``{question_id: answer}`` (returned under the key ``""``;
    the resolver names that system ``replay:PATH``), the nested
    ``{system_name: {question_id: answer}}`` (detected when every non-``_`` value is an object),
    and a pytest-memeval JSON report (``{"schema": "pytest-memeval/1", "runs": [...]}``; one system
    per run, answers = predictions). Keys starting with ``_`` are skipped at both levels. Answers
    must be strings or numbers (numbers are ``str()``-ed). Every problem is an AdapterError naming
    the file (and the key).
    """
    p = Path(path)
    try:
        raw = read_bounded(p, REPLAY_MAX_BYTES)
    except FileTooLarge:
        raise AdapterError(
            f"replay file {p}: larger than the {REPLAY_MAX_BYTES} byte limit"
        ) from None
    except NotAFile as exc:
        raise AdapterError(f"replay file {exc}; give a JSON file") from None
    except OSError as exc:
        raise AdapterError(f"replay file {p}: cannot read it ({exc.strerror or exc})") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise AdapterError(f"replay file {p}: not UTF-8 text ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise AdapterError(
            f"replay file {p}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError:
        raise AdapterError(f"replay file {p}: invalid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer literal over Python's digit limit
        problem = "a number has too many digits" if "digits" in str(exc) else str(exc)[:200]
        raise AdapterError(f"replay file {p}: invalid JSON ({problem})") from None
    if not isinstance(data, dict):
        raise AdapterError(
            f"replay file {p}: expected a JSON object {{question_id: answer}} or "
            f"{{system: {{question_id: answer}}}}, got {type(data).__name__}"
        )
    if isinstance(data.get("schema"), str) and str(data["schema"]).startswith("pytest-memeval/"):
        return _report_runs(p, data.get("runs"))
    values = [v for k, v in data.items() if not k.startswith("_")]
    if values and all(isinstance(v, dict) for v in values):
        return {
            key: _answer_map(p, f"system {key!r}: ", value)
            for key, value in data.items()
            if not key.startswith("_")
        }
    return {"": _answer_map(p, "", data)}


class MissingReplayAnswer(AdapterError):
    """The replay file has no answer for this question (the plugin skips such items)."""


class ReplaySystem:
    """Replays saved answers: ``answer(question)`` returns the stored answer for ``question.id``;
    ``search`` returns ``[]``. A question id missing from the file raises MissingReplayAnswer
    (an AdapterError naming the file and the id); the plugin reports such items as skipped, so a
    replay file may cover a subset of the questions."""

    #: ``answer`` only reads a read-only mapping: the pipeline may ask concurrently
    thread_safe = True

    def __init__(self, answers: Mapping[str, str], *, path: str = "", name: str = "replay") -> None:
        self._answers = answers
        self.path = path
        self.name = name

    def ingest(self, conversation: Conversation) -> None:
        return None

    def search(self, question: Question, k: int) -> list[Memory]:
        return []

    def answer(self, question: Question) -> str:
        try:
            return self._answers[question.id]
        except KeyError:
            label = f" (system {self.name!r})" if self.name and self.path else ""
            raise MissingReplayAnswer(
                f"replay file {self.path or '<memory>'}{label} has no answer for question id "
                f"{question.id!r}"
            ) from None


def replay_factories(spec: str) -> list[tuple[str, Callable[[], MemorySystem]]]:
    """``replay:PATH`` -> one (name, factory) per system in the file (see :func:`load_replay`).

    The flat form's system is named ``spec`` itself (``replay:PATH``); the nested and report forms
    name each system by its key. The file is read once; every factory shares the read-only map.
    """
    path = spec[len(REPLAY_PREFIX) :] if spec.startswith(REPLAY_PREFIX) else spec
    if not path:
        raise AdapterError("--memsys: 'replay:' needs a path, e.g. replay:answers.json")
    systems = load_replay(path)
    out: list[tuple[str, Callable[[], MemorySystem]]] = []
    for key, answers in systems.items():
        name = key or f"{REPLAY_PREFIX}{path}"
        frozen: Mapping[str, str] = MappingProxyType(answers)

        def factory(frozen: Mapping[str, str] = frozen, name: str = name) -> MemorySystem:
            return ReplaySystem(frozen, path=path, name=name)

        out.append((name, factory))
    return out


#: built-in name -> factory (each class is its own zero-argument factory)
def _embedding_system() -> MemorySystem:
    """``embedding``: dense retrieval (optional extra ``pytest-memeval[embedding]``)."""
    from ._embedding import EmbeddingSystem  # lazy: its heavy libraries load on first use

    return EmbeddingSystem()


BUILTIN_SYSTEMS: Mapping[str, Callable[[], MemorySystem]] = MappingProxyType(
    {
        "full-context": FullContextSystem,
        "bm25": BM25System,
        "embedding": _embedding_system,
        "no-memory": NoMemorySystem,
        "oracle": OracleSystem,
    }
)
