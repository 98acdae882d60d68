"""The ``mem0`` fixture: run ``pytest --memeval=demo --memsys=mem0`` from this folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mem0_memory import Mem0Memory


@pytest.fixture(scope="session")
def mem0() -> Iterator[Mem0Memory]:
    """One mem0 instance for the run (per xdist worker); reset between conversations."""
    memory = Mem0Memory.from_env()
    yield memory
    memory.close()
