"""One self-contained HTML report: inline CSS, inline SVG, a small inline script, no network.

Safety rules, all enforced here:

* every string from data, models or configuration goes through :func:`esc`
  (``html.escape(quote=True)``), in text and in attribute values alike;
* per-question data for the script travels as JSON inside ``<script type="application/json">``
  with ``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (so ``</script>``
  can never close the block), and the script builds the table with ``textContent`` only;
* a Content-Security-Policy ``<meta>`` allows exactly the one inline script (by its sha256) and no
  network at all, as a second line of defence should an escape ever be missed;
* the page holds no ``http://`` or ``https://`` address of its own.

Only the stdlib is used (no template engine, no added dependency).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..analysis.baselines import Baseline
from ..records import STATUS_CORRECT, QuestionResult, finite_float
from .model import (
    RunSummary,
    Summary,
    baseline_value,
    ci_note,
    judge_metric,
    overall_scopes,
    pass_metric,
    runs_by_benchmark,
)
from .tables import (
    Cell,
    Row,
    Table,
    baselines_table,
    cards_table,
    check_lines,
    comparison_table,
    fmt_num,
    halumem_table,
    latency_table,
    official_table,
    provenance_items,
    row_label,
    run_table,
    scoreboard_table,
    tokens_note,
    tokens_table,
)

__all__ = [
    "PAGE_CSS",
    "content_security_policy",
    "esc",
    "json_for_script",
    "render_html",
    "render_table",
    "summary_tables",
]

_PALETTE_RUNS = ("#2f6db5", "#d9822b", "#3c9a5f", "#8e5cb5", "#c94f4f", "#4aa3a3", "#7a7a2e")
_PALETTE_BASE = ("#8a8a8a", "#b5a27a", "#7a9bb5", "#b58aa8", "#9bb57a", "#5f5f5f", "#c7b299")


def esc(value: object) -> str:
    """HTML-escape any value (quotes included, so it is safe in attribute values too)."""
    if value is None:
        return ""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def json_for_script(data: object) -> str:
    """JSON fit for a ``<script type="application/json">`` block: no ``<``, ``>`` or ``&``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return str(value)


# ---- static pieces -----------------------------------------------------------------------------

PAGE_CSS = """
:root{--fg:#1d2330;--muted:#5d6675;--line:#d9dde5;--bg:#fff;--alt:#f6f7fa;--accent:#2f6db5}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{padding:18px 28px;background:#1d2330;color:#fff}
header h1{margin:0 0 4px;font-size:22px}
header p{margin:0;color:#c9d1de}
nav{padding:8px 28px;background:#eef1f6;border-bottom:1px solid var(--line);font-size:13px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none}
main{padding:8px 28px 40px;max-width:1500px}
h2{margin:28px 0 8px;font-size:19px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{margin:20px 0 6px;font-size:16px}
p.note,.muted{color:var(--muted);font-size:13px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}
th{background:#eef1f6;font-weight:600;max-width:220px}
tbody tr:nth-child(even){background:var(--alt)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.total td{font-weight:600;background:#eef3fb}
tr.published td{font-style:italic;color:#4b5260}
.ci{color:var(--muted);font-size:11px}
.st{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;font-weight:600}
.st-CORRECT{background:#dff3e4;color:#1e6b34}.st-WRONG{background:#fbe3e3;color:#8f2323}
.st-UNSCORED{background:#fff1cc;color:#7a5a00}.st-ERROR{background:#e9e0f5;color:#5b2d8e}
ol.notes{font-size:12px;color:var(--muted);margin:4px 0 12px;padding-left:22px}
ul.legend{list-style:none;padding:0;margin:4px 0;font-size:12px}
ul.legend li{margin:2px 0}
.swatch{display:inline-block;width:11px;height:11px;margin-right:6px;vertical-align:-1px}
.swatch.hatched{border:2px solid;background:repeating-linear-gradient(45deg,currentColor 0 2px,
#fff 2px 5px)}
details.provenance{margin-top:28px}details.provenance>summary{font-size:17px;font-weight:600}
table.scoreboard td,table.scoreboard th{font-size:14px}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#1d2330}
svg .grid{stroke:#e3e6ec}
.controls{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0}
.controls label{font-size:13px;color:var(--muted)}
.controls select,.controls input{font:inherit;padding:3px 6px}
#qtable th[data-key]{cursor:pointer;user-select:none}
#qtable th[aria-sort=ascending]::after{content:" \\25B2"}
#qtable th[aria-sort=descending]::after{content:" \\25BC"}
#qtable td.text{max-width:360px;word-wrap:break-word}
#qtable td:last-child{min-width:300px}
details summary{cursor:pointer;color:var(--accent)}
details ol{margin:4px 0;padding-left:20px}
details li{margin-bottom:3px}
.mem-date{color:var(--muted);font-size:11px}
ul.checks li.fail{color:#8f2323}ul.checks li.pass{color:#1e6b34}
button{font:inherit;padding:3px 10px;margin:6px 0}
"""

