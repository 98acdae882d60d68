"""The pure parts the hosted-service adapters share (``systems/_hosted.py``), the adapters' settings
and what they do without their SDK; the adapters against their APIs are in
``tests/plugin/test_hosted_adapters.py``."""

from __future__ import annotations

import gc
import importlib
import sys
from datetime import datetime

import pytest

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Memory
from pytest_memeval.systems._hosted import (
    ServiceSettings,
    call_service,
    cut_top_k,
    import_sdk,
    parse_date,
    release_on_drop,
    settings_from_env,
    source_ids,
    store_name,
)
from pytest_memeval.systems._resolve import ENTRY_POINT_GROUP, available_systems, resolve_system

SECRET = "sk-hosted-secret-8675309"


def test_settings_read_the_named_variables() -> None:
    env = {"ZEP_BASE_URL": " http://127.0.0.1:9/api/v4 ", "ZEP_API_KEY": SECRET}
    settings = settings_from_env(
        "zep", url_var="ZEP_BASE_URL", key_var="ZEP_API_KEY", default_url="https://x", environ=env
    )
    assert (settings.base_url, settings.api_key, settings.timeout) == (
        "http://127.0.0.1:9/api/v4",
        SECRET,
        60.0,
    )
    assert SECRET not in repr(settings)
    default = settings_from_env(
        "zep",
        url_var="ZEP_BASE_URL",
        key_var="ZEP_API_KEY",
        default_url="https://x",
        environ={"ZEP_API_KEY": SECRET, "MEMEVAL_HOSTED_TIMEOUT": "2.5"},
    )
    assert (default.base_url, default.timeout) == ("https://x", 2.5)


def test_a_missing_key_names_the_variable() -> None:
    with pytest.raises(AdapterError, match=r"'zep': set ZEP_API_KEY to the service's API key"):
        settings_from_env(
            "zep",
            url_var="ZEP_BASE_URL",
            key_var="ZEP_API_KEY",
            default_url="https://x",
            environ={},
        )
    optional = settings_from_env(
        "letta",
        url_var="LETTA_BASE_URL",
        key_var="LETTA_API_KEY",
        default_url="https://x",
        key_required=False,
        environ={"LETTA_BASE_URL": "http://127.0.0.1:8283"},
    )
    assert optional.api_key is None
    with pytest.raises(AdapterError, match="MEMEVAL_HOSTED_TIMEOUT='soon' is not a number"):
        settings_from_env(
            "zep",
            url_var="U",
            key_var="K",
            default_url="https://x",
            environ={"K": SECRET, "MEMEVAL_HOSTED_TIMEOUT": "soon"},
        )


def test_service_errors_never_show_the_key() -> None:
    settings = ServiceSettings("zep", "http://127.0.0.1:9", api_key=SECRET)

    def fail() -> None:
        raise RuntimeError(f"401: invalid credentials 'Api-Key {SECRET}'" + "x" * 1000)

    with pytest.raises(AdapterError) as info:
        call_service(settings, "graph.create", fail)
    message = str(info.value)
    assert SECRET not in message and "[REDACTED]" in message
    assert message.startswith("zep (http://127.0.0.1:9): graph.create failed: RuntimeError: 401")
    assert message.endswith("...") and len(message) < 600
    assert call_service(settings, "ok", lambda: 3) == 3
    # an AdapterError passes through unchanged
    with pytest.raises(AdapterError, match=r"^as is$"):
        call_service(settings, "x", lambda: (_ for _ in ()).throw(AdapterError("as is")))


def test_store_names_are_fresh_and_safe() -> None:
    a, b = store_name("conv 1/ü"), store_name("conv 1/ü")
    assert a != b and a.startswith("memeval-conv-1-") and b.startswith("memeval-conv-1-")
    assert all(c.isalnum() or c in "-_" for c in a)
    assert len(store_name("x" * 500)) < 110


def test_source_ids_keep_only_this_conversations() -> None:
    known = frozenset({"D1:1", "D1:2", "S1"})
    assert source_ids(["D1:2", None, "D9:9", "S1", "D1:2", 3], known) == ("D1:2", "S1")
    assert source_ids([], known) == ()


