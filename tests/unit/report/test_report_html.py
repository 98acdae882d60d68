"""HTML report: structure, escaping of hostile strings in every field, no network, size, browser."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import NO_CHROMIUM, chromium, run_chromium
from conftest import REPORT_CATS, report_result, report_summary

from pytest_memeval.analysis import Baseline, aggregate_run, baselines_for
from pytest_memeval.records import Memory, QuestionResult
from pytest_memeval.report._html import render_html
from pytest_memeval.report._model import LLMUsage, Summary
from pytest_memeval.report._pages import esc, json_for_script, render_table
from pytest_memeval.report._tables import Cell, Row, Table

# Each payload would leave a visible trace if it ever ran: the title changes or an element with
# id "pwned" appears.
PWN_TITLE = '<script>document.title="PWNED"</script>'
PWN_IMG = (
    "<img src=x onerror=\"document.body.appendChild(document.createElement('b')).id='pwned'\">"
)
PWN_CLOSE = '</script><script>document.title="PWNED2"</script>'
PWN_ATTR = "\" onmouseover='x' data-x=\"<svg onload=document.title='PWNED3'>"
HOSTILE = f"{PWN_TITLE}{PWN_IMG}{PWN_CLOSE}{PWN_ATTR} & https://evil.example/x </ \u2028"

CATS = REPORT_CATS

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p",
    "nav", "a", "main", "div", "table", "thead", "tbody", "tr", "th", "td", "span", "br", "ol",
    "ul", "li", "code", "details", "summary", "svg", "rect", "line", "text", "label", "select",
    "option", "input", "noscript", "button", "script", "defs", "pattern", "path", "circle",
}  # fmt: skip


def _result(
    system: str, qid: str, category: str, cat_id: int | str, f1: float, **kw: object
) -> QuestionResult:
    return report_result(system, qid, category, cat_id, f1, memory_score=0.5, **kw)


def _summary(hostile: bool = False) -> Summary:
    def results(system: str) -> list[QuestionResult]:
        return [
            _result(system, f"q{i}", "single-hop", 4, i / 12) for i in range(1, 13)
        ] + [
            _result(system, "m1", "multi-hop", 1, 0.5),
            _result(system, "m2", "multi-hop", 1, 0.0, scores={"f1": None, "judge_mem0_official": None},
                    status="UNSCORED"),
            _result(system, "a1", "adversarial", 5, 0.0, gold=None),
        ]  # fmt: skip

    summary = report_summary(
        results,
        hostile=HOSTILE if hostile else None,
        memory_id=True,
        provenance={
            "created": "2026-01-02T03:04:05+00:00",
            "systems": ["bm25", HOSTILE if hostile else "full-context"],
            "judge_metric": {"locomo": "judge_mem0_official"},
        },
    )
    summary.llm = LLMUsage(
        tokens={
            "answerer": {"openai:gpt-4o-mini": {"input_tokens": 3000, "output_tokens": 60,
                                                "calls": 30, "cache_hits": 0}},
            "judge": {HOSTILE if hostile else "openai:gpt-4o-mini": {"input_tokens": 1500,
                                                                      "output_tokens": 30}},
        }
    )  # fmt: skip
    return summary


def _evil_baseline() -> Baseline:
    return Baseline(
        name=HOSTILE,
        benchmark="locomo",
        system=HOSTILE,
        metric="f1",
        protocol=HOSTILE,
        source=HOSTILE,
        by_category={4: 0.5, 1: 0.25},
        overall=0.4,
        verified=False,
    )


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.title = ""
        self._in_title = False
        self.scripts: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "title" and not self.title:
            self._in_title = True
        if tag == "script":
            self._script = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "script" and self._script is not None:
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._script is not None:
            self._script.append(data)


def _parse(text: str) -> _Collector:
    parser = _Collector()
    parser.feed(text)
    parser.close()
    return parser


def _data_block(page: str) -> str:
    match = re.search(
        r'<script type="application/json" id="memeval-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    return match.group(1)


# ---- unit checks -------------------------------------------------------------------------------


def test_esc_and_json_for_script() -> None:
    assert esc('<a href="x">\'&') == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;"
    assert esc(None) == ""
    text = json_for_script({"k": HOSTILE})
    assert "<" not in text and ">" not in text and "&" not in text
    assert "</" not in text
    assert json.loads(text) == {"k": HOSTILE}


def test_structure_and_values() -> None:
    page = render_html(_summary(), {"locomo": baselines_for("locomo")})
    parsed = _parse(page)
    tags = [t for t, _ in parsed.tags]
    assert parsed.title == "pytest-memeval report"
    # scoreboard, run tables (2), comparison, baselines, worst/best (single-hop, multi-hop,
    # adversarial per run: 6), provenance (+ its judge_metric mapping as a small table),
    # latency, tokens, questions
    assert tags.count("table") == 1 + 2 + 1 + 1 + 6 + 2 + 1 + 1 + 1
    assert "Configuration and provenance" in page
    # the scoreboard opens the page; provenance closes it, collapsed
    assert page.index('id="scoreboard"') < page.index('id="bench-0"')
    assert page.index('<details class="provenance" id="config">') > page.index('id="questions"')
    assert "<td>pytest-memeval 9.8.7</td>" in page
    assert "<td>79fa87e9" + "0" * 56 + "</td>" in page
    assert "<td>abc1234def</td>" in page and "<td>mem0:openai:gpt-4o-mini</td>" in page
    # per-category row with CI: single-hop f1 = mean(1..12)/12 = 0.542
    assert '<td class="num">0.542 <span class="ci">[0.38, 0.44]</span></td>' in page
    # every published baseline a row with its values, label and notes
    for i, b in enumerate(baselines_for("locomo"), 1):
        assert f"<td>[{i}] published</td><td>{esc(b.system)}</td>" in page
        assert esc(b.protocol) in page
    # one chart per metric, never two metrics on one axis: f1 (the pass metric), judge (a Mem0 J
    # baseline matches) and set_f1 (a published metric this run lacks: its bars alone)
    assert tags.count("svg") == 3
    assert "Chart: f1 by category" in page and "Chart: judge_mem0_official by category" in page
    assert "Chart: set_f1 by category" in page
    assert "This run has no set_f1 figure: only the published ones are drawn." in page
    # bars: f1 chart: 2 runs x 5 groups + 2 f1 baselines with values (locomo-gpt-3.5-16k and
    # rag: categories 4, 1, 5 + overall_all = 4 each); judge chart: 2 x 5 (unscored m2 still
    # leaves m1) + Mem0 J: categories 4 and 1 (it has no 5) + overall = 3; set_f1 chart: the
    # set_f1 baseline alone (categories 4, 1 + overall = 3); plus one hatch pattern <rect> per
    # published series (2 + 1 + 1)
    assert tags.count("rect") == (10 + 4 + 4) + (10 + 3) + 3 + 4
    assert page.count('class="published"><title>') == 4 + 4 + 3 + 3
    # worst and best: single-hop has 12 scored -> 5 best (CORRECT only) and 5 worst
    assert page.count("<td>worst 1</td>") == 4
    assert page.count("<td>best 5</td>") == 2
    # latency with Mem0's published figures, flagged unverified
    assert "Mem0 (published) (unverified)" in page
    for figure in ("148", "200", "708", "1,440", "1,764 tokens/query"):
        assert figure in page
    assert '<td class="num">210</td>' in page  # total p50 = 10 ms + 200 ms
    # tokens: (3000 + 60 + 1500 + 30) / 30 questions = 153 per question
    assert "153 tokens/question over 30 questions" in page
    # per-question data
    data = json.loads(_data_block(page))
    assert len(data["rows"]) == 30
    row = next(r for r in data["rows"] if r["id"] == "q6" and r["s"] == "bm25")
    assert row["pm"] == 0.5 and row["st"] == "CORRECT" and row["c"] == "single-hop"
    assert data["memories"][row["m"][0][0]] == ["memory of q6", "2024-01-01"]
    assert next(r for r in data["rows"] if r["id"] == "a1")["g"] == "(none)"
    # sortable headers and filters
    assert page.count('aria-sort="none"') == 8
    for control in ("f-category", "f-status", "f-system", "f-text"):
        assert f'id="{control}"' in page


def test_no_network_and_csp() -> None:
    page = render_html(_summary(), {"locomo": baselines_for("locomo", ("all",))})
    assert "http://" not in page and "https://" not in page
    assert "//" not in re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    parsed = _parse(page)
    for tag, attrs in parsed.tags:
        for name, value in attrs:
            assert name not in ("src", "srcset", "action", "formaction", "background"), tag
            if name == "href":
                assert value is not None and value.startswith("#")
    csp = next(
        v
        for t, a in parsed.tags
        if t == "meta"
        for k, v in a
        if k == "content" and v and "src" in v
    )
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp


def test_templates_escape_with_esc_and_the_policy_hashes_the_inline_script() -> None:
    """The pages are templates with autoescaping by ``esc`` (every cell field, the row class,
    notes and caption of a table); the policy's hash is that of the script the page carries."""
    cell = Cell(HOSTILE, numeric=True, ci=HOSTILE, link=HOSTILE)
    table = Table((Cell(HOSTILE),), (Row((cell,), kind=HOSTILE),), (HOSTILE,), HOSTILE)
    fragment = render_table(table, HOSTILE, HOSTILE)
    assert "<script" not in fragment and "<img" not in fragment
    # table id and class, header, row class, link target, cell, interval, note, caption
    assert fragment.count(esc(HOSTILE)) == 9
    page = render_html(_summary(), {})
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert esc(f"script-src 'sha256-{digest}'") in page and script.startswith("\n(function")


