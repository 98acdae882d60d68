"""Pytest glue for pytest-html (registered only when it is active): the per-category tables go into
its summary, the status and score of each question into its results table."""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["PytestHtmlHooks"]


class PytestHtmlHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: Any
    ) -> None:
        from ..report import summary_tables
        from ..run import build_summary
        from ._stash import CONTROLLER_KEY

        controller = self.config.stash.get(CONTROLLER_KEY, None)
        if controller is None or not controller.results:
            return
        current = controller.summary or build_summary(controller)
        postfix.append(summary_tables(current))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, "<th>memeval</th>")

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        from ..report import esc

        parts = []
        for name, value in getattr(report, "user_properties", []):
            if isinstance(name, str) and name.startswith("memeval."):
                shown = f"{value:.3f}" if isinstance(value, float) else value
                parts.append(f"{name.removeprefix('memeval.')}={shown}")
        cells.insert(2, f"<td>{esc(' '.join(parts))}</td>")
