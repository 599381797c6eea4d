"""The token curve laid out as an inline SVG: coordinates, ticks and labels, no script."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.services.inspector.curve import TokenCurve

WIDTH = 960
HEIGHT = 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 44, 36
# Marker labels alternate between two rows above the plot so neighbours do not collide.
LABEL_ROWS = (14, 28)
LABEL_HALF_WIDTH = 48


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    seq: int
    tokens: int
    tip: str


@dataclass(frozen=True, slots=True)
class Marker:
    ordinal: int
    x: float
    y_before: float
    y_after: float
    before: int
    after: int
    label: str
    label_y: int
    label_anchor: str
    tip: str


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis label and where it stands."""

    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    # "x,y x,y …": one vertex per turn, plus the after-point of each compaction.
    polyline: str
    vertex_count: int
    dots: tuple[Dot, ...]
    markers: tuple[Marker, ...]
    threshold_y: float
    threshold: int
    window_y: float | None
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]


def tokens_label(tokens: int) -> str:
    """A short token count: 950, 12.3k, 1.2M."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.1f}k"
    return str(tokens)


def _nice_step(span: float, ticks: int) -> float:
    raw = span / max(1, ticks)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def layout_chart(curve: TokenCurve) -> Chart:
    """Scales the curve into the SVG box; the threshold always fits in the view."""
    count = len(curve.points)
    top_value = max(curve.peak, curve.threshold, 1)
    window_visible = curve.context_window <= top_value * 1.25
    if window_visible:
        top_value = max(top_value, curve.context_window)
    step = _nice_step(top_value * 1.05, 5)
    y_max = step * math.ceil(top_value * 1.05 / step)
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def x_of(seq: int) -> float:
        return round(LEFT + (plot_w * seq / (count - 1) if count > 1 else plot_w / 2), 1)

    def y_of(tokens: int) -> float:
        return round(TOP + plot_h * (1 - tokens / y_max), 1)

    drops_after: dict[int, list[int]] = {}
    for drop in curve.drops:
        drops_after.setdefault(drop.seq, []).append(drop.after)
    vertices: list[str] = []
    dots: list[Dot] = []
    for point in curve.points:
        x, y = x_of(point.seq), y_of(point.tokens)
        vertices.append(f"{x},{y}")
        dots.append(
            Dot(x, y, point.seq, point.tokens, f"entry {point.seq}: {point.tokens:,} tokens")
        )
        vertices.extend(f"{x},{y_of(after)}" for after in drops_after.get(point.seq, ()))
    markers = tuple(
        Marker(
            ordinal=d.ordinal,
            x=x_of(d.seq),
            y_before=y_of(d.before),
            y_after=y_of(d.after),
            before=d.recorded_before,
            after=d.recorded_after,
            label=f"#{d.ordinal} {_short_drop(d.recorded_before, d.recorded_after)}",
            label_y=LABEL_ROWS[index % len(LABEL_ROWS)],
            label_anchor=_anchor(x_of(d.seq)),
            tip=(
                f"compaction #{d.ordinal} after entry {d.seq}: "
                f"{d.recorded_before:,} → {d.recorded_after:,} tokens"
            ),
        )
        for index, d in enumerate(curve.drops)
    )
    y_ticks = tuple(
        Tick(y_of(int(value)), tokens_label(int(value))) for value in _frange(0, y_max, step)
    )
    x_step = max(1, int(_nice_step(max(1, count - 1), 8)))
    x_ticks = tuple(Tick(x_of(seq), str(seq)) for seq in range(0, count, x_step))
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right=RIGHT,
        top=TOP,
        bottom=BOTTOM,
        polyline=" ".join(vertices),
        vertex_count=len(vertices),
        dots=tuple(dots),
        markers=markers,
        threshold_y=y_of(curve.threshold),
        threshold=curve.threshold,
        window_y=y_of(curve.context_window) if window_visible else None,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
    )


def _short_drop(before: int, after: int) -> str:
    return f"{tokens_label(before)}→{tokens_label(after)}"


def _anchor(x: float) -> str:
    """Labels near an edge grow inward so they stay inside the picture."""
    if x > WIDTH - RIGHT - LABEL_HALF_WIDTH:
        return "end"
    if x < LEFT + LABEL_HALF_WIDTH:
        return "start"
    return "middle"


def _frange(start: float, stop: float, step: float) -> list[float]:
    count = round((stop - start) / step)
    return [start + i * step for i in range(count + 1)]
