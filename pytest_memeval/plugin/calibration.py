"""Pytest glue of ``--memeval-judge-calibration``: runs the calibration once, on the controller
(or the single process), at session start: before any question runs and before xdist starts its
workers. ``=only`` deselects the benchmark's questions on every process.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..errors import MemevalError
from ..run.calibrate import (
    AUDIT_SETS,
    LOCOMO_SHAPED,
    PERTURB,
    CalibrationSettings,
    CaseSet,
    build_cases,
    load_wrong_sets,
    run_calibration,
)
from .keys import CALIBRATION_KEY, STATE_KEY

__all__ = ["CalibrationHooks", "calibration_block", "deselect_questions"]


def calibration_block(config: pytest.Config) -> dict[str, Any] | None:
    return config.stash.get(CALIBRATION_KEY, None)


def deselect_questions(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``=only``: the benchmark's questions (built-in items and hand-written cases) do not run."""
    settings = config.stash[STATE_KEY].settings
    calibration: CalibrationSettings | None = settings.checks.calibration
    if calibration is None or calibration.mode != "only":
        return
    from .items import result_key

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
        settings = state.settings
        calibration = settings.checks.calibration
        assert calibration is not None  # registered only when it is set
        runtime = state.llm
        assert runtime is not None  # calibration needs --memeval-judge, checked with the options
        try:
            wrong_sets = load_wrong_sets(
                calibration, settings.selection.data_dir, settings.cache_dir
            )
        except MemevalError as exc:
            raise pytest.UsageError(f"--memeval-judge-calibration: {exc}") from None
        case_sets: dict[str, CaseSet] = {}
        order: dict[str, list[str]] = {}
        thresholds: dict[str, float] = {}
        for name, bench in state.benchmarks.items():
            dataset = state.datasets[name]
            usable = [
                ws
                for ws in wrong_sets
                if (name == "locomo" if ws.kind in AUDIT_SETS else name in LOCOMO_SHAPED)
            ]
            speakers = [s for c in dataset.conversations.values() for s in c.speakers]
            case_sets[name] = build_cases(
                name,
                state.selected[name],
                dataset.questions,
                perturbations=PERTURB in calibration.sources,
                wrong_sets=usable,
                extra_names=speakers,
            )
            order[name] = [c.name for c in bench.categories.values()]
            thresholds[name] = state.threshold(name)
        for ws in wrong_sets:
            if ws.kind in AUDIT_SETS:
                continue
            missed = [cs.unmatched.get(ws.kind) for cs in case_sets.values()]
            if all(m is None or m == len(ws.answers) for m in missed):
                raise pytest.UsageError(
                    f"--memeval-calibration-wrong={ws.path}: none of its {len(ws.answers)} "
                    "answers matches a loaded question (locomo_<K>_qa<N> must name conversation K "
                    "and question N, from 0, of a LoCoMo-shaped benchmark, with the same question "
                    "text)"
                )
        self.config.stash[CALIBRATION_KEY] = run_calibration(
            runtime,
            case_sets,
            thresholds,
            order,
            settings=calibration,
            wrong_sets=wrong_sets,
        )
