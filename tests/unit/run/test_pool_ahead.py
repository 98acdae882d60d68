"""``SystemPool.get_ahead``: the pipeline's look-ahead ingests the next conversation early only
when that cannot disturb the current one, and ``release`` keeps what it ingested."""

from __future__ import annotations

from pytest_memeval.records import Conversation, Question
from pytest_memeval.run._question import SystemPool


class _System:
    def __init__(self) -> None:
        self.ingested: list[str] = []
        self.resets = 0

    def ingest(self, conversation: Conversation) -> None:
        self.ingested.append(conversation.id)

    def reset(self) -> None:
        self.resets += 1

    def search(self, question: Question, k: int) -> list[str]:
        return []


def _conv(name: str) -> Conversation:
    return Conversation(name, ())


def test_a_factory_is_ingested_ahead_and_kept_until_the_run_reaches_it() -> None:
    pool = SystemPool()
    made: list[_System] = []

    def factory() -> _System:
        made.append(_System())
        return made[-1]

    current = pool.get("s", lambda: _conv("c1"), "b/c1", lambda: factory)
    ahead = pool.get_ahead("s", lambda: _conv("c2"), "b/c2", lambda: factory)
    assert ahead is not None and ahead.system is not current.system
    assert [m.ingested for m in made] == [["c1"], ["c2"]]
    pool.release(keep_conversation="b/c1")  # between two questions of c1: c2 stays
    assert set(pool.live) == {("s", "b/c1"), ("s", "b/c2")}
    # the run reaches c2: the very instance ingested ahead, no second ingest
    assert pool.get("s", lambda: _conv("c2"), "b/c2", lambda: factory) is ahead
    pool.release(keep_conversation="b/c2")
    assert set(pool.live) == {("s", "b/c2")} and pool.ahead == set()
    assert pool.ingests == {"s": 2}


def test_one_object_for_every_conversation_is_never_ingested_ahead() -> None:
    pool = SystemPool()
    shared = _System()
    pool.get("s", lambda: _conv("c1"), "b/c1", lambda: shared)
    asked: list[int] = []

    def obtain() -> _System:
        asked.append(1)
        return shared

    assert pool.get_ahead("s", lambda: _conv("c2"), "b/c2", obtain) is None
    assert pool.get_ahead("s", lambda: _conv("c3"), "b/c3", obtain) is None
    # not reset under c1's searches, not asked again
    assert shared.ingested == ["c1"] and shared.resets == 0 and asked == [1]


def test_a_failed_ingest_ahead_is_kept_for_its_questions() -> None:
    pool = SystemPool()

    class _Broken(_System):
        def ingest(self, conversation: Conversation) -> None:
            raise RuntimeError("index down")

    pool.get("s", lambda: _conv("c1"), "b/c1", lambda: _System)
    try:
        pool.get_ahead("s", lambda: _conv("c2"), "b/c2", lambda: _Broken)
    except RuntimeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("the ingest ahead did not raise")
    pool.release(keep_conversation="b/c1")
    assert pool.get_ahead("s", lambda: _conv("c2"), "b/c2", lambda: _Broken) is None
    try:
        pool.get("s", lambda: _conv("c2"), "b/c2", lambda: _System)
    except RuntimeError as exc:
        assert str(exc) == "index down"  # the same failure, no second ingest
    else:  # pragma: no cover
        raise AssertionError("the failure was not kept")


def test_only_an_exact_true_thread_safe_declaration_counts() -> None:
    from pytest_memeval.run._question import is_thread_safe
    from pytest_memeval.systems import (
        BM25System,
        EmbeddingSystem,
        FullContextSystem,
        NoMemorySystem,
        OracleSystem,
        ReplaySystem,
    )

    for cls in (BM25System, FullContextSystem, NoMemorySystem, OracleSystem, ReplaySystem):
        assert is_thread_safe(cls) and cls.thread_safe is True
    assert not is_thread_safe(EmbeddingSystem) and not is_thread_safe(_System())

    class Truthy(_System):
        thread_safe = "yes"

    assert not is_thread_safe(Truthy())
