"""The board's pure parts: comparability keys and what differs between them, the tiers of run
folders, the escaping of hostile report strings, and the site in headless Chromium (tables
without JavaScript, filters and the diff picker with it, a screenshot in the test's folder)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
from browser import NO_CHROMIUM, chromium, run_chromium
from conftest import REPORT_CATS, report_result, report_summary

from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.board._comparability import (
    describe,
    differences,
    entry_key,
    group_by_key,
    headings,
    same_key,
)
from pytest_memeval.board._load import load_inputs
from pytest_memeval.board._site import build_board
from pytest_memeval.board._verify import verify_entries
from pytest_memeval.board.cli import main as board_main
from pytest_memeval.records import Memory, Prediction, QuestionResult
from pytest_memeval.report import (
    HistoryPoint,
    ScatterPoint,
    esc,
    fmt_seconds,
    fmt_tokens,
    history_chart,
    nice_ticks,
    parse_time,
    place_labels,
    scatter_chart,
    time_ticks,
    write_json,
)
from pytest_memeval.run import RunStore, select_questions

DEMO_SHA = "038689247fbb3949671c5bcf8dc044d7d0b7a4d6dfa915eccb2f0b986d2dd62a"
HOSTILE = (
    '<script>document.title="PWNED"</script>'
    "<img src=x onerror=\"document.body.appendChild(document.createElement('b')).id='pwned'\">"
    '</script><script>document.title="PWNED2"</script>'
    "\" onmouseover='x' data-x=\"<svg onload=document.title='PWNED3'>"
)


def _demo_results(system: str, tmp: Path, right: int, k: int = 10) -> list[QuestionResult]:
    """Demo results scored by the demo's own scorer: the first ``right`` answers are the gold."""
    bench = get_benchmark("demo")
    dataset = bench.load(LoadRequest(None, tmp))
    out = []
    for i, q in enumerate(dataset.questions):
        memories = (Memory(text="a memory", source_ids=tuple(q.evidence[:1])),)
        text = str(q.gold) if i < right and q.gold is not None else "no idea"
        scores = bench.score(q, Prediction(text, memories))
        out.append(
            QuestionResult(
                benchmark="demo", system=system, question_id=q.id,
                conversation_id=q.conversation_id, category=q.category,
                category_id=q.category_id, question=q.question, gold=q.gold, prediction=text,
                status="CORRECT" if scores["f1"] >= 0.5 else "WRONG", scores=dict(scores),
                memories=list(memories), latency={"search": 0.001 * (i + 1), "answer": 0.002},
                details={"k": k, "pass_metric": "f1", "context_tokens": 3}, cluster=q.conversation_id,
            )
        )  # fmt: skip
    return out


def _folder(
    tmp: Path, name: str, results: list[QuestionResult], top_k: int = 10, **fingerprint: object
) -> Path:
    store = RunStore(tmp / "runs" / name)
    for r in results:
        store.append(r)
    store.close()
    store.write_config(
        {
            "fingerprint": {
                "plugin_version": "0.1.0",
                "datasets": {"demo": {"variant": None, "sha256": [DEMO_SHA]}},
                "top_k": [top_k],
                "answerer": "extractive",
                "judges": [],
                "prompt_sha256": {},
                **fingerprint,
            },
            "numbers": {"--memeval-context-budget": None},
        }
    )
    return store.folder


