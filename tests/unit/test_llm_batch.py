"""``llm.batch`` without pytest glue: the queue file, and :func:`settle` against a fake batch API
(picking up a recorded batch instead of creating one, retry then report of failed requests,
the state file written before the first poll)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from pytest_memeval.errors import JudgeError
from pytest_memeval.llm import ChatMessage, Completion, LLMCache, Request
from pytest_memeval.llm.batch import (
    BatchDeferred,
    BatchResults,
    BatchQueue,
    Polled,
    PollPolicy,
    QueuedRequest,
    read_queue,
    settle,
)
from pytest_memeval.llm.client import run_parallel

GROUP = ("openai", "gpt-4o-mini", "http://127.0.0.1:1/v1")


def _queued(n: int) -> QueuedRequest:
    request = Request((ChatMessage("system", "judge"), ChatMessage("user", f"q{n}")), 0.0, 64, n)
    return QueuedRequest(f"{n:064x}", *GROUP, "OPENAI_API_KEY", request)


def _reply(key: str) -> Completion:
    return Completion(text=f"reply {key[-2:]}", input_tokens=3, output_tokens=2, cached=False)


class FakeBatchAPI:
    """Ends each batch after ``polls`` polls; ``fail`` custom ids come back errored."""

    def __init__(self, folder: Path, polls: int = 2, fail: frozenset[str] = frozenset()) -> None:
        self.folder = folder
        self.polls = polls
        self.fail = fail
        self.created: list[list[str]] = []
        self.polled: dict[str, int] = {}
        self.state_seen_at_first_poll: bool | None = None
        self.cancelled: list[str] = []

    def submit(self, requests: list[QueuedRequest]) -> str:
        self.created.append([q.key for q in requests])
        return f"batch_{len(self.created)}"

    def poll(self, batch_id: str) -> Polled:
        if batch_id not in self.polled:
            self.state_seen_at_first_poll = any(self.folder.glob("batch-*.json"))
        self.polled[batch_id] = self.polled.get(batch_id, 0) + 1
        ended = self.polled[batch_id] >= self.polls
        return Polled(ended, "ended" if ended else "in_progress")

    def results(self, batch_id: str) -> BatchResults:
        keys = self.created[int(batch_id.split("_")[1]) - 1] if self.created else []
        replies = {k: ("errored: boom" if k in self.fail else _reply(k)) for k in keys}
        return BatchResults(replies=dict(replies))

    def cancel(self, batch_id: str) -> None:
        self.cancelled.append(batch_id)


def _queue(folder: Path, n: int) -> list[QueuedRequest]:
    queue = BatchQueue(folder, "gw0")
    items = [_queued(i) for i in range(n)]
    for q in items:
        queue.add(q)
    queue.close()
    return items


def test_queued_request_round_trips_and_a_torn_tail_is_skipped(tmp_path: Path) -> None:
    items = _queue(tmp_path, 2)
    with open(tmp_path / "requests-gw0.jsonl", "ab") as fh:
        fh.write(b'{"key": "torn')  # the process died mid-write
    found, problems = read_queue(tmp_path)
    assert found == {q.key: q for q in items} and problems == []
    (tmp_path / "requests-gw1.jsonl").write_text('{"no": 1}\n', encoding="utf-8")
    _, problems = read_queue(tmp_path)
    assert problems == [
        f"{tmp_path / 'requests-gw1.jsonl'}: line 1 is not a queued request; skipped"
    ]


def test_settle_submits_one_batch_stores_replies_and_records_it_before_polling(
    tmp_path: Path,
) -> None:
    items = _queue(tmp_path, 3)
    cache = LLMCache(tmp_path / "llm")
    api = FakeBatchAPI(tmp_path, polls=3)
    sleeps: list[float] = []
    outcome = settle(
        tmp_path,
        cache,
        lambda group: (api, lambda q: _reply(q.key)) if group == GROUP else None,
        policy=PollPolicy(first=1.0, cap=1.5),
        sleep=sleeps.append,
    )
    assert api.created == [[q.key for q in items]] and outcome.submitted == ["batch_1"]
    assert api.state_seen_at_first_poll is True
    assert outcome.stored == 3 and outcome.failed == {}
    assert [cache.get(q.key).text for q in items] == [_reply(q.key).text for q in items]  # type: ignore[union-attr]
    assert (
        len(sleeps) == 2 and 0.8 <= sleeps[0] <= 1.2 and sleeps[1] <= 1.5 * 1.2
    )  # backoff, capped
    state = json.loads(next(tmp_path.glob("batch-*.json")).read_text(encoding="utf-8"))
    assert state["status"] == "ended" and state["custom_ids"] == [q.key for q in items]
    # settled: a second settle (a resume) has nothing to send
    again = FakeBatchAPI(tmp_path)
    assert settle(tmp_path, cache, lambda g: (again, lambda q: _reply(q.key))).submitted == []
    assert again.created == []


def test_settle_picks_up_a_recorded_batch_instead_of_creating_one(tmp_path: Path) -> None:
    items = _queue(tmp_path, 2)
    cache = LLMCache(tmp_path / "llm")
    api = FakeBatchAPI(tmp_path, polls=10**6)

    class Killed(Exception):
        pass

    def killed(seconds: float) -> None:
        raise Killed  # the process dies while it polls

    with pytest.raises(Killed):
        settle(tmp_path, cache, lambda g: (api, lambda q: _reply(q.key)), sleep=killed)
    assert len(api.created) == 1
    api.polls = 1  # the provider finished meanwhile
    outcome = settle(tmp_path, cache, lambda g: (api, lambda q: _reply(q.key)))
    assert len(api.created) == 1  # not paid twice
    assert outcome.resumed == ["batch_1"] and outcome.submitted == [] and outcome.stored == 2
    assert all(cache.get(q.key) is not None for q in items)


def test_failed_requests_are_retried_once_then_reported(tmp_path: Path) -> None:
    items = _queue(tmp_path, 3)
    cache = LLMCache(tmp_path / "llm")
    api = FakeBatchAPI(tmp_path, polls=1, fail=frozenset({items[0].key, items[1].key}))
    retried: list[str] = []

    def retry(q: QueuedRequest) -> Completion:
        retried.append(q.key)
        if q.key == items[1].key:
            raise JudgeError("openai:gpt-4o-mini: 400 Bad Request")
        cache.put(q.key, _reply(q.key))
        return _reply(q.key)

    outcome = settle(tmp_path, cache, lambda g: (api, retry))
    assert retried == [items[0].key, items[1].key] and outcome.retried == 2
    assert outcome.failed == {
        items[1].key: "errored: boom; retried: openai:gpt-4o-mini: 400 Bad Request"
    }
    assert cache.get(items[0].key) is not None and cache.get(items[1].key) is None


def test_requests_without_a_client_are_reported_not_sent(tmp_path: Path) -> None:
    items = _queue(tmp_path, 1)
    outcome = settle(tmp_path, LLMCache(tmp_path / "llm"), lambda g: None)
    assert outcome.failed == {items[0].key: "no client for openai:gpt-4o-mini in this session"}


def test_a_large_queue_is_split_into_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_memeval.llm.batch as batch

    monkeypatch.setattr(batch, "MAX_BATCH", 2)
    items = _queue(tmp_path, 5)
    api = FakeBatchAPI(tmp_path, polls=1)
    outcome = settle(tmp_path, LLMCache(tmp_path / "llm"), lambda g: (api, lambda q: _reply(q.key)))
    assert [len(c) for c in api.created] == [2, 2, 1] and outcome.stored == 5
    assert sorted(k for c in api.created for k in c) == sorted(q.key for q in items)


@pytest.mark.parametrize("workers", [1, 2])
def test_deferred_calls_do_not_stop_the_others_of_a_parallel_judge(workers: int) -> None:
    """A multi-call judge (graded runs, BEAM rubric items) maps its calls with ``run_parallel``:
    a call queued for the batch must not cancel the others (each of them queues its own miss),
    and one BatchDeferred names every queued key, in item order."""
    called: list[int] = []
    lock = threading.Lock()

    def call(index: int) -> str:
        with lock:
            called.append(index)
        if index % 2 == 0:
            raise BatchDeferred("openai:m", f"key-{index}")
        time.sleep(0.01)  # the others are still running when the first deferral is seen
        return f"reply {index}"

    with pytest.raises(BatchDeferred) as info:
        run_parallel(call, list(range(6)), workers)
    assert sorted(called) == list(range(6))
    assert info.value.keys == ("key-0", "key-2", "key-4")
    assert run_parallel(lambda i: i * 2, [1, 2, 3], workers) == [2, 4, 6]

    def broken(index: int) -> str:
        if index == 1:
            raise JudgeError("endpoint down")
        raise BatchDeferred("openai:m", f"key-{index}")

    with pytest.raises(JudgeError, match="endpoint down"):  # a real error still wins
        run_parallel(broken, [0, 1, 2], workers)
