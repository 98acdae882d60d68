"""Every inline SVG chart of the pages, in one palette: the board's Pareto scatters and history
lines (docs/board.md), the report's bars (this run against the published figures) and its
accuracy-vs-tokens chart with the Pareto front.

Pure functions from numbers to SVG text: axes on "nice" ticks (1, 2, 2.5, 5 x 10^n) scaled to the
data, ticks in plain units (``5.4k`` tokens, ``1.8 ms``, ``0.18 s``), a real time axis for the
history (the runs' recorded timestamps), and a deterministic label placement that never prints one
label over another or over a point: each label takes the first free slot around its point, and a
label with no free slot goes to the legend under the chart. A chart with no point is a sentence,
never an empty SVG. Every string is escaped with the pages' ``esc`` (``report/_pages.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..analysis import pareto_front
from ._pages import esc

__all__ = [
    "FRONT",
    "MISSING",
    "OFF_FRONT",
    "PUBLISHED",
    "SERIES",
    "BarSeries",
    "HistoryPoint",
    "ScatterPoint",
    "bar_chart",
    "fmt_seconds",
    "fmt_tokens",
    "history_chart",
    "nice_ticks",
    "parse_time",
    "place_labels",
    "scatter_chart",
    "time_ticks",
    "tradeoff_svg",
]

#: the one palette of every chart: series in order (runs, systems) ...
SERIES = ("#2f6db5", "#d9822b", "#3c9a5f", "#8e5cb5", "#c94f4f", "#4aa3a3", "#7a7a2e")
#: ... published figures (hatched, muted), the Pareto front, points off it, what is missing
PUBLISHED = ("#8a8a8a", "#b5a27a", "#7a9bb5", "#b58aa8", "#9bb57a", "#5f5f5f", "#c7b299")
FRONT, OFF_FRONT, MISSING = "#c2410c", "#6b7280", "#8a8a8a"
#: the width of a character of the charts' 12px sans-serif labels, generously (no font metrics
#: here): wide letters, narrow ones, the rest
_WIDE, _NARROW = frozenset("mwMW@%"), frozenset("ijlrtf.,:;!|' -()[]1")
_LABEL_H = 16.0
_LABEL_CHARS = 28

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


@dataclass(frozen=True)
class ScatterPoint:
    name: str
    x: float | None
    y: float | None


@dataclass(frozen=True)
class HistoryPoint:
    run_id: str
    created: str
    commit: str
    value: float | None
    ci: Sequence[float] | None


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round ticks (steps of 1, 2, 2.5 or 5 x 10^n) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high < low:
        low, high = high, low
    if high == low:  # one value: a small range around it (never below 0 for a value >= 0)
        pad = max(abs(high) * 0.05, 0.005)
        low, high = (low - pad if low - pad >= 0 or low < 0 else 0.0), high + pad
    raw = (high - low) / max(1, count - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1.0, 2.0, 2.5, 5.0) if m * power >= raw), 10.0 * power)
    first = math.floor(low / step + 1e-9) * step
    ticks = []
    i = 0
    while True:
        tick = first + i * step
        ticks.append(round(tick, 12))
        if tick >= high - 1e-9 * step:
            break
        i += 1
    return ticks


def _decimals(ticks: Sequence[float]) -> int:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    if step <= 0:
        return 3
    places = max(0, -math.floor(math.log10(step) + 1e-9))
    return places + (1 if round(step / 10.0**-places, 6) % 1 else 0)


def fmt_plain(value: float, ticks: Sequence[float]) -> str:
    """A metric tick with as many decimals as the step needs (``0.195``, ``0.2``)."""
    return f"{value:.{_decimals(ticks)}f}"


def fmt_tokens(value: float) -> str:
    """Token counts in plain units: ``850``, ``5.4k``, ``10.8k``, ``1.2M``."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.3g}"


