"""Markdown report: structure, escaping of hostile strings, CIs, baselines, provenance, snapshot."""

from __future__ import annotations

import re

from conftest import REPORT_CATS, report_result, report_summary

from pytest_memeval.analysis import Baseline, aggregate_run, baselines_for
from pytest_memeval.records import QuestionResult
from pytest_memeval.report._markdown import md_cell, md_text, render_markdown
from pytest_memeval.report._model import GateOutcome, LLMUsage, RegressionOutcome, Summary

HOSTILE = (
    '<script>document.title="PWNED"</script><img src=x onerror="alert(1)"> | pipe & amp '
    "`tick` *star* _under_ [link](https://evil.example/x) ![img](https://evil.example/p.png)"
    "\nsecond line\r\nthird | $x$ ~strike~ \\ back"
)

CATS = REPORT_CATS


_result = report_result


def _summary(hostile: bool = False) -> Summary:
    def results(system: str) -> list[QuestionResult]:
        return [
            _result(system, "q1", "single-hop", 4, 1.0),
            _result(system, "q2", "single-hop", 4, 0.25),
            _result(system, "q3", "multi-hop", 1, 0.5),
            _result(system, "q4", "adversarial", 5, 0.0, gold=None),
        ]

    summary = report_summary(
        results,
        hostile=HOSTILE if hostile else None,
        provenance={"prompt_sha256": {"answer": "f" * 64}},
    )
    if hostile:
        summary.llm = LLMUsage(
            tokens={"answerer": {HOSTILE: {"input_tokens": 10, "output_tokens": 2}}}
        )
    return summary


