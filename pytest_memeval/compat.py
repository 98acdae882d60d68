"""The plugin's only use of a private pytest / pytest-xdist interface, kept in one place.

Everything else in the plugin uses public API: items are ``pytest.Function`` objects made with
``from_parent(name=..., callobj=...)`` under ``pytest.Directory`` collectors that join the
session's collect report; conftest memory systems come from ``request.getfixturevalue``; setup
errors get their one-line report through ``pytest_runtest_makereport``.

What remains:

- **Conversation-scoped xdist scheduling** (checked on pytest-xdist 3.5.0 - 3.8.0). The public hook
  ``pytest_xdist_make_scheduler`` returns a scheduler, and xdist's public ``LoadScopeScheduling``
  groups items by the node id up to the last ``::``, which for built-in items
  (``memeval/<benchmark>/<conversation>::<question>[<system>]``) is the conversation. Hand-written
  ``memeval_case`` tests carry their conversation in the parameter id instead, so the scope
  function is replaced by overriding ``LoadScopeScheduling._split_scope`` (private). If a future
  xdist drops that method, :func:`conversation_scheduling` falls back to the plain class, under
  which built-in items still group by conversation and hand-written cases group by test file
  (each conversation then ingested once per file and worker); ``tests/test_compat.py`` fails with
  a message naming this module when the assumption breaks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["XDIST_CHECKED", "conversation_scheduling", "xdist_scope_hook_present"]

#: the pytest-xdist versions the private use below was checked on
XDIST_CHECKED = ("3.5.0", "3.8.0")


def xdist_scope_hook_present() -> bool:
    """Whether ``LoadScopeScheduling._split_scope`` exists (the private method overridden here)."""
    from xdist.scheduler import LoadScopeScheduling

    return callable(getattr(LoadScopeScheduling, "_split_scope", None))


def conversation_scheduling(config: Any, log: Any, scope: Callable[[str], str]) -> Any:
    """A ``LoadScopeScheduling`` whose scheduling unit is ``scope(nodeid)``."""
    from xdist.scheduler import LoadScopeScheduling

    if not xdist_scope_hook_present():
        return LoadScopeScheduling(config, log)

    class ConversationScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    return ConversationScheduling(config, log)