def fmt_seconds(value: float) -> str:
    """Durations in plain units: ``0 s``, ``850 µs``, ``1.8 ms``, ``0.18 s``, ``12 s``."""
    size = abs(value)
    if size == 0:
        return "0 s"
    if size < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if size < 0.1:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def parse_time(text: str) -> datetime | None:
    """A recorded timestamp (ISO 8601; a naive one is UTC) as an aware datetime, else None."""
    try:
        stamp = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


_TIME_STEPS = [
    timedelta(seconds=s)
    for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
] + [timedelta(days=d) for d in (1, 2, 7, 14, 30, 61, 91, 182, 365, 730)]


def time_ticks(start: datetime, end: datetime, count: int = 5) -> tuple[list[datetime], str]:
    """Round time ticks covering [start, end] and their label format (``%H:%M`` within a day,
    ``%m-%d %H:%M`` across days, ``%Y-%m-%d`` across weeks)."""
    span = max(end - start, timedelta(seconds=1))
    step = next((s for s in _TIME_STEPS if s * (count - 1) >= span), _TIME_STEPS[-1])
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    first = epoch + step * math.floor((start - epoch) / step)
    ticks = [first]
    while ticks[-1] < end:
        ticks.append(ticks[-1] + step)
    if step >= timedelta(days=1):
        fmt = "%Y-%m-%d"
    elif step < timedelta(minutes=1):
        fmt = "%H:%M:%S"
    elif ticks[0].date() == ticks[-1].date():
        fmt = "%H:%M"
    else:
        fmt = "%m-%d %H:%M"
    return ticks, fmt


def label_width(text: str) -> float:
    """The width a label takes, in pixels, generously."""
    return 4.0 + sum(
        11.0 if c in _WIDE else 4.5 if c in _NARROW else 8.5 if c.isupper() else 7.2 for c in text
    )


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    points: Sequence[tuple[float, float, str]], area: Box, radius: float = 6.0
) -> list[Box | None]:
    """A box for each point's label (in the order given: place the important ones first) that
    overlaps no other label, no point and stays in ``area``; None when no slot around the point
    is free (the label then goes to the legend). Deterministic: the same points, the same boxes."""
    dots = [(x - radius, y - radius, x + radius, y + radius) for x, y, _ in points]
    placed: list[Box] = []
    out: list[Box | None] = []
    for i, (x, y, text) in enumerate(points):
        w, h = label_width(text), _LABEL_H
        gap = radius + 3
        candidates: list[Box] = [
            (x + gap, y - h / 2, x + gap + w, y + h / 2),  # right
            (x - gap - w, y - h / 2, x - gap, y + h / 2),  # left
            (x - w / 2, y - gap - h, x + w / 2, y - gap),  # above
            (x - w / 2, y + gap, x + w / 2, y + gap + h),  # below
            (x + gap, y - gap - h, x + gap + w, y - gap),  # above right
            (x + gap, y + gap, x + gap + w, y + gap + h),  # below right
            (x - gap - w, y - gap - h, x - gap, y - gap),  # above left
            (x - gap - w, y + gap, x - gap, y + gap + h),  # below left
        ]
        chosen = None
        for box in candidates:
            inside = (
                box[0] >= area[0] and box[1] >= area[1] and box[2] <= area[2] and box[3] <= area[3]
            )
            if (
                inside
                and not any(_overlaps(box, p) for p in placed)
                and not any(_overlaps(box, d) for j, d in enumerate(dots) if j != i)
            ):
                chosen = box
                break
        if chosen is not None:
            placed.append(chosen)
        out.append(chosen)
    return out


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _padded(low: float, high: float) -> tuple[float, float]:
    """The range with room above its highest point (a point is never drawn on the frame)."""
    return low, high + 0.04 * (high - low)