def _table_lines(md: str) -> list[list[str]]:
    """Groups of consecutive lines that start with '|'."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in md.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def test_md_cell_escapes_everything_dangerous() -> None:
    cell = md_cell(HOSTILE)
    assert "<" not in cell and ">" not in cell
    assert "\n" not in cell and "\r" not in cell
    assert _UNESCAPED_PIPE.search(cell) is None
    assert "&lt;script&gt;" in cell
    assert "pipe &amp; amp" in cell
    assert r"\[link\](https://evil.example/x)" in cell
    assert r"!\[img\]" in cell
    assert r"\`tick\`" in cell and r"\*star\*" in cell and r"\_under\_" in cell
    assert r"\$x\$" in cell and r"\~strike\~" in cell and r"\\ back" in cell
    assert md_cell("") == " "
    assert md_cell("x" * 50, limit=10) == "x" * 9 + "…"
    assert md_text(None) == "-"
    assert md_text(3) == "3"


def test_structure_tables_rows_and_ci() -> None:
    summary = _summary()
    md = render_markdown(summary, {"locomo": baselines_for("locomo")})
    tables = _table_lines(md)
    # scoreboard, two runs, comparison, baselines, latency, provenance
    assert len(tables) == 7
    board = tables.pop(0)
    assert board[0].startswith("| benchmark | system | metric | overall | 95% CI | n |")
    assert len(board) == 2 + 2  # one row per system
    run_table = tables[0]
    assert run_table[0].startswith("| category | id | shared | n | f1 | judge\\_mem0\\_official |")
    # header + separator + 3 categories + overall + overall_all + macro
    assert len(run_table) == 8
    assert run_table[7].startswith("| macro (mean of 3 categories) |")
    assert run_table[2].startswith("| single-hop | 4 | fact-recall | 2 | 0.625 [0.38, 0.44] |")
    assert "| **overall (excl. 5)** |" in run_table[5]
    assert "| **overall\\_all (all categories)** |" in run_table[6]
    # status counts: single-hop 1 correct, 1 wrong
    assert run_table[2].endswith("| 1 | 1 | 0 | 0 |")
    # overall (categories 1 and 4): f1 of (1.0 + 0.25 + 0.5) / 3
    assert "| 3 | 0.583 [0.38, 0.44] |" in run_table[5]
    for table in tables:
        widths = {len(_UNESCAPED_PIPE.findall(line)) for line in table}
        assert len(widths) == 1, table
    assert "### locomo · bm25" in md and "### locomo · full-context" in md
    assert "### locomo · comparison across systems" in md
    comparison = tables[2]
    assert comparison[0].startswith(
        "| system | n | f1 (overall) | judge\\_mem0\\_official (overall) |"
    )
    assert len(comparison) == 4


def test_every_baseline_shown_with_values_and_label() -> None:
    summary = _summary()
    chosen = baselines_for("locomo")
    md = render_markdown(summary, {"locomo": chosen})
    baseline_table = _table_lines(md)[4]
    header = baseline_table[0]
    assert header.startswith("| series | system | metric | label | overall (excl. 5) |")
    for i, b in enumerate(chosen, 1):
        row = next(line for line in baseline_table if line.startswith(f"| \\[{i}\\] published"))
        assert f"| {md_text(b.system)} | {md_text(b.metric)} |" in row
        # no marked comparability here: every row says "comparable" (nothing differs)
        assert "| comparable |" in row
        assert f"{i}. {md_text(b.system)} ({md_text(b.name)}), comparable" in md
        assert md_text(b.protocol) in md
    assert any(line.startswith("| **this run** | bm25 | f1 |") for line in baseline_table)
    # Mem0 J (mem0-j-mem0): overall 66.88 % (on overall, never overall_all), cat 4 72.93 %
    mem0 = next(line for line in baseline_table if "| Mem0 | judge" in line)
    cells = [c.strip() for c in mem0.split("|")[1:-1]]
    assert cells[4:6] == ["0.669", "-"]
    assert "0.729" in cells  # single-hop (LoCoMo id 4)
    gpt = next(line for line in baseline_table if "GPT-3.5-turbo-16K" in line)
    assert [c.strip() for c in gpt.split("|")[1:-1]][4:6] == ["-", "0.378"]


def test_provenance_latency_and_mem0_figures() -> None:
    md = render_markdown(_summary(), {})
    assert "| plugin version | pytest-memeval 9.8.7 |" in md
    assert "| sha256 locomo10.json | 79fa87e9" + "0" * 56 + " |" in md
    assert "| answerer | openai:gpt-4o-mini |" in md
    assert "| judge | mem0:openai:gpt-4o-mini |" in md
    assert "| top-k | 10 |" in md
    assert "| git commit | abc1234def |" in md
    assert "| pass rule locomo | f1 &gt;= 0.5 |" in md
    assert "| prompt sha256 answer | " + "f" * 64 + " |" in md
    assert "published baselines" not in md  # none given
    # latency: search 10 ms, answer 200 ms, total 210 ms; Mem0 148/200/708/1,440 ms
    assert "| bm25 | 10.0 | 10.0 | 200 | 200 | 210 | 210 | 1,500 | 1,500 |" in md
    assert (
        "| published | Mem0 (published) (unverified) | 148 | 200 | - | - | 708 | 1,440 | - | - |"
        in md
    )
    assert "1,764 tokens/query" in md


def test_hostile_strings_everywhere_are_escaped() -> None:
    evil = Baseline(
        name=HOSTILE,
        benchmark="locomo",
        system=HOSTILE,
        metric="f1",
        protocol=HOSTILE,
        source=HOSTILE,
        by_category={4: 0.5},
        overall=0.4,
        verified=False,
    )
    md = render_markdown(_summary(hostile=True), {"locomo": [evil]})
    assert "<" not in md
    assert all(line.startswith(">") or ">" not in line for line in md.splitlines())
    assert "&lt;script&gt;" in md and "&lt;img src=x" in md
    assert re.search(r"(?<!\\)\]\(", md) is None  # no link or image syntax survives
    for table in _table_lines(md):
        widths = {len(_UNESCAPED_PIPE.findall(line)) for line in table}
        assert len(widths) == 1, table
    assert md.count("- FAIL: " + md_text(HOSTILE)) == 2  # the gate and the regression entry
    assert "(unverified)" in md
    # one table row per line: the hostile newlines never split a row
    assert "second line" in md
    assert not any(line.startswith("second line") for line in md.splitlines())


def test_gates_and_regression_lists() -> None:
    summary = _summary()
    summary.gates = [
        GateOutcome("locomo.overall.f1>=0.40", True, 0.58, "f1 0.58 >= 0.40"),
        GateOutcome("locomo.temporal.f1>=0.90", False, 0.2, "temporal f1 0.20 < 0.90"),
    ]
    summary.regression = [
        RegressionOutcome("bm25", "f1", False, "f1 dropped 2.1 points, p=0.30: not significant")
    ]
    summary.regression_error = None
    md = render_markdown(summary, {})
    assert "### Gates\n\n- PASS: f1 0.58 &gt;= 0.40\n- FAIL: temporal f1 0.20 &lt; 0.90" in md
    assert "### Regression against the saved baseline\n\n- PASS: f1 dropped 2.1" in md
    summary.regression_error = "baseline b.json: not a JSON report"
    md = render_markdown(summary, {})
    assert "- FAIL: baseline b.json: not a JSON report" in md


def test_empty_summary() -> None:
    md = render_markdown(Summary(runs=[]), {})
    assert md.startswith("## pytest-memeval results\n\nNo memeval results were recorded.\n")
    assert md.endswith("\n")


def test_snapshot_small_summary() -> None:
    results = [
        _result("bm25", "q1", "single-hop", 4, 1.0, latency={}),
        _result("bm25", "q2", "multi-hop", 1, 0.0, latency={}),
    ]
    run = aggregate_run("demo", "bm25", "", results, CATS[:2], ["f1"])
    run.overall.ci = {"f1": [0.0, 1.0]}
    summary = Summary(
        runs=[run],
        provenance={"plugin_version": "0.1.0", "answerer": "extractive", "top_k": [10]},
    )
    expected = """\
