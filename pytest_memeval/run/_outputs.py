"""What a run puts out, pytest-free: a result as report properties, each process's output
(ingests, LLM cache, tokens) merged over the processes, and the report files (JSON, Markdown,
HTML, baseline, board, GitHub step summary). Moved out of ``plugin/`` (issues 26 and 40)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..analysis import Baseline
    from ..report import Summary
    from ._settings import Settings
    from ._state import RunState

#: ``board.site.add_to_board``'s shape: (board folder, the JSON report, its provenance, the run
#: folder, the data folder)
BoardWriter = Callable[[Path, str, Mapping[str, Any], Path | None, Path | None], object]

__all__ = [
    "PROPERTY_NAME",
    "STOPPED_PROPERTY",
    "BoardWriter",
    "flat_properties",
    "merge_outputs",
    "report_targets",
    "session_outputs",
    "worker_output",
    "write_reports",
]


PROPERTY_NAME = "memeval"
#: the report property of a question not run because its system stopped after repeated identical
#: errors (``run.repeats``): the stop as a dict on the wire, its first failing node id once the
#: controller read it (what JUnit shows)
STOPPED_PROPERTY = "memeval.stopped"


def flat_properties(result: Mapping[str, Any]) -> list[tuple[str, object]]:
    """A result dict as the flat ``memeval.status`` / ``memeval.<metric>`` report properties."""
    props: list[tuple[str, object]] = [("memeval.status", str(result.get("status")))]
    for metric, score in (result.get("scores") or {}).items():
        props.append((f"memeval.{metric}", score))
    return props


def worker_output(state: RunState) -> dict[str, Any]:
    """What one process reports to the controller at the end (plain JSON-compatible data)."""
    out: dict[str, Any] = {"ingests": dict(state.pool.ingests)}
    if state.llm is not None:
        out.update(state.llm.output())
    return out


def session_outputs(
    state: RunState, worker_outputs: Sequence[dict[str, Any]], controller_called: bool
) -> list[dict[str, Any]]:
    """Every process's output: the xdist workers' (none without xdist: then this process's own),
    and the controller's LLM calls when it made some beside the workers (``controller_called``:
    the calibration's or the batch's judge calls), without its ingests (it ran no question)."""
    outputs = list(worker_outputs) or [worker_output(state)]
    if worker_outputs and controller_called:
        outputs.append(worker_output(state) | {"ingests": {}})
    return outputs


def merge_outputs(outputs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from ..llm import TokenAccounting

    ingests: dict[str, int] = {}
    cache: dict[str, int] = {}
    cache_off: list[str] = []
    limiter: list[str] = []
    tokens = TokenAccounting()
    warnings = unscored = 0
    imported: dict[str, dict[str, int]] = {}
    for out in outputs:
        for label, roles in (out.get("imported") or {}).items():
            into = imported.setdefault(str(label), {})
            for role, n in roles.items():
                into[str(role)] = into.get(str(role), 0) + int(n)
        cache_off += [str(x) for x in out.get("cache_off") or () if str(x) not in cache_off]
        for line in out.get("limiter") or ():  # each process says it; the run says it once
            if str(line) not in limiter:
                limiter.append(str(line))
        for system, n in (out.get("ingests") or {}).items():
            ingests[system] = ingests.get(system, 0) + int(n)
        for key, n in (out.get("cache") or {}).items():
            if isinstance(n, (int, float)):
                cache[key] = cache.get(key, 0) + int(n)
        if out.get("tokens"):
            tokens.merge(out["tokens"])
        warnings += int(out.get("judge_warnings", 0))
        unscored += int(out.get("judge_unscored", 0))
    return {
        "ingests": ingests,
        "cache": cache,
        "cache_off": cache_off,
        "limiter": limiter,
        "tokens": tokens.to_dict(),
        "judge_warnings": warnings,
        "judge_unscored": unscored,
        "imported": imported,
    }


def report_targets(settings: Settings) -> list[tuple[str, Path | None]]:
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
    settings: Settings,
    run_folder: Path | None = None,
    add_to_board: BoardWriter | None = None,
) -> list[tuple[Path, str]]:
    """Write every report asked for. One that fails (disk full, folder removed meanwhile, a
    renderer bug) never stops the others: each failure is (its path, one line) in the list.
    ``add_to_board``: what ``--memeval-board`` calls (``board.site.add_to_board``, a layer above
    this one: the caller passes it; None: no board is written)."""
    from ..analysis import save_baseline
    from ..report import summary_json, write_json, write_text_atomic

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
            from ..report import render_markdown

            markdown = render_markdown(summary, baselines)
        return markdown

    def html(path: Path) -> None:
        from ..report import render_html

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
        assert add_to_board is not None  # the board path is written only with a board writer
        add_to_board(
            path,
            summary_json(summary) + "\n",
            summary.provenance,
            run_folder,
            settings.selection.data_dir,
        )

    board_path = settings.reports.board_path if add_to_board is not None else None
    attempt("board", "--memeval-board", board_path, board)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    attempt("step summary", "GITHUB_STEP_SUMMARY", Path(step) if step else None, step_summary)
    return errors