def scatter_chart(
    title: str,
    points: Sequence[ScatterPoint],
    x_label: str,
    y_label: str,
    x_fmt: Callable[[float], str],
) -> str:
    """An SVG scatter (lower x and higher y are better), the Pareto front drawn larger and joined
    by a line, labels placed without overlap (the rest listed under the chart)."""
    shown = [(p.name, p.x, p.y) for p in points if p.x is not None and p.y is not None]
    if not shown:
        return f'<p class="note">{esc(title)}: no system has both figures, so no chart.</p>'
    xy = [(float(x), float(y)) for _, x, y in shown if x is not None and y is not None]
    names = [n for n, _, _ in shown]
    front = pareto_front(xy)
    width, height, left, bottom, top, right = 640, 320, 64, 42, 16, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    x_ticks = nice_ticks(*_padded(min(0.0, *(x for x, _ in xy)), max(x for x, _ in xy)))
    y_ticks = nice_ticks(*_padded(min(y for _, y in xy), max(y for _, y in xy)))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]

    def px(x: float) -> float:
        return left + plot_w * (x - x0) / (x1 - x0)

    def py(y: float) -> float:
        return top + plot_h * (1 - (y - y0) / (y1 - y0))

    parts = [
        f'<svg class="chart pareto" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        f"{esc(x_label)}</text>",
        f'<text x="12" y="{top + plot_h / 2:.0f}" transform="rotate(-90 12 {top + plot_h / 2:.0f})"'
        f' text-anchor="middle">{esc(y_label)}</text>',
    ]
    for tx in x_ticks:
        parts.append(
            f'<line class="grid" x1="{px(tx):.1f}" y1="{top}" x2="{px(tx):.1f}" '
            f'y2="{top + plot_h}"/><text class="tick x-tick" x="{px(tx):.1f}" '
            f'y="{top + plot_h + 17}" text-anchor="middle">{esc(x_fmt(tx))}</text>'
        )
    for ty in y_ticks:
        parts.append(
            f'<line class="grid" x1="{left}" y1="{py(ty):.1f}" x2="{left + plot_w}" '
            f'y2="{py(ty):.1f}"/><text class="tick y-tick" x="{left - 4}" y="{py(ty) + 4:.1f}" '
            f'text-anchor="end">{esc(fmt_plain(ty, y_ticks))}</text>'
        )
    line = sorted(p for p, on in zip(xy, front, strict=True) if on)
    if len(line) > 1:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{SERIES[2]}" stroke-width="1.5"/>'
        )
    # labels: the front first, then the best first, then by name (deterministic)
    order = sorted(range(len(xy)), key=lambda i: (not front[i], -xy[i][1], xy[i][0], names[i]))
    boxes = place_labels(
        [(px(xy[i][0]), py(xy[i][1]), _short(names[i])) for i in order],
        (left + 1, top, width - 2, top + plot_h),
    )
    box_of = dict(zip(order, boxes, strict=True))
    legend = []
    for i, ((x, y), on) in enumerate(zip(xy, front, strict=True)):
        color = SERIES[i % len(SERIES)]
        tip = esc(
            f"{names[i]}: {x_label} {x_fmt(x)}, {y_label} {y:.3f}"
            + (" (Pareto front)" if on else "")
        )
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{6 if on else 4}" fill="{color}"'
            f' data-front="{int(on)}"><title>{tip}</title></circle>'
        )
        box = box_of[i]
        if box is None:
            legend.append(
                f'<li><span style="color:{color}">●</span> {esc(names[i])}: '
                f"{esc(x_fmt(x))}, {y:.3f}</li>"
            )
        else:
            parts.append(
                f'<text class="pt-label" x="{box[0] + 1:.1f}" y="{box[3] - 4:.1f}">'
                f"{esc(_short(names[i]))}</text>"
            )
    parts.append("</svg>")
    note = (
        f'<ul class="chart-legend">{"".join(legend)}</ul>'
        if legend
        else ""  # every label found a free slot
    )
    return f'<h4>{esc(title)}</h4><div class="scroll">{"".join(parts)}</div>{note}'


