"""``--memeval-llm-batch`` end to end (docs/batch.md): judge calls sent through OpenAI's Batch API
and Anthropic's Message Batches on the loopback server (``tests/batch_server.py``) through the
real SDKs give the synchronous run's verdicts and cache keys (every call of a graded judge's runs
and of a BEAM rubric too); a batch survives a SIGKILL while it is polled (``--memeval-resume``
picks it up, never creates it twice); failed requests are retried once, then reported per
question; ``--memeval-reanswer`` sends its answers, then its judge calls, as two batches (one
scenario per xdist mode, module-scoped, asserted by several tests), priced at half.

CI time: the synchronous reference runs and reruns use no xdist; only the batch runs under test
run with ``-n 2`` in their xdist variant (a ``-n 2`` run pays for starting its workers)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_server import ANTHROPIC_CREATE, OPENAI_CANCEL, OPENAI_CREATE, BatchServer
from conftest import INNER_ADDOPTS, read_json
from llm_server import ANTHROPIC_PATH, OPENAI_PATH, judge_reply

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-n", "n2"])
#: both providers without xdist, one of them under -n 2 (the xdist path is provider-blind)
PROVIDER_MODES = pytest.mark.parametrize(
    ("mode", "model"),
    [
        ([], "openai:gpt-4o-mini"),
        ([], "anthropic:claude-haiku-4-5"),
        (["-n", "2"], "anthropic:claude-haiku-4-5"),
    ],
    ids=["openai-no-n", "anthropic-no-n", "anthropic-n2"],
)
JUDGED = 13  # the demo's 15 questions, category 5 not judged


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[BatchServer]:
    with BatchServer(reply=judge_reply) as srv:
        for key, value in srv.env("sk-batch-test").items():
            monkeypatch.setenv(key, value)
        yield srv


def _args(model: str, cache: Path, bench: str = "demo") -> list[str]:
    return [
        f"--memeval={bench}",
        "--memsys=bm25",
        f"--memeval-answerer={model}",
        f"--memeval-judge={model}",
        f"--memeval-cache-dir={cache}",
    ]


def _rows(report: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Each question's verdict: status, prediction, scores."""
    return {
        q["id"]: (q["status"], q["prediction"], q["scores"])
        for run in report["runs"]
        for q in run["questions"]
    }


def _keys(cache: Path) -> set[str]:
    with sqlite3.connect(cache / "llm" / "llm-cache.sqlite3") as conn:
        return {row[0] for row in conn.execute("SELECT key FROM completions")}


def _chat(model: str) -> str:
    return ANTHROPIC_PATH if model.startswith("anthropic") else OPENAI_PATH


def _create(model: str) -> str:
    return ANTHROPIC_CREATE if model.startswith("anthropic") else OPENAI_CREATE


@PROVIDER_MODES
def test_batch_run_gives_the_synchronous_verdicts_and_cache_keys(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str], model: str
) -> None:
    sync_cache, batch_cache = pytester.path / "sync", pytester.path / "batch"
    # the synchronous reference and the rerun without xdist (the batch run is the one under test;
    # a -n 2 run costs a worker start-up)
    sync = pytester.runpytest(*_args(model, sync_cache), "--memeval-json=sync.json")
    assert sync.ret == 0, sync.stdout.str()
    assert server.count(_chat(model)) == 15 + JUDGED
    server.reset()

    batch = pytester.runpytest(
        *_args(model, batch_cache), "--memeval-llm-batch", "--memeval-json=batch.json", *mode
    )
    assert batch.ret == 0, batch.stdout.str()
    # the answers are sent at once, every judge call in one batch
    assert server.count(_chat(model)) == 15
    assert server.count(_create(model)) == 1
    batch.stdout.fnmatch_lines(["*batch: 1 submitted, 0 picked up, 13 replies stored*"])
    # the batch's replies are counted as judge calls with the tokens the provider reported
    judge_line = re.compile(r"judge \d+ calls \d+ in / \d+ out tokens")
    tokens = judge_line.findall(batch.stdout.str())
    assert tokens == judge_line.findall(sync.stdout.str()) and tokens[0].startswith("judge 13 ")
    expected = _rows(read_json(pytester.path / "sync.json"))
    assert _rows(read_json(pytester.path / "batch.json")) == expected
    assert sum(1 for status, _, _ in expected.values() if status == "CORRECT") > 5
    assert _keys(batch_cache) == _keys(sync_cache)

    # a synchronous run afterwards is served from the cache: no request at all
    server.reset()
    again = pytester.runpytest(*_args(model, batch_cache), "--memeval-json=again.json")
    assert again.ret == 0, again.stdout.str()
    assert server.request_count == 0
    assert _rows(read_json(pytester.path / "again.json")) == expected


