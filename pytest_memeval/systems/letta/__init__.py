"""``--memsys=letta``: Letta's archival memory through its official SDK
(``pip install 'pytest-memeval[letta]'``)."""

from __future__ import annotations

from ._letta_system import LettaSystem

__all__ = ["LettaSystem"]