def test_hostile_strings_in_every_field_are_escaped() -> None:
    summary = _summary(hostile=True)
    page = render_html(summary, {"locomo": [_evil_baseline()]})
    parsed = _parse(page)
    tags = [t for t, _ in parsed.tags]
    assert set(tags) <= ALLOWED_TAGS
    assert tags.count("script") == 2
    assert "img" not in tags
    for tag, attrs in parsed.tags:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            assert "PWNED" not in (value or ""), (tag, name)
            assert "https://" not in (value or "")
    assert parsed.title == "pytest-memeval report"
    # two scripts: our JSON data block (which is valid JSON holding the hostile text verbatim)
    # and our program
    assert parsed.scripts[0] == _data_block(page)
    data = json.loads(parsed.scripts[0])
    evil_rows = [r for r in data["rows"] if r["id"] == HOSTILE]
    assert len(evil_rows) == 2
    evil = evil_rows[0]
    assert evil["q"] == evil["g"] == evil["p"] == evil["c"] == evil["jr"] == evil["j"] == HOSTILE
    assert evil["e"] == HOSTILE
    assert data["memories"][evil["m"][0][0]] == [HOSTILE, HOSTILE]
    assert {r["s"] for r in data["rows"]} == {"bm25", HOSTILE}
    block = _data_block(page)
    assert "<" not in block and ">" not in block and "&" not in block
    assert "PWNED" not in parsed.scripts[1] and "pwned" not in parsed.scripts[1]
    # the escaped text is present where the hostile string was shown statically
    escaped = esc(HOSTILE)
    assert page.count(escaped) >= 8  # system headings, notes, answerer, gates, baseline, ...
    # raw markup never appears outside the JSON block
    outside = page.replace(block, "")
    for payload in (PWN_TITLE, PWN_IMG, PWN_CLOSE, "<svg onload", "<img"):
        assert payload not in outside
    # every hostile URL is in escaped text, never in an attribute
    assert outside.count("https://evil.example/x") == outside.count("&amp; https://evil.example/x")


