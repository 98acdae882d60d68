"""``--memsys=mem0``: mem0 OSS (``mem0ai``) on local all-MiniLM-L6-v2 embeddings and an in-memory
Qdrant (``pip install 'pytest-memeval[mem0]'``)."""

from __future__ import annotations

from ._mem0_system import Mem0Settings, Mem0System, import_mem0, mem0_config

__all__ = ["Mem0Settings", "Mem0System", "import_mem0", "mem0_config"]