## pytest-memeval results

### Scoreboard

| benchmark | system | metric | overall | 95% CI | n | errors | unscored | nearest published | role |
| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | --- |
| demo | bm25 | f1 | 0.500 | \\[0.00, 1.00\\] | 2 | 0 | 0 | - |   |

overall: the micro mean over the categories in overall; 95% CI: bootstrap resampling whole clusters (the benchmark's conversations or cases); nearest published: the closest published overall, labelled comparable or reference; control: a built-in bound (no-memory floor, full-context, oracle evidence)

### demo · bm25

2 questions; pass metric f1; metrics are micro means with 95% bootstrap CIs over 1 conversation (each resampled whole) in brackets where computed.

| category | id | shared | n | f1 | correct | wrong | unscored | error |
| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
| single-hop | 4 | fact-recall | 1 | 1.000 | 1 | 0 | 0 | 0 |
| multi-hop | 1 | multi-hop | 1 | 0.000 | 0 | 1 | 0 | 0 |
| **overall (all)** |   |   | 2 | 0.500 [0.00, 1.00] | 1 | 1 | 0 | 0 |
| **overall\\_all (all)** |   |   | 2 | 0.500 | 1 | 1 | 0 | 0 |
| macro (mean of 2 categories) |   |   |   | 0.500 |   |   |   |   |

### Provenance

| key | value |
| --- | --- |
| plugin version | pytest-memeval 0.1.0 |
| answerer | extractive |
| judge | - |
| top-k | 10 |
| systems | - |
| git commit | - |
"""
    assert render_markdown(summary, {}) == expected


def test_protocol_card_named_in_scoreboard_run_and_section() -> None:
    from pytest_memeval.report.cards import protocol_card, run_cards

    summary = report_summary(lambda system: [_result(system, "q1", "single-hop", 4, 1.0)])
    summary.protocol_cards = run_cards(summary.runs)
    card = protocol_card("locomo")
    md = render_markdown(summary, {})
    lines = md.splitlines()
    board = lines[lines.index("### Scoreboard") + 2 :]
    assert board[0].endswith("| role | protocol card |")
    assert board[2].startswith("| locomo | bm25 |") and board[2].endswith(f"| {card.card_id} |")
    assert md.count(f"Protocol card: {card.card_id} (docs/protocols.md#card-locomo).") == 2
    section = lines[lines.index("### Protocol cards") :]
    assert section[2].startswith("| benchmark | protocol card | data revision |")
    row = section[4]
    assert row.startswith(f"| locomo | {card.card_id} | {card.data_revision} |")
    assert f"mem0 {protocol_card('locomo').profiles[0].commit[:12]}" in row
    assert "category-5" in row
    assert lines.index("### Protocol cards") < lines.index("### Provenance")
    # a summary whose runs have no card (a suite from another package) shows none of it
    summary.protocol_cards = {}
    for run in summary.runs:
        run.protocol_card = None
    assert "rotocol card" not in render_markdown(summary, {})