def test_size_demo_and_large() -> None:
    small = render_html(_summary(), {"locomo": baselines_for("locomo")})
    assert len(small.encode()) < 1_000_000
    turns = [f"Speaker: turn {i} " + "words " * 30 for i in range(6000)]
    results = []
    for i in range(4000):
        mems = [Memory(text=turns[(i * 7 + j) % 6000], date="2024-05-01", score=0.1 * j)
                for j in range(25)]  # fmt: skip
        results.append(
            _result("bm25", f"q{i}", "single-hop", 4, (i % 10) / 10, memories=mems,
                    question="What did the speaker say about the long question " * 2,
                    prediction="an answer of moderate length " * 3)
        )  # fmt: skip
    run = aggregate_run("locomo", "bm25", "", results, CATS, ["f1", "judge_mem0_official"], ["f1"])
    big = render_html(Summary(runs=[run], provenance={}), {})
    size = len(big.encode())
    assert size < 8_000_000, size
    data = json.loads(_data_block(big))
    assert len(data["rows"]) == 4000
    assert all(len(r["m"]) == 10 and r["mn"] == 25 for r in data["rows"])
    assert len(data["memories"]) <= 6000  # shared memory texts are stored once


# ---- browser -----------------------------------------------------------------------------------


@pytest.mark.parametrize("csp", [True, False], ids=["with-csp", "escaping-only"])
def test_browser_injected_scripts_do_not_run(tmp_path: Path, csp: bool) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    summary = _summary(hostile=True)
    page = tmp_path / "report.html"
    page.write_text(render_html(summary, {"locomo": [_evil_baseline()]}, csp=csp), "utf-8")
    proc = run_chromium(binary, tmp_path, page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert dom.strip(), proc.stderr[-2000:]
    parsed = _parse(dom)
    # the script ran to its end and built the table ...
    body_attrs = dict(next(a for t, a in parsed.tags if t == "body"))
    assert body_attrs.get("data-memeval-ready") == "1"
    # ... while no injected code ran: the title is ours and no element got id "pwned"
    assert parsed.title == "pytest-memeval report"
    assert 'id="pwned"' not in dom
    assert all(dict(a).get("id") != "pwned" for _, a in parsed.tags)
    assert "img" not in {t for t, _ in parsed.tags}
    assert all(not n.startswith("on") for _, a in parsed.tags for n, _ in a)
    # the question table: one row per result, hostile text shown as text in every column
    qrows = re.search(r'<table id="qtable">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert qrows is not None
    assert qrows.group(1).count("<tr>") == 32
    shown = esc(HOSTILE).replace("&#x27;", "'").replace("&quot;", '"')
    assert shown in qrows.group(1)  # question, gold, prediction, memory, reasoning
    assert f"judge reasoning: {shown}" in qrows.group(1)
    assert f'<li class="q-memory"><span class="mem-date">[{shown}] </span>{shown}' in qrows.group(1)
    # filters were filled from the data
    assert dom.count("<option") == 1 + 4 + 1 + 3 + 1 + 2  # all + categories, statuses, systems


def test_browser_screenshot(tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    page = tmp_path / "report.html"
    page.write_text(render_html(_summary(), {"locomo": baselines_for("locomo")}), "utf-8")
    shot = tmp_path / "shot.png"
    proc = run_chromium(
        binary, tmp_path, page, "--hide-scrollbars", "--window-size=1280,2000",
        f"--screenshot={shot}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # a blank page compresses to a few kB


_PROBE = """<script>
(function () {
  var ths = document.querySelectorAll("#qtable th[data-key]");
  var score = ths[7];
  score.click(); score.click();
  var top = document.querySelector("#qtable tbody tr td:nth-child(8)").textContent;
  var id = document.querySelector("#qtable tbody tr td:nth-child(3)").textContent;
  var sys = document.getElementById("f-system");
  sys.value = "full-context"; sys.dispatchEvent(new Event("change"));
  var cat = document.getElementById("f-category");
  cat.value = "single-hop"; cat.dispatchEvent(new Event("change"));
  var text = document.getElementById("f-text");
  text.value = "Q1"; text.dispatchEvent(new Event("input"));
  var ids = Array.prototype.map.call(
    document.querySelectorAll("#qtable tbody tr td:nth-child(3)"), function (td) {
      return td.textContent; });
  document.body.setAttribute("data-probe", [top, id, score.getAttribute("aria-sort"),
    ids.join(","), document.getElementById("q-count").textContent].join("|"));
})();
</script></body>"""


def test_browser_sort_and_filter(tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    # the probe is an extra inline script, so this page is rendered without the CSP
    page = tmp_path / "probe.html"
    html_text = render_html(_summary(), {}, csp=False).replace("</body>", _PROBE)
    page.write_text(html_text, "utf-8")
    proc = run_chromium(binary, tmp_path, page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match is not None, proc.stdout[-2000:]
    top, first_id, sort, ids, count = match.group(1).split("|")
    # descending by score: q12 (f1 = 1.0) first, ids tie-broken by original order
    assert (top, first_id, sort) == ("1.000", "q12", "descending")
    # full-context, single-hop, text "q1" matches q1, q10, q11, q12; still sorted by score
    assert ids == "q12,q11,q10,q1"
    assert count == "showing 4 of 4 matching (30 in total)"


def test_protocol_card_links_resolve_to_the_card_section() -> None:
    from pytest_memeval.report.cards import protocol_card, run_cards

    summary = _summary()
    summary.protocol_cards = run_cards(summary.runs)
    card = protocol_card("locomo")
    page = render_html(summary, {})
    link = f'<a href="#card-locomo">{card.card_id}</a>'
    board = page[page.index('id="scoreboard-table"') : page.index('id="bench-0"')]
    assert "<th>protocol card</th>" in board
    assert board.count(link) == 2  # one row per system
    run_part = page[page.index('id="bench-0"') : page.index('id="protocol-cards"')]
    assert run_part.count(f"protocol card {link}") == 2
    section = page[page.index('<h2 id="protocol-cards">') : page.index('id="config"')]
    assert section.count('id="card-locomo"') == 1
    assert f"upstream commit {card.profiles[0].commit}" in section
    assert f"data revision: {card.data_revision}" in section
    assert "category-5" in section and "docs/protocols.md#card-locomo" in section
    assert '<a href="#protocol-cards">protocol cards</a>' in page
    # without cards (a suite from another package): no column, no links, no section
    bare = render_html(_summary(), {})
    assert "card-" not in bare and "protocol-cards" not in bare


def test_chart_note_mentions_published_bars_only_when_some_are_drawn() -> None:
    """Without a published figure (``--memeval-published-baselines=none``) the chart holds this
    run's bars alone: its note and label say nothing of hatched or published bars."""
    page = render_html(_summary(), {"locomo": []})
    assert "Chart: f1 by category" in page
    assert 'class="published"><title>' not in page  # no published bar drawn
    assert "Solid bars: this run (f1)." in page
    assert "Hatched bars" not in page
    assert "f1 by category, this run against published baselines" not in page
    assert "f1 by category, this run" in page
    # with the published figures the note still explains the hatched bars
    with_published = render_html(_summary(), {"locomo": baselines_for("locomo")})
    assert "Hatched bars: published f1 figures" in with_published
    assert "f1 by category, this run against published baselines" in with_published
