"""The controller's terminal output as lines, pytest-free: the summary, the configuration lines,
where the run is stored. Plain functions over a :class:`TerminalSource` (what the plugin's
controller gathered and built), passed in explicitly; the plugin writes the lines to pytest's
terminal reporter (``plugin/_terminal.py``). Moved out of ``plugin/`` (issue 40)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ._outputs import report_targets
from ._provenance import SessionView, mem0_filing
from ._session import baselines, questions_run

if TYPE_CHECKING:
    from ..report import Summary
    from ._estimate_figures import Estimate
    from ._repeats import Stop

__all__ = [
    "Line",
    "TerminalSource",
    "config_lines",
    "run_lines",
    "stop_lines",
    "summary_lines",
]


@dataclass(frozen=True)
class Line:
    """One line of the terminal summary: a separator line titled ``text`` (``sep``: its
    character) or a line of text with its markup (``red=True``, ...; a false value is none)."""

    text: str
    sep: str | None = None
    markup: Mapping[str, bool] = field(default_factory=dict)


class _Lines:
    """Collects lines with the terminal reporter's two calls."""

    def __init__(self) -> None:
        self.lines: list[Line] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(Line(title, sep=sep))

    def write_line(self, text: str, **markup: bool) -> None:
        self.lines.append(Line(text, markup=markup))


class TerminalSource(SessionView, Protocol):
    """What the terminal summary reads of the session (the controller holds it)."""

    @property
    def summary(self) -> Summary | None: ...

    @property
    def report_errors(self) -> Sequence[tuple[Path, str]]: ...

    @property
    def batch_lines(self) -> Sequence[str]: ...

    @property
    def pruned(self) -> Sequence[Path]: ...

    @property
    def estimate(self) -> Estimate | None: ...

    @property
    def stops(self) -> Mapping[Stop, int]: ...


def run_lines(src: TerminalSource) -> list[str]:
    """Where this run's results are, how to continue it, what was pruned."""
    if src.store is None:
        return []
    run_id = src.store.run_id
    lines = [
        f"memeval: run {run_id} stored in {src.store.folder.resolve()} "
        f"(continue it with --memeval-resume={run_id})"
    ]
    if src.pruned:
        keep = src.state.settings.run.keep_runs
        lines.append(
            f"memeval: removed {len(src.pruned)} older run folder(s) "
            f"(--memeval-keep-runs={keep} keeps the newest {keep}; 0 keeps all)"
        )
    return lines


def config_lines(src: TerminalSource) -> list[str]:
    state = src.state
    s = state.settings
    parts = []
    for name, ds in state.datasets.items():
        digest = next(iter(ds.sha256.values()), "")[:12]
        variant = f" variant={ds.variant}" if ds.variant else ""
        parts.append(
            f"{name}{variant}: {questions_run(state, src.summary, name)}/{len(ds.questions)} "
            f"questions, sha256 {digest}…"
        )
    selection = []
    if s.selection.limit:
        selection.append(f"limit {s.selection.limit}/conversation")
    if s.selection.sample:
        selection.append(f"sample {s.selection.sample}/category seed {s.selection.seed}")
    styles = state.llm.styles(list(state.benchmarks)) if state.llm is not None else {}

    judge_metrics = state.llm.judge_metrics(list(state.benchmarks)) if state.llm else {}

    def rule(b: str, metric: str) -> str:
        if b not in styles:
            return f"{b}: {metric} >= {state.threshold(b)}"
        key = judge_metrics[b]
        return (
            f"{b}: {key} >= {state.threshold(b)} ({styles[b]} judge decides; "
            f"{metric} where it does not judge)"
        )

    rules = ", ".join(rule(b, bench.pass_metric) for b, bench in state.benchmarks.items())
    if state.protocol is not None:
        p = state.protocol.profile
        rules += f"; protocol {p.name} ({p.repo}@{p.commit[:12]})"
    ingests = ", ".join(f"{k} {v}" for k, v in sorted(src.merged()["ingests"].items()))
    llm_line = []
    llm = src.summary.llm if src.summary is not None else None
    if s.llm.judges:
        llm_line.append(
            f"  judges: {', '.join(s.llm.judges)} (style "
            f"{', '.join(sorted(set(styles.values()))) or s.llm.judge_style or 'per benchmark'}); "
            f"unscored {llm.judge_unscored if llm else 0}, warnings "
            f"{llm.judge_warnings if llm else 0}"
        )
    filing = mem0_filing(state, src.results)
    if filing is not None:
        filed = filing[1]
        llm_line.append(
            f"  answers: Mem0's ANSWER_PROMPT request ({filed['answers']} answers); "
            f"{filed['unattributed_memories']} of {filed['memories']} memories without a "
            f"known speaker (filed under the first speaker), {filed['untimed_memories']} "
            "without a timestamp"
        )
    if llm is not None:
        per_role = []
        for role, models in sorted(llm.tokens.items()):
            tin = sum(int(m.get("input_tokens", 0)) for m in models.values())
            tout = sum(int(m.get("output_tokens", 0)) for m in models.values())
            calls = sum(int(m.get("calls", 0)) for m in models.values())
            per_role.append(f"{role} {calls} calls {tin} in / {tout} out tokens")
        llm_line.append(
            f"  llm cache: {llm.cache.get('hits', 0)} hits, {llm.cache.get('misses', 0)} "
            "misses; " + ("; ".join(per_role) or "no calls")
        )
        for label, roles in sorted((src.merged().get("imported") or {}).items()):
            llm_line.append(
                f"  llm cache import {label}: {roles.get('judge', 0)} verdicts, "
                f"{roles.get('answerer', 0)} answers served from it (not asked here)"
            )
        verify = src.import_verify
        if verify is not None:
            llm_line.append(
                f"  llm cache import verify: {verify['asked']} of {verify['imported']} "
                f"imported verdicts re-asked (seed {verify['seed']}), "
                f"{verify['disagree']} disagree"
                + (": " + "; ".join(verify["rows"][:3]) if verify["rows"] else "")
            )
        for line in llm.limiter:
            llm_line.append(f"  llm rate limiter: {line}")
        for off in llm.cache_off:
            llm_line.append(
                f"  llm cache OFF in a process ({off}): its calls were not cached; delete "
                "the file or fix the folder, or run with --memeval-no-cache"
            )
        if llm.cost_usd is not None:
            total = llm.cost_usd["total"]
            llm_line.append(
                "  cost: "
                + ("unknown (a model has no price)" if total is None else f"${total:.4f}")
            )
        if llm.judge_agreement is not None:
            llm_line.append(
                "  judge agreement (Cohen's kappa): "
                + ", ".join(
                    f"{k} = {'-' if v is None else f'{v:.3f}'}"
                    for k, v in llm.judge_agreement.items()
                )
            )
    lines = [
        "configuration: " + "; ".join(parts),
        f"  systems: {', '.join(s.selection.systems)}; top-k: {', '.join(map(str, s.selection.top_k))}; "
        f"answerer: {state.answerer.label if state.answerer else s.llm.answerer}",
        f"  pass rule: {rules}{'; strict' if s.run.strict else ''}"
        + (f"; selection: {', '.join(selection)}" if selection else ""),
        f"  ingests: {ingests or 'none'}; collection {state.collect_seconds:.2f}s",
        *llm_line,
    ]
    return lines


