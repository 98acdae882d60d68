"""``--memsys=langmem`` (``pytest_memeval/systems/langmem``) on the real LangMem tools and
LangGraph ``InMemoryStore``, with a small hashed bag-of-words embedder in place of MiniLM (no
torch here; the adapter on the real model is in ``tests/plugin/test_local_adapters.py``)."""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import pytest

from pytest_memeval.errors import AdapterError
from pytest_memeval.run import demo_conversation, demo_questions
from pytest_memeval.systems._resolve import ENTRY_POINT_GROUP, available_systems, resolve_system

DIMS = 64


def bag_of_words(texts: Sequence[str]) -> list[list[float]]:
    """One L2-normalised hashed bag of lower-cased words per text."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        out.append([x / norm for x in vector])
    return out


@pytest.fixture
def system() -> object:
    pytest.importorskip("langmem", reason="langmem is not installed (pytest-memeval[langmem])")
    from pytest_memeval.systems.langmem import LangMemSystem

    return LangMemSystem(embed=bag_of_words, dims=DIMS)


def test_turns_are_stored_through_the_tool_and_searched_within_k(system: object) -> None:
    from pytest_memeval.systems.langmem import LangMemSystem

    assert isinstance(system, LangMemSystem)
    conversation = demo_conversation("demo-1")
    system.ingest(conversation)
    [namespace] = system.store.list_namespaces()
    assert namespace[0] == "memeval" and namespace[1].startswith("memeval-demo-1-")
    turns = [t for _, t in conversation.turns()]
    stored = system.dump("demo-1")
    assert [m.source_ids[0] for m in stored] == [t.id for t in turns]
    question = replace(demo_questions("demo-1")[0], question="Whose dog is a curious beagle?")
    found = system.search(question, 2)
    assert len(found) == 2
    assert "beagle" in found[0].text and found[0].source_ids == ("D1:6", "S1")
    assert found[0].date == datetime(2024, 3, 4, 10, 15) and found[0].speaker == "Jonas"
    assert found[0].score is not None and found[0].score >= (found[1].score or 0.0)
    assert system.search(question, 0) == []
    # the empty question lists stored memories (no scores) within k, it does not fail
    assert len(system.search(replace(question, question=""), 3)) == 3


def test_each_conversation_has_its_namespace_and_reset_empties_it(system: object) -> None:
    from pytest_memeval.systems.langmem import LangMemSystem

    assert isinstance(system, LangMemSystem)
    system.ingest(demo_conversation("demo-1"))
    system.ingest(demo_conversation("demo-2"))  # resets demo-1 first
    # the store holds demo-2's turns only, all in one namespace of its own
    held = system.store.search(("memeval",), limit=1000)
    conversation_2 = {t.id for _, t in demo_conversation("demo-2").turns()}
    assert {item.value["content"]["turn_id"] for item in held} == conversation_2
    [namespace] = {item.namespace for item in held}
    assert namespace[1].startswith("memeval-demo-2-")
    assert system.dump("demo-1") == []
    question = demo_questions("demo-1")[0]
    assert all(m.source_ids[0] in conversation_2 for m in system.search(question, 5))
    system.reset()
    assert system.dump("demo-2") == [] and system.store.search(("memeval",)) == []
    assert system.search(question, 5) == []


def test_langmem_is_an_entry_point_that_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_memeval.systems.langmem import LangMemSystem

    assert "langmem" in available_systems()
    [(resolved, factory)] = resolve_system("langmem", entry_points_group=ENTRY_POINT_GROUP)
    assert resolved == "langmem" and getattr(factory, "__wrapped__", None) is LangMemSystem
    monkeypatch.setitem(sys.modules, "langmem", None)  # langmem is not installed
    with pytest.raises(
        AdapterError, match=r"needs langmem: pip install 'pytest-memeval\[langmem\]'"
    ):
        factory()
