"""The controller's terminal output: the lines ``run.session_lines`` builds, written to pytest's
terminal reporter."""

from __future__ import annotations

from typing import Any

import pytest

from ..run import TerminalSource, summary_lines

__all__ = ["write_terminal_summary"]


def write_terminal_summary(
    terminalreporter: Any, config: pytest.Config, src: TerminalSource
) -> None:
    """The body of the controller's ``pytest_terminal_summary``."""
    for line in summary_lines(src, verbose=config.get_verbosity() > 0):
        if line.sep is not None:
            terminalreporter.write_sep(line.sep, line.text)
        else:
            terminalreporter.write_line(line.text, **line.markup)
