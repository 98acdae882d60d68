"""The board's pages: ``index.html`` (every comparability key: the systems table, published
baselines, Pareto charts, history, diff links), ``run-<id>.html`` (one result's questions and its
verification) and ``diff-<a>--<b>.html`` (two runs question by question, with the regression
gate's paired test).

Each page is ``templates/html/board.html.j2`` (the report's stylesheet, then ``board.css``; the
index's script ``board.js``). Safety is the HTML report's (``report/_pages.py``): every string from
a report is escaped, the script's data travels through ``json_for_script`` and the script writes
with ``textContent`` only, each page carries the same Content-Security-Policy (no network, only its
one inline script by hash), and no page links to anything outside the board's folder.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import (
    Comparison,
    RunProtocol,
    baselines_for,
    compare_questions,
    mark_comparability,
    questions_from_report,
)
from ..errors import MemevalError
from ..records import STATUS_CORRECT, STATUS_WRONG, STATUSES, QuestionResult
from ..report import (
    HEADLINE_ROW,
    HistoryPoint,
    Markup,
    ScatterPoint,
    Table,
    baselines_table,
    content_security_policy,
    fmt_num,
    fmt_seconds,
    fmt_tokens,
    history_chart,
    inline,
    render_page,
    render_table,
    run_table,
    scatter_chart,
    script_json,
    write_text_atomic,
)
from ._comparability import KEY_FIELDS, Key, differences, entry_key, group_by_key, headings, key_id
from ._load import Entry, load_inputs, query_latency
from ._verify import TIERS, Verification, verify_entries

__all__ = [
    "CONTROL_SYSTEMS",
    "PICKS",
    "BoardOutput",
    "add_to_board",
    "build_board",
    "headline_value",
    "write_board",
    "write_diff",
]

#: the built-in controls: every claim is read against them
CONTROL_SYSTEMS: Mapping[str, str] = {
    "no-memory": "control: no memory (floor)",
    "full-context": "control: the whole history (no retrieval)",
    "oracle": "control: the evidence turns (retrieval ceiling)",
}
#: which run of a system its row shows: ``latest`` (provenance ``created``) or ``best``
PICK_LATEST, PICK_BEST = "latest", "best"
PICKS = (PICK_LATEST, PICK_BEST)
_PICK_TEXT = {
    PICK_LATEST: "latest run (by recorded time)",
    PICK_BEST: "best run (highest headline metric)",
}
_QUESTION_TEXT = 600


@dataclass
class BoardOutput:
    """What ``write_board`` wrote: the folder, the pages and the index page's size."""

    folder: Path
    pages: list[Path] = field(default_factory=list)
    index_bytes: int = 0
    entries: int = 0
    keys: int = 0


def _page(
    title: str,
    body: str = "",
    script: Markup | None = None,
    data: object = None,
    template: str = "board.html.j2",
    **context: object,
) -> str:
    """A board page: ``template`` (``board.html.j2`` or one extending it) with ``body`` or its
    own ``context``; ``script``, when given, runs over ``data`` and is the policy's one script."""
    return render_page(
        template,
        csp=content_security_policy(script or ""),
        title=title,
        body=Markup(body),
        data=script_json(data) if script is not None else None,
        script=script,
        **context,
    )


def _ci_text(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f} ms"


def run_page_name(entry: Entry) -> str:
    return f"run-{entry.ident}.html"


def diff_page_name(a: Entry, b: Entry) -> str:
    return f"diff-{a.ident}--{b.ident}.html"


def _order(entries: Sequence[Entry]) -> list[Entry]:
    """Oldest first (provenance ``created``, then run id)."""
    return sorted(entries, key=lambda e: (e.created(), e.run_id))


def headline_value(entry: Entry, metric: str | None) -> float | None:
    """The headline figure of a result: ``metric`` over its ``overall`` row (the categories the
    benchmark's overall counts: LoCoMo leaves out category 5), the report's own figure. The index,
    the charts and the diff pages all quote this one (``report.headline``, as the scoreboard and
    the gates)."""
    return entry.value(HEADLINE_ROW, metric) if metric else None


