"""Small bar charts drawn as inline SVG on the server: no front-end build, no script, and
they render wherever the HTML does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT, PAD = 560, 172, 28
TOP = 40  # the title and, under it, the legend
PALETTE = ("#3b82f6", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#0ea5e9", "#6b7280")


@dataclass(frozen=True)
class Bar:
    label: str  # under the bar
    parts: dict[str, int]  # series -> value, stacked in `series` order


def bar_chart(
    title: str, bars: Sequence[Bar], series: Sequence[str], *, limit: int | None = None
) -> str:
    """Stacked bars with a legend; `limit` draws a dashed line (a quota, a budget)."""
    top = max([sum(b.parts.values()) for b in bars] + [limit or 0, 1])
    step = (WIDTH - 2 * PAD) / max(len(bars), 1)
    scale = (HEIGHT - PAD - TOP) / top
    shapes = []
    for n, bar in enumerate(bars):
        x, y = PAD + n * step + step * 0.15, float(HEIGHT - PAD)
        for k, name in enumerate(series):
            value = bar.parts.get(name, 0)
            if value <= 0:
                continue
            h = value * scale
            y -= h
            shapes.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[k % len(PALETTE)]}"><title>{escape(bar.label)} '
                f"{escape(name)}: {value}</title></rect>"
            )
        if n % 2 == 0 or len(bars) <= 7:
            shapes.append(
                f'<text x="{x + step * 0.35:.1f}" y="{HEIGHT - PAD + 14}" font-size="10" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    if limit:
        line_y = HEIGHT - PAD - limit * scale
        shapes.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{line_y:.1f}" y2="{line_y:.1f}" '
            f'stroke="#ef4444" stroke-dasharray="4 3"><title>limit {limit}</title></line>'
        )
    legend = " ".join(
        f'<tspan fill="{PALETTE[k % len(PALETTE)]}">■</tspan> {escape(name)}'
        for k, name in enumerate(series)
    )
    return (
        f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{PAD}" y="16" font-size="12" font-weight="bold">{escape(title)} '
        f"(max {top})</text>"
        f'<text x="{PAD}" y="31" font-size="10">{legend}</text>'
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{HEIGHT - PAD}" y2="{HEIGHT - PAD}" '
        f'stroke="#9ca3af"/>{"".join(shapes)}</svg>'
    )
