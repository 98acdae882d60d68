"""``--memsys=zep``: Zep through its official SDK (``pip install 'pytest-memeval[zep]'``)."""

from __future__ import annotations

from ._zep_system import ZepSystem

__all__ = ["ZepSystem"]
