"""The board's inputs: JSON reports (schema ``pytest-memeval/1``) and run folders
(``<cache>/runs/<run_id>``: ``config.json`` + ``results.jsonl``), read into :class:`Entry`
objects, one per (benchmark, system, flow) of a source.

A run folder whose run id is the ``run_id`` of a report given beside it is attached to that
report's entries (``Entry.folder``: the evidence of the *re-run* tier) instead of being listed a
second time; a run folder alone is an entry of its own, its summary computed by the board.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import FileTooLarge, NotAFile, read_bounded
from ..analysis import (
    add_confidence_intervals,
    aggregate_run,
    benchmark_shape,
    context_figures,
    metric_union,
    percentile,
)
from ..benchmarks import Benchmark, get_benchmark
from ..errors import MemevalError
from ..records import QuestionResult
from ..report import REPORT_SCHEMA, RunSummary, decided_metric
from ..run import CONFIG_FILE, RESULTS_FILE, read_config, read_results

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_REPORT_BYTES",
    "Benchmarks",
    "Entry",
    "RunFolder",
    "folder_provenance",
    "headline_of",
    "load_inputs",
    "query_latency",
    "summarize",
]

#: a report larger than this is refused (docs/board.md#limits)
MAX_REPORT_BYTES = 512 * 1024 * 1024
#: arrays and objects nested deeper than this are refused: a report's own records nest about 6
#: deep; the board's recursive readers (repr, json.dumps) must never meet Python's recursion limit
MAX_JSON_DEPTH = 64
#: the summary keys of a report run that are not metrics
_NOT_METRICS = frozenset({"count", "statuses", "category_id", "shared_category", "scored", "ci"})


@dataclass
class RunFolder:
    """A run folder: its config (``fingerprint``, ``numbers``) and every stored result."""

    path: Path
    config: dict[str, Any]
    results: list[QuestionResult]

    @property
    def run_id(self) -> str:
        return self.path.name


@dataclass
class Entry:
    """One result on the board: a (benchmark, system, flow) of one report or run folder."""

    source: str  # the path as given
    kind: str  # "report" or "run folder"
    run_id: str
    benchmark: str
    system: str
    flow: str
    provenance: dict[str, Any]
    extra: dict[str, Any]
    #: the summary the report states (None for a run folder: the board computes every number)
    reported: dict[str, Any] | None
    #: the stored question records (a report's ``questions``; a folder's results as dicts)
    questions: list[dict[str, Any]]
    results: list[QuestionResult]
    #: the board's own summary from the questions (means, category rows, cluster CIs, latency)
    computed: RunSummary
    folder: RunFolder | None = None
    #: the benchmark's definition (None: not installed here): categories, scorer, rounding
    bench: Benchmark | None = None
    #: the number of runs the report's session held (its cost covers them all)
    session_runs: int = 1
    tags: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.system} / {self.flow}" if self.flow else self.system

    @property
    def ident(self) -> str:
        """A short id unique on the board (file names, anchors): run id + run triple."""
        raw = f"{self.run_id}-{self.benchmark}-{self.system}-{self.flow}"
        safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in raw)
        if safe == raw and len(safe) <= 80:
            return safe
        return f"{safe[:60]}-h{hashlib.sha256(raw.encode()).hexdigest()[:12]}"

    @property
    def metrics(self) -> list[str]:
        return list(self.computed.metrics)

    def headline(self) -> str | None:
        """The metric that decided CORRECT/WRONG in most questions, else the pass metric."""
        found = headline_of(self.results, None)
        if found is not None:
            return found
        by_bench = self.provenance.get("pass_metric")
        if isinstance(by_bench, Mapping) and isinstance(by_bench.get(self.benchmark), str):
            return str(by_bench[self.benchmark])
        return self.metrics[0] if self.metrics else None

    def value(self, row: str, metric: str) -> float | None:
        """The figure the board shows: the report's own (self-reported) one, else computed."""
        if self.reported is not None:
            part = self.reported.get(row)
            if part is None:
                part = (self.reported.get("by_category") or {}).get(row)
            if isinstance(part, Mapping):
                v = part.get(metric)
                return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None
            return None
        summary_row = self.computed.row(row)
        return summary_row.metrics.get(metric) if summary_row is not None else None

    def ci(self, row: str, metric: str) -> list[float] | None:
        summary_row = self.computed.row(row)
        return summary_row.ci.get(metric) if summary_row is not None else None

    def statuses(self) -> dict[str, int]:
        return dict(self.computed.overall_all.statuses)

    def context_tokens(self) -> float | None:
        value = context_figures(self.results)["mean"]
        return float(value) if value is not None else None

    def cost(self) -> float | None:
        cost = self.extra.get("cost_usd")
        if isinstance(cost, Mapping) and isinstance(cost.get("total"), (int, float)):
            return float(cost["total"])
        return None

    def created(self) -> str:
        return str(self.provenance.get("created") or "")

    def commit(self) -> str:
        return str(self.provenance.get("git_commit") or "")


