"""Pytest glue for pytest-xdist: the conversation-scoped scheduler.

pytest-xdist's public ``pytest_xdist_make_scheduler`` hook takes any object with the methods of its
``Scheduling`` protocol; this is one, written against that protocol and the worker controller's
public methods (``send_runtest_some``, ``shutdown``, ``shutting_down``, ``gateway.id``) only.

Scheduling unit: every question of one conversation (all systems, so ``--memeval-top-k`` variants
share one ingestion), and hand-written ``memeval_case`` tests with it; other tests go by module, as
``--dist loadscope`` does. A worker gets a unit at a time and the next one before it runs dry; with
an LLM window (``--memeval-llm-concurrency=N``) it is kept holding at least N items not started, so
its window can reach into the conversations it runs next (:func:`worker_queue`).

Crashes. When a worker process dies (``os._exit``, a segfault, the OOM killer) xdist asks the
scheduler for the item it was running and reports that item as failed; xdist's own schedulers then
queue it again with the rest of its unit, so a question that always kills its worker kills every
replacement until the restart limit is reached and the run ends with most questions missing. Here
the item that crashed is never queued again; the rest of its unit is, once: if the same unit
crashes a second worker (an ingestion that always crashes, say), its remaining questions are not
run. Both kinds, and whatever a stopped run left undone, are listed (:attr:`crashed`,
:attr:`dropped`, :meth:`unfinished`) so the controller records each as an ERROR with its reason.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import pytest

__all__ = ["ConversationScheduling", "worker_queue"]

#: a unit that crashed this many workers is given up (its remaining questions are not run)
MAX_CRASHES_PER_UNIT = 2


def _tx_count(config: pytest.Config) -> int:
    """How many workers xdist starts: its ``--tx`` specs (``-n N`` becomes N ``popen`` specs),
    each ``K*spec`` counting K, as xdist's own schedulers count them."""
    count = 0
    for spec in config.getoption("tx", None) or []:
        head, star, _ = str(spec).partition("*")
        count += int(head) if star and head.isdigit() else 1
    return max(count, 1)


