"""The board (issue 25) built from real runs of the demo (four systems, two commits, another
top-k) and, with MEMEVAL_DATA_DIR, a small LoCoMo run: every number on the index page is checked
against the JSON reports, the tiers against the run folders and a tampered report, the diff against
a hand computation of the gate's paired test; and ``--memeval-board`` adds runs from pytest."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import _DATA_DIR_ENV, INNER_ADDOPTS, read_json
from llm_server import LLMServer

from pytest_memeval.analysis import sign_flip_p
from pytest_memeval.board.cli import main
from pytest_memeval.report import fmt_num

CONTROLS = {"no-memory", "full-context", "oracle"}
SYSTEMS = "bm25,full-context,no-memory,oracle"


class Rows(HTMLParser):
    """Every ``<tr>`` of the page: its attributes and the text of each cell; and every link."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict[str, str], list[str]]] = []
        self.links: list[str] = []
        self._cells: list[str] | None = None
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr":
            self.rows.append((a, []))
            self._cells = self.rows[-1][1]
        elif tag in ("td", "th") and self._cells is not None:
            self._cells.append("")
            self._in_cell = True
        elif tag == "a" and "href" in a:
            self.links.append(a["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell and self._cells:
            self._cells[-1] += data


def parse(path: Path) -> Rows:
    rows = Rows()
    rows.feed(path.read_text(encoding="utf-8"))
    return rows


def _run(project: Path, *args: str, env: dict[str, str] | None = None) -> Path:
    env = {**{k: v for k, v in os.environ.items() if k != "MEMEVAL_DATA_DIR"}, **(env or {})}
    env["PYTEST_ADDOPTS"] = f"{INNER_ADDOPTS} -p no:cacheprovider"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"--memeval-cache-dir={project / 'cache'}", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = next(a.split("=", 1)[1] for a in args if a.startswith("--memeval-json="))
    return Path(report)


def _set_provenance(path: Path, **values: Any) -> None:
    data = read_json(path)
    data["provenance"].update(values)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real runs: demo x 4 systems at commits c1 and c2, demo top-k 2, LoCoMo limit 3."""
    project = tmp_path_factory.mktemp("boardproj")
    (project / "conftest.py").write_text("", encoding="utf-8")
    out = {
        "c1": _run(project, "--memeval=demo", f"--memsys={SYSTEMS}", f"--memeval-json={project / 'c1.json'}"),
        "c2": _run(project, "--memeval=demo", f"--memsys={SYSTEMS}", f"--memeval-json={project / 'c2.json'}"),
        "k2": _run(project, "--memeval=demo", "--memsys=bm25,no-memory", "--memeval-top-k=2",
                   f"--memeval-json={project / 'k2.json'}"),
    }  # fmt: skip
    # a judged key: the Mem0-style judge on a loopback server that accepts every answer
    with LLMServer(reply=lambda messages, model, params: '{"label": "CORRECT"}') as srv:
        out["judged"] = _run(
            project, "--memeval=demo", "--memsys=bm25,no-memory", "--memeval-judge=openai:gpt-4o-mini",
            f"--memeval-json={project / 'judged.json'}", env=srv.env("sk-test"),
        )  # fmt: skip
    # two commits: the project is no git checkout, so the reports are told their commit
    _set_provenance(out["c1"], git_commit="c1" * 20, created="2026-01-01T00:00:00+00:00")
    _set_provenance(out["c2"], git_commit="c2" * 20, created="2026-02-01T00:00:00+00:00")
    if _DATA_DIR_ENV and (Path(_DATA_DIR_ENV) / "locomo" / "locomo10.json").is_file():
        out["locomo"] = _run(
            project, "--memeval=locomo", f"--memeval-data={_DATA_DIR_ENV}", "--memeval-limit=3",
            "--memsys=bm25,no-memory,oracle", f"--memeval-json={project / 'locomo.json'}",
        )  # fmt: skip
    return out


def _folders(reports: dict[str, Path]) -> list[str]:
    return [
        str(p) for p in sorted((next(iter(reports.values())).parent / "cache" / "runs").iterdir())
    ]


def _build(tmp_path: Path, inputs: list[str]) -> Path:
    site = tmp_path / "site"
    data = ["--data", _DATA_DIR_ENV] if _DATA_DIR_ENV else []
    assert main([*inputs, "-o", str(site), *data]) == 0
    return site


def _system_rows(page: Rows) -> dict[str, list[str]]:
    return {a["data-entry"]: cells for a, cells in page.rows if "data-entry" in a}


def _ci(values: list[float] | None) -> str:
    return f"[{values[0]:.3f}, {values[1]:.3f}]" if values else ""


def test_every_number_on_the_index_matches_the_reports(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    site = _build(tmp_path, [*map(str, runs.values()), *_folders(runs)])
    page = parse(site / "index.html")
    rows = _system_rows(page)
    header = next(cells for a, cells in page.rows if cells and cells[0] == "#")
    checked = 0
    for name, path in runs.items():
        report = read_json(path)
        run_id = report["provenance"]["run_id"]
        for run in report["runs"]:
            ident = next(
                (k for k in rows if k.startswith(f"{run_id}-{run['benchmark']}-{run['system']}-")),
                None,
            )
            if ident is None:  # one row per system: c1's runs are in history, c2's are the rows
                assert name == "c1", (name, run["system"])
                continue
            assert name != "c1"
            cells = rows[ident]
            summary = run["summary"]
            overall, every = summary["overall"], summary["overall_all"]
            # the key's headline: the judge's metric when one decided, else the pass metric
            metric = (report["provenance"]["judge_metric"] or {}).get(run["benchmark"], "f1")
            # the headline (f1, overall) and its cluster CI, n, the statuses
            value, _, ci = cells[6].partition(" ")
            assert value == fmt_num(overall[metric]), (name, run["system"])
            low, high = (float(x) for x in ci.strip("[]").split(", "))
            assert low <= round(overall[metric], 3) <= high
            assert cells[7] == str(overall["count"])
            cats = list(summary["by_category"])
            n_cat = len(cats)
            assert [c.split(":")[0] for c in header[8 : 8 + n_cat]] == cats
            for i, cat in enumerate(cats):
                shown_value, _, shown_ci = cells[8 + i].partition(" ")
                assert shown_value == fmt_num(summary["by_category"][cat][metric])
                # the board's cluster CI is the plugin's (same values, clusters and seed)
                assert shown_ci == _ci(summary["by_category"][cat]["ci"].get(metric))
            statuses = cells[8 + n_cat : 12 + n_cat]
            assert statuses == [
                str(every["statuses"][s]) for s in ("CORRECT", "WRONG", "UNSCORED", "ERROR")
            ]
            # mean context tokens: the report's own context figures
            context = next(
                c for c in report["extra"]["context"]["runs"] if c["system"] == run["system"]
            )
            assert cells[12 + n_cat] == f"{context['mean']:.1f}"
            tokens = [q["details"]["context_tokens"] for q in run["questions"]]
            assert math.isclose(context["mean"], sum(tokens) / len(tokens))
            # latency: p50 / p95 of search + answer per question
            lat = sorted(q["latency"]["search"] + q["latency"]["answer"] for q in run["questions"])
            mid = (lat[(len(lat) - 1) // 2] + lat[len(lat) // 2]) / 2
            assert cells[13 + n_cat] == f"{mid * 1000:.1f} ms"
            assert cells[5] == "re-run"  # each report is reproduced by its run folder
            is_control = run["system"] in CONTROLS
            assert ("control" in cells[1]) is is_control
            checked += 1
    every = sum(len(read_json(p)["runs"]) for n, p in runs.items() if n != "c1")
    assert checked == len(rows) == every
    # ranked: the overall f1 of each key's rows never increases down the table
    text = (site / "index.html").read_text(encoding="utf-8")
    sections = text.split('<section class="key"')[1:]
    assert len(sections) == (4 if "locomo" in runs else 3)
    # the judged key ranks by the judge's metric, and says which judge decided
    judged = next(sec for sec in sections if "judge_mem0" in sec.split("</h2>")[0])
    assert "openai:gpt-4o-mini" in judged
    for section in sections:
        values = [float(v) for v in re.findall(r'data-metric="headline">([0-9.]+)', section)]
        assert values == sorted(values, reverse=True)
    # what differs between the keys: top-k (and the benchmark, dataset, selection with LoCoMo)
    diffs = [
        cells[0] for a, cells in page.rows if cells and cells[0] in ("top-k", "judge model(s)")
    ]
    assert "top-k" in diffs and "judge model(s)" in diffs
    # history: bm25 at c1 then c2, in date order
    assert re.search(r"History: bm25</h4>.*?c1c1c1c1c1c1.*?c2c2c2c2c2c2", text, re.S)
    # LoCoMo's published baselines beside the runs (official F1 is what this key measures)
    if "locomo" in runs:
        assert "locomo-gpt-3.5-16k" in text or "GPT-3.5" in text
    # every link stays inside the site and every page it names exists
    for href in set(parse(site / "index.html").links):
        target = href.split("#")[0]
        assert "://" not in href
        assert not target or (site / target).is_file(), href


def test_tiers_self_reported_rescored_rerun(runs: dict[str, Path], tmp_path: Path) -> None:
    tampered = tmp_path / "tampered.json"
    data = read_json(runs["c2"])
    bm25 = next(r for r in data["runs"] if r["system"] == "bm25")
    wrong = next(q for q in bm25["questions"] if q["status"] == "WRONG" and q["category_id"] != 5)
    wrong["status"], wrong["scores"]["f1"] = "CORRECT", 1.0  # claims a score it did not earn
    data["provenance"]["run_id"] = "tampered"
    tampered.write_text(json.dumps(data), encoding="utf-8")
    site = _build(tmp_path, [str(runs["c1"]), str(tampered), str(runs["k2"])])
    rows = _system_rows(parse(site / "index.html"))
    tiers = {k: cells[5] for k, cells in rows.items()}
    # without run folders: re-scored at best; the tampered bm25 is only self-reported
    assert tiers["tampered-demo-bm25-"] == "self-reported"
    assert all(t == "re-scored" for k, t in tiers.items() if k != "tampered-demo-bm25-")
    run_page = (site / "run-tampered-demo-bm25-.html").read_text(encoding="utf-8")
    assert f"{wrong['id']}: f1 stored 1, recomputed 0" in run_page
    assert "table overall: f1 stated" in run_page  # the stated table no longer adds up


def test_diff_with_the_gates_paired_test(runs: dict[str, Path], tmp_path: Path) -> None:
    tampered = tmp_path / "later.json"
    data = read_json(runs["c2"])
    data["provenance"]["run_id"] = "later"
    bm25 = next(r for r in data["runs"] if r["system"] == "bm25")
    flipped = [q for q in bm25["questions"] if q["status"] == "WRONG" and q["category_id"] != 5][:2]
    for q in flipped:
        q["status"], q["scores"]["f1"] = "CORRECT", 1.0
    tampered.write_text(json.dumps(data), encoding="utf-8")
    site = _build(tmp_path, [str(runs["c1"]), str(tampered)])
    c1 = read_json(runs["c1"])
    run_id = c1["provenance"]["run_id"]
    page_path = site / f"diff-{run_id}-demo-bm25---later-demo-bm25-.html"
    page = parse(page_path)
    flips = [a["data-question"] for a, _ in page.rows if "data-question" in a]
    assert sorted(flips) == sorted(q["id"] for q in flipped)
    # the paired test by hand: per-conversation sums of the f1 differences (rounded to 3
    # decimals per question, LoCoMo's rule), the exact sign-flip test over the conversations
    before = {q["id"]: q for q in next(r for r in c1["runs"] if r["system"] == "bm25")["questions"]}
    sums: dict[str, float] = {}
    deltas = []
    for q in bm25["questions"]:
        a, b = before[q["id"]]["scores"].get("f1"), q["scores"].get("f1")
        if a is None or b is None or q["category_id"] == 5:  # overall leaves category 5 out
            continue
        d = round(b, 3) - round(a, 3)
        deltas.append(d)
        sums[q["cluster"]] = sums.get(q["cluster"], 0.0) + d
    text = page_path.read_text(encoding="utf-8")
    delta = re.search(r'id="delta">([-0-9.]+)', text)
    p_value = re.search(r'id="p-value">([0-9.e-]+)', text)
    assert delta is not None and p_value is not None
    assert delta.group(1) == fmt_num(sum(deltas) / len(deltas), 4)
    assert float(p_value.group(1)) == pytest.approx(sign_flip_p(list(sums.values())), rel=1e-3)
    assert "sign-flip over 2 conversation(s)" in text
    # its means are the index's: the headline (overall f1) of both results, as the index shows it
    shown = _system_rows(parse(site / "index.html"))["later-demo-bm25-"][6].partition(" ")[0]
    c1_bm25 = next(r for r in c1["runs"] if r["system"] == "bm25")["summary"]["overall"]["f1"]
    headline = {s: re.search(rf'id="headline-{s}">([^<]+)<', text) for s in ("from", "to")}
    assert headline["from"] is not None and headline["to"] is not None
    assert (headline["from"].group(1), headline["to"].group(1)) == (fmt_num(c1_bm25), shown)
    # (the paired test's "to" mean is the flipped questions' own: this report states its old table)
    means = re.search(r"from mean</td><td[^>]*>([^<]+)<", text)
    assert means is not None and means.group(1) == fmt_num(c1_bm25)
    # each flipped question links to its prediction on both run pages
    for q in flipped:
        assert f"run-{run_id}-demo-bm25-.html#q-{q['id']}" in text
        assert f"run-later-demo-bm25-.html#q-{q['id']}" in text
        assert f'id="q-{q["id"]}"' in (site / "run-later-demo-bm25-.html").read_text("utf-8")


def test_unreadable_input_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other/1"}', encoding="utf-8")
    assert main([str(bad), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert str(bad) in err and "pytest-memeval/1" in err and "--memeval-json" in err


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_memeval_board_option_adds_each_run(
    pytester: pytest.Pytester, memeval_env: None, mode: list[str]
) -> None:
    board = pytester.path / "board"
    for systems, args in (("bm25,no-memory", []), ("bm25", mode)):  # the second run in `mode`
        result = pytester.runpytest(
            "--memeval=demo", f"--memsys={systems}", f"--memeval-board={board}", *args
        )
        assert result.ret == 0, result.stdout.str()[-2000:]
    reports = sorted((board / "reports").glob("*.json"))
    assert len(reports) == 2
    rows = _system_rows(parse(board / "index.html"))
    assert len(rows) == 2  # one row per system: bm25's second run, no-memory
    assert {cells[5] for cells in rows.values()} == {"re-run"}
    assert len(json.loads((board / "run-folders.json").read_text("utf-8"))) == 2