def _by_label(entries: Sequence[Entry]) -> dict[str, list[Entry]]:
    """Each system's results, oldest first."""
    out: dict[str, list[Entry]] = {}
    for e in _order(entries):
        out.setdefault(e.label, []).append(e)
    return out


@dataclass
class _Key:
    key: Key
    entries: list[Entry]
    metric: str | None
    categories: list[str]
    pick: str = PICK_LATEST
    #: the run each system's row shows (by label)
    shown: dict[str, Entry] = field(default_factory=dict)
    #: one row per system, ranked by the headline metric, best first
    rows: list[Entry] = field(default_factory=list)

    @property
    def kid(self) -> str:
        return key_id(self.key)


def _pick(
    runs: Sequence[Entry], pick: str, metric: str | None, partial: frozenset[str] = frozenset()
) -> Entry:
    """The run a system's row shows: its latest, or its best (a tie goes to a full run over a
    partial one (``partial``: their ids), then to the later run; no value: the latest)."""
    if pick != PICK_BEST:
        return runs[-1]
    order = list(enumerate(runs))
    best = max(
        order,
        key=lambda ie: (
            _sort_value(headline_value(ie[1], metric)),
            ie[1].ident not in partial,
            ie[0],
        ),
    )
    return best[1]


def _sort_value(value: float | None) -> float:
    return value if value is not None else -math.inf


def _key_view(
    key: Key, entries: list[Entry], pick: str = PICK_LATEST, partial: frozenset[str] = frozenset()
) -> _Key:
    heads = [e.headline() for e in entries]
    metric = max(set(h for h in heads if h), key=heads.count, default=None)
    categories: list[str] = []
    for e in entries:
        for row in e.computed.categories:
            if row.key not in categories:
                categories.append(row.key)
    view = _Key(key, entries, metric, categories, pick)
    view.shown = {
        label: _pick(runs, pick, metric, partial) for label, runs in _by_label(entries).items()
    }
    view.rows = sorted(
        view.shown.values(),
        key=lambda e: (-_sort_value(headline_value(e, metric)), e.label, e.created()),
    )
    return view


def _history_anchor(view: _Key, label: str) -> str:
    return f"{view.kid}-h{hashlib.sha256(label.encode()).hexdigest()[:10]}"


def _system_head(view: _Key) -> list[str]:
    """The systems table's header (the first cell and those from the headline on: numeric)."""
    metric = view.metric or "-"
    return [
        "#",
        "system",
        "run",
        "date",
        "commit",
        "tier",
        f"{metric} (overall) [95% cluster CI]",
        "n",
        *[f"{c}: {metric}" for c in view.categories],
        *[s.lower() for s in STATUSES],
        "mean context tokens",
        "p50 latency",
        "p95 latency",
        "cost (USD)",
    ]


def _system_rows(view: _Key, tiers: Mapping[str, Verification]) -> list[dict[str, object]]:
    """One row per system, ranked: the figures of the run it shows."""
    runs_of = _by_label(view.entries)
    metric = view.metric
    rows: list[dict[str, object]] = []
    for rank, e in enumerate(view.rows, 1):
        statuses = e.statuses()
        lat = query_latency(e.results)
        cost = e.cost()
        cost_text = "-" if cost is None else f"{cost:.4f}"
        if cost is not None and e.session_runs > 1:
            cost_text += f" (session of {e.session_runs} runs)"
        overall = e.computed.row("overall")
        tokens = e.context_tokens()
        rows.append(
            {
                "rank": rank,
                "e": e,
                "v": tiers[e.ident],
                "page": run_page_name(e),
                "control": CONTROL_SYSTEMS.get(e.system),
                "others": len(runs_of[e.label]) - 1,
                "anchor": _history_anchor(view, e.label),
                "value": headline_value(e, metric),
                "ci": e.ci("overall", metric) if metric else None,
                "n": overall.count if overall else 0,
                "categories": [
                    (e.value(c, metric), e.ci(c, metric)) if metric else (None, None)
                    for c in view.categories
                ],
                "statuses": [statuses.get(s, 0) for s in STATUSES],
                "tokens": "-" if tokens is None else f"{tokens:.1f}",
                "p50": _seconds(lat["p50"]),
                "p95": _seconds(lat["p95"]),
                "cost": cost_text,
            }
        )
    return rows


