"""The run's checks, pytest-free: ``--memeval-fail-under`` gates, the regression comparison
with a saved baseline and the health gate beside it, recorded on the :class:`~pytest_memeval.report._model.Summary` as typed
outcomes. :func:`check_summary` says whether any check failed (the exit status is the glue's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MemevalError, terminal_safe
from ..report import GateOutcome, RegressionOutcome, Summary
from ._gates import check_gates
from ._regression import compare, compare_health, load_baseline

if TYPE_CHECKING:
    from ..run import Settings

__all__ = ["check_summary"]


def check_summary(summary: Summary, settings: Settings) -> bool:
    """Run every configured check on ``summary``, record the outcomes on it; True when one
    failed (a gate, a regression beyond ``--memeval-max-drop``, or an unreadable baseline)."""
    failed = False
    if settings.checks.gates:
        summary.gates = [
            GateOutcome(g.gate.text, g.passed, g.actual, g.message)
            for g in check_gates(list(settings.checks.gates), summary)
        ]
        failed |= any(not g.passed for g in summary.gates)
    if settings.checks.baseline is not None:
        try:
            base = load_baseline(settings.checks.baseline)
        except MemevalError as exc:
            summary.regression_error = str(exc)
            return True
        gated = bool(settings.checks.max_drops)
        for metric, points in settings.checks.max_drops or (("correct", 0.0),):
            try:
                comparisons = compare(
                    summary,
                    base,
                    metric,
                    points,
                    settings.checks.alpha,
                    seed=settings.selection.seed,
                    gated=gated,
                )
            except Exception as exc:  # a failing comparison never costs the reports
                summary.regression_error = _failed(settings, f"comparing {metric}", exc)
                return True
            for c in comparisons:
                summary.regression.append(
                    RegressionOutcome(
                        label=c.label,
                        metric=c.metric,
                        failed=c.failed,
                        message=c.message,
                        details=list(c.details),
                        delta=c.delta,
                        ci=list(c.ci) if c.ci else None,
                        p_value=c.p_value,
                        test=c.test,
                        clusters={"unit": c.cluster_unit, "count": c.clusters},
                        question_test=c.question_test,
                        question_p_value=c.question_p_value,
                        question_failed=c.question_failed,
                        detectable=c.detectable,
                    )
                )
        if gated:
            failed |= any(c.failed for c in summary.regression)
        if settings.checks.health_max_rise is not None:
            # the health gate: on whenever a baseline is given, whatever the scores did
            try:
                health = compare_health(summary, base, settings.checks.health_max_rise)
            except Exception as exc:  # a failing comparison never costs the reports
                summary.regression_error = _failed(settings, "the health gate", exc)
                return True
            for h in health:
                summary.health.append(
                    RegressionOutcome(
                        label=h.label,
                        metric="health",
                        failed=h.failed,
                        message=h.message,
                        details=list(h.details),
                        delta=h.rise,
                    )
                )
                failed |= h.failed
    return failed


def _failed(settings: Settings, what: str, exc: Exception) -> str:
    """The one line a comparison that raised leaves (the reports are still written)."""
    return (
        f"--memeval-baseline {settings.checks.baseline}: {what} failed "
        f"({type(exc).__name__}: {terminal_safe(str(exc), 200)}); the reports are written "
        "without it"
    )