def history_chart(label: str, runs: Sequence[HistoryPoint], metric: str) -> str:
    """The headline metric of one system's runs with their intervals, on a real time axis (each
    run at its recorded time; the run id, time and commit on hover) and a y axis scaled to the
    values and intervals. Runs whose time is not recorded are spaced evenly instead."""
    valued = [r for r in runs if r.value is not None]
    if not valued:
        return (
            f'<p class="note history-empty">History of {esc(label)}: none of its '
            f"{len(runs)} runs has a {esc(metric)} value (every question errored or went "
            "unscored), so no chart.</p>"
        )
    width, height, left, right, top, bottom = 640, 210, 58, 30, 12, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    lows = [min((r.value, *(r.ci or ()))) for r in valued if r.value is not None]
    highs = [max((r.value, *(r.ci or ()))) for r in valued if r.value is not None]
    y_ticks = nice_ticks(min(lows), max(highs), 4)
    y0, y1 = y_ticks[0], y_ticks[-1]

    def py(y: float) -> float:
        return top + plot_h * (1 - (y - y0) / (y1 - y0))

    times = [parse_time(r.created) for r in runs]
    parts = [
        f'<svg class="chart history" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(f"{label}: {metric} across runs")}">'
    ]
    for ty in y_ticks:
        parts.append(
            f'<line class="grid" x1="{left}" y1="{py(ty):.1f}" x2="{left + plot_w}" '
            f'y2="{py(ty):.1f}"/><text class="tick y-tick" x="{left - 4}" y="{py(ty) + 4:.1f}" '
            f'text-anchor="end">{esc(fmt_plain(ty, y_ticks))}</text>'
        )
    stamps = [t for t in times if t is not None]
    xs: list[float]
    if len(stamps) == len(runs) and max(stamps) > min(stamps):
        ticks, fmt = time_ticks(min(stamps), max(stamps))
        t0, t1 = ticks[0], ticks[-1]
        xs = [left + plot_w * ((t - t0) / (t1 - t0)) for t in stamps]
        for tick in ticks:
            tx = left + plot_w * ((tick - t0) / (t1 - t0))
            parts.append(
                f'<line class="grid" x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + plot_h}"/>'
                f'<text class="tick x-tick" x="{tx:.1f}" y="{top + plot_h + 17}" '
                f'text-anchor="middle">{esc(tick.strftime(fmt))}</text>'
            )
        day = f" on {ticks[0]:%Y-%m-%d}" if fmt.startswith("%H") else ""
        caption = f"run time (UTC{day})"
    else:
        step = plot_w / max(1, len(runs) - 1)
        xs = [left + (i * step if len(runs) > 1 else plot_w / 2) for i in range(len(runs))]
        for x, r in zip(xs, runs, strict=True):
            parts.append(
                f'<text class="tick x-tick" x="{x:.1f}" y="{top + plot_h + 17}" '
                f'text-anchor="middle">{esc(r.run_id[-8:])}</text>'
            )
        caption = "run (no recorded time: in run order)"
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">'
        f"{esc(caption)}</text>"
    )
    line = []
    for x, r, t in zip(xs, runs, times, strict=True):
        if r.ci:
            parts.append(
                f'<line class="ci-bar" x1="{x:.1f}" y1="{py(r.ci[0]):.1f}" x2="{x:.1f}" '
                f'y2="{py(r.ci[1]):.1f}" stroke="{MISSING}" stroke-width="2"/>'
            )
        if r.value is None:
            continue
        line.append(f"{x:.1f},{py(r.value):.1f}")
        when = f"{t:%Y-%m-%d %H:%M:%S} UTC" if t is not None else "time not recorded"
        ci = f" [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci else ""
        tip = f"run {r.run_id} · {when}" + (f" · commit {r.commit[:12]}" if r.commit else "")
        parts.append(
            f'<circle cx="{x:.1f}" cy="{py(r.value):.1f}" r="4" fill="{SERIES[0]}" '
            f'data-run="{esc(r.run_id)}"><title>{esc(f"{tip}: {metric} {r.value:.3f}{ci}")}'
            "</title></circle>"
        )
    if len(line) > 1:
        parts.insert(1, f'<polyline points="{" ".join(line)}" fill="none" stroke="{SERIES[0]}"/>')
    parts.append("</svg>")
    return f'<div class="scroll">{"".join(parts)}</div>'


# ---- the report's bars: this run against the published figures ----


