"""Pytest glue for pytest-xdist, registered only when xdist is installed (``-p no:xdist`` works).

Scheduling: every question of one conversation must run on one worker so that each conversation
is ingested once per system. Item node ids are ``memeval/<benchmark>/<conversation>/<system>::...``;
the scheduling unit is ``memeval/<benchmark>/<conversation>`` (every system's questions of a
conversation on one worker, so top-k variants share one ingestion), and hand-written cases are
grouped by the conversation in their parameter id (see ``scheduler``, which also keeps a question
that kills its worker from killing the next one). The default ``--dist load`` (and ``worksteal``,
which moves single items between workers) is replaced by it when benchmark items are collected;
``loadscope``, ``loadfile`` and ``loadgroup`` are kept (the first two group by conversation and
system).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

__all__ = ["XdistHooks"]


_CASE_ID = re.compile(r"\[(?P<bench>[^/\[\]]+)/(?P<conv>[^/\[\]]+)/[^\[\]]+\[[^\[\]]*\]\]$")


def conversation_scope(nodeid: str) -> str:
    """The scheduling unit of a node id: ``memeval/<benchmark>/<conversation>`` for built-in items
    and hand-written ``memeval_case`` tests, else xdist's own scope (the part before the last
    ``::``)."""
    if nodeid.startswith("memeval/"):  # memeval/<benchmark>/<conversation>/<system>::<question>
        return nodeid.split("::", 1)[0].rsplit("/", 1)[0]
    match = _CASE_ID.search(nodeid)
    if match is not None:
        return f"memeval/{match['bench']}/{match['conv']}"
    return nodeid.rsplit("::", 1)[0]


class XdistHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from ._stash import STATE_KEY

        state = config.stash.get(STATE_KEY, None)
        if state is None or not state.settings.active:
            return None
        if config.getoption("dist", "load") not in ("load", "worksteal"):
            return None
        from ._scheduler import ConversationScheduling
        from ._stash import SCHEDULER_KEY

        scheduler = ConversationScheduling(config, log, conversation_scope)
        config.stash[SCHEDULER_KEY] = scheduler
        return scheduler

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Ship controller-side decisions to each worker (workers re-parse argv)."""
        from ._stash import STATE_KEY

        state = self.config.stash.get(STATE_KEY, None)
        if state is not None and state.resume_ids:
            node.workerinput["memeval_resume"] = [list(key) for key in sorted(state.resume_ids)]
        if state is not None and state.rejudge_run is not None:
            node.workerinput["memeval_rejudge_run"] = str(state.rejudge_run)
        if state is not None and state.batch_dir is not None:
            node.workerinput["memeval_batch_dir"] = str(state.batch_dir)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from ..run import PROPERTY_NAME
        from ._stash import CONTROLLER_KEY

        controller = self.config.stash.get(CONTROLLER_KEY, None)
        output = getattr(node, "workeroutput", None) or {}
        data = output.get(PROPERTY_NAME)
        if controller is not None and isinstance(data, dict):
            controller.add_worker_output(data)