# The script only ever writes text through textContent, never innerHTML.
_JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("memeval-data").textContent);
  var rows = data.rows;
  rows.forEach(function (r, i) {
    r.i = i;
    r.t = [r.id, r.q, r.g, r.p || "", r.c].join(" ").toLowerCase();
  });
  var mems = data.memories;
  var table = document.getElementById("qtable");
  var tbody = table.tBodies[0];
  var fCat = document.getElementById("f-category");
  var fSt = document.getElementById("f-status");
  var fSys = document.getElementById("f-system");
  var fText = document.getElementById("f-text");
  var count = document.getElementById("q-count");
  var more = document.getElementById("q-more");
  var state = {key: null, dir: 1, limit: data.page};

  function fill(select, values) {
    values.forEach(function (v) {
      var o = document.createElement("option");
      o.value = v; o.textContent = v; select.appendChild(o);
    });
  }
  function uniq(key) {
    var seen = {}, out = [];
    rows.forEach(function (r) {
      var v = r[key];
      if (!Object.prototype.hasOwnProperty.call(seen, v)) { seen[v] = 1; out.push(v); }
    });
    return out;
  }
  fill(fCat, uniq("c")); fill(fSt, uniq("st")); fill(fSys, uniq("s"));

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function num(v) { return (v === null || v === undefined) ? "-" : v.toFixed(3); }

  function expand(details, r) {
    var box = el("div");
    var parts = [];
    Object.keys(r.sc).forEach(function (k) { parts.push(k + "=" + num(r.sc[k])); });
    box.appendChild(el("div", "scores: " + (parts.join(", ") || "-")));
    if (r.e) { box.appendChild(el("div", "error: " + r.e, "q-error")); }
    if (r.j) { box.appendChild(el("div", "judge: " + r.j, "q-judge")); }
    if (r.jr) { box.appendChild(el("div", "judge reasoning: " + r.jr, "q-reasoning")); }
    if (r.m.length) {
      var title = "memories (" + r.m.length +
        (r.mn > r.m.length ? " of " + r.mn + " stored" : "") + ")";
      box.appendChild(el("div", title));
      var ol = el("ol");
      r.m.forEach(function (ref) {
        var mem = mems[ref[0]];
        var li = el("li", null, "q-memory");
        if (mem[1]) { li.appendChild(el("span", "[" + mem[1] + "] ", "mem-date")); }
        li.appendChild(document.createTextNode(mem[0]));
        if (ref[1] !== null) { li.appendChild(el("span", " (score " + ref[1] + ")", "mem-date")); }
        ol.appendChild(li);
      });
      box.appendChild(ol);
    } else {
      box.appendChild(el("div", "no memories stored"));
    }
    details.appendChild(box);
  }

  function cmp(a, b) {
    var k = state.key, x = a[k], y = b[k];
    var xn = (x === null || x === undefined || x === "");
    var yn = (y === null || y === undefined || y === "");
    if (xn && yn) { return a.i - b.i; }
    if (xn) { return 1; }
    if (yn) { return -1; }
    if (typeof x === "number" && typeof y === "number") {
      return x === y ? a.i - b.i : (x - y) * state.dir;
    }
    var c = String(x).localeCompare(String(y), undefined, {numeric: true});
    return c === 0 ? a.i - b.i : c * state.dir;
  }

  function render() {
    var cat = fCat.value, st = fSt.value, sys = fSys.value;
    var text = fText.value.trim().toLowerCase();
    var list = rows.filter(function (r) {
      if (cat && r.c !== cat) { return false; }
      if (st && r.st !== st) { return false; }
      if (sys && r.s !== sys) { return false; }
      if (text && r.t.indexOf(text) < 0) { return false; }
      return true;
    });
    if (state.key) { list.sort(cmp); }
    var shown = list.slice(0, state.limit);
    var body = document.createElement("tbody");
    shown.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("td", r.s));
      tr.appendChild(el("td", r.c));
      tr.appendChild(el("td", r.id));
      tr.appendChild(el("td", r.q, "text"));
      tr.appendChild(el("td", r.g, "text"));
      tr.appendChild(el("td", r.p === null ? "(none)" : r.p, "text"));
      var stc = el("td"); stc.appendChild(el("span", r.st, "st st-" + r.st)); tr.appendChild(stc);
      tr.appendChild(el("td", num(r.pm), "num"));
      var dc = el("td");
      var d = el("details");
      d.appendChild(el("summary", r.m.length + " memories" + (r.jr ? ", judge" : "")));
      expand(d, r);
      dc.appendChild(d); tr.appendChild(dc);
      body.appendChild(tr);
    });
    table.replaceChild(body, tbody);
    tbody = body;
    count.textContent = "showing " + shown.length + " of " + list.length + " matching (" +
      rows.length + " in total)";
    more.hidden = shown.length >= list.length;
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    var key = th.getAttribute("data-key");
    if (!key) { return; }
    function sortBy() {
      if (state.key === key) { state.dir = -state.dir; } else { state.key = key; state.dir = 1; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) {
        if (o.getAttribute("data-key")) { o.setAttribute("aria-sort", "none"); }
      });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    }
    th.addEventListener("click", sortBy);
    th.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sortBy(); }
    });
  });
  [fCat, fSt, fSys].forEach(function (s) {
    s.addEventListener("change", function () { state.limit = data.page; render(); });
  });
  fText.addEventListener("input", function () { state.limit = data.page; render(); });
  more.addEventListener("click", function () { state.limit += data.page; render(); });
  render();
  document.body.setAttribute("data-memeval-ready", "1");
})();
"""


def content_security_policy(script: str) -> str:
    """The pages' policy: no network, only ``script`` (by its sha256) may run."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