@dataclass(frozen=True)
class BarSeries:
    """One series of :func:`bar_chart`: a value per group (``None``: not measured);
    ``published``: a published figure (hatched, outlined in its colour) rather than this run."""

    label: str
    values: Sequence[float | None]
    published: bool = False


def bar_chart(groups: Sequence[tuple[str, str]], series: Sequence[BarSeries], aria: str) -> str:
    """Horizontal grouped bars, one group per ``(label, key)`` of ``groups``, one bar per series
    (this run's in :data:`SERIES` colours, published ones hatched in :data:`PUBLISHED` colours),
    then the legend; an empty string when there is no series."""
    if not series:
        return ""
    colors: list[str] = []
    for s in series:
        palette = PUBLISHED if s.published else SERIES
        taken = sum(other.published == s.published for other in series[: len(colors)])
        colors.append(palette[taken % len(palette)])
    top = max([1.0, *(v for s in series for v in s.values if v is not None)])
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
        f'aria-label="{esc(aria)}">'
    ]
    hatch = [
        f'<pattern id="hatch-{i}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{colors[i]}" stroke-width="3"/></pattern>'
        for i, s in enumerate(series)
        if s.published
    ]
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
    for g, (group_label, key) in enumerate(groups):
        gy = plot_top + g * group_h
        mid = gy + (len(series) * (bar_h + bar_gap)) / 2 + 4
        parts.append(
            f'<text x="{label_w - 8}" y="{mid:.1f}" text-anchor="end">'
            f"{esc(_short_to(group_label, 30))}</text>"
        )
        for i, s in enumerate(series):
            y = gy + i * (bar_h + bar_gap)
            value = s.values[g]
            if value is None:
                parts.append(
                    f'<text x="{label_w + 4}" y="{y + bar_h - 2}" fill="{MISSING}">n/a</text>'
                )
                continue
            w = max(plot_w * value / top, 0.5)
            tip = esc(f"{s.label}: {key} = {value:.3f}")
            fill = (
                f'fill="url(#hatch-{i})" stroke="{colors[i]}" class="published"'
                if s.published
                else f'fill="{colors[i]}"'
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
            f'color:{color}"></span>{esc(s.label)}</li>'
            if s.published
            else f'<li><span class="swatch" style="background:{color}"></span>{esc(s.label)}</li>'
        )
        for s, color in zip(series, colors, strict=True)
    )
    return f'<ul class="legend">{legend}</ul><div class="scroll">{"".join(parts)}</div>'


