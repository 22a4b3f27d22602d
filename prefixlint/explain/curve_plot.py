"""The capacity curve as an inline SVG plot for the `--html` page: hit rate against cache size on a
logarithmic axis, one marker per measured size. Plain markup, no script or network, and the same
bytes for the same curve."""

from __future__ import annotations

import html
import math

WIDTH, HEIGHT = 640, 280
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44  # margins around the plotting area


def _tokens_text(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def curve_svg(points: list[dict[str, object]], engine: str | None) -> str:
    """The plot of `points` ([{tokens, hit_rate}], sizes ascending); empty without two sizes."""
    sizes = [int(p["tokens"]) for p in points]  # type: ignore[call-overload]
    rates = [float(p["hit_rate"]) for p in points]  # type: ignore[arg-type]
    if len(sizes) < 2 or sizes[0] <= 0:
        return ""
    low, high = math.log(sizes[0]), math.log(sizes[-1])
    span = (high - low) or 1.0
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(tokens: int) -> float:
        return LEFT + (math.log(tokens) - low) / span * inner_w

    def y(rate: float) -> float:
        return TOP + (1 - rate) * inner_h

    parts = [
        f'<svg id="capacity-curve" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-size="11" font-family="system-ui,sans-serif">',
        f"<title>{html.escape(engine or '')} hit rate by cache size</title>",
        f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{inner_h}" fill="none" stroke="#ccc"/>',
    ]
    for rate in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + inner_w}" y1="{y(rate):.1f}" y2="{y(rate):.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y(rate) + 4:.1f}" text-anchor="end">{rate:.0%}</text>'
        )
    labelled = [sizes[0], sizes[-1]]  # the ends, and each power of ten between that is clear of them
    decade = 10 ** math.floor(math.log10(sizes[0]))
    while decade <= sizes[-1]:
        if decade > sizes[0] and all(abs(x(decade) - x(end)) > 40 for end in labelled):
            labelled.append(decade)
        decade *= 10
    for tick in labelled:
        at = f"{x(tick):.1f}"
        parts.append(
            f'<line x1="{at}" x2="{at}" y1="{TOP}" y2="{TOP + inner_h}" stroke="#eee"/>'
            f'<text x="{at}" y="{TOP + inner_h + 16}" text-anchor="middle">{_tokens_text(tick)}</text>'
        )
    line = " ".join(f"{x(s):.1f},{y(r):.1f}" for s, r in zip(sizes, rates, strict=True))
    parts.append(f'<polyline points="{line}" fill="none" stroke="#3355cc" stroke-width="2"/>')
    for s, r in zip(sizes, rates, strict=True):
        parts.append(
            f'<circle class="point" cx="{x(s):.1f}" cy="{y(r):.1f}" r="3" fill="#3355cc">'
            f"<title>{s:,} tokens: {r:.1%}</title></circle>"
        )
    parts.append(
        f'<text x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">cache size, tokens '
        "(logarithmic)</text></svg>"
    )
    return "".join(parts)
