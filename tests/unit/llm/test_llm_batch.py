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
from pytest_memeval.llm._batch import (
    BatchDeferred,
    BatchQueue,
    BatchResults,
    Polled,
    PollPolicy,
    QueuedRequest,
    read_queue,
    settle,
)
from pytest_memeval.llm._client import run_parallel

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
    import pytest_memeval.llm._batch as batch

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


# -- results read as a bounded stream, line by line -------------------------------------------


def _parse(row: object) -> tuple[str, Completion | str]:
    from pytest_memeval.llm._batch import _custom_id

    key = _custom_id(row)  # a _BadLine for a row that is not an object with a custom_id
    return key, _reply(key)


def test_results_lines_are_bounded_and_read_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than MAX_RESULT_LINE is named and skipped without being held whole; lines
    split across chunks are joined; past MAX_RESULT_BYTES the rest is not read, and the lines
    read before it are kept."""
    import pytest_memeval.llm._batch as batch

    monkeypatch.setattr(batch, "MAX_RESULT_LINE", 40)
    good = [json.dumps({"custom_id": f"{n:02d}"}).encode() for n in range(3)]
    long = b'{"custom_id": "99", "pad": "' + b"x" * 100 + b'"}'
    data = b"\n".join([good[0], long, b"", good[1], good[2]])
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]  # lines cut mid-way
    out = batch.BatchResults()
    batch._stream(out, "output file f", chunks, [1 << 20], _parse)
    assert sorted(out.replies) == ["00", "01", "02"]
    assert out.bad_lines == 1
    assert out.problems == ["output file f line 2: longer than 40 bytes; skipped"]

    monkeypatch.setattr(batch, "MAX_RESULT_BYTES", 30)
    out = batch.BatchResults()
    batch._stream(out, "output file f", [good[0] + b"\n", good[1] + b"\n"], [30], _parse)
    assert list(out.replies) == ["00"]
    assert out.problems == [
        "output file f: the batch's results are larger than 30 bytes; the rest is not read "
        "(the requests without a reply are sent again)"
    ]


def test_repeated_custom_ids_are_refused_and_problems_capped() -> None:
    out = BatchResults()
    for n in range(14):
        out.read("f", n + 1, b"[1]", _parse)  # not an object: 14 bad lines, 10 named
    line = json.dumps({"custom_id": "ab"}).encode()
    out.read("f", 15, line, _parse)
    out.read("f", 16, line, _parse)
    out.read("f", 17, line, _parse)
    assert out.bad_lines == 14 and out.duplicates == 1
    assert out.replies == {"ab": "its custom_id came back 3 times in the batch's results; refused"}
    assert out.closing_problems()[-1] == "... and 5 more"
    assert out.problems[0] == "f line 1: a JSON list, not an object; skipped"


def test_a_batch_past_the_wait_is_cancelled_and_sent_synchronously(tmp_path: Path) -> None:
    """Counted from the batch's recorded submission: a picked-up batch submitted long ago is
    given up at its first poll; its requests go through the synchronous retry."""
    items = _queue(tmp_path, 2)
    cache = LLMCache(tmp_path / "llm")
    api = FakeBatchAPI(tmp_path, polls=10**6)
    state = {
        "id": "batch_1",
        "provider": GROUP[0],
        "model": GROUP[1],
        "base_url": GROUP[2],
        "custom_ids": [q.key for q in items],
        "status": "submitted",
        "submitted_at": time.time() - 7200,
    }
    api.created.append([q.key for q in items])
    (tmp_path / "batch-batch_1.json").write_text(json.dumps(state), encoding="utf-8")

    def retry(q: QueuedRequest) -> Completion:
        cache.put(q.key, _reply(q.key))
        return _reply(q.key)

    outcome = settle(
        tmp_path, cache, lambda g: (api, retry), policy=PollPolicy(deadline=3600), sleep=pytest.fail
    )
    assert api.cancelled == ["batch_1"] and outcome.abandoned == ["batch_1"]
    assert outcome.retried == 2 and outcome.failed == {} and outcome.stored == 0
    assert outcome.lines == [
        "batch batch_1 still in_progress after 3600s (--memeval-llm-batch-wait): cancelled; "
        "its 2 requests are sent synchronously"
    ]
    assert all(cache.get(q.key) is not None for q in items)
    recorded = json.loads((tmp_path / "batch-batch_1.json").read_text(encoding="utf-8"))
    assert recorded["status"] == "abandoned"
    # a resume does not pick it up again
    assert settle(tmp_path, cache, lambda g: (api, retry)).resumed == []
