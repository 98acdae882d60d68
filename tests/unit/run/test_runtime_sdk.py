"""``LLMRuntime``'s SDK clients: one per model config (answerer and judges share it), and built
ahead on a daemon thread only when the run's calls will miss the cache (issue 23: the SDK import
off the first call's path)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pytest_memeval.llm import Completion, OpenAIProvider
from pytest_memeval.run._runtime import LLMRuntime, LLMSettings

SPEC = "openai:gpt-4o-mini"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unit")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted


def _runtime(tmp_path: Path, **kw: object) -> LLMRuntime:
    return LLMRuntime(LLMSettings(answerer=SPEC, judges=(SPEC,), **kw), tmp_path)  # type: ignore[arg-type]


def _providers(rt: LLMRuntime) -> list[OpenAIProvider]:
    assert rt.answerer_client is not None
    out = [rt.answerer_client.provider, rt.judges[0].client.provider]
    assert all(isinstance(p, OpenAIProvider) for p in out)
    return out  # type: ignore[return-value]


def test_the_answerer_and_a_judge_of_one_model_share_one_sdk_client(tmp_path: Path) -> None:
    answerer, judge = _providers(_runtime(tmp_path))
    assert answerer.sdk is judge.sdk


def test_a_cold_cache_builds_the_sdk_ahead_a_warm_one_never(tmp_path: Path) -> None:
    cold = _runtime(tmp_path / "cold")
    gc.unfreeze()  # an in-process inner run of another test may have frozen this process
    thread = cold.prewarm()
    assert thread is not None
    thread.join(60)
    sdk = _providers(cold)[0].sdk
    assert sdk._client is not None  # built (imported) before any call
    # and the resource the provider calls made (its module imported): the window's threads do
    # not queue on the client's lazy attribute at the first call
    assert "chat" in vars(sdk._client) and "completions" in vars(sdk._client.chat)
    # and, built, moved out of the collector's reach (issue 36: the five full collections at
    # pytest's exit walked the SDK's ~200,000 objects, about 0.7 CPU-s per process)
    assert gc.get_freeze_count() > 0
    assert all(o is not sdk._client for o in gc.get_objects())  # only the permanent generation
    sdk.close()

    warm = _runtime(tmp_path / "warm")
    assert warm.cache is not None
    warm.cache.put("k", Completion("x"))
    assert warm.prewarm() is None
    assert _providers(warm)[0].sdk._client is None  # a run the cache may serve imports nothing
    assert _runtime(tmp_path / "est", estimate=True).prewarm() is None


#: a fresh interpreter whose first replies are parsed on 32 threads at once, switching threads as
#: often as CPython allows; prints the errors, then whether every reply model is built
_FIRST_REPLIES_ON_THREADS = """
import os, sys, threading
sys.setswitchinterval(1e-6)
from llm_server import LLMServer
from pytest_memeval.llm._base import ChatMessage, Request
from pytest_memeval.llm._providers import _REPLY_MODELS, _model_classes, build_provider, resolve_config

def models(root):
    seen, todo = set(), [root]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            for field in cls.model_fields.values():
                todo.extend(_model_classes(field.annotation))
    return seen

errors = []
with LLMServer(reply=lambda messages, model, params: "ok") as srv:
    for sdk in ("openai", "anthropic"):
        env = srv.env("sk-race")
        os.environ.update(env)
        provider = build_provider(resolve_config(sdk + ":m"), timeout=30)
        barrier = threading.Barrier(32)
        def call():
            barrier.wait()
            try:
                provider.send(Request(messages=(ChatMessage("user", "hi"),)))
            except Exception as exc:
                errors.append(f"{sdk}: {type(exc).__name__}: {exc}"[:200])
        threads = [threading.Thread(target=call) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        module, name = _REPLY_MODELS[sdk]
        root = getattr(__import__(module, fromlist=[name]), name)
        incomplete = [c.__name__ for c in models(root) if not c.__pydantic_complete__]
        print(sdk, "incomplete", incomplete)
print("errors", errors)
"""


def test_the_first_replies_parsed_on_many_threads_at_once_all_parse(tmp_path: Path) -> None:
    """The SDKs build their pydantic reply models at first use, and that build is not
    thread-safe: 32 first replies parsed at once failed with ``PydanticUserError`` or
    ``AttributeError: ... __pydantic_core_schema__`` in about one fresh process in four. The
    provider builds them before any thread parses a reply."""
    import subprocess
    import sys

    script = tmp_path / "race.py"
    script.write_text(_FIRST_REPLIES_ON_THREADS, encoding="utf-8")
    tests_dir = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(tests_dir)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == ["openai incomplete []", "anthropic incomplete []", "errors []"], proc.stdout


def test_the_first_question_waits_for_the_sdk_once(tmp_path: Path) -> None:
    """``await_prewarm`` joins the build (the main thread does not search ahead while the SDK is
    imported: under the GIL the two would take turns and the first call would go out later); a
    second call, or a run that built nothing, returns at once."""
    gc.unfreeze()
    from pytest_memeval.llm import get_tokenizer

    get_tokenizer.cache_clear()
    rt = _runtime(tmp_path / "cold")
    thread = rt.prewarm()
    assert thread is not None
    rt.await_prewarm()
    # the LLM answerer's context tokenizer was built on the same thread, not at the first answer
    assert get_tokenizer.cache_info().currsize == 1
    assert not thread.is_alive()
    assert _providers(rt)[0].sdk._client is not None
    rt.await_prewarm()  # nothing left to wait for
    _providers(rt)[0].sdk.close()
    warm = _runtime(tmp_path / "warm")
    assert warm.cache is not None
    warm.cache.put("k", Completion("x"))
    assert warm.prewarm() is None
    warm.await_prewarm()  # no thread: returns