def test_keys_group_and_say_what_differs(tmp_path: Path) -> None:
    a = _folder(tmp_path, "20260101T000000Z-aaaaaa", _demo_results("bm25", tmp_path, 5))
    b = _folder(tmp_path, "20260102T000000Z-bbbbbb", _demo_results("bm25", tmp_path, 7))
    c = _folder(tmp_path, "20260103T000000Z-cccccc", _demo_results("bm25", tmp_path, 7, 3), 3)
    entries = load_inputs([a, b, c])
    groups = group_by_key(entries)
    keys = list(groups)
    assert [label for label, _ in differences(keys)] == ["top-k"]
    assert differences(keys)[0][1] == ["10", "3"]
    assert "top-k 3" in describe(keys[1])
    # the created date comes from the run id; a folder knows no errata, so keys match without it
    assert entries[0].created() == "2026-01-01T00:00:00+00:00"
    with_errata = replace(entries[0], provenance={**entries[0].provenance, "errata": {"name": "x"}})
    assert entry_key(with_errata) != entry_key(entries[0])
    assert same_key(entry_key(with_errata), entry_key(entries[0]))


def test_run_folder_tiers(tmp_path: Path) -> None:
    good = _demo_results("bm25", tmp_path, 6)
    bad = _demo_results("bm25", tmp_path, 6)
    bad[0].scores["set_f1"] = 0.123  # a stored score the scorer does not give
    entries = load_inputs([_folder(tmp_path, "good", good), _folder(tmp_path, "bad", bad)])
    tiers = verify_entries(entries, None)
    by_run = {e.run_id: tiers[e.ident] for e in entries}
    # a folder alone is re-scored at best: the board computed its numbers, nothing claimed them
    assert by_run["good"].tier == "re-scored"
    assert by_run["good"].mismatch_count == 0
    # every offline metric of every question (set_f1 and bleu1 skip category 5), evidence_recall
    # from the dataset's own evidence ids
    assert by_run["good"].values == 15 * 4 - 2 * 2
    assert by_run["good"].notes == []
    assert by_run["bad"].tier == "self-reported"
    assert by_run["bad"].mismatches == [f"{bad[0].question_id}: set_f1 stored 0.123, recomputed 1"]


def _hostile_reports(tmp: Path) -> list[Path]:
    def results(system: str) -> list[QuestionResult]:
        return [
            report_result(system, f"q{i}", "single-hop", 4, i / 6, conversation_id=f"conv-{i % 3}")
            for i in range(1, 7)
        ] + [report_result(system, "m1", "multi-hop", 1, 0.5, conversation_id="conv-1")]

    paths = []
    for n, commit in enumerate(("aaaa1111", "bbbb2222")):
        summary = report_summary(
            results,
            hostile=HOSTILE,
            provenance={"run_id": f"run-{n}", "git_commit": commit, "created": f"2026-0{n + 1}-01"},
        )
        path = tmp / f"r{n}.json"
        write_json(summary, path)
        paths.append(path)
    return paths


def test_hostile_strings_are_escaped_on_every_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_board(_hostile_reports(tmp_path), site)
    pages = list(site.glob("*.html"))
    assert len(pages) >= 5
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<img" not in text and "<svg onload" not in text
        assert text.count("<script") == (2 if page.name == "index.html" else 0), page.name
        assert 'http-equiv="Content-Security-Policy"' in text
        assert "http://" not in text
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;document.title=&quot;PWNED&quot;" in index  # shown, as text


