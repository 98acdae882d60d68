"""Pytest glue: the collection tree above the built-in items (split from ``items.py``).

``memeval/<benchmark>/<conversation>/<system>``: three virtual folders (``pytest.Directory``
collectors, nothing on disk) above the questions; see ``items.py`` for why the system is a folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._items import MemevalItem, path_component
from ._stash import STATE_KEY

if TYPE_CHECKING:
    from ..records import Question
    from ..run import SystemRef

__all__ = ["BenchmarkNode", "ConversationNode", "SystemNode", "group_by_conversation"]


class BenchmarkNode(pytest.Directory):
    """``memeval/<benchmark>``: not a folder on disk; its path only gives the node id its form.

    The plugin adds these nodes to the session's own collect report (``pytest_make_collect_report``),
    so pytest collects them like any directory: ``collected N items``, ``--collect-only``,
    ``pytest_itemcollected``, ``-k``/``-m``/``--deselect``/``--lf`` all see every question.
    """

    def __init__(self, *, benchmark: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        state = self.config.stash[STATE_KEY]
        questions = state.selected.get(self.benchmark, [])
        return [
            ConversationNode.from_parent(
                self,
                path=self.path / conv_id,
                benchmark=self.benchmark,
                conversation_id=conv_id,
                questions=conv_questions,
            )
            for conv_id, conv_questions in group_by_conversation(questions)
        ]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid

    @classmethod
    def for_benchmark(cls, session: pytest.Session, benchmark: str) -> BenchmarkNode:
        path = session.config.rootpath / "memeval" / benchmark
        node: BenchmarkNode = cls.from_parent(session, path=path, benchmark=benchmark)
        return node


class ConversationNode(pytest.Directory):
    """``memeval/<benchmark>/<conversation>``: the xdist scope unit (one worker per conversation);
    one child per memory system, in ``--memsys`` order."""

    def __init__(
        self,
        *,
        benchmark: str,
        conversation_id: str,
        questions: list[Question],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.conversation_id = conversation_id
        self.questions = questions

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        state = self.config.stash[STATE_KEY]
        assert state.systems is not None
        return [
            SystemNode.from_parent(
                self,
                path=self.path / path_component(ref.label),
                benchmark=self.benchmark,
                questions=self.questions,
                system=ref,
            )
            for ref in state.systems
        ]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid


class SystemNode(pytest.Directory):
    """``memeval/<benchmark>/<conversation>/<system>``: one memory system's questions of one
    conversation, one item each (``...::<question_id>``)."""

    def __init__(
        self,
        *,
        benchmark: str,
        questions: list[Question],
        system: SystemRef,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.questions = questions
        self.system = system

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        start = time.perf_counter()
        items: list[pytest.Item | pytest.Collector] = []
        for q in self.questions:
            # `Function.from_parent` is untyped before pytest 8.1: called through Any
            make: Any = MemevalItem.from_parent
            item: MemevalItem = make(
                self, name=q.id, benchmark=self.benchmark, question=q, system=self.system
            )
            item.add_marker(getattr(pytest.mark, q.category))
            item.add_marker(pytest.mark.memeval)
            items.append(item)
        self.config.stash[STATE_KEY].collect_seconds += time.perf_counter() - start
        return items

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid


def group_by_conversation(questions: list[Question]) -> Iterator[tuple[str, list[Question]]]:
    groups: dict[str, list[Question]] = {}
    for q in questions:
        groups.setdefault(q.conversation_id, []).append(q)
    yield from groups.items()
