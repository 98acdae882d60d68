"""Pytest glue for pytest-xdist, registered only when xdist is installed (``-p no:xdist`` works).

Scheduling: every question of one conversation must run on one worker so that each conversation
is ingested once per system. Item node ids are ``memeval/<benchmark>/<conversation>::...``, so
xdist's LoadScopeScheduling (scope = the part before the last ``::``) groups by conversation. The
default ``--dist load`` (and ``worksteal``, which moves single items between workers) is replaced by
it when benchmark items are collected; ``loadscope``, ``loadfile`` and ``loadgroup`` are kept
(the first two group the same way).
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["XdistHooks"]


class XdistHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from .collect import STATE_KEY

        state = config.stash.get(STATE_KEY, None)
        if state is None or not state.settings.active:
            return None
        if config.getoption("dist", "load") not in ("load", "worksteal"):
            return None
        from xdist.scheduler import LoadScopeScheduling

        return LoadScopeScheduling(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from .controller import PROPERTY_NAME
        from .plugin import CONTROLLER_KEY

        controller = self.config.stash.get(CONTROLLER_KEY, None)
        output = getattr(node, "workeroutput", None) or {}
        data = output.get(PROPERTY_NAME)
        if controller is not None and isinstance(data, dict):
            controller.add_worker_output(data)