def query_latency(results: Sequence[QuestionResult]) -> dict[str, float | None]:
    """p50 / p95 seconds of one question's search + answer (ingest is per conversation)."""
    values = [
        r.latency.get("search", 0.0) + r.latency.get("answer", 0.0)
        for r in results
        if "search" in r.latency or "answer" in r.latency
    ]
    return {"p50": percentile(values, 50), "p95": percentile(values, 95)}


class Benchmarks(dict[str, "Benchmark | None"]):
    """Benchmarks by name, each resolved once (entry points are slow to list)."""

    def __missing__(self, name: str) -> Benchmark | None:
        try:
            found: Benchmark | None = get_benchmark(name)
        except Exception:  # an unknown benchmark only loses its categories, scorer, rounding
            found = None
        self[name] = found
        return found


def headline_of(results: Sequence[QuestionResult], fallback: str | None) -> str | None:
    """The metric that decided CORRECT/WRONG in most questions (``report.headline``)."""
    found = decided_metric(results)
    return found if found is not None else fallback


def summarize(
    bench: Benchmark | None,
    names: tuple[str, str, str],
    results: list[QuestionResult],
    metrics: Sequence[str] = (),
    seed: int = 0,
) -> RunSummary:
    """The run's tables computed from its questions, as the plugin computes them (same
    aggregation, same cluster-bootstrap intervals and seed); intervals for the headline metric
    only (the board shows no other)."""
    metas, offline, round3 = benchmark_shape(bench)
    chosen = metric_union(results, list(metrics) or offline)
    run = aggregate_run(*names, results, metas, chosen, round3)
    run.cluster_unit = str(getattr(bench, "cluster_unit", "conversation"))
    headline = headline_of(results, chosen[0] if chosen else None)
    add_confidence_intervals(run, [headline] if headline else [], seed=seed, round3=round3)
    return run


def _fail(path: Path, problem: str) -> MemevalError:
    return MemevalError(
        f"memeval-board: {path}: {problem}. Pass JSON reports (--memeval-json=PATH) or run "
        f"folders (<cache>/runs/<run_id> holding {RESULTS_FILE})"
    )