def test_cut_top_k() -> None:
    memories = [Memory(text=str(i)) for i in range(5)]
    assert [m.text for m in cut_top_k(memories, 2)] == ["0", "1"]
    assert cut_top_k(memories, 0) == [] and cut_top_k(memories, -1) == []
    assert len(cut_top_k(memories, 10)) == 5


def test_parse_date() -> None:
    assert parse_date("2024-03-04T10:15:00Z") == datetime.fromisoformat("2024-03-04T10:15:00+00:00")
    assert parse_date("2024-03-04T10:15:00") == datetime(2024, 3, 4, 10, 15)
    assert parse_date("last spring") == "last spring"
    assert parse_date("") is None and parse_date(None) is None and parse_date(7) is None
    when = datetime(2024, 1, 1)
    assert parse_date(when) is when


def test_release_on_drop_runs_once_and_swallows_a_failed_delete() -> None:
    calls: list[str] = []

    class Owner:
        pass

    def delete() -> None:
        calls.append("delete")
        raise RuntimeError("service down")

    owner = Owner()
    release_on_drop(owner, delete, lambda: calls.append("close"))
    del owner
    gc.collect()
    assert calls == ["delete", "close"]
    kept = Owner()
    finalizer = release_on_drop(kept, lambda: calls.append("d2"), lambda: calls.append("c2"))
    finalizer.detach()  # what reset() does before deleting with errors shown
    del kept
    gc.collect()
    assert calls == ["delete", "close"]


@pytest.mark.parametrize(
    ("name", "module", "cls"),
    [
        ("zep", "pytest_memeval.systems.zep", "ZepSystem"),
        ("letta", "pytest_memeval.systems.letta", "LettaSystem"),
        ("supermemory", "pytest_memeval.systems.supermemory", "SupermemorySystem"),
    ],
)
def test_adapters_are_entry_points_that_name_their_extra(
    name: str, module: str, cls: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each adapter is a ``pytest_memeval.systems`` entry point (the package's own metadata),
    importable without its SDK; made without the SDK it says which extra installs it, and
    without a key which variable to set."""
    assert name in available_systems()
    [(resolved, factory)] = resolve_system(name, entry_points_group=ENTRY_POINT_GROUP)
    assert resolved == name
    system_cls = getattr(importlib.import_module(module), cls)
    assert getattr(factory, "__wrapped__", None) is system_cls
    upper = name.upper()
    monkeypatch.delenv(f"{upper}_API_KEY", raising=False)
    monkeypatch.delenv(f"{upper}_BASE_URL", raising=False)
    with pytest.raises(AdapterError, match=f"set {upper}_API_KEY"):
        factory()
    monkeypatch.setenv(f"{upper}_API_KEY", SECRET)
    sdk = {"zep": "zep_cloud", "letta": "letta_client", "supermemory": "supermemory"}[name]
    monkeypatch.setitem(sys.modules, sdk, None)  # the SDK is not installed
    with pytest.raises(AdapterError, match=rf"pip install 'pytest-memeval\[{name}\]'"):
        factory()


def test_import_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zep_cloud", None)
    with pytest.raises(AdapterError, match=r"needs the official zep-cloud SDK: pip install"):
        import_sdk("zep", "zep_cloud", "zep-cloud")


def test_a_bad_scope_or_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("zep_cloud")
    pytest.importorskip("supermemory")
    from pytest_memeval.systems.supermemory import SupermemorySystem
    from pytest_memeval.systems.zep import ZepSystem

    with pytest.raises(AdapterError, match="MEMEVAL_ZEP_SCOPE='nodes'; use one of edges, episodes"):
        ZepSystem(environ={"ZEP_API_KEY": SECRET, "MEMEVAL_ZEP_SCOPE": "nodes"})
    with pytest.raises(AdapterError, match="MEMEVAL_SUPERMEMORY_MODE='all'"):
        SupermemorySystem(
            environ={"SUPERMEMORY_API_KEY": SECRET, "MEMEVAL_SUPERMEMORY_MODE": "all"}
        )
