"""The board's pure parts: comparability keys and what differs between them, the tiers of run
folders, the escaping of hostile report strings, and the site in headless Chromium (tables
without JavaScript, filters and the diff picker with it, a screenshot in the test's folder)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from browser import NO_CHROMIUM, chromium, run_chromium
from conftest import REPORT_CATS, report_result, report_summary

from pytest_memeval.benchmarks import get_benchmark
from pytest_memeval.benchmarks.base import LoadRequest
from pytest_memeval.board.keys import describe, differences, entry_key, group_by_key, same_key
from pytest_memeval.board.load import load_inputs
from pytest_memeval.board.site import build_board
from pytest_memeval.board.verify import verify_entries
from pytest_memeval.records import Memory, Prediction, QuestionResult
from pytest_memeval.report.json_report import write_json
from pytest_memeval.run.store import RunStore

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


def _folder(tmp: Path, name: str, results: list[QuestionResult], top_k: int = 10) -> Path:
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
    build_board(_hostile_reports(tmp_path), site)
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
    assert proc.stdout.count("data-entry=") == 4
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
    # synthetic LoCoMo-like reports: no dataset to check their question sets against
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
    from pytest_memeval.board.verify import Verification, rescore

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
