"""The pass^k curve (pass^k against k, one line per entry) as a standalone SVG.

Written by hand rather than by matplotlib: a few dozen elements with coordinates printed to
two decimals, so the file is byte-for-byte the same on every machine and library version (a
committed board must be reproducible), and it renders anywhere an image does: a README,
GitHub, a browser, an image viewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

__all__ = ["PALETTE", "curve_svg"]

PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#bf3989", "#6e7781")
_WIDTH, _HEIGHT = 720, 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 240, 36, 44
_LEGEND_CHARS = 30


def _n(value: float) -> str:
    return f"{value:.2f}"


def curve_svg(title: str, lines: Sequence[tuple[str, Sequence[float]]]) -> str:
    """`lines`: (label, [pass^1, pass^2, ...]) per entry, drawn in order with the palette."""
    k_max = max((len(values) for _, values in lines), default=1)
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(k: int) -> float:
        return _LEFT + (plot_w * (k - 1) / (k_max - 1) if k_max > 1 else plot_w / 2)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - value)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="sans-serif" font-size="12" role="img">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{_WIDTH}" height="{_HEIGHT}" fill="#ffffff"/>',
        f'<text x="{_LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    for tick in range(6):
        value = tick / 5
        out.append(
            f'<line x1="{_LEFT}" y1="{_n(y(value))}" x2="{_LEFT + plot_w}" y2="{_n(y(value))}" '
            'stroke="#e1e4e8"/>'
        )
        out.append(f'<text x="{_LEFT - 8}" y="{_n(y(value) + 4)}" text-anchor="end">{value:.1f}</text>')
    for k in range(1, k_max + 1):
        out.append(f'<text x="{_n(x(k))}" y="{_TOP + plot_h + 18}" text-anchor="middle">{k}</text>')
    out.append(
        f'<text x="{_n(_LEFT + plot_w / 2)}" y="{_HEIGHT - 8}" text-anchor="middle">'
        "k (trials that must all pass)</text>"
    )
    out.append(
        f'<text x="14" y="{_n(_TOP + plot_h / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_n(_TOP + plot_h / 2)})">pass^k</text>'
    )
    out.append(
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#8c959f"/>'
    )
    for index, (label, values) in enumerate(lines):
        color = PALETTE[index % len(PALETTE)]
        points = " ".join(f"{_n(x(k))},{_n(y(v))}" for k, v in enumerate(values, start=1))
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [
            f'<circle cx="{_n(x(k))}" cy="{_n(y(v))}" r="3" fill="{color}"/>'
            for k, v in enumerate(values, start=1)
        ]
        legend_y = _TOP + 8 + 18 * index
        legend_x = _LEFT + plot_w + 14
        out.append(
            f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 18}" y2="{legend_y}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        short = label if len(label) <= _LEGEND_CHARS else label[: _LEGEND_CHARS - 1] + "…"
        out.append(f'<text x="{legend_x + 24}" y="{legend_y + 4}">{escape(short)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