def test_batch_survives_a_sigkill_while_polled(
    pytester: pytest.Pytester, server: BatchServer
) -> None:
    """Without xdist; under -n 2 the re-answer scenario below is killed while its judge calls'
    batch is polled and resumed (the same pick-up), which covers the xdist path."""
    mode: list[str] = []
    model = "openai:gpt-4o-mini"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    cache = pytester.path / "cache"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *_args(model, cache),
        "--memeval-llm-batch",
        "-p",
        "no:cacheprovider",
        *(mode or ["-p", "no:xdist"]),
    ]
    server.hold.set()  # the batch stays in_progress: the run polls it until killed
    proc = subprocess.Popen(
        cmd,
        cwd=pytester.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and server.count("GET /v1/batches/{id}") < 1:
            time.sleep(0.02)
        assert server.count("GET /v1/batches/{id}") >= 1, "the run never polled its batch"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert server.count(OPENAI_CREATE) == 1
    states = list(cache.glob("runs/*/batch/batch-*.json"))
    assert len(states) == 1  # written before the first poll

    server.hold.clear()  # the provider finishes the batch while nobody is polling
    answered = server.count(OPENAI_PATH)
    done = subprocess.run(
        [*cmd, "--memeval-resume", "--memeval-json=r.json"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "batch: 0 submitted, 1 picked up, 13 replies stored" in done.stdout
    assert server.count(OPENAI_CREATE) == 1  # never paid twice
    assert server.count(OPENAI_PATH) == answered  # nothing judged synchronously either
    rows = _rows(read_json(pytester.path / "r.json"))
    assert len(rows) == 15
    judged = [scores for _, _, scores in rows.values() if scores.get("judge_mem0") is not None]
    assert len(judged) == JUDGED


@MODES
def test_failed_batch_requests_are_retried_once_then_reported_per_question(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str]
) -> None:
    model = "openai:gpt-4o-mini"

    def fault(index: int, custom_id: str) -> str | None:
        if index == 0:  # the synchronous retry of the errored request fails too (400)
            server.failure_rate, server.failure_statuses = 1.0, (400,)
        return "errored" if index in (0, 1) else None

    server.fault = fault
    result = pytester.runpytest(
        *_args(model, pytester.path / "cache"),
        "--memeval-llm-batch",
        "--memeval-json=r.json",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*batch: 1 submitted, 0 picked up, 11 replies stored, 2 retried, 2 failed*",
            "*batch: demo/bm25//*: UNSCORED: errored*injected errored; retried:*400*",
        ]
    )
    rows = _rows(read_json(pytester.path / "r.json"))
    unscored = [k for k, (status, _, _) in rows.items() if status == "UNSCORED"]
    assert len(unscored) == 2
    assert server.count(OPENAI_PATH) == 15 + 2  # the answers, then one retry per failure


# -- multi-call judges: every call of a graded judge's N runs and of a BEAM rubric is queued --


def _graded_or_beam_reply(
    messages: list[dict[str, str]], model: str, params: dict[str, Any]
) -> str:
    """``judge_reply``, plus a graded judge's 0-100 score and a BEAM rubric item's score (1 when
    the item's last word is in the response)."""
    text = "\n".join(m["content"] for m in messages)
    if "Rubric item: " in text:
        item = text.split("Rubric item: ", 1)[1].split("\n", 1)[0]
        response = text.split("Assistant's response: ", 1)[1].split("\n", 1)[0]
        return json.dumps({"score": int(item.split()[-1] in response), "reason": "checked"})
    if "Give a score from 0 to 100" in text:
        answer = text.split("Assistant's answer: ", 1)[1].lower()
        return json.dumps({"score": 90 if "beagle" in answer else 15, "explanation": "compared"})
    if "The user now asks" in text:  # BEAM's answer prompt
        return "You planted tomatoes in the garden."
    return judge_reply(messages, model, params)


def _beam_data(root: Path) -> None:
    """One BEAM 100K conversation, four questions of two rubric items each."""
    conv = root / "beam" / "100K" / "1"
    (conv / "probing_questions").mkdir(parents=True)
    chat = []
    for b, anchor in enumerate(("March-15-2024", "April-05-2024"), start=1):
        turns = []
        for i, text in enumerate(("I started the garden", "then I planted tomatoes")):
            turns.append(
                [
                    {
                        "role": "user",
                        "id": 4 * b + 2 * i,
                        "content": f"{text} in batch {b}",
                        "question_type": "main_question",
                        "index": f"{b},{i}",
                        **({"time_anchor": anchor} if not turns else {}),
                    },
                    {"role": "assistant", "id": 4 * b + 2 * i + 1, "content": "nice"},
                ]
            )
        chat.append({"batch_number": b, "turns": turns, "time_anchor": None})
    (conv / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    probing = {
        "information_extraction": [
            {
                "question": f"What did I plant {i}?",
                "answer": "tomatoes",
                "difficulty": "easy",
                "rubric": [f"mentions tomatoes {i} tomatoes", f"mentions peppers {i} peppers"],
                "source_chat_ids": [0, 2],
            }
            for i in range(2)
        ],
        "knowledge_update": [
            {
                "question": f"Where did I start {i}?",
                "answer": "the garden",
                "difficulty": "easy",
                "rubric": [f"says garden {i} garden", f"says balcony {i} balcony", "says in in"],
                "source_chat_ids": [0],
            }
            for i in range(2)
        ],
    }
    others = (
        "abstention contradiction_resolution event_ordering instruction_following "
        "multi_session_reasoning preference_following summarization temporal_reasoning"
    )
    probing.update({ability: [] for ability in others.split()})
    (conv / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(probing), encoding="utf-8"
    )


MULTI_CALL = pytest.mark.parametrize(
    ("judge", "mode"),
    [("graded", []), ("beam", ["-n", "2"])],
    ids=["graded3-no-n", "beam-rubric-n2"],
)


@MULTI_CALL
def test_multi_call_judges_queue_every_call(
    pytester: pytest.Pytester, server: BatchServer, judge: str, mode: list[str]
) -> None:
    """A graded judge's 3 runs and a BEAM question's rubric items are all queued at once: the
    batch holds every judge call (none is sent synchronously afterwards), with the synchronous
    run's cache keys, verdicts and scores."""
    server.reply = _graded_or_beam_reply
    model = "openai:gpt-4o-mini"
    bench = "demo"
    if judge == "graded":
        extra = ["--memeval-judge-style=graded", "--memeval-judge-runs=3", "--memeval-limit=2"]
        questions, calls = 4, 4 * 3  # 2 conversations x 2 questions, 3 runs each
    else:
        _beam_data(pytester.path / "data")
        bench = "beam"
        extra = [
            "--memeval-variant=100K",
            f"--memeval-data={pytester.path / 'data'}",
        ]
        questions, calls = 4, 2 * 2 + 2 * 3

    def run(
        cache: str, *more: str, xdist: tuple[str, ...] = ()
    ) -> tuple[pytest.RunResult, dict[str, tuple[Any, ...]]]:
        out = f"{cache}-{len(more)}.json"
        args = [*_args(model, pytester.path / cache, bench), *extra, *more, f"--memeval-json={out}"]
        result = pytester.runpytest(*args, *xdist)
        assert result.ret == 0, result.stdout.str()
        return result, _rows(read_json(pytester.path / out))

    _, expected = run("sync")
    assert len(expected) == questions
    assert server.count(OPENAI_PATH) == questions + calls
    server.reset()
    # the references (sync, and the rerun below) without xdist: a -n 2 run starts workers
    batch, rows = run("batch", "--memeval-llm-batch", xdist=tuple(mode))
    assert server.count(OPENAI_PATH) == questions  # the answers only: every judge call batched
    assert server.count(OPENAI_CREATE) == 1
    batch.stdout.fnmatch_lines([f"*batch: 1 submitted, 0 picked up, {calls} replies stored*"])
    assert rows == expected
    assert _keys(pytester.path / "batch") == _keys(pytester.path / "sync")
    scored = [s for _, _, s in rows.values() if s.get("nugget", s.get("judge_graded"))]
    assert scored and all(status != "UNSCORED" for status, _, _ in rows.values())
    server.reset()
    run("batch")  # synchronous, from the batch's cache
    assert server.request_count == 0


@MODES
def test_a_failed_call_of_a_multi_call_judge_is_its_questions_and_never_sent_twice(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str]
) -> None:
    """The third run of each graded judgment errors in the batch and again when retried: the
    question is UNSCORED with that reason, and the call is not sent a third time by the judging
    from the cache (every queued call of the judge is the question's)."""
    cache = pytester.path / "cache"
    runs: dict[str, int] = {}

    def fault(index: int, custom_id: str) -> str | None:
        if not runs:
            for path in cache.glob("runs/*/batch/requests-*.jsonl"):
                for line in path.read_text(encoding="utf-8").splitlines():
                    row = json.loads(line)
                    runs[row["key"]] = row["request"]["run_index"]
        if runs[custom_id] != 2:
            return None
        server.failure_rate, server.failure_statuses = 1.0, (400,)  # the retry fails too
        return "errored"

    server.reply, server.fault = _graded_or_beam_reply, fault
    result = pytester.runpytest(
        *_args("openai:gpt-4o-mini", cache),
        "--memeval-judge-style=graded",
        "--memeval-judge-runs=3",
        "--memeval-limit=1",
        "--memeval-llm-batch",
        "--memeval-json=r.json",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*batch: 1 submitted, 0 picked up, 4 replies stored, 2 retried*"])
    rows = _rows(read_json(pytester.path / "r.json"))
    assert [status for status, _, _ in rows.values()] == ["UNSCORED", "UNSCORED"]
    assert (
        result.stdout.str().count(": UNSCORED: errored (errored): injected errored; retried") == 2
    )
    assert server.count(OPENAI_PATH) == 2 + 2  # the answers, one retry each: never a third send


# -- re-answers through the batch: the answers' batch, then the judge calls' batch -------------


PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}


def _cmd(args: list[str], mode: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        *args,
        "-p",
        "no:cacheprovider",
        *(mode or ["-p", "no:xdist"]),
    ]


@pytest.fixture(scope="module", params=[[], ["-n", "2"]], ids=["no-n", "n2"])
def reanswered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """One scenario, run once per mode (subprocesses; the tests below assert on its record): a
    first run stores its retrievals (extractive answers, no LLM); ``--memeval-reanswer`` with an
    LLM answerer and judge then runs synchronously, through the batch, synchronously again from
    the batch's cache, and through the batch killed while a batch is polled (no-n: the answers'
    batch, n2: the judge calls' batch) and resumed with ``--memeval-resume``."""
    mode: list[str] = request.param
    root = tmp_path_factory.mktemp("reanswer")
    model = "openai:gpt-4o-mini"
    llm = [f"--memeval-answerer={model}", f"--memeval-judge={model}"]
    record: dict[str, Any] = {"mode": mode}
    with BatchServer(reply=judge_reply) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        env.pop("MEMEVAL_DATA_DIR", None)
        env |= server.env("sk-batch-test") | {"PYTEST_ADDOPTS": INNER_ADDOPTS}

        def run(cache: str, *args: str, xdist: bool = False) -> subprocess.CompletedProcess[str]:
            """The references without xdist (a -n 2 run starts workers); the batch runs, the
            ones under test, in the scenario's mode."""
            base = ["--memeval=demo", "--memsys=bm25", "--memeval-limit=2"]
            cmd = _cmd([*base, f"--memeval-cache-dir={root / cache}", *args], mode if xdist else [])
            done = subprocess.run(
                cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, done.stdout + done.stderr
            return done

        run("sync")  # the stored retrievals (no LLM call)
        for copy in ("batch", "killed"):
            shutil.copytree(root / "sync", root / copy)
        assert server.request_count == 0
        (root / "prices.json").write_text(json.dumps(PRICES), encoding="utf-8")
        priced = [*llm, f"--memeval-prices={root / 'prices.json'}"]
        if not mode:  # the estimates (no LLM call): full price, then batch pricing
            for name, more in (("estimate", ()), ("batch_estimate", ("--memeval-llm-batch",))):
                done = run("batch", "--memeval-reanswer", *priced, "--memeval-estimate", *more)
                record[name] = next(
                    line for line in done.stdout.splitlines() if line.startswith("estimate: ")
                )
        run("sync", "--memeval-reanswer", *priced, "--memeval-json=sync.json")
        record["sync_chat"] = server.count(OPENAI_PATH)
        server.reset()
        batch = run(
            "batch",
            "--memeval-reanswer",
            *priced,
            "--memeval-llm-batch",
            "--memeval-json=b.json",
            xdist=True,
        )
        record["batch_stdout"] = batch.stdout
        record["batch_counts"] = server.counts
        server.reset()
        run("batch", "--memeval-reanswer", *llm, "--memeval-json=again.json")
        record["again_requests"] = server.request_count
        server.reset()

        # killed while its answers' batch (no-n) or its judge calls' batch (n2) is polled
        server.hold.set()
        ended = 1 if mode else 0  # batches of this run that end before the kill
        server.hold_after = len(server.batches) + ended
        polls = "GET /v1/batches/{id}"
        args = ["--memeval=demo", "--memsys=bm25", "--memeval-limit=2", *llm]
        cmd = _cmd([*args, f"--memeval-cache-dir={root / 'killed'}", "--memeval-llm-batch"], mode)
        proc = subprocess.Popen(
            [*cmd, "--memeval-reanswer"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.time() + 120
            while time.time() < deadline and server.count(OPENAI_CREATE) <= ended:
                time.sleep(0.02)
            seen = server.count(polls)
            while time.time() < deadline and server.count(polls) <= seen:
                time.sleep(0.02)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        record["killed_creates"] = server.count(OPENAI_CREATE)
        server.hold.clear()  # the provider finishes the batch while nobody polls
        resumed = run(
            "killed",
            *args[3:],
            "--memeval-llm-batch",
            "--memeval-resume",
            "--memeval-json=r.json",
            xdist=True,
        )
        record["resumed_stdout"] = resumed.stdout
        record["creates"] = server.count(OPENAI_CREATE)
        record["resumed_chat"] = server.count(OPENAI_PATH)
        for name in ("sync", "batch", "killed"):
            record[f"{name}_keys"] = _keys(root / name)
        for name in ("sync", "b", "again", "r"):
            record[name] = _rows(read_json(root / f"{name}.json"))
        for name in ("sync", "b"):
            extra = read_json(root / f"{name}.json")["extra"]
            record[f"{name}_cost"] = extra["cost_usd"]
            record[f"{name}_tokens"] = extra["tokens"]
        yield record


def test_reanswer_batch_gives_the_synchronous_answers_verdicts_and_cache_keys(
    reanswered: dict[str, Any],
) -> None:
    """--memeval-reanswer with --memeval-llm-batch: no answer or judge call is sent; a batch of
    the answers, then one of the judge calls on them; the synchronous re-answer's results and
    cache keys; a synchronous re-answer afterwards makes no request."""
    expected = reanswered["sync"]
    assert len(expected) == 4 and reanswered["sync_chat"] == 4 + 4
    assert sum(1 for status, _, _ in expected.values() if status == "CORRECT") >= 2
    counts = reanswered["batch_counts"]
    assert counts.get(OPENAI_PATH, 0) == 0
    assert counts[OPENAI_CREATE] == 2
    lines = [line for line in reanswered["batch_stdout"].splitlines() if "submitted" in line]
    assert [line.split("batch: ", 1)[1] for line in lines] == [
        "1 submitted, 0 picked up, 4 replies stored, 0 retried, 0 failed",
        "1 submitted, 0 picked up, 4 replies stored, 0 retried, 0 failed",
    ]
    assert reanswered["b"] == expected
    assert reanswered["batch_keys"] == reanswered["sync_keys"]
    assert reanswered["again_requests"] == 0
    assert reanswered["again"] == expected


def test_reanswer_batch_killed_while_polled_resumes_without_paying_twice(
    reanswered: dict[str, Any],
) -> None:
    """Killed while its answers' (no-n) or judge calls' (n2) batch is polled, the re-answer run
    is resumed with --memeval-resume: the batch is picked up, never created again, nothing is
    sent synchronously, and the results are the synchronous re-answer's."""
    held = 1 if reanswered["mode"] else 0  # batches that ended before the kill
    assert reanswered["killed_creates"] == held + 1
    assert reanswered["creates"] == 2  # the answers' and the judge calls' batch, once each
    assert reanswered["resumed_chat"] == 0
    assert "batch: 0 submitted, 1 picked up, 4 replies stored" in reanswered["resumed_stdout"]
    assert reanswered["r"] == reanswered["sync"]
    assert reanswered["killed_keys"] == reanswered["sync_keys"]


def _dollars(line: str) -> float:
    return float(re.search(r"\$(\d+\.\d+)", line).group(1))  # type: ignore[union-attr]


def test_batch_tokens_are_priced_at_half_in_the_summary_and_the_estimate(
    reanswered: dict[str, Any],
) -> None:
    """The batch's replies (every answer and judge call of a batch re-answer) cost half the
    synchronous price in the run's summary (same tokens); ``--memeval-estimate`` with
    ``--memeval-llm-batch`` prices them at half too and says so."""
    sync, batch = reanswered["sync_cost"], reanswered["b_cost"]
    for role in ("answerer", "judge"):
        usage = reanswered["sync_tokens"][role]["openai:gpt-4o-mini"]
        full = (usage["input_tokens"] * 0.15 + usage["output_tokens"] * 0.6) / 1e6
        assert full > 0 and sync["by_role"][role] == pytest.approx(full)
        assert batch["by_role"][role] == pytest.approx(full / 2)
        batched = reanswered["b_tokens"][role]["openai:gpt-4o-mini"]
        assert batched["batch_input_tokens"] == batched["input_tokens"] == usage["input_tokens"]
    assert batch["total"] == pytest.approx(sync["total"] / 2)
    if reanswered["mode"]:
        return  # the estimates run without xdist only
    full_line, batch_line = reanswered["estimate"], reanswered["batch_estimate"]
    assert "batch" not in full_line
    assert "(batch pricing for the answerer calls and judge calls: 50% of the price)" in batch_line
    assert full_line.split(", $")[0] == batch_line.split(", $")[0]  # same calls and tokens
    assert _dollars(batch_line) == pytest.approx(_dollars(full_line) / 2, abs=1e-4)


def test_a_reanswer_batch_needs_an_answerer_with_a_batch_api(
    pytester: pytest.Pytester, server: BatchServer
) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-reanswer",
        "--memeval-llm-batch",
        "--memeval-answerer=openai-compatible:local-model",
        f"--memeval-base-url={server.openai_base_url}",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--memeval-llm-batch with --memeval-reanswer: answerer "
            "'openai-compatible:local-model' has no batch API*"
        ]
    )


# -- results read line by line: a bad line, a reply without choices, a repeated custom_id ------


def _lines(lines: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(line).encode() for line in lines]


def _list_line(api: str, lines: list[dict[str, Any]]) -> list[bytes]:
    """``[1, 2, 3]`` among the good lines."""
    raw = _lines(lines)
    return [*raw[:6], b"[1, 2, 3]", *raw[6:]]


def _no_choices(api: str, lines: list[dict[str, Any]]) -> list[bytes]:
    """The first reply with ``choices: []``."""
    lines[0]["response"]["body"]["choices"] = []
    return _lines(lines)


BAD_OUTPUT = pytest.mark.parametrize(
    ("case", "rewrite", "stored", "retried", "named"),
    [
        ("list-line", _list_line, 13, 0, "line 7: a JSON list, not an object; skipped"),
        ("no-choices", _no_choices, 12, 1, "line 1: reply without choices; skipped; request "),
    ],
    ids=["list-line", "no-choices"],
)


@BAD_OUTPUT
@MODES
def test_one_bad_result_line_costs_only_its_request(
    pytester: pytest.Pytester,
    server: BatchServer,
    mode: list[str],
    case: str,
    rewrite: Any,
    stored: int,
    retried: int,
    named: str,
) -> None:
    """A line ``[1, 2, 3]`` (or a reply with ``choices: []``) among the batch's 13 replies threw
    the whole batch away (13 questions UNSCORED, nothing stored): each line stands alone, the
    good replies are stored, the bad line is named and counted, and a readable request of a bad
    line is sent again synchronously."""
    server.rewrite = rewrite
    result = pytester.runpytest(
        *_args("openai:gpt-4o-mini", pytester.path / "cache"),
        "--memeval-llm-batch",
        "--memeval-json=r.json",
        *mode,
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    result.stdout.fnmatch_lines(
        [
            f"*batch: 1 submitted, 0 picked up, {stored} replies stored, {retried} retried, "
            "0 failed, 1 unreadable result line",
        ]
    )
    assert f"output file batch_000002-out {named}" in out, out
    assert "AttributeError" not in out and "rerun with --memeval-resume" not in out
    rows = _rows(read_json(pytester.path / "r.json"))
    judged = [s for _, _, s in rows.values() if s.get("judge_mem0") is not None]
    assert len(judged) == JUDGED
    assert all(status != "UNSCORED" for status, _, _ in rows.values())
    assert server.count(OPENAI_PATH) == 15 + retried  # the answers, and the bad line's request


def _flipped_twins(api: str, lines: list[dict[str, Any]]) -> list[bytes]:
    """Every line, then each again with the opposite verdict (the same custom_id)."""
    twins = []
    for line in lines:
        twin = json.loads(json.dumps(line))
        message = twin["response"]["body"]["choices"][0]["message"]
        label = json.loads(message["content"])
        label["label"] = "WRONG" if label["label"] == "CORRECT" else "CORRECT"
        message["content"] = json.dumps(label)
        twins.append(twin)
    return _lines(lines) + _lines(twins)


@MODES
def test_a_repeated_custom_id_is_refused_and_sent_again(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str]
) -> None:
    """Each custom_id comes back twice with opposite verdicts: the last line used to win (13
    verdicts flipped). Each repeated custom_id is refused and its request sent synchronously:
    the synchronous run's verdicts."""
    model = "openai:gpt-4o-mini"
    sync = pytester.runpytest(*_args(model, pytester.path / "sync"), "--memeval-json=sync.json")
    assert sync.ret == 0, sync.stdout.str()
    server.reset()
    server.rewrite = _flipped_twins
    result = pytester.runpytest(
        *_args(model, pytester.path / "cache"),
        "--memeval-llm-batch",
        "--memeval-json=r.json",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*custom_id * comes back more than once; its replies are refused and the request "
            "is sent again",
            "*batch: 1 submitted, 0 picked up, 0 replies stored, 13 retried, 0 failed, "
            "13 repeated custom_ids",
        ]
    )
    expected = _rows(read_json(pytester.path / "sync.json"))
    assert _rows(read_json(pytester.path / "r.json")) == expected
    assert server.count(OPENAI_PATH) == 15 + JUDGED


def _anthropic_garbage(api: str, lines: list[dict[str, Any]]) -> list[bytes]:
    """A line that is not JSON and one whose result is a list, among Anthropic's results."""
    raw = _lines(lines)
    broken = {"custom_id": lines[0]["custom_id"], "result": [1, 2, 3]}
    return [b"{not json", *_lines([broken]), *raw[1:]]


@MODES
def test_anthropic_results_are_read_line_by_line(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str]
) -> None:
    """Message Batches' results (a JSONL stream) as well: a line that is not JSON is named and
    skipped, a line whose ``result`` is not an object is named and its request sent again."""
    server.rewrite = _anthropic_garbage
    result = pytester.runpytest(
        *_args("anthropic:claude-haiku-4-5", pytester.path / "cache"),
        "--memeval-llm-batch",
        "--memeval-json=r.json",
        *mode,
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    result.stdout.fnmatch_lines(
        [
            "*batch msgbatch_*: results of msgbatch_* line 1: not JSON; skipped",
            "*batch msgbatch_*: results of msgbatch_* line 2: 'result' is not an object; "
            "skipped; request * is sent again",
            "*batch: 1 submitted, 0 picked up, 12 replies stored, 1 retried, 0 failed, "
            "2 unreadable result lines",
        ]
    )
    rows = _rows(read_json(pytester.path / "r.json"))
    assert all(status != "UNSCORED" for status, _, _ in rows.values())
    assert server.count(ANTHROPIC_PATH) == 15 + 1


@MODES
def test_a_batch_stuck_in_progress_goes_synchronous_after_the_wait(
    pytester: pytest.Pytester, server: BatchServer, mode: list[str]
) -> None:
    """A batch still ``in_progress`` past ``--memeval-llm-batch-wait`` is cancelled and its
    requests are sent synchronously, with a line (it used to be polled for 24 h); the state file
    says so, so a resume does not pick it up again."""
    server.hold.set()
    cache = pytester.path / "cache"
    result = pytester.runpytest(
        *_args("openai:gpt-4o-mini", cache),
        "--memeval-llm-batch",
        "--memeval-llm-batch-wait=1",
        "--memeval-json=r.json",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*batch batch_* still in_progress 0/13 after 1s (--memeval-llm-batch-wait): "
            "cancelled; its 13 requests are sent synchronously",
            "*batch: 1 submitted, 0 picked up, 0 replies stored, 13 retried, 0 failed, "
            "1 past --memeval-llm-batch-wait",
        ]
    )
    assert server.count(OPENAI_CANCEL) == 1
    assert server.count(OPENAI_PATH) == 15 + JUDGED
    rows = _rows(read_json(pytester.path / "r.json"))
    assert all(status != "UNSCORED" for status, _, _ in rows.values())
    (state,) = cache.glob("runs/*/batch/batch-*.json")
    assert json.loads(state.read_text(encoding="utf-8"))["status"] == "abandoned"