def test_browser(tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    site = tmp_path / "site"
    # the hostile reports (LoCoMo-like, no dataset to check their question sets against, a
    # hostile question id: unverified, shown apart) and a morning's demo runs (verified, ranked)
    build_board([*_hostile_reports(tmp_path), *_morning(tmp_path)], site)
    index = site / "index.html"
    # without JavaScript (a policy that lets no script run; --dump-dom itself needs the
    # browser's own JavaScript): the ranked tables are all there, the JS-only controls hidden
    no_js = site / "nojs.html"
    no_js.write_text(
        re.sub(
            r"script-src &#x27;sha256-[^&]*&#x27;",
            "script-src &#x27;none&#x27;",
            index.read_text("utf-8"),
        ),
        "utf-8",
    )
    proc = run_chromium(binary, tmp_path, no_js, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    ranked = "".join(re.findall(r'<table class="systems">.*?</table>', proc.stdout, re.S))
    apart = "".join(re.findall(r'<table class="apart">.*?</table>', proc.stdout, re.S))
    # one row per system and key (its latest run): bm25 and no-memory, bm25 over limit 4 ...
    assert ranked.count("data-entry=") == 3
    # ... and every result shown apart a row of its own
    assert apart.count("data-entry=") == 4
    assert re.search(r'id="filters"[^>]*hidden', proc.stdout)
    assert 'data-board-ready="1"' not in proc.stdout
    # with it (and the CSP): the script ran to its end, nothing injected ran
    proc = run_chromium(binary, tmp_path, index, "--dump-dom")
    dom = proc.stdout
    assert 'data-board-ready="1"' in dom
    assert "<title>memeval board</title>" in dom
    assert 'id="pwned"' not in dom and "<img" not in dom
    # the filters and the diff picker, driven by a probe (the page minus its CSP, plus a script)
    probe = """<script>(function () {
      var t = document.getElementById("f-tier"); t.value = "unverified";
      t.dispatchEvent(new Event("change"));
      var shown1 = document.querySelectorAll("tr[data-entry]:not([hidden])").length;
      var x = document.getElementById("f-text"); x.value = "bm25";
      x.dispatchEvent(new Event("input"));
      var shown2 = document.querySelectorAll("tr[data-entry]:not([hidden])").length;
      var form = document.querySelector("form.diff-pick");
      var a = form.querySelector("select[name=a]"), b = form.querySelector("select[name=b]");
      a.selectedIndex = 0; b.selectedIndex = 2; b.dispatchEvent(new Event("change"));
      var link = form.querySelector("a.diff-go");
      document.body.setAttribute("data-probe", [shown1, shown2, a.value, b.value,
        link.hidden ? "" : link.getAttribute("href")].join("|"));
    })();</script></body>"""
    html = index.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    probe_page = site / "probe.html"
    probe_page.write_text(html.replace("</body>", probe), encoding="utf-8")
    proc = run_chromium(binary, tmp_path, probe_page, "--dump-dom")
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match is not None, proc.stdout[-2000:]
    shown1, shown2, a, b, href = match.group(1).split("|")
    # the four hostile results, unverified (the demo runs are re-scored: hidden by the filter)
    assert (shown1, shown2) == ("4", "2")
    assert a.startswith("run-0-locomo-bm25") and b.startswith("run-1-locomo-bm25")
    assert href == f"diff-{a}--{b}.html" and (site / href).is_file()
    # a screenshot, kept in the test's folder
    shot = tmp_path / "board.png"
    proc = run_chromium(
        binary,
        tmp_path,
        index,
        "--hide-scrollbars",
        "--window-size=1280,1800",
        f"--screenshot={shot}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_categories_of_reports(tmp_path: Path) -> None:
    """The report's categories (LoCoMo-like: adversarial outside overall) come through."""
    (path, _) = _hostile_reports(tmp_path)
    entries = load_inputs([path])
    keys = [row.key for row in entries[0].computed.categories]
    assert set(keys) >= {c.key for c in REPORT_CATS[:2]}
    assert json.loads(path.read_text("utf-8"))["runs"][0]["summary"]["overall"]["count"] == 7 + 1


def test_memoised_rescore_equals_the_plain_one(tmp_path: Path) -> None:
    """verify_entries scores each distinct (question, prediction, memories) once across runs;
    every count, value and mismatch is the one a plain per-row re-score gives."""
    from pytest_memeval.board._verify import Verification, rescore

    bench = get_benchmark("demo")
    questions = {q.id: q for q in bench.load(LoadRequest(None, tmp_path)).questions}
    runs = [_demo_results("bm25", tmp_path, right) for right in (4, 6, 6, 9)]
    runs[2][3].scores["f1"] = 0.5  # a mismatch in a run whose rows the memo already holds
    entries = load_inputs([_folder(tmp_path, f"r{i}", rows) for i, rows in enumerate(runs)])
    memo: dict[tuple[object, ...], dict[str, float]] = {}
    for entry in entries:
        plain, memoised = Verification(), Verification()
        rescore(entry, bench, questions, plain)
        rescore(entry, bench, questions, memoised, memo)
        assert memoised.to_dict() == plain.to_dict()
    assert memo and len(memo) < sum(len(rows) for rows in runs)  # rows were shared
    tiers = verify_entries(entries, None)
    assert [tiers[e.ident].mismatch_count for e in entries] == [0, 0, 1, 0]


# ---- reading the board (issue 35: one row per system, headings, charts, diffs) ----------------


def _limited(results: list[QuestionResult], limit: int, tmp: Path) -> list[QuestionResult]:
    """The results of the questions ``--memeval-limit=limit`` selects: the first ``limit`` of each
    conversation (the selection the board checks a ``limit`` run's question set against)."""
    questions = get_benchmark("demo").load(LoadRequest(None, tmp)).questions
    chosen = {q.id for q in select_questions(list(questions), limit=limit)}
    return [r for r in results if r.question_id in chosen]


def _morning(tmp: Path) -> list[Path]:
    """A morning's runs: bm25 three times (5, 9 then 7 right answers, minutes apart), no-memory
    once, and bm25 over the first 4 questions of each conversation (--memeval-limit=4: another
    question selection, complete, so ranked in its own key)."""
    runs = [
        _folder(tmp, "20261206T051000Z-aaaaaa", _demo_results("bm25", tmp, 5)),
        _folder(tmp, "20261206T052500Z-bbbbbb", _demo_results("bm25", tmp, 9)),
        _folder(tmp, "20261206T054000Z-cccccc", _demo_results("bm25", tmp, 7)),
        _folder(tmp, "20261206T054100Z-dddddd", _demo_results("no-memory", tmp, 1)),
    ]
    limited = _limited(_demo_results("bm25", tmp, 4), 4, tmp)
    runs.append(_folder(tmp, "20261206T055000Z-eeeeee", limited, limit=4))
    return runs


def _headline_rows(section: str) -> list[tuple[str, str]]:
    """(data-entry, headline cell) of each systems-table row of one key's section."""
    found = re.findall(r'data-entry="([^"]+)".*?data-metric="headline">([^<]+)', section, re.S)
    return [(entry, value.strip()) for entry, value in found]


def test_one_row_per_system_latest_or_best(tmp_path: Path) -> None:
    runs = _morning(tmp_path)
    site = tmp_path / "site"
    build_board(runs, site)
    index = (site / "index.html").read_text("utf-8")
    sections = index.split('<section class="key"')[1:]
    full = next(s for s in sections if "all questions" in s.split("</h2>")[0])
    rows = _headline_rows(full)
    # bm25 once (its latest run, 05:40), no-memory once; the other bm25 runs in its history
    assert [e for e, _ in rows] == ["20261206T054000Z-cccccc-demo-bm25-", mock_ident("dddddd")]
    assert 'data-pick="latest"' in full and "latest run" in full
    assert "+2 runs" in full
    history = full.split("History: bm25</h4>")[1].split("</table>")[0]
    assert history.count("<tr") == 4  # header + the three bm25 runs
    # --pick best: bm25's best run (9 right, 05:25) is the row
    best = tmp_path / "best"
    build_board(runs, best, pick="best")
    full = next(
        s
        for s in (best / "index.html").read_text("utf-8").split('<section class="key"')[1:]
        if "all questions" in s.split("</h2>")[0]
    )
    assert next(e for e, _ in _headline_rows(full)) == "20261206T052500Z-bbbbbb-demo-bm25-"
    assert 'data-pick="best"' in full


def mock_ident(suffix: str) -> str:
    return f"20261206T054100Z-{suffix}-demo-no-memory-"


def test_every_key_has_a_distinct_heading_naming_what_differs(tmp_path: Path) -> None:
    """Keys that differ only in the question selection or top-k used to share one heading."""
    tmp = tmp_path
    runs = [
        _folder(tmp, "r1", _demo_results("bm25", tmp, 5)),
        _folder(tmp, "r2", _limited(_demo_results("bm25", tmp, 5), 8, tmp), limit=8),
        _folder(tmp, "r3", _limited(_demo_results("bm25", tmp, 5), 6, tmp), limit=6),
        _folder(tmp, "r4", _demo_results("bm25", tmp, 5, 3), 3),
    ]
    keys = list(group_by_key(load_inputs(runs)))
    titles = headings(keys)
    assert len(set(titles.values())) == len(keys) == 4
    assert titles[keys[0]] == "demo · all questions · scored by f1 · top-k 10"
    assert titles[keys[1]] == "demo · limit 8 · scored by f1 · top-k 10"
    assert titles[keys[3]] == "demo · all questions · scored by f1 · top-k 3"
    site = tmp_path / "site"
    build_board(runs, site)
    index = (site / "index.html").read_text("utf-8")
    shown = re.findall(r'<div class="keybox"><h2>(.*?) <span', index)
    assert sorted(shown) == sorted(esc(t) for t in titles.values())
    # each run holds its key's whole selection: verified, ranked under its heading
    assert index.count('<table class="systems">') == 4 and '<tr class="apart"' not in index


def test_ticks_and_units() -> None:
    assert nice_ticks(0.195, 0.197) == [0.195, 0.196, 0.197]  # not 0-1: 0.195 -> 0.197 shows
    assert nice_ticks(0, 10800) == [0, 5000, 10000, 15000]
    assert nice_ticks(0.4, 0.4)[0] < 0.4 < nice_ticks(0.4, 0.4)[-1]
    assert [fmt_tokens(v) for v in (850, 5400, 10800, 1.2e6)] == ["850", "5.4k", "10.8k", "1.2M"]
    assert [fmt_seconds(v) for v in (0, 0.00084, 0.00184, 0.18, 12)] == [
        "0 s", "840 µs", "1.84 ms", "0.18 s", "12 s"
    ]  # fmt: skip
    start = parse_time("2026-12-06T05:10:00+00:00")
    end = parse_time("2026-12-06T05:40:00")
    assert start is not None and end is not None
    ticks, fmt = time_ticks(start, end)
    assert fmt == "%H:%M" and ticks[0] <= start and ticks[-1] >= end
    assert [t.strftime(fmt) for t in ticks] == ["05:10", "05:20", "05:30", "05:40"]


def test_labels_never_overlap() -> None:
    """Twelve points in one corner: every label placed overlaps no other label and no point;
    the ones with no free slot are left for the legend, the same ones every time."""
    points = [(100 + 3 * i, 100 + 2 * (i % 4), f"system-{i}") for i in range(12)]
    boxes = place_labels(points, (0, 0, 400, 300))
    placed = [b for b in boxes if b is not None]
    assert 2 <= len(placed) < 12
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    for box in placed:
        for x, y, _ in points:
            assert not (box[0] < x + 6 and x - 6 < box[2] and box[1] < y + 6 and y - 6 < box[3])
    assert place_labels(points, (0, 0, 400, 300)) == boxes


def test_charts_read(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_board(_morning(tmp_path), site)
    index = (site / "index.html").read_text("utf-8")
    history = re.search(r'<svg class="chart history".*?</svg>', index, re.S)
    assert history is not None
    svg = history.group(0)
    # a time axis: the runs at 05:10, 05:25, 05:40 (UTC, the day named once), not their dates
    x_ticks = re.findall(r'class="tick x-tick"[^>]*>([^<]+)<', svg)
    assert x_ticks == ["05:10", "05:20", "05:30", "05:40"]
    assert "run time (UTC on 2026-12-06)" in svg
    xs = [float(x) for x in re.findall(r'<circle cx="([0-9.]+)"', svg)]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # 15 minutes apart, both
    assert "run 20261206T052500Z-bbbbbb" in svg  # the run id on hover
    # y scaled to the values and their intervals, not 0-1
    y_ticks = [float(t) for t in re.findall(r'class="tick y-tick"[^>]*>([^<]+)<', svg)]
    entries = [e for e in load_inputs(_morning(tmp_path / "again")) if e.system == "bm25"][:3]
    lows = [min(e.value("overall", "f1") or 0, *(e.ci("overall", "f1") or [])) for e in entries]
    highs = [max(e.value("overall", "f1") or 0, *(e.ci("overall", "f1") or [])) for e in entries]
    assert y_ticks[0] <= min(lows) and y_ticks[-1] >= max(highs)
    assert y_ticks[-1] - y_ticks[0] < 2 * (max(highs) - min(lows))
    # Pareto ticks in plain units
    pareto = re.findall(r'<svg class="chart pareto".*?</svg>', index, re.S)
    assert len(pareto) == 4
    latency_ticks = re.findall(r'class="tick x-tick"[^>]*>([^<]+)<', pareto[1])
    assert latency_ticks and all(re.fullmatch(r"[0-9.]+ (ms|s|µs)", t) for t in latency_ticks)
    assert not any("e+" in t or "e-" in t for svg in pareto for t in re.findall(r">([^<]+)<", svg))


def test_a_system_without_points_gets_a_sentence() -> None:
    runs = [HistoryPoint(f"r{i}", f"2026-12-06T05:{i}0:00", "", None, None) for i in range(3)]
    html = history_chart("broken", runs, "f1")
    assert "<svg" not in html and "none of its 3 runs has a f1 value" in html
    assert "<svg" not in scatter_chart("t", [ScatterPoint("broken", None, 0.3)], "x", "y", str)


def test_history_of_a_run_without_an_interval() -> None:
    """A run stopped after one question has no interval: its point is drawn beside a run with
    one, on a y axis covering both (it raised TypeError: min() of one float)."""
    runs = [
        HistoryPoint("full", "2026-12-06T05:00:00", "", 0.344, (0.286, 0.413)),
        HistoryPoint("stopped", "2026-12-06T05:10:00", "", 0.0, None),
    ]
    svg = history_chart("bm25", runs, "f1")
    assert svg.count("<circle") == 2 and svg.count('class="ci-bar"') == 1
    ticks = [float(t) for t in re.findall(r'class="tick y-tick"[^>]*>([^<]+)<', svg)]
    assert ticks[0] <= 0.0 and ticks[-1] >= 0.413


def test_diffs_linear_and_quote_the_index(tmp_path: Path) -> None:
    """One run of 12 systems: before, 66 diff pages (every two systems); now 11 (each against
    the best); with three runs of bm25, two more (each against its previous run)."""
    rows = {f"sys{i:02d}": _demo_results(f"sys{i:02d}", tmp_path, i + 1) for i in range(12)}
    run = _folder(tmp_path, "20261206T050000Z-many", [r for rs in rows.values() for r in rs])
    site = tmp_path / "site"
    out = build_board([run], site)
    diffs = sorted(p.name for p in site.glob("diff-*.html"))
    assert len(diffs) == 11 and len(out.pages) == 11 + 12 + 1
    best = "20261206T050000Z-many-demo-sys11-"
    assert all(name.startswith(f"diff-{best}--") for name in diffs)
    # the diff page's means are the index's numbers (overall: category 5 left out)
    index = (site / "index.html").read_text("utf-8")
    shown = dict(_headline_rows(index))
    page = (site / f"diff-{best}--20261206T050000Z-many-demo-sys03-.html").read_text("utf-8")
    got = {
        side: re.search(rf'id="headline-{side}">([^<]+)<', page).group(1)  # type: ignore[union-attr]
        for side in ("from", "to")
    }
    assert got == {"from": shown[best], "to": shown["20261206T050000Z-many-demo-sys03-"]}
    paired = re.search(r"from mean</td><td[^>]*>([^<]+)<.*?to mean</td><td[^>]*>([^<]+)<", page)
    assert paired is not None and (paired.group(1), paired.group(2)) == (got["from"], got["to"])
    # the morning: bm25's three runs give two diffs against the previous run
    morning = tmp_path / "morning"
    build_board(_morning(tmp_path / "m"), morning)
    names = {p.name for p in morning.glob("diff-*.html")}
    assert (
        "diff-20261206T051000Z-aaaaaa-demo-bm25---20261206T052500Z-bbbbbb-demo-bm25-.html" in names
    )
    assert (
        "diff-20261206T052500Z-bbbbbb-demo-bm25---20261206T054000Z-cccccc-demo-bm25-.html" in names
    )
    assert len(names) == 3  # + no-memory against the best (bm25's latest)


def test_diff_on_demand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [str(p) for p in _morning(tmp_path)]
    out = tmp_path / "out"
    a, b = "20261206T051000Z-aaaaaa-demo-bm25-", "20261206T054100Z-dddddd:no-memory"
    assert board_main([*runs, "--diff", a, b, "-o", str(out)]) == 0
    page = out / f"diff-{a}--20261206T054100Z-dddddd-demo-no-memory-.html"
    assert capsys.readouterr().out.strip() == f"memeval-board: {page}"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [page.name, f"run-{a}.html", "run-20261206T054100Z-dddddd-demo-no-memory-.html"]
    )
    # across keys: said on the page
    other = "20261206T055000Z-eeeeee:bm25"
    assert board_main([*runs, "--diff", a, other, "-o", str(out)]) == 0
    assert "keys differ in questions (limit, sample, seed, -k, -m)" in next(
        out.glob("diff-*eeeeee*")
    ).read_text("utf-8")
    # an unknown name: one line naming it and the forms accepted
    assert board_main([*runs, "--diff", a, "nope", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'nope' names no result" in err and "RUN_ID:SYSTEM" in err


def test_browser_reads_the_board(tmp_path: Path) -> None:
    """The board in Chromium, measured on the rendered page: one row per system in each key
    (bm25's three runs and a crowd of twelve look-alike systems), the history chart's points
    spread over its height (y scaled to the data), no chart label overlapping another label or a
    point, no SVG without a point; and a screenshot of the index."""
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    crowd = [
        r
        for i in range(12)
        for r in _demo_results(f"look-alike-{i:02d}", tmp_path, 5 + i % 3, k=10)
    ]
    runs = [*_morning(tmp_path), _folder(tmp_path, "20261206T055500Z-ffffff", crowd)]
    site = tmp_path / "site"
    build_board(runs, site)
    probe = """<script>(function () {
      function hit(a, b) {
        return a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
          a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
      }
      var out = {rows: [], overlaps: [], labels: 0, legend: 0};
      document.querySelectorAll("section.key").forEach(function (sec) {
        out.rows.push(Array.from(sec.querySelectorAll("table.systems tr[data-system]"))
          .map(function (tr) { return tr.getAttribute("data-system"); }));
      });
      var h = document.querySelector("svg.chart.history");
      var box = h.getBoundingClientRect();
      var ys = Array.from(h.querySelectorAll("circle")).map(function (c) {
        var r = c.getBoundingClientRect(); return r.top + r.height / 2; });
      out.spread = (Math.max.apply(null, ys) - Math.min.apply(null, ys)) / box.height;
      out.yticks = Array.from(h.querySelectorAll("text.y-tick")).map(function (t) {
        return t.textContent; });
      out.tips = Array.from(h.querySelectorAll("circle title")).map(function (t) {
        return t.textContent; });
      document.querySelectorAll("svg.chart.pareto").forEach(function (svg) {
        var labels = Array.from(svg.querySelectorAll("text.pt-label"));
        var dots = Array.from(svg.querySelectorAll("circle"));
        out.labels += labels.length;
        labels.forEach(function (a, i) {
          var ra = a.getBoundingClientRect();
          labels.slice(i + 1).forEach(function (b) {
            if (hit(ra, b.getBoundingClientRect())) { out.overlaps.push(a.textContent + "/" + b.textContent); }
          });
          dots.forEach(function (d) {
            if (hit(ra, d.getBoundingClientRect())) { out.overlaps.push(a.textContent + "/dot"); }
          });
        });
      });
      out.legend = document.querySelectorAll("ul.chart-legend li").length;
      out.empty = Array.from(document.querySelectorAll("svg")).filter(function (s) {
        return !s.querySelector("circle"); }).length;
      document.body.setAttribute("data-probe", JSON.stringify(out));
    })();</script></body>"""
    html = (site / "index.html").read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = site / "probe.html"
    page.write_text(html.replace("</body>", probe), encoding="utf-8")
    proc = run_chromium(binary, tmp_path, page, "--window-size=1400,1000", "--dump-dom")
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match is not None, proc.stderr[-2000:]
    got = json.loads(unescape(match.group(1)))
    full = got["rows"][0]  # the first key: every question, top-k 10
    assert sorted(full) == sorted(
        ["bm25", "no-memory"] + [f"look-alike-{i:02d}" for i in range(12)]
    )
    assert all(len(rows) == len(set(rows)) for rows in got["rows"])  # one row per system
    # bm25 at 5, 9 and 7 right answers: three heights, on a y axis scaled to the values and
    # their intervals (as the hover text states them), not 0-1
    assert got["spread"] > 0.05, got
    shown = [
        float(x)
        for tip in got["tips"]
        for x in re.findall(r"\b0\.[0-9]+|\b1\.0+", tip.split(": f1 ")[1])
    ]
    ticks = [float(t) for t in got["yticks"]]
    assert len(got["tips"]) == 3 and ticks[0] <= min(shown) and ticks[-1] >= max(shown)
    assert ticks[-1] - ticks[0] < 1.5 * (max(shown) - min(shown)), (ticks, shown)
    assert got["overlaps"] == [] and got["labels"] >= 4
    assert got["legend"] > 0  # the look-alikes' labels that found no free slot
    assert got["empty"] == 0
    shot = tmp_path / "index.png"
    proc = run_chromium(
        binary, tmp_path, site / "index.html", "--hide-scrollbars",
        "--window-size=1400,2400", f"--screenshot={shot}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20]) == 1400
    assert len(data) > 50_000


def test_one_key_note_says_how_many_results_are_ranked_and_how_many_shown_apart(
    tmp_path: Path,
) -> None:
    """With one comparability key the index used to say "every result below is ranked
    together" even when a result was shown apart (here a partial run): the note now counts."""
    full = _folder(tmp_path, "20260101T000000Z-aaaaaa", _demo_results("bm25", tmp_path, 5))
    partial = _folder(
        tmp_path, "20260102T000000Z-bbbbbb", _demo_results("no-memory", tmp_path, 3)[:-1]
    )
    build_board([full, partial], tmp_path / "mixed")
    index = (tmp_path / "mixed" / "index.html").read_text(encoding="utf-8")
    assert '<tr class="apart"' in index  # the partial run is shown apart ...
    assert "every result below is ranked together" not in index  # ... so the note says so
    assert "One comparability key: 1 result ranked together; 1 shown apart, not ranked" in index
    # only complete runs: all of them are ranked, and the note says that
    build_board([full], tmp_path / "ranked")
    index = (tmp_path / "ranked" / "index.html").read_text(encoding="utf-8")
    assert "One comparability key: every result below is ranked together." in index
    # nothing ranked at all
    build_board([partial], tmp_path / "apart")
    index = (tmp_path / "apart" / "index.html").read_text(encoding="utf-8")
    assert "One comparability key: no result is ranked; 1 shown apart, not ranked" in index