def _run_protocol(entry: Entry) -> RunProtocol:
    p = entry.provenance
    protocol = p.get("protocol")
    styles = p.get("judge_style")
    judges = p.get("judge")
    model = None
    if isinstance(judges, list) and judges:
        model = str(judges[0]).partition(":")[2] or None
    return RunProtocol(
        metrics=frozenset(entry.metrics),
        protocol=str(protocol.get("name")) if isinstance(protocol, Mapping) else None,
        judge_style=str(styles.get(entry.benchmark))
        if isinstance(styles, Mapping) and styles.get(entry.benchmark)
        else None,
        judge_model=model,
    )


def _baselines(view: _Key) -> Table | None:
    """The shown run of each system beside the published figures of the benchmark."""
    runs = [e.computed for e in view.rows]
    first = view.entries[0]
    variant = None
    datasets = first.provenance.get("datasets")
    if isinstance(datasets, Mapping) and isinstance(datasets.get(first.benchmark), Mapping):
        variant = datasets[first.benchmark].get("variant")
    listed = mark_comparability(
        baselines_for(first.benchmark, ("all",), variant=variant), _run_protocol(first)
    )
    return baselines_table(runs, listed)


def _paretos(view: _Key) -> list[Markup]:
    """The headline metric against mean context tokens and against p50 latency."""
    if view.metric is None:
        return []
    tokens = [
        ScatterPoint(e.label, e.context_tokens(), headline_value(e, view.metric)) for e in view.rows
    ]
    latency = [
        ScatterPoint(e.label, query_latency(e.results)["p50"], headline_value(e, view.metric))
        for e in view.rows
    ]
    return [
        Markup(
            scatter_chart(
                f"{view.metric} vs mean context tokens",
                tokens,
                "mean context tokens",
                view.metric,
                fmt_tokens,
            )
        ),
        Markup(
            scatter_chart(
                f"{view.metric} vs p50 latency",
                latency,
                "p50 search+answer latency",
                view.metric,
                fmt_seconds,
            )
        ),
    ]


def _history(view: _Key) -> list[dict[str, object]]:
    """Per system with two or more runs in the key: the runs oldest first (all overall
    metrics, with CIs) and a line of the headline metric with its intervals."""
    out: list[dict[str, object]] = []
    for label, runs in _by_label(view.entries).items():
        if len(runs) < 2:
            continue
        chart = ""
        if view.metric:
            points = [
                HistoryPoint(
                    e.run_id,
                    e.created(),
                    e.commit(),
                    e.value("overall", view.metric),
                    e.ci("overall", view.metric),
                )
                for e in runs
            ]
            chart = history_chart(label, points, view.metric)
        out.append(
            {
                "label": label,
                "anchor": _history_anchor(view, label),
                "runs": runs,
                "metrics": list(dict.fromkeys(m for e in runs for m in e.metrics)),
                "shown": view.shown[label],
                "chart": Markup(chart),
            }
        )
    return out


def _diff_pairs(every: _Key, ranked: _Key) -> list[tuple[Entry, Entry]]:
    """Linear in the results: each run against its system's previous run (history order, every
    result of the key), and each ranked system's row against the key's best ranked row (from the
    best to it; a result shown apart is never the best). Any other pair on demand:
    ``memeval-board ... --diff A B``."""
    pairs: list[tuple[Entry, Entry]] = []
    for runs in _by_label(every.entries).values():
        pairs.extend(itertools.pairwise(runs))
    best = ranked.rows[0] if ranked.rows else None
    if best is not None and headline_value(best, ranked.metric) is not None:
        pairs.extend((best, e) for e in ranked.rows[1:])
    return pairs


def _key_fields(key: Key) -> list[tuple[str, str]]:
    labels = dict(KEY_FIELDS)
    return [(labels[name], value) for name, value in key]


