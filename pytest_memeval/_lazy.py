"""A package's lazy exports (PEP 562): its ``__init__`` maps each public name to the private
module defining it (``_WHERE``), and that module is imported at the first lookup, so importing a
package loads only what is used (reading a suite's pins record loads no loader; the plugin's
configure loads no judge)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``where`` maps a name to its submodule (relative,
    e.g. ``".loader"``); a found value is stored in ``namespace`` (the package's ``globals()``),
    so later lookups are plain attribute reads."""

    def __getattr__(name: str) -> Any:
        submodule = where.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(submodule, package), name)
        namespace[name] = value
        return value

    return __getattr__
