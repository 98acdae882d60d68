"""Pytest glue of ``--memeval-judge-calibration``: runs the calibration once, on the controller
(or the single process), at session start: before any question runs and before xdist starts its
workers (what it does: ``run.calibrate.calibrate_run``). ``=only`` deselects the benchmark's
questions on every process.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..run import CalibrationError, CalibrationSettings, calibrate_run
from ._stash import CALIBRATION_KEY, STATE_KEY

__all__ = ["CalibrationHooks", "calibration_block", "deselect_questions"]


def calibration_block(config: pytest.Config) -> dict[str, Any] | None:
    return config.stash.get(CALIBRATION_KEY, None)


def deselect_questions(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``=only``: the benchmark's questions (built-in items and hand-written cases) do not run."""
    settings = config.stash[STATE_KEY].settings
    calibration: CalibrationSettings | None = settings.checks.calibration
    if calibration is None or calibration.mode != "only":
        return
    from ._items import result_key

    dropped = [item for item in items if result_key(item) is not None]
    if dropped:
        items[:] = [item for item in items if result_key(item) is None]
        config.hook.pytest_deselected(items=dropped)


class CalibrationHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        state = self.config.stash[STATE_KEY]
        try:
            self.config.stash[CALIBRATION_KEY] = calibrate_run(state)
        except CalibrationError as exc:
            raise pytest.UsageError(str(exc)) from None
