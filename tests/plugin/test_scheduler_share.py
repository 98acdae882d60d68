"""The conversation scheduler's look-ahead (issue 36): with an LLM window, each worker is sent
items ahead of the one it runs, never more than its fair share of the items not yet started, so
the workers of a LongMemEval-shaped run (one question per conversation) finish together."""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_memeval.plugin import ConversationScheduling


class FakeConfig:
    stash: ClassVar[dict[Any, Any]] = {}


class FakeNode:
    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(items: int, ahead: int) -> tuple[ConversationScheduling, list[FakeNode], list[str]]:
    ids = [f"memeval/lme/c{i}/bm25::q{i}" for i in range(items)]  # one question per conversation
    sched = ConversationScheduling(
        FakeConfig(),  # type: ignore[arg-type]
        log=lambda *a: None,
        scope=lambda nodeid: nodeid.split("::")[0],
        numnodes=2,
    )
    sched.ahead = ahead  # what an LLM window of 16 asks for (2 x 16)
    nodes = [FakeNode("gw0"), FakeNode("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    return sched, nodes, ids


def test_two_workers_get_even_shares_of_a_one_question_per_conversation_run() -> None:
    _, (a, b), _ = _scheduler(64, ahead=32)
    assert abs(len(a.sent) - len(b.sent)) <= 2, (len(a.sent), len(b.sent))
    assert len(a.sent) + len(b.sent) == 64
    assert not set(a.sent) & set(b.sent)


def test_the_last_items_are_shared_as_workers_complete() -> None:
    sched, (a, b), _ = _scheduler(200, ahead=32)
    assert len(a.sent) == len(b.sent) == 33  # one unit each, then up to the look-ahead
    done_a = 0
    while sched.workqueue:  # only gw0 completes: it is refilled, gw1 keeps what it holds
        sched.mark_test_complete(a, a.sent[done_a])  # type: ignore[arg-type]
        done_a += 1
    held_a = len(a.sent) - done_a
    assert held_a <= 33 and len(b.sent) == 33


def test_without_a_window_a_worker_holds_three_items() -> None:
    _, (a, b), _ = _scheduler(20, ahead=2)
    assert len(a.sent) == len(b.sent) == 3