def _short_to(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- the report's accuracy-vs-tokens chart (overlays) ----


def _tick_label(value: float) -> str:
    """``1``, ``10``, ``100``, ``1k``, ``10k``, ``1M``; ``2.5k`` between powers of ten."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _nice_step(span: float, count: int = 4) -> float:
    """A 1-2-5 step that cuts ``span`` into about ``count`` intervals."""
    raw = span / count if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)


def tradeoff_svg(points: Sequence[Mapping[str, Any]], title: str) -> str:
    """Accuracy (y) against mean context tokens (x), one dot per system, and the Pareto front
    drawn as a staircase through its points in token order (to the right edge: everything below
    and to the right of it is dominated). ``points``: the ``extra.context.runs`` entries.

    The x axis is logarithmic (ticks 1, 10, 100, 1k, ...) when the token counts differ by more
    than 20x; a system with 0 tokens has no place on a log axis, so it is left out of the plot and
    named in a line under it. Otherwise the axis is linear from 0 with 1-2-5 ticks."""
    usable = [
        p
        for p in points
        if isinstance(p.get("mean"), int | float) and isinstance(p.get("accuracy"), int | float)
    ]
    if not usable:
        return ""
    left, top, plot_w, plot_h, right, bottom = 64, 16, 460, 260, 150, 44
    width, height = left + plot_w + right, top + plot_h + bottom
    means = [float(p["mean"]) for p in usable]
    positive = [m for m in means if m > 0]
    # a log axis when the systems' token counts differ by more than 20x (full-context vs top-k)
    log_x = bool(positive) and max(positive) / min(positive) > 20
    left_out = [p for p in usable if log_x and float(p["mean"]) <= 0]
    plotted = [p for p in usable if p not in left_out]
    metric_label = " / ".join(dict.fromkeys(str(p.get("metric") or "accuracy") for p in usable))
    y_max = min(1.0, math.ceil(max(float(p["accuracy"]) for p in usable) * 11) / 10) or 1.0
    if log_x:
        lo_exp = math.floor(math.log10(min(positive)))
        hi_exp = math.ceil(math.log10(max(positive)))
        hi_exp = max(hi_exp, lo_exp + 1)
        x_ticks = [10.0**e for e in range(lo_exp, hi_exp + 1)]
        x_lo, x_hi = x_ticks[0], x_ticks[-1]
    else:
        step = _nice_step(max(means) or 1.0)
        x_hi = step * math.ceil((max(means) or 1.0) / step)
        x_lo = 0.0
        x_ticks = [step * i for i in range(round(x_hi / step) + 1)]

    def sx(v: float) -> float:
        if log_x:
            return left + plot_w * (math.log10(v) - math.log10(x_lo)) / (
                math.log10(x_hi) - math.log10(x_lo)
            )
        return left + plot_w * (v - x_lo) / (x_hi - x_lo)

    def sy(v: float) -> float:
        return top + plot_h * (1 - min(v, y_max) / y_max)

    parts = [
        f'<svg class="tradeoff" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(title)}">'
    ]
    for xv in x_ticks:
        parts.append(
            f'<line class="grid" x1="{sx(xv):.1f}" y1="{top}" x2="{sx(xv):.1f}" '
            f'y2="{top + plot_h}"/><text class="xtick" x="{sx(xv):.1f}" '
            f'y="{top + plot_h + 14}" text-anchor="middle">{_tick_label(xv)}</text>'
        )
    for tick in range(5):
        yv = y_max * tick / 4
        parts.append(
            f'<line class="grid" x1="{left}" y1="{sy(yv):.1f}" x2="{left + plot_w}" '
            f'y2="{sy(yv):.1f}"/><text x="{left - 6}" y="{sy(yv) + 4:.1f}" '
            f'text-anchor="end">{yv:.2f}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        f"mean context tokens per question{' (log scale)' if log_x else ''}</text>"
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">'
        f"{esc(metric_label)} (overall)</text>"
    )
    front = sorted(
        (p for p in plotted if p.get("pareto")),
        key=lambda p: (float(p["mean"]), float(p["accuracy"])),
    )
    if front:
        # a staircase: right along each point's accuracy until the next (better) point
        coords = [(sx(float(p["mean"])), sy(float(p["accuracy"]))) for p in front]
        path = [f"M{coords[0][0]:.1f},{coords[0][1]:.1f}"]
        for x1, y1 in coords[1:]:
            path.append(f"H{x1:.1f}V{y1:.1f}")
        path.append(f"H{left + plot_w:.1f}")
        parts.append(
            f'<path class="front" d="{"".join(path)}" fill="none" stroke="{FRONT}" '
            'stroke-width="2"><title>Pareto front</title></path>'
        )
    for p in plotted:
        x, y = sx(float(p["mean"])), sy(float(p["accuracy"]))
        on = bool(p.get("pareto"))
        tip = esc(
            f"{p.get('label')}: {float(p['accuracy']):.3f} {p.get('metric')} at "
            f"{float(p['mean']):,.1f} tokens{' (Pareto front)' if on else ''}"
        )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{FRONT if on else OFF_FRONT}">'
            f"<title>{tip}</title></circle>"
            f'<text x="{x + 8:.1f}" y="{y - 6:.1f}">{esc(str(p.get("label"))[:40])}</text>'
        )
    parts.append("</svg>")
    if left_out:
        names = ", ".join(
            f"{p.get('label')} ({float(p['accuracy']):.3f} {p.get('metric')})" for p in left_out
        )
        parts.append(f'<p class="note">0 tokens, not on the log axis: {esc(names)}.</p>')
    return "".join(parts)