def _flips(a: Entry, b: Entry) -> list[tuple[QuestionResult, QuestionResult]]:
    before = {r.question_id: r for r in a.results}
    out = []
    for r in b.results:
        old = before.get(r.question_id)
        if old is not None and {old.status, r.status} == {STATUS_CORRECT, STATUS_WRONG}:
            out.append((old, r))
    return out


def _overall_categories(entry: Entry) -> set[str]:
    """The categories the result's ``overall`` row counts (LoCoMo: 1-4, not the adversarial 5)."""
    return {row.key for row in entry.computed.categories if row.in_overall}


def _headline_rows(
    a: Entry, b: Entry, metric: str
) -> list[tuple[str, Entry, float | None, str, int]]:
    """The two results' headline figures exactly as the index shows them (:func:`headline_value`
    over ``overall``, its cluster CI, its n): (side, result, value, interval, n)."""
    rows = []
    for side, e in (("from", a), ("to", b)):
        overall = e.computed.row("overall")
        ci = _ci_text(e.ci("overall", metric))
        rows.append((side, e, headline_value(e, metric), ci, overall.count if overall else 0))
    return rows


def _p_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _diff_page(a: Entry, b: Entry, metric: str | None, note: str = "") -> str:
    comparison: Comparison | None = None
    counted = _overall_categories(b)
    if metric is not None and b.results:
        bench_round3 = tuple(getattr(b.bench, "round3_metrics", ()))
        # the paired test over the headline's questions: the categories overall counts
        comparison = compare_questions(
            [r for r in b.results if r.category in counted],
            questions_from_report([q for q in a.questions if q.get("category") in counted]),
            metric,
            unit=b.computed.cluster_unit,
            round3=metric in bench_round3,
        )
    flips = _flips(a, b)
    by_cat: dict[str, list[int]] = {}
    by_conv: dict[str, list[int]] = {}
    for _old, new in flips:
        slot = 0 if new.status == STATUS_WRONG else 1
        by_cat.setdefault(new.category, [0, 0])[slot] += 1
        by_conv.setdefault(new.conversation_id, [0, 0])[slot] += 1
    va, vb = (headline_value(a, metric), headline_value(b, metric)) if metric else (None, None)
    return _page(
        f"Diff: {a.label} → {b.label}",
        template="board_diff.html.j2",
        a=a,
        b=b,
        page_a=run_page_name(a),
        page_b=run_page_name(b),
        note=note,
        metric=metric,
        headline=_headline_rows(a, b, metric) if metric else [],
        change="-" if va is None or vb is None else fmt_num(vb - va, 4),
        comparison=comparison,
        counted=", ".join(sorted(counted)) or "-",
        delta_ci=_ci_text(comparison.ci) if comparison else "",
        p_value=_p_text(comparison.p_value) if comparison else "",
        question_p_value=_p_text(comparison.question_p_value) if comparison else "",
        flips=flips,
        flip_counts=[("category", by_cat), ("conversation", by_conv)],
        wrong=STATUS_WRONG,
    )


def _apart_value(e: Entry) -> float | None:
    """A result shown apart: its own headline metric over ``overall`` (not ranked)."""
    metric = e.headline()
    return e.value("overall", metric) if metric else None


def _apart_reasons(v: Verification) -> list[str]:
    return [*v.set_problems, *(f"partial run: {reason}" for reason in v.partial)]


def _question_set_line(v: Verification) -> str:
    """The run page's question-set check (its partial-run reasons follow: why it is apart)."""
    check = v.question_set
    if check is not None and check.complete:
        return (
            f"Question set: the {check.expected} selected question(s), each held once "
            "(checked against the dataset)."
        )
    if check is not None:
        return f"Question set: {check.held} record(s) held against {check.expected} selected."
    return "Question set: not verified."


def _verdicts(result: QuestionResult) -> list[tuple[str, object]]:
    """The judge's verdicts and reasons among a question's details."""
    return [(k, v) for k, v in result.details.items() if "judge" in k or "verdict" in k]


