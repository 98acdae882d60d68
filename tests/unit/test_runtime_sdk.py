"""``LLMRuntime``'s SDK clients: one per model config (answerer and judges share it), and built
ahead on a daemon thread only when the run's calls will miss the cache (issue 23: the SDK import
off the first call's path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_memeval.llm.base import Completion
from pytest_memeval.llm.providers import OpenAIProvider
from pytest_memeval.run.runtime import LLMRuntime, LLMSettings

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
    thread = cold.prewarm()
    assert thread is not None
    thread.join(60)
    sdk = _providers(cold)[0].sdk
    assert sdk._client is not None  # built (imported) before any call
    sdk.close()

    warm = _runtime(tmp_path / "warm")
    assert warm.cache is not None
    warm.cache.put("k", Completion("x"))
    assert warm.prewarm() is None
    assert _providers(warm)[0].sdk._client is None  # a run the cache may serve imports nothing
    assert _runtime(tmp_path / "est", estimate=True).prewarm() is None
