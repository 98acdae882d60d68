"""The board: a static site over many runs (JSON reports and run folders), pytest-free.

``load`` reads the inputs into entries (one per benchmark, system and flow of a source),
``comparability`` gives each entry its comparability key, ``verify`` its verification tier, ``site``
writes the pages and ``cli`` is the ``memeval-board`` command (docs/board.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._site import add_to_board, build_board

__all__ = [
    "add_to_board",
    "build_board",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "add_to_board": "._site",
    "build_board": "._site",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