# ---- tables ------------------------------------------------------------------------------------


def render_table(table: Table, table_id: str = "", table_class: str = "") -> str:
    """A table as HTML: cells escaped, numeric cells right-aligned, intervals in a muted span
    after their value, a row class per kind (``total``, ``extra``, ``published``), numbered notes
    and the caption below."""
    id_attr = f' id="{esc(table_id)}"' if table_id else ""
    if table_class:
        id_attr += f' class="{esc(table_class)}"'
    out = [f'<div class="scroll"><table{id_attr}><thead><tr>']
    for cell in table.header:
        text = esc(cell.text)
        out.append(f'<th class="num">{text}</th>' if cell.numeric else f"<th>{text}</th>")
    out.append("</tr></thead><tbody>")
    for row in table.rows:
        out.append(f'<tr class="{esc(row.kind)}">' if row.kind else "<tr>")
        for cell in row.cells:
            content = esc(cell.text)
            if cell.link is not None:
                content = f'<a href="#{esc(cell.link)}">{content}</a>'
            if cell.ci is not None:
                content = f'{content} <span class="ci">{esc(cell.ci)}</span>'
            out.append(f'<td class="num">{content}</td>' if cell.numeric else f"<td>{content}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if table.notes:
        out.append('<ol class="notes">')
        out.extend(f"<li>{esc(note)}</li>" for note in table.notes)
        out.append("</ol>")
    if table.caption:
        out.append(f'<p class="note">{esc(table.caption)}</p>')
    return "".join(out)


def _baselines_section(runs: Sequence[RunSummary], baselines: Sequence[Baseline]) -> str:
    table = baselines_table(runs, baselines)
    if table is None:
        return ""
    return (
        "<h3>This run beside the published figures</h3>"
        '<p class="note">Every published figure of the benchmark, with its label: comparable '
        "(same protocol, metric, judge and judge model as this run) or reference (measured "
        "another way; its note below says how).</p>" + render_table(table)
    )


def _cards_section(summary: Summary) -> str:
    """Each suite's protocol card reference, one block per suite (the target of the card links
    of the scoreboard and the run headers); the full cards are docs/protocols.md."""
    table = cards_table(summary)
    if table is None:
        return ""
    parts = [render_table(table)]
    for bench, ref in summary.protocol_cards.items():
        upstream = ref.get("upstream") or {}
        items = [
            f"<li>data revision: {esc(ref.get('data_revision') or '- (not pinned)')}</li>",
            *(f"<li>protocol {esc(k)}: upstream commit {esc(v)}</li>" for k, v in upstream.items()),
            f"<li>known deviations: {esc(', '.join(ref.get('deviations') or ()) or '-')}</li>",
            f"<li>the full card: {esc(ref.get('docs', '-'))}</li>",
        ]
        parts.append(
            f'<div class="card" id="card-{esc(bench)}"><h3>{esc(bench)} · '
            f"{esc(ref.get('card', '-'))}</h3><ul>{''.join(items)}</ul></div>"
        )
    return "".join(parts)


def _provenance_section(summary: Summary) -> str:
    """Configuration and provenance, last and collapsed: one key/value table, each nested
    mapping (package versions, tokenizer digests) as a small table of its own, never raw JSON."""
    rows = []
    nested = []
    for key, value in provenance_items(summary.provenance, files=True):
        if isinstance(value, Mapping) and value:
            inner = "".join(
                f"<tr><td>{esc(k)}</td><td>{esc(_plain(v) or '-')}</td></tr>"
                for k, v in value.items()
            )
            nested.append(
                f"<h4>{esc(key)}</h4>"
                '<div class="scroll"><table><thead><tr><th>name</th><th>value</th></tr></thead>'
                f"<tbody>{inner}</tbody></table></div>"
            )
            continue
        if isinstance(value, list):
            value = ", ".join(_plain(v) for v in value)
        rows.append(Row((Cell(str(key)), Cell("-" if value in (None, "") else _plain(value)))))
    table = render_table(Table((Cell("key"), Cell("value")), tuple(rows)))
    return (
        '<details class="provenance" id="config"><summary>Configuration and provenance'
        f"</summary>{table}{''.join(nested)}</details>"
    )


# ---- chart -------------------------------------------------------------------------------------


def _chart(
    summary: Summary,
    runs: Sequence[RunSummary],
    baselines: Sequence[tuple[int, Baseline]],
    metric: str,
) -> str:
    """Horizontal grouped bars: one group per category (and overall rows), one bar per series;
    this run's bars solid, published bars (``(note number, baseline)``, all of ``metric``) hatched
    and outlined in their colour, labelled comparable or reference (the legend says which)."""
    first = runs[0]
    scopes = overall_scopes(first)
    groups = [*first.categories, first.overall, first.overall_all]
    series: list[tuple[str, str, list[float | None]]] = []
    published: set[int] = set()
    for i, run in enumerate(r for r in runs if metric in r.metrics):
        values = []
        for row in groups:
            match = run.row(row.key)
            values.append(finite_float(match.metrics.get(metric)) if match else None)
        series.append((f"{run.label} ({metric}, this run)", _PALETTE_RUNS[i % 7], values))
    for i, (n, b) in enumerate(baselines):
        values = [finite_float(baseline_value(b, row)) for row in groups]
        why = f": {'; '.join(b.reasons)}" if b.reasons else ""
        label = f"[{n}] {b.system}, published {b.metric}, {b.label}{why}"
        published.add(len(series))
        series.append((label, _PALETTE_BASE[i % 7], values))
    if not series:
        return ""
    top = max([1.0, *(v for _, _, vals in series for v in vals if v is not None)])
    label_w, plot_w, right = 210, 460, 60
    bar_h, bar_gap, group_gap = 13, 2, 12
    legend_h = 0
    group_h = len(series) * (bar_h + bar_gap) + group_gap
    axis_y = legend_h + 4
    plot_top = axis_y + 18
    height = plot_top + group_h * len(groups) + 6
    width = label_w + plot_w + right
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(f"{metric} by category, this run against published baselines")}">'
    ]
    hatch = []
    for s_index in sorted(published):
        color = series[s_index][1]
        hatch.append(
            f'<pattern id="hatch-{s_index}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="{color}" stroke-width="3"/></pattern>'
        )
    if hatch:
        parts.append(f"<defs>{''.join(hatch)}</defs>")
    for tick in range(5):
        tick_value = top * tick / 4
        x = label_w + plot_w * tick / 4
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{axis_y + 12}" x2="{x:.1f}" y2="{height - 4}"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 8}" text-anchor="middle">{tick_value:.2f}</text>'
        )
    for g, row in enumerate(groups):
        gy = plot_top + g * group_h
        mid = gy + (len(series) * (bar_h + bar_gap)) / 2 + 4
        parts.append(
            f'<text x="{label_w - 8}" y="{mid:.1f}" text-anchor="end">'
            f"{esc(_short(row_label(row, scopes), 30))}</text>"
        )
        for s, (label, color, values) in enumerate(series):
            y = gy + s * (bar_h + bar_gap)
            value = values[g]
            if value is None:
                parts.append(
                    f'<text x="{label_w + 4}" y="{y + bar_h - 2}" fill="#8a8a8a">n/a</text>'
                )
                continue
            w = max(plot_w * value / top, 0.5)
            tip = esc(f"{label}: {row.key} = {value:.3f}")
            fill = (
                f'fill="url(#hatch-{s})" stroke="{color}" class="published"'
                if s in published
                else f'fill="{color}"'
            )
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" {fill}>'
                f"<title>{tip}</title></rect>"
            )
            parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 2}">{value:.3f}</text>')
    parts.append("</svg>")
    legend = "".join(
        (
            f'<li class="published"><span class="swatch hatched" style="border-color:{color};'
            f'color:{color}"></span>{esc(label)}</li>'
            if i in published
            else f'<li><span class="swatch" style="background:{color}"></span>{esc(label)}</li>'
        )
        for i, (label, color, _) in enumerate(series)
    )
    ran = any(metric in r.metrics for r in runs)
    solid = (
        f"Solid bars: this run ({esc(metric)}). "
        if ran
        else f"This run has no {esc(metric)} figure: only the published ones are drawn. "
    )
    return (
        f"<h3>Chart: {esc(metric)} by category</h3>"
        f'<p class="note">{solid}Hatched bars: published {esc(metric)} figures, '
        "each labelled comparable (measured as this run) or reference (measured another way, "
        "the reasons in the legend); one metric per chart.</p>"
        f'<ul class="legend">{legend}</ul><div class="scroll">{"".join(parts)}</div>'
    )