def _run_page(entry: Entry, v: Verification, key: Key) -> str:
    return _page(
        f"{entry.benchmark} · {entry.label} · {entry.run_id}",
        template="board_run.html.j2",
        entry=entry,
        v=v,
        key_id=key_id(key),
        fields=_key_fields(key),
        question_set=_question_set_line(v),
        apart_reasons=_apart_reasons(v),
        tables=Markup(render_table(run_table(entry.computed))),
        metric=entry.headline(),
        limit=_QUESTION_TEXT,
        verdicts_of=_verdicts,
    )


def write_board(
    entries: Sequence[Entry],
    out_dir: Path,
    data_dir: Path | None = None,
    pick: str = PICK_LATEST,
    show_partial: bool = False,
) -> BoardOutput:
    """Write the site for ``entries`` into ``out_dir`` (created; pages replaced atomically);
    ``pick``: which run of a system its row shows (:data:`PICKS`). Results whose question set is
    not verified, and partial runs unless ``show_partial``, are shown apart in their key's
    section, never ranked."""
    if pick not in PICKS:
        raise MemevalError(f"memeval-board: --pick must be one of {', '.join(PICKS)}, got {pick!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    tiers = verify_entries(entries, data_dir, out_dir)
    groups = group_by_key(entries)
    keys = list(groups)
    titles = headings(keys)
    output = BoardOutput(out_dir, entries=len(entries), keys=len(keys))
    diffs: dict[str, str] = {}
    sections: list[dict[str, object]] = []
    for key in keys:
        every = _key_view(key, groups[key], pick)  # diffs and run pages: every result
        ranked = [e for e in groups[key] if tiers[e.ident].ranked(show_partial)]
        apart = [e for e in groups[key] if not tiers[e.ident].ranked(show_partial)]
        partial = frozenset(e.ident for e in ranked if tiers[e.ident].partial)
        view = _key_view(key, ranked, pick, partial)
        kid = every.kid
        pairs = _diff_pairs(every, view)
        for a, b in pairs:
            name = diff_page_name(a, b)
            diffs[f"{a.ident}--{b.ident}"] = name
            output.pages.append(write_text_atomic(out_dir / name, _diff_page(a, b, every.metric)))
        for e in every.entries:
            output.pages.append(
                write_text_atomic(out_dir / run_page_name(e), _run_page(e, tiers[e.ident], key))
            )
        sections.append(
            {
                "kid": kid,
                "bench": every.entries[0].benchmark,
                "title": titles[key],
                "fields": _key_fields(key),
                "metric": view.metric,
                "head": _system_head(view),
                "systems": _system_rows(view, tiers) if ranked else [],
                "baselines": _baselines(view) if ranked else None,
                "paretos": _paretos(view) if ranked else [],
                "history": _history(view) if ranked else [],
                "apart": [
                    (e, tiers[e.ident], "; ".join(_apart_reasons(tiers[e.ident])), _apart_value(e))
                    for e in _order(apart)
                ],
                "pairs": pairs,
                "entries": _order(every.entries),
            }
        )
    index = _page(
        "memeval board",
        script=inline("board.js"),
        data={"diffs": diffs},
        template="board_index.html.j2",
        entries=len(entries),
        sources=len({e.source for e in entries}),
        keys=len(keys),
        tiers=", ".join(f"{sum(t.tier == tier for t in tiers.values())} {tier}" for tier in TIERS),
        apart=sum(not t.ranked(show_partial) for t in tiers.values()),
        ranked=sum(t.ranked(show_partial) for t in tiers.values()),
        benchmarks=list(dict.fromkeys(e.benchmark for e in entries)),
        tier_names=TIERS,
        differences=differences(keys),
        sections=sections,
        pick=pick,
        pick_text=_PICK_TEXT[pick],
        page_of=run_page_name,
        diff_page_of=diff_page_name,
        interval=_ci_text,
    )
    output.pages.append(write_text_atomic(out_dir / "index.html", index))
    output.index_bytes = len(index.encode("utf-8"))
    return output


def build_board(
    inputs: Sequence[str | os.PathLike[str]],
    out_dir: Path,
    data_dir: Path | None = None,
    pick: str = PICK_LATEST,
    show_partial: bool = False,
) -> BoardOutput:
    """Read the reports and run folders, then write the site."""
    return write_board(
        load_inputs([Path(p) for p in inputs]), out_dir, data_dir, pick, show_partial
    )


def _find(entries: Sequence[Entry], ref: str) -> Entry:
    """The result ``ref`` names: its id (a run page's name, with or without ``run-``/``.html``),
    ``RUN_ID:SYSTEM``, or a run id holding one result."""
    name = ref.removeprefix("run-").removesuffix(".html")
    run_id, _, system = name.rpartition(":")
    found = [e for e in entries if e.ident == name] or [
        e
        for e in entries
        if (system and e.run_id == run_id and system in (e.system, e.label))
        or (not system and e.run_id == name)
    ]
    if len(found) == 1:
        return found[0]
    some = ", ".join(e.ident for e in (found or list(entries))[:4])
    problem = "names several results" if found else "names no result of the inputs"
    raise MemevalError(
        f"--diff: {ref!r} {problem}; give a result's id (the index's diff picker, "
        f"a run page's name: run-ID.html) or RUN_ID:SYSTEM, e.g. {some}"
    )


def write_diff(
    entries: Sequence[Entry], a_ref: str, b_ref: str, out_dir: Path, data_dir: Path | None = None
) -> BoardOutput:
    """``memeval-board INPUTS --diff A B -o DIR``: the diff page of any two results (and the two
    run pages it links to), on demand; the index is left as it is."""
    a, b = _find(entries, a_ref), _find(entries, b_ref)
    if a is b:
        raise MemevalError(f"--diff: {a_ref!r} and {b_ref!r} are the same result")
    out_dir.mkdir(parents=True, exist_ok=True)
    ka, kb = entry_key(a), entry_key(b)
    view = _key_view(kb, [a, b])
    note = ""
    if ka != kb:
        fields = ", ".join(label for label, _ in differences([ka, kb]))
        note = (
            f"These two results are not measured the same way (their keys differ in {fields}): "
            "read the difference with that in mind."
        )
    output = BoardOutput(out_dir, entries=2, keys=len({ka, kb}))
    page = out_dir / diff_page_name(a, b)
    output.pages.append(write_text_atomic(page, _diff_page(a, b, view.metric, note)))
    tiers = verify_entries([a, b], data_dir, out_dir)
    for e, key in ((a, ka), (b, kb)):
        output.pages.append(
            write_text_atomic(out_dir / run_page_name(e), _run_page(e, tiers[e.ident], key))
        )
    return output


#: in a board folder: the JSON reports of the runs added by ``--memeval-board`` ...
BOARD_REPORTS = "reports"
#: ... and the run folders they came from (absolute paths; one gone missing is skipped)
BOARD_FOLDERS = "run-folders.json"


def add_to_board(
    board: Path,
    report_json: str,
    provenance: Mapping[str, object],
    run_folder: Path | None,
    data_dir: Path | None = None,
) -> BoardOutput:
    """``--memeval-board=DIR``: keep this run's JSON report in ``DIR/reports`` (and its run
    folder's path in ``DIR/run-folders.json``), then rewrite the site from every run kept there
    (re-scoring against the run's ``--memeval-data`` files when it had them)."""
    reports = board / BOARD_REPORTS
    reports.mkdir(parents=True, exist_ok=True)
    run_id = str(provenance.get("run_id") or provenance.get("created") or "run")
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:120]
    write_text_atomic(reports / f"{name}.json", report_json)
    folders_file = board / BOARD_FOLDERS
    folders: list[str] = []
    if folders_file.is_file():
        try:
            loaded = json.loads(folders_file.read_text(encoding="utf-8"))
            folders = [str(f) for f in loaded] if isinstance(loaded, list) else []
        except (OSError, ValueError):
            folders = []
    if run_folder is not None and str(run_folder.resolve()) not in folders:
        folders.append(str(run_folder.resolve()))
        write_text_atomic(folders_file, json.dumps(folders, indent=1) + "\n")
    inputs: list[Path] = sorted(reports.glob("*.json"))
    inputs.extend(Path(f) for f in folders if (Path(f) / "results.jsonl").is_file())
    return write_board(load_inputs(inputs), board, data_dir)
