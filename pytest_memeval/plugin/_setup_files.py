"""Pytest glue of the session's set-up that reads files before collection: the official
protocol's pinned upstream files, and where a dataset download's progress lines go (split from
``plugin/__init__.py``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["download_lines", "read_protocol"]


def download_lines(config: pytest.Config) -> Callable[[str], None] | None:
    """Where a download's progress lines go: stderr, past pytest's capture (an xdist worker
    says nothing: the controller downloads before the workers start)."""
    if hasattr(config, "workerinput"):
        return None
    capman = config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            sys.stderr.write(f"memeval: {line}\n")
            sys.stderr.flush()

    return say


def read_protocol(config: pytest.Config, settings: Any) -> Any:
    """Read the official protocol's pinned upstream files (UsageError with the fix when they
    cannot be read); warn when the judge or answerer model is not the protocol's."""
    from ..protocols import (
        ProtocolSourceError,
        ProtocolWarning,
        answer_model_warnings,
        check_answer_options,
        dependency_warnings,
        judge_model_warnings,
        pin_warnings,
        prepare_protocol,
    )

    try:
        check_answer_options(
            settings.llm.protocol, settings.llm.answerer, settings.llm.answer_prompt
        )
        loaded = prepare_protocol(
            settings.llm.protocol,
            benchmarks=settings.selection.benchmarks,
            source_dir=settings.llm.protocol_source,
            cache_dir=settings.cache_dir,
        )
    except ProtocolSourceError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not hasattr(config, "workerinput"):
        for message in [
            *pin_warnings(loaded),
            *dependency_warnings(loaded),
            *judge_model_warnings(settings.llm.protocol, settings.llm.judges),
            *answer_model_warnings(settings.llm.protocol, settings.llm.answerer),
        ]:
            config.issue_config_time_warning(ProtocolWarning(message), stacklevel=2)
    return loaded
