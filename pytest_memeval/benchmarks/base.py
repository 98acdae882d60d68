"""The benchmark protocol: raw files -> Conversation / Question records, plus per-benchmark rules."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..records import Conversation, Prediction, Question

__all__ = ["Benchmark", "CategoryInfo", "Dataset", "LoadRequest", "json_value_error"]


def json_value_error(exc: ValueError) -> str:
    """A ``json.loads`` ValueError that is not a syntax error (an integer literal over Python's
    digit limit, ...) in a few words for a DatasetError message."""
    text = str(exc)
    if "digits" in text:
        return "a number literal has too many digits"
    return " ".join(text.split())[:200]


@dataclass(frozen=True)
class CategoryInfo:
    """One category of a benchmark: its own id, the name used for markers and tables, the shared
    cross-benchmark category it maps onto, and a one-line description."""

    id: int | str
    name: str
    shared: str
    description: str = ""
    in_overall: bool = True  # LoCoMo: category 5 is outside `overall` (Mem0 protocol)


@dataclass(frozen=True)
class LoadRequest:
    """Where to find the benchmark's files. ``data_dir`` is the folder holding one sub-folder per
    benchmark (the layout of shared/data: ``DIR/locomo/locomo10.json``); when it is None the
    benchmark downloads its official files into ``cache_dir``."""

    data_dir: Path | None
    cache_dir: Path
    variant: str | None = None


@dataclass
class Dataset:
    """A loaded benchmark. Conversations may be loaded lazily (LongMemEval-S/M) through
    ``conversation_loader``; ``questions`` are always in memory, in file order."""

    benchmark: str
    questions: list[Question]
    files: list[Path]
    sha256: dict[str, str]
    variant: str | None = None
    conversations: dict[str, Conversation] = field(default_factory=dict)
    conversation_loader: Callable[[str], Conversation] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def conversation(self, conversation_id: str) -> Conversation:
        conv = self.conversations.get(conversation_id)
        if conv is not None:
            return conv
        if self.conversation_loader is None:
            raise KeyError(conversation_id)
        return self.conversation_loader(conversation_id)

    def conversation_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for q in self.questions:
            seen.setdefault(q.conversation_id, None)
        return list(seen)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)


@runtime_checkable
class Benchmark(Protocol):
    """What a benchmark module provides. Registered under ``name`` in the registry or through the
    entry-point group ``pytest_memeval.benchmarks`` (the entry point's object is a Benchmark, or a
    zero-argument callable returning one)."""

    name: str
    #: categories keyed by their id, in display order
    categories: Mapping[int | str, CategoryInfo]
    #: metric keys the offline scorer produces, in display order
    metrics: Sequence[str]
    #: the metric whose value decides CORRECT / WRONG without a judge
    pass_metric: str
    # Optional attributes, read with getattr by the plugin:
    #   round3_metrics: tuple[str, ...]  metrics rounded to 3 decimals per question before averaging
    #   default_threshold: float         pass threshold when --memeval-pass-threshold is not given

    def load(self, request: LoadRequest) -> Dataset:
        """Read (or download, then read) the files. Raises DatasetError naming file, record, field."""
        ...

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        """Offline metrics for one prediction (pure; no LLM)."""
        ...
