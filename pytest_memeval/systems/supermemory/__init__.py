"""``--memsys=supermemory``: Supermemory through its official SDK
(``pip install 'pytest-memeval[supermemory]'``)."""

from __future__ import annotations

from ._supermemory_system import SupermemorySystem

__all__ = ["SupermemorySystem"]