def json_depth(value: Any, limit: int) -> int:
    """How deep ``value``'s arrays and objects nest (a scalar: 0), counted without recursion and
    only up to ``limit + 1``: whether it passes ``limit`` is all a caller needs."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if depth > limit:
            return deepest
        stack.extend((child, depth) for child in children if isinstance(child, (dict, list)))
    return deepest


def _read_report(path: Path) -> dict[str, Any]:
    try:
        raw = read_bounded(path, MAX_REPORT_BYTES)
        data = json.loads(raw)
    except FileTooLarge:
        raise _fail(
            path, f"larger than {MAX_REPORT_BYTES:,} bytes, the board's bound on a report"
        ) from None
    except NotAFile as exc:
        raise _fail(path, str(exc)) from None
    except OSError as exc:
        raise _fail(path, f"cannot read it ({exc.strerror or exc})") from None
    except RecursionError:
        raise _fail(
            path, f"not a report: arrays or objects nested too deeply (at most {MAX_JSON_DEPTH})"
        ) from None
    except MemoryError:
        raise _fail(path, "too large to read into memory") from None
    except ValueError as exc:
        raise _fail(path, f"not JSON ({str(exc)[:200]})") from None
    if json_depth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise _fail(path, f"not a report: arrays or objects nested more than {MAX_JSON_DEPTH} deep")
    if not isinstance(data, dict) or data.get("schema") != REPORT_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise _fail(path, f"schema {schema!r} is not {REPORT_SCHEMA!r}")
    if not isinstance(data.get("runs"), list):
        raise _fail(path, "'runs' must be a list")
    return data


def _metric_order(summary: Mapping[str, Any]) -> list[str]:
    overall = summary.get("overall_all") or summary.get("overall") or {}
    return [k for k in overall if k not in _NOT_METRICS] if isinstance(overall, Mapping) else []


def _report_entries(path: Path, source: str, benches: Benchmarks) -> list[Entry]:
    data = _read_report(path)
    provenance = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
    assert isinstance(provenance, dict) and isinstance(extra, dict)
    seed = provenance.get("seed") if isinstance(provenance.get("seed"), int) else 0
    run_id = str(provenance.get("run_id") or path.stem)
    out = []
    for i, run in enumerate(data["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("questions"), list):
            raise _fail(path, f"runs[{i}] has no 'questions' list")
        summary = run.get("summary") if isinstance(run.get("summary"), dict) else {}
        assert isinstance(summary, dict)
        questions = [q for q in run["questions"] if isinstance(q, dict)]
        try:
            results = [QuestionResult.from_dict(q) for q in questions]
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(path, f"runs[{i}]: a question record lacks {exc}") from None
        bench, system, flow = (
            str(run.get("benchmark")),
            str(run.get("system")),
            str(run.get("flow") or ""),
        )
        computed = summarize(
            benches[bench], (bench, system, flow), results, _metric_order(summary), int(seed or 0)
        )
        out.append(
            Entry(
                source,
                "report",
                run_id,
                bench,
                system,
                flow,
                provenance,
                extra,
                summary,
                questions,
                results,
                computed,
                session_runs=len(data["runs"]),
            )
        )
    return out


def read_folder(path: Path) -> RunFolder:
    if not (path / RESULTS_FILE).is_file():
        raise _fail(path, f"a folder without {RESULTS_FILE}")
    config = read_config(path)
    if config is None:
        raise _fail(path, f"no readable {CONFIG_FILE} (its settings make the comparability key)")
    if json_depth(config, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise _fail(path, f"{CONFIG_FILE} nests arrays or objects more than {MAX_JSON_DEPTH} deep")
    latest = {r.key: r for r in read_results(path)}  # a later line for a question wins
    for r in latest.values():
        if json_depth([r.gold, r.details], MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            raise _fail(
                path,
                f"{RESULTS_FILE}: question {r.question_id[:80]!r} nests arrays or objects more "
                f"than {MAX_JSON_DEPTH} deep",
            )
    return RunFolder(path, config, list(latest.values()))


def folder_provenance(folder: RunFolder) -> dict[str, Any]:
    """What a report's provenance would say, from a run folder's config fingerprint."""
    fp = (
        folder.config.get("fingerprint")
        if isinstance(folder.config.get("fingerprint"), dict)
        else {}
    )
    assert isinstance(fp, dict)
    numbers = folder.config.get("numbers") if isinstance(folder.config.get("numbers"), dict) else {}
    assert isinstance(numbers, dict)
    stamp = folder.run_id[:16]
    created = (
        f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}+00:00"
        if len(stamp) == 16 and stamp[8] == "T" and stamp[:8].isdigit()
        else ""
    )
    datasets = {
        str(b): {"variant": d.get("variant"), "sha256": dict(enumerate(d.get("sha256") or []))}
        for b, d in (fp.get("datasets") or {}).items()
        if isinstance(d, dict)
    }
    return {
        "plugin_version": fp.get("plugin_version"),
        "datasets": datasets,
        "top_k": fp.get("top_k"),
        "answerer": fp.get("answerer"),
        "judge": fp.get("judges") or None,
        "prompt_sha256": fp.get("prompt_sha256") or {},
        "protocol": {"name": numbers.get("--memeval-protocol")}
        if numbers.get("--memeval-protocol")
        else None,
        "limit": fp.get("limit"),
        "sample": fp.get("sample"),
        "seed": fp.get("seed"),
        "context_budget": numbers.get("--memeval-context-budget"),
        "git_commit": folder.config.get("git_commit"),
        "created": created,
        "run_id": folder.run_id,
    }


def _folder_entries(folder: RunFolder, source: str, benches: Benchmarks) -> list[Entry]:
    provenance = folder_provenance(folder)
    groups: dict[tuple[str, str, str], list[QuestionResult]] = {}
    for r in folder.results:
        groups.setdefault(r.run_key, []).append(r)
    seed = provenance.get("seed") if isinstance(provenance.get("seed"), int) else 0
    out = []
    for (bench, system, flow), results in groups.items():
        computed = summarize(benches[bench], (bench, system, flow), results, seed=int(seed or 0))
        out.append(
            Entry(
                source,
                "run folder",
                folder.run_id,
                bench,
                system,
                flow,
                provenance,
                {},
                None,
                [r.to_dict() for r in results],
                results,
                computed,
                folder=folder,
                session_runs=len(groups),
            )
        )
    return out


def load_inputs(paths: Sequence[str | Path]) -> list[Entry]:
    """Every entry of the given reports and run folders (a folder whose run id a given report
    names is attached to that report's entries)."""
    benches = Benchmarks()
    reports: list[Entry] = []
    folders: list[tuple[RunFolder, str]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            folders.append((read_folder(path), str(given)))
        elif path.exists():
            reports.extend(_report_entries(path, str(given), benches))
        else:
            raise _fail(path, "no such file or folder")
    out = list(reports)
    for folder, source in folders:
        attached = [e for e in reports if e.run_id == folder.run_id]
        for entry in attached:
            entry.folder = folder
        if not attached:
            out.extend(_folder_entries(folder, source, benches))
    for entry in out:
        entry.bench = benches[entry.benchmark]
    return out