def worker_queue(config: pytest.Config) -> list[int] | None:
    """On an xdist worker, the indices (into ``session.items``) of the items the scheduler has
    sent it and it has not started, in the order it will run them; None when not a worker or the
    queue cannot be read (the pipeline then stays in the current conversation).

    The scheduler (:class:`ConversationScheduling`) sends a worker whole conversations, as
    many items ahead as the LLM window needs; the worker keeps them in xdist's ``WorkerInteractor``
    (``nextitem_index``, then the ``torun`` queue, read under its lock)."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        lock = getattr(torun, "lock", None)
        if type(plugin).__name__ != "WorkerInteractor" or not callable(lock):
            continue
        try:
            with lock() as queued:
                pending = [getattr(plugin, "nextitem_index", None), *queued]
        except Exception:
            return None
        upcoming: list[int] = []
        for index in pending:
            if not isinstance(index, int) or isinstance(index, bool):
                break  # the shutdown marker: nothing after it runs
            upcoming.append(index)
        return upcoming
    return None


def _items_ahead(config: pytest.Config) -> int:
    """Items a worker holds before it is sent more: 2, or the LLM window's depth when the run
    makes LLM calls through one (so the window can be filled from the worker's next
    conversations, searched ahead as far as it stages them: ``run.pipeline.DEPTH_FACTOR``)."""
    from ..run import DEPTH_FACTOR
    from ._stash import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.llm.uses_llm or state.settings.llm.concurrency < 2:
        return 2
    return max(2, DEPTH_FACTOR * state.settings.llm.concurrency)


class ConversationScheduling:
    def __init__(
        self, config: pytest.Config, log: Any, scope: Callable[[str], str], numnodes: int = 0
    ) -> None:
        self.config = config
        self.log = log
        self.scope = scope
        self.numnodes = numnodes or _tx_count(config)
        self.collection: list[str] | None = None
        #: the collection each worker reported (indices are per worker)
        self.registered: dict[Any, list[str]] = {}
        #: units not yet sent: scope -> node ids
        self.workqueue: OrderedDict[str, list[str]] = OrderedDict()
        #: sent to a worker, in the order sent: scope -> node id -> completed
        self.assigned: dict[Any, dict[str, dict[str, bool]]] = {}
        self.crash_count: dict[str, int] = {}
        #: (node id, worker id) of every item that was running when its worker died
        self.crashed: list[tuple[str, str]] = []
        #: (node id, reason) of items given up after their unit crashed twice
        self.dropped: list[tuple[str, str]] = []
        self.completed: set[str] = set()
        #: items a worker is kept holding (not started) before it is sent the next unit
        self.ahead = _items_ahead(config)

    # ---- the Scheduling protocol -------------------------------------------------------------
    @property
    def nodes(self) -> list[Any]:
        return list(self.assigned)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.registered) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.workqueue:
            return False
        # a worker keeps its last item until it is told to shut down (it needs the next item
        # to tear down fixtures), so one pending item per worker counts as finished
        return all(self._pending(work) < 2 for work in self.assigned.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.workqueue) or any(self._pending(w) for w in self.assigned.values())

    def add_node(self, node: Any) -> None:
        assert node not in self.assigned
        self.assigned[node] = {}

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        assert node in self.assigned
        if self.collection is not None and list(collection) != self.collection:
            self._collection_differs(node, collection)
            return
        self.registered[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered[node][item_index]
        self.assigned[node][self.scope(nodeid)][nodeid] = True
        self.completed.add(nodeid)
        self._reschedule(node)

    def mark_test_pending(self, item: str) -> None:
        """Queue ``item`` again (for a ``pytest_handlecrashitem`` that wants a retry)."""
        self.workqueue.setdefault(self.scope(item), []).append(item)
        self.workqueue.move_to_end(self.scope(item), last=False)
        for node in self.nodes:
            self._reschedule(node)

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("the conversation scheduler does not steal work")

    def remove_node(self, node: Any) -> str | None:
        work = self.assigned.pop(node)
        pending = [(scope, nid) for scope, unit in work.items() for nid, done in unit.items()]
        pending = [(scope, nid) for scope, nid in pending if not work[scope][nid]]
        if not pending:
            return None
        crash_scope, crashitem = pending[0]  # a worker runs its items in the order sent
        self.crashed.append((crashitem, str(node.gateway.id)))
        self.crash_count[crash_scope] = self.crash_count.get(crash_scope, 0) + 1
        requeue: OrderedDict[str, list[str]] = OrderedDict()
        for scope, nid in pending[1:]:
            if scope == crash_scope and self.crash_count[scope] >= MAX_CRASHES_PER_UNIT:
                self.dropped.append(
                    (
                        nid,
                        f"not run: {scope} crashed {self.crash_count[scope]} workers (last "
                        f"{node.gateway.id} while running {crashitem})",
                    )
                )
            else:
                requeue.setdefault(scope, []).append(nid)
        for scope in reversed(requeue):  # first in line again, in their order
            self.workqueue[scope] = requeue[scope] + self.workqueue.pop(scope, [])
            self.workqueue.move_to_end(scope, last=False)
        for other in self.nodes:
            self._reschedule(other)
        return crashitem

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._reschedule(node)
            return
        collections = list(self.registered.items())
        first_node, first = collections[0]
        for node, other in collections[1:]:
            if other != first:
                self._collection_differs(node, other, first_node)
                return
        self.collection = list(first)
        if not self.collection:
            return
        for nodeid in self.collection:
            self.workqueue.setdefault(self.scope(nodeid), []).append(nodeid)
        extra = len(self.nodes) - len(self.workqueue)
        for node in self.nodes[len(self.nodes) - extra :] if extra > 0 else []:
            self.assigned.pop(node)
            node.shutdown()
        for node in self.nodes:  # a unit each first: the first worker does not take them all
            self._reschedule(node, ahead=0)
        for node in self.nodes:
            self._reschedule(node)

    # ---- what the controller reports ---------------------------------------------------------
    def unfinished(self) -> list[str]:
        """Items that never completed and are neither the crash items nor given up (the run
        stopped first: ``--maxfail``, the worker-restart limit, Ctrl-C)."""
        if self.collection is None:
            return []
        gone = {nid for nid, _ in self.crashed} | {nid for nid, _ in self.dropped}
        return [n for n in self.collection if n not in self.completed and n not in gone]

    # ---- internals ---------------------------------------------------------------------------
    @staticmethod
    def _pending(work: dict[str, dict[str, bool]]) -> int:
        return sum(1 for unit in work.values() for done in unit.values() if not done)

    def _reschedule(self, node: Any, ahead: int | None = None) -> None:
        """Send ``node`` units until it holds more than ``ahead`` items not started (default
        :attr:`ahead`, at most its fair share of the items not started, queued or held by any
        worker, 2 at least: the last units are not all held by one worker while another runs
        dry). The share counts what the workers hold: measured on what is still queued, the
        first worker took half of a LongMemEval-shaped run's 64 questions and the second a
        quarter, which it then received one by one while the first worked through its half."""
        if node.shutting_down or node not in self.assigned:
            return
        if not self.workqueue:
            node.shutdown()  # it runs what it holds, then stops
            return
        if ahead is None:
            ahead = self.ahead
            if ahead > 2:
                queued = sum(len(nodeids) for nodeids in self.workqueue.values())
                held = sum(self._pending(work) for work in self.assigned.values())
                ahead = min(ahead, max(2, (queued + held) // max(len(self.assigned), 1)))
        while self.workqueue and self._pending(self.assigned[node]) <= ahead:
            scope, nodeids = self.workqueue.popitem(last=False)
            unit = self.assigned[node].setdefault(scope, {})
            for nid in nodeids:
                unit[nid] = False
            index = {nid: i for i, nid in enumerate(self.registered[node])}
            node.send_runtest_some([index[nid] for nid in nodeids])

    def _collection_differs(self, node: Any, collection: Sequence[str], other: Any = None) -> None:
        reference = self.collection if other is None else self.registered[other]
        assert reference is not None
        missing = sorted(set(reference) - set(collection))[:5]
        extra = sorted(set(collection) - set(reference))[:5]
        msg = (
            f"pytest-memeval: worker {node.gateway.id} collected different tests "
            f"(missing {missing}, extra {extra}); every worker must collect the same items"
        )
        self.log(msg)
        self.config.hook.pytest_collectreport(
            report=pytest.CollectReport(nodeid="", outcome="failed", longrepr=msg, result=[])
        )
