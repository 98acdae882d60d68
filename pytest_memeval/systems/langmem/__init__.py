"""``--memsys=langmem``: LangMem's memory tools over a LangGraph ``InMemoryStore`` indexed with the
local all-MiniLM-L6-v2 (``pip install 'pytest-memeval[langmem]'``)."""

from __future__ import annotations

from ._langmem_system import LangMemSystem

__all__ = ["LangMemSystem"]
