"""``--memeval-llm-batch`` glue (docs/batch.md): the usage check, where each process queues its
calls (the run folder the controller chose, passed to the workers) and, at the controller's
session end, the batch's terminal lines and the store of the results it settled. What batching
does with the questions is run level and pytest-free (``run.batch``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..llm.redact import redact
from ..run import batch as run_batch

if TYPE_CHECKING:
    from ..run.state import RunState

__all__ = ["batch_roles", "check_batch", "settle_run", "start_batch", "start_worker"]


def check_batch(state: RunState) -> None:
    """Refuse combinations where batching cannot work, before anything is paid."""
    problem = run_batch.batch_problem(state.settings)
    if problem is not None:
        raise pytest.UsageError(problem)


def start_batch(state: RunState, folder: Path) -> None:
    """On the controller once the run folder is known: where its judge calls are queued."""
    run_batch.start_batch(state, folder)


def start_worker(state: RunState, workerinput: dict[str, Any]) -> None:
    """On an xdist worker: queue in the run folder the controller chose."""
    where = workerinput.get("memeval_batch_dir")
    name = str(workerinput.get("workerid", "worker"))
    run_batch.start_worker(state, str(where) if where else None, name)


def batch_roles(state: RunState) -> tuple[str, ...]:
    """The roles whose calls go through the batch APIs (priced at the batch discount)."""
    return run_batch.batch_roles(state.settings)


def settle_run(config: pytest.Config) -> list[str]:
    """At the controller's session end: ``run.batch.settle_run`` over the controller's results,
    its progress written to the terminal as it goes, the results it settles appended to the
    store. Returns the lines to print. The controller comes from the stash
    (``CONTROLLER_KEY``): this module does not import the controller's."""
    from .keys import CONTROLLER_KEY
    from .questions import question_run

    controller = config.stash[CONTROLLER_KEY]
    state = controller.state
    writer = config.pluginmanager.get_plugin("terminalreporter")

    def log(line: str) -> None:
        if writer is not None:
            writer.write_line(f"memeval: {redact(line)}")

    store = controller.store
    return run_batch.settle_run(
        state,
        list(controller.results.values()),
        lambda bench: question_run(config, state, bench),
        store=store.append if store is not None else None,
        log=log,
    )