def stop_lines(src: TerminalSource) -> list[str]:
    """One line per memory system stopped after repeated identical errors (per process that
    stopped it: under xdist each worker counts its own), instead of one per question."""
    limit = src.state.settings.run.max_repeated_errors
    return [
        f"memeval: {stop.system} failed with the same error {stop.after} times in a row "
        f"({stop.error}), the first at {stop.first}: its {n} other question(s) there were not "
        f"run and are reported as ERROR (--memeval-max-repeated-errors={limit}; 0 never stops)"
        for stop, n in src.stops.items()
    ]


def summary_lines(src: TerminalSource, verbose: bool) -> list[Line]:
    """What the controller's ``pytest_terminal_summary`` writes, in order (``verbose``: ``-v``
    was given, every WRONG answer is shown)."""
    state = src.state
    tr = _Lines()
    if src.estimate is not None:
        tr.write_sep("=", "memeval estimate")
        priced = state.settings.llm.prices is not None
        for line in src.estimate.lines(priced=priced):
            tr.write_line(line)
        for line in stop_lines(src):
            tr.write_line(line, red=True)
        return tr.lines

    from ..report import render_summary, render_wrong

    summary = src.summary
    if summary is None:
        return tr.lines
    tr.write_sep("=", "memeval summary")
    settings = state.settings
    for line in src.batch_lines:
        tr.write_line(f"memeval {line}")
    for line in render_summary(summary, baselines(state, summary), config_lines(src)):
        tr.write_line(line)
    wrong_limit = None if verbose else settings.run.show_wrong
    wrong = render_wrong([r for run in summary.runs for r in run.results], wrong_limit)
    if wrong and (wrong_limit is None or wrong_limit > 0):
        tr.write_sep("-", "WRONG answers")
        for line in wrong:
            tr.write_line(line)
    if summary.judge_calibration is not None:
        from ..report import terminal_lines

        tr.write_sep("-", "judge calibration")
        for line in terminal_lines(summary.judge_calibration):
            tr.write_line(line)
    for reg in [*summary.regression, *summary.health]:
        tr.write_line("memeval: " + reg.message, red=reg.failed)
        for line in reg.details:
            tr.write_line("    " + line)
    if summary.regression_error is not None:
        tr.write_line(f"memeval: regression FAILED: {summary.regression_error}", red=True)
    if src.lost:
        crashed = sum(1 for x in src.lost if x["crashed"])
        tr.write_line(
            f"memeval: {len(src.lost)} question(s) produced no result of their own and are "
            f"counted as ERROR ({crashed} crashed their worker): "
            + "; ".join(f"{x['nodeid']}: {x['reason'][:160]}" for x in src.lost[:5])
            + (" ..." if len(src.lost) > 5 else ""),
            red=True,
        )
    for line in stop_lines(src):
        tr.write_line(line, red=True)
    if src.rescored:
        tr.write_line(
            f"memeval: {len(src.rescored)} stored result(s) did not match their re-computed "
            "scores and were re-scored from the stored prediction and the dataset's gold: "
            + "; ".join(src.rescored[:3])
            + (" ..." if len(src.rescored) > 3 else ""),
            yellow=True,
        )
    if src.duplicates:
        shown = ", ".join("/".join(k) for k in src.duplicates[:3])
        tr.write_line(
            f"memeval: {len(src.duplicates)} result(s) arrived twice for the same "
            f"(benchmark, system, flow, question): {shown}; the later one is kept",
            yellow=True,
        )
    for gate in summary.gates:  # one line each, passed or not: a passing gate shows its value
        if gate.passed:
            tr.write_line(gate.message, green=True)
        else:
            tr.write_line(gate.message, red=True)
    for line in run_lines(src):
        tr.write_line(line)
    failed_paths = {path for path, _ in src.report_errors}
    for label, path in report_targets(settings):
        if path is not None and path not in failed_paths:
            tr.write_line(f"memeval: {label} written to {path}")
    for _, line in src.report_errors:
        tr.write_line(line, red=True)
    return tr.lines
