"""Session end: the report files (JSON, Markdown, HTML, GitHub step summary, board) and the exit
status of a resumed run. Moved out of ``controller.py`` verbatim (issue 26)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..analysis.baselines import Baseline
    from ..report.model import Summary
    from ..run.state import RunState


def resumed_exit_status(session: pytest.Session, state: RunState, restored: bool) -> None:
    """Resuming a finished run deselects every item: pytest would exit 5 (no tests ran), yet the
    stored results are reported. That is a complete run: exit status OK."""
    if (
        state.settings.run.resume is not None
        and restored
        and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        session.exitstatus = pytest.ExitCode.OK


def _report_targets(settings: Any) -> list[tuple[str, Path | None]]:
    """(label, path) of every report file the settings ask for, as the terminal names them."""
    return [
        ("JSON report", settings.reports.json_path),
        ("HTML report", settings.reports.html_path),
        ("Markdown summary", settings.reports.markdown_path),
        ("baseline", settings.checks.save_baseline),
    ]


def write_reports(
    summary: Summary,
    baselines: dict[str, list[Baseline]],
    settings: Any,
    run_folder: Path | None = None,
) -> list[tuple[Path, str]]:
    """Write every report asked for. One that fails (disk full, folder removed meanwhile, a
    renderer bug) never stops the others: each failure is (its path, one line) in the list."""
    from ..analysis.regression import save_baseline
    from ..report.json_report import summary_json, write_json, write_text_atomic

    errors: list[tuple[Path, str]] = []
    markdown: str | None = None

    def attempt(label: str, option: str, path: Path | None, write: Any) -> None:
        if path is None:
            return
        try:
            write(path)
        except Exception as exc:  # reported, never raised: the other reports still get written
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            errors.append((path, f"memeval: {label} NOT written ({option}={path}): {reason}"))

    def markdown_text() -> str:
        nonlocal markdown
        if markdown is None:
            from ..report.markdown import render_markdown

            markdown = render_markdown(summary, baselines)
        return markdown

    def html(path: Path) -> None:
        from ..report.html import render_html

        write_text_atomic(path, render_html(summary, baselines))

    def step_summary(path: Path) -> None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown_text() + "\n")

    attempt(
        "JSON report",
        "--memeval-json",
        settings.reports.json_path,
        lambda p: write_json(summary, p),
    )
    attempt(
        "baseline",
        "--memeval-save-baseline",
        settings.checks.save_baseline,
        lambda p: write_text_atomic(p, json.dumps(save_baseline(summary), indent=1)),
    )
    attempt("HTML report", "--memeval-html", settings.reports.html_path, html)
    attempt(
        "Markdown summary",
        "--memeval-markdown",
        settings.reports.markdown_path,
        lambda p: write_text_atomic(p, markdown_text()),
    )

    def board(path: Path) -> None:
        from ..board.site import add_to_board

        add_to_board(
            path,
            summary_json(summary) + "\n",
            summary.provenance,
            run_folder,
            settings.selection.data_dir,
        )

    attempt("board", "--memeval-board", settings.reports.board_path, board)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    attempt("step summary", "GITHUB_STEP_SUMMARY", Path(step) if step else None, step_summary)
    return errors
