"""Pytest glue: the memory system of a question, a fixture or what ``--memsys`` resolved to, with
the question's conversation ingested (split from ``items.py``)."""

from __future__ import annotations

import re

import pytest

from ..errors import AdapterError
from ..records import Question
from ..run import IngestedSystem, RunState, SystemRef

__all__ = [
    "SystemNotFound",
    "conversation_key",
    "ingested_system",
    "not_run_reason",
    "obtain_system",
]


#: what pytest's FixtureLookupError lists after "available fixtures:"
_AVAILABLE_FIXTURES = re.compile(r"available fixtures: ([^\n]*)")


class SystemNotFound(AdapterError):
    """A fixture-only ``--memsys`` name no fixture answers (its first question says so once)."""


def not_run_reason(system: str) -> str:
    """The skip reason of a missing system's other questions (one summary line for them all)."""
    return f"not run: memory system {system!r} was not found (its first question says why)"


def _visible_fixtures(exc: pytest.FixtureLookupError) -> list[str]:
    found = _AVAILABLE_FIXTURES.search(str(exc.formatrepr()))
    return [n.strip() for n in found.group(1).split(",")] if found else []


def obtain_system(request: pytest.FixtureRequest, ref: SystemRef) -> object:
    """The memory system (an instance or a factory) of ``ref``, asked for where it is first needed.

    A name that may be a fixture is looked up with the public ``getfixturevalue``; when no fixture
    of that name is visible, the system the other resolution rules found is used, and with none
    SystemNotFound says so with "did you mean" over the built-ins and every visible fixture."""
    if ref.fixture is not None:
        try:
            return request.getfixturevalue(ref.fixture)
        except pytest.FixtureLookupError as exc:
            if exc.argname != ref.fixture:
                raise  # the fixture exists but needs another one that does not
            if ref.factory is None:
                from ..systems import available_systems, unknown_system_message

                known = [*available_systems(), *_visible_fixtures(exc)]
                from ._conftests import WHERE_FIXTURES

                raise SystemNotFound(
                    unknown_system_message(ref.fixture, known, available=ref.available)
                    + WHERE_FIXTURES
                ) from None
    assert ref.factory is not None
    return ref.factory


def conversation_key(benchmark: str, conversation_id: str) -> str:
    """How the system pool names a conversation: ``<benchmark>/<conversation id>``."""
    return f"{benchmark}/{conversation_id}"


def ingested_system(
    request: pytest.FixtureRequest,
    state: RunState,
    benchmark: str,
    question: Question,
    ref: SystemRef,
) -> IngestedSystem:
    """System ``ref`` with the question's conversation ingested: one per conversation and system
    in the process, shared by the built-in items and hand-written ``memeval_system`` tests."""
    dataset = state.datasets[benchmark]
    conv_id = question.conversation_id
    return state.pool.get(
        ref.base,
        lambda: dataset.conversation(conv_id),
        conversation_key(benchmark, conv_id),
        lambda: obtain_system(request, ref),
    )