# ---- worst and best ----------------------------------------------------------------------------


def _worst_best(
    results: Sequence[QuestionResult], metric: str
) -> tuple[list[QuestionResult], list[QuestionResult]]:
    scored = [r for r in results if finite_float(r.scores.get(metric)) is not None]
    scored.sort(key=lambda r: (finite_float(r.scores.get(metric)) or 0.0, r.question_id))
    # "best" holds only answers that passed (never a WRONG at 0.000); "worst" the lowest of
    # the others, so no question is in both lists
    correct = [r for r in scored if r.status == STATUS_CORRECT]
    best = list(reversed(correct[-5:]))
    chosen = {id(r) for r in best}
    worst = [r for r in scored if id(r) not in chosen][:5]
    return worst, best


def _gold_text(result: QuestionResult, limit: int) -> str:
    return "(none)" if result.gold is None else _short(_plain(result.gold), limit)


def _raw_table(
    header: Sequence[tuple[str, bool]], rows: Sequence[tuple[str, Sequence[tuple[str, bool]]]]
) -> str:
    """An HTML-only table (the worst/best questions, with status badges): ``header`` is
    (escaped text, numeric); ``rows`` (row class, [(escaped html, numeric)])."""
    out = ['<div class="scroll"><table><thead><tr>']
    for text, numeric in header:
        out.append(f'<th class="num">{text}</th>' if numeric else f"<th>{text}</th>")
    out.append("</tr></thead><tbody>")
    for cls, cells in rows:
        out.append(f'<tr class="{esc(cls)}">' if cls else "<tr>")
        for content, numeric in cells:
            out.append(f'<td class="num">{content}</td>' if numeric else f"<td>{content}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _worst_best_section(summary: Summary, run: RunSummary, text_limit: int) -> str:
    metric = pass_metric(summary, run)
    if metric is None:
        return ""
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in run.results:
        by_cat.setdefault(r.category, []).append(r)
    header = [
        ("", False),
        ("id", False),
        ("question", False),
        ("gold", False),
        ("prediction", False),
        ("status", False),
        (esc(metric), True),
    ]
    blocks = []
    for row in run.categories:
        worst, best = _worst_best(by_cat.get(row.key, []), metric)
        if not worst and not best:
            continue
        rows = []
        for kind, items in (("worst", worst), ("best", best)):
            for rank, r in enumerate(items, 1):
                rows.append(
                    (
                        "",
                        [
                            (f"{kind} {rank}", False),
                            (esc(r.question_id), False),
                            (esc(_short(r.question, text_limit)), False),
                            (esc(_gold_text(r, text_limit)), False),
                            (esc(_short(_plain(r.prediction), text_limit)), False),
                            (f'<span class="st st-{esc(r.status)}">{esc(r.status)}</span>', False),
                            (esc(fmt_num(finite_float(r.scores.get(metric)))), True),
                        ],
                    )
                )
        blocks.append(f"<h4>{esc(row.key)}</h4>" + _raw_table(header, rows))
    if not blocks:
        return ""
    return (
        f"<details><summary>Five worst and five best questions per category "
        f"(by {esc(metric)}) — {esc(run.label)}</summary>{''.join(blocks)}</details>"
    )


# ---- latency, tokens, provenance, gates --------------------------------------------------------


def _latency_section(summary: Summary) -> str:
    table = latency_table(summary.runs)
    return render_table(table) if table is not None else ""


def _tokens_section(summary: Summary) -> str:
    table = tokens_table(summary)
    if table is None:
        return f'<p class="note">{esc(tokens_note(summary))}</p>'
    return render_table(table)


def _checks_section(summary: Summary) -> str:
    parts = []
    for title, checks in check_lines(summary):
        items = "".join(
            f'<li class="{"pass" if ok else "fail"}">{"PASS" if ok else "FAIL"}: {esc(text)}</li>'
            for ok, text in checks
        )
        parts.append(f'<h3>{esc(title)}</h3><ul class="checks">{items}</ul>')
    return "".join(parts)


# ---- per-question data -------------------------------------------------------------------------


def _question_data(
    summary: Summary, max_memories: int, memory_chars: int, text_chars: int
) -> dict[str, Any]:
    memories: list[list[str]] = []
    index: dict[tuple[str, str], int] = {}
    rows: list[dict[str, Any]] = []
    for run in summary.runs:
        metric = pass_metric(summary, run)
        first_judge = judge_metric(summary, run.benchmark)
        for r in run.results:
            refs: list[list[Any]] = []
            for mem in r.memories[:max_memories]:
                date = mem.date.isoformat() if isinstance(mem.date, datetime) else _plain(mem.date)
                key = (_short(mem.text, memory_chars), str(date))
                if key not in index:
                    index[key] = len(memories)
                    memories.append([key[0], key[1]])
                score = finite_float(mem.score)
                refs.append([index[key], None if score is None else round(score, 4)])
            question = _short(r.question, text_chars)
            gold = _gold_text(r, text_chars)
            prediction = None if r.prediction is None else _short(r.prediction, text_chars)
            scores = {}
            for k, v in r.scores.items():
                f = finite_float(v)
                scores[str(k)] = None if f is None else round(f, 4)
            # the first judge's details sit under its headline metric (judge_mem0, nugget, ...)
            judge = r.details.get(first_judge) if first_judge else None
            reasoning = r.details.get("judge_reasoning")
            rows.append(
                {
                    "s": run.label,
                    "c": r.category,
                    "id": r.question_id,
                    "q": question,
                    "g": gold,
                    "p": prediction,
                    "st": r.status,
                    "pm": scores.get(metric) if metric else None,
                    "sc": scores,
                    "m": refs,
                    "mn": len(r.memories),
                    "j": _short(_plain(judge), text_chars) if judge not in (None, "") else None,
                    "jr": _short(_plain(reasoning), text_chars)
                    if reasoning not in (None, "")
                    else None,
                    "e": _short(r.error, text_chars) if r.error else None,
                }
            )
    return {"page": 200, "memories": memories, "rows": rows}


def _questions_section(summary: Summary) -> str:
    metrics = sorted({m for m in (pass_metric(summary, run) for run in summary.runs) if m})
    score_label = " / ".join(metrics) if metrics else "score"
    header = (
        '<th data-key="s" tabindex="0" aria-sort="none">system</th>'
        '<th data-key="c" tabindex="0" aria-sort="none">category</th>'
        '<th data-key="id" tabindex="0" aria-sort="none">id</th>'
        '<th data-key="q" tabindex="0" aria-sort="none">question</th>'
        '<th data-key="g" tabindex="0" aria-sort="none">gold</th>'
        '<th data-key="p" tabindex="0" aria-sort="none">prediction</th>'
        '<th data-key="st" tabindex="0" aria-sort="none">status</th>'
        f'<th data-key="pm" tabindex="0" aria-sort="none" class="num">{esc(score_label)}</th>'
        "<th>memories, judge</th>"
    )
    return (
        '<div class="controls">'
        '<label>category <select id="f-category"><option value="">all</option></select></label>'
        '<label>status <select id="f-status"><option value="">all</option></select></label>'
        '<label>system <select id="f-system"><option value="">all</option></select></label>'
        '<label>search <input id="f-text" type="search" placeholder="question, gold, answer">'
        "</label>"
        '<span id="q-count" class="muted"></span></div>'
        "<noscript><p>The question table needs JavaScript; the JSON report holds the same "
        "data.</p></noscript>"
        f'<div class="scroll"><table id="qtable"><thead><tr>{header}</tr></thead>'
        "<tbody></tbody></table></div>"
        '<button id="q-more" type="button" hidden>show more</button>'
    )


# ---- entry point -------------------------------------------------------------------------------


def render_html(
    summary: Summary,
    baselines: Mapping[str, Sequence[Baseline]],
    *,
    max_memories: int = 10,
    memory_chars: int = 600,
    text_chars: int = 2000,
    csp: bool = True,
) -> str:
    """The whole report as one HTML document.

    ``max_memories`` / ``memory_chars`` / ``text_chars`` bound the embedded per-question data
    (memories are also de-duplicated across questions). ``csp=False`` drops the
    Content-Security-Policy (only to test that escaping alone keeps injected code inert).
    """
    prov = summary.provenance
    benches = runs_by_benchmark(summary)
    n_questions = sum(run.overall_all.count for run in summary.runs)
    systems = list(dict.fromkeys(run.label for run in summary.runs))
    subtitle = (
        f"{n_questions:,} question results · benchmarks: {', '.join(benches) or '-'} · "
        f"systems: {', '.join(systems) or '-'} · created {prov.get('created', '-')}"
    )
    body: list[str] = []
    nav = []
    board = scoreboard_table(summary, baselines, cards=True)
    if board is not None:
        nav.append('<a href="#scoreboard">scoreboard</a>')
        body.append('<h2 id="scoreboard">Scoreboard</h2>')
        body.append(render_table(board, "scoreboard-table", "scoreboard"))
    for b_index, (bench, runs) in enumerate(benches.items()):
        nav.append(f'<a href="#bench-{b_index}">{esc(bench)}</a>')
        body.append(f'<h2 id="bench-{b_index}">{esc(bench)}</h2>')
        for run in runs:
            metric = pass_metric(summary, run)
            body.append(f"<h3>{esc(run.label)}</h3>")
            body.append(
                f'<p class="note">{run.overall_all.count} questions; pass metric '
                f"{esc(metric or '-')}; micro means, {esc(ci_note(run))} (each resampled whole) in "
                "brackets where computed.</p>"
            )
            if run.protocol_card:
                body.append(
                    f'<p class="note">protocol card <a href="#card-{esc(run.benchmark)}">'
                    f"{esc(run.protocol_card)}</a></p>"
                )
            body.append(render_table(run_table(run)))
            official = official_table(run)
            if official is not None:
                body.append(f"<h4>{esc(run.label)} · BEAM official</h4>")
                body.append(render_table(official))
            halu = halumem_table(run)
            if halu is not None:
                body.append(f"<h4>{esc(run.label)} · HaluMem official</h4>")
                body.append(render_table(halu))
            for note in run.notes:
                body.append(f'<p class="note">note: {esc(note)}</p>')
        if len(runs) > 1:
            body.append("<h3>Comparison across systems</h3>")
            body.append(render_table(comparison_table(summary, runs)))
        body.append(_baselines_section(runs, list(baselines.get(bench, ()))))
        # every published figure goes in a chart, hatched and labelled, in its own metric's
        # chart: a chart never puts two metrics on one axis (a published judge accuracy gets a
        # chart of its own when this run has no such metric)
        numbered = list(enumerate(baselines.get(bench, ()), 1))
        chart_metrics = [m for m in [pass_metric(summary, runs[0])] if m]
        for _, b in numbered:
            if b.metric not in chart_metrics:
                chart_metrics.append(b.metric)
        benchmark_runs = [r for r in runs if not r.flow]  # hand-written tests: not beside them
        for metric in chart_metrics if benchmark_runs else ():
            own = [(n, b) for n, b in numbered if b.metric == metric]
            body.append(_chart(summary, benchmark_runs, own, metric))
        from .overlays import html_overlays

        body.append(html_overlays(summary, bench))
        body.append("<h3>Worst and best questions</h3>")
        for run in runs:
            body.append(_worst_best_section(summary, run, 300))
    if summary.judge_calibration is not None:
        from .calibration_section import html_section

        nav.append('<a href="#calibration">judge calibration</a>')
        body.append('<h2 id="calibration">Judge calibration</h2>')
        body.append(html_section(summary.judge_calibration, esc))
    cards = _cards_section(summary)
    if cards:
        nav.append('<a href="#protocol-cards">protocol cards</a>')
        body.append(f'<h2 id="protocol-cards">Protocol cards</h2>{cards}')
    checks = _checks_section(summary)
    if checks:
        nav.append('<a href="#checks">gates</a>')
        body.append(f'<h2 id="checks">Gates and regression</h2>{checks}')
    nav.append('<a href="#latency">latency and tokens</a>')
    body.append('<h2 id="latency">Latency and tokens</h2>')
    body.append(_latency_section(summary))
    body.append(_tokens_section(summary))
    nav.append('<a href="#questions">questions</a>')
    body.append('<h2 id="questions">Questions</h2>')
    body.append(_questions_section(summary))
    nav.append('<a href="#config">configuration</a>')
    body.append(_provenance_section(summary))
    data = json_for_script(_question_data(summary, max_memories, memory_chars, text_chars))
    csp_meta = (
        f'<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy(_JS))}">'
        if csp
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"{csp_meta}"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>pytest-memeval report</title>"
        f"<style>{PAGE_CSS}</style></head>\n<body>"
        f"<header><h1>pytest-memeval report</h1><p>{esc(subtitle)}</p></header>"
        f"<nav>{''.join(nav)}</nav><main>"
        f"{''.join(body)}</main>\n"
        f'<script type="application/json" id="memeval-data">{data}</script>\n'
        f"<script>{_JS}</script>\n</body></html>\n"
    )


def summary_tables(summary: Summary) -> str:
    """The per-category table of every run, as an HTML fragment (for pytest-html's summary)."""
    parts = []
    for run in summary.runs:
        parts.append(f"<h3>memeval · {esc(run.benchmark)} · {esc(run.label)}</h3>")
        parts.append(render_table(run_table(run)))
        official = official_table(run)
        if official is not None:
            parts.append(render_table(official))
        halu = halumem_table(run)
        if halu is not None:
            parts.append(render_table(halu))
    return "\n".join(parts)
