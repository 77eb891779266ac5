"""The pass^k curve (pass^k against k, one line per entry with its 95% band) as a standalone SVG.

Every entry draws a visible line: the plot's range pads 0 and 1 so a line at pass^k = 1 or 0
does not vanish into the frame, and an entry whose curve equals an earlier one's (two runs with
the same figures, which drew one line for two entries) is dashed, nudged a pixel or two, and
its legend names the entry it coincides with.

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


_PAD = 0.04
"""Plot range beyond [0, 1] on either side, so a line at 0 or 1 stays off the frame."""
_DASHES = ("6 4", "2 3", "8 3 2 3")


def curve_svg(
    title: str,
    lines: Sequence[tuple[str, Sequence[float]]],
    bands: Sequence[tuple[Sequence[float], Sequence[float]] | None] | None = None,
) -> str:
    """`lines`: (label, [pass^1, pass^2, ...]) per entry, drawn in order with the palette;
    `bands`: per entry, ([low per k], [high per k]) of its 95% interval (None: no band)."""
    k_max = max((len(values) for _, values in lines), default=1)
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(k: int) -> float:
        return _LEFT + (plot_w * (k - 1) / (k_max - 1) if k_max > 1 else plot_w / 2)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 + _PAD - value) / (1 + 2 * _PAD)

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
    seen: dict[tuple[float, ...], list[str]] = {}
    for index in range(len(lines)):
        band = bands[index] if bands is not None and index < len(bands) else None
        if band is not None and band[0] and band[1]:
            low, high = band
            upper = [f"{_n(x(k))},{_n(y(v))}" for k, v in enumerate(high, start=1)]
            lower = [f"{_n(x(k))},{_n(y(v))}" for k, v in reversed(list(enumerate(low, start=1)))]
            out.append(
                f'<polygon class="band" points="{" ".join(upper + lower)}" '
                f'fill="{PALETTE[index % len(PALETTE)]}" fill-opacity="0.10" stroke="none"/>'
            )
    for index, (label, values) in enumerate(lines):
        color = PALETTE[index % len(PALETTE)]
        same = seen.setdefault(tuple(values), [])
        nudge = 1.5 * len(same) * (1 if len(same) % 2 else -1) if same else 0.0
        dash = f' stroke-dasharray="{_DASHES[(len(same) - 1) % len(_DASHES)]}"' if same else ""
        points = " ".join(f"{_n(x(k))},{_n(y(v) + nudge)}" for k, v in enumerate(values, start=1))
        out.append(
            f'<polyline class="curve" data-entry="{escape(label, {chr(34): "&quot;"})}" points="{points}" '
            f'fill="none" stroke="{color}" stroke-width="2"{dash}/>'
        )
        out += [
            f'<circle cx="{_n(x(k))}" cy="{_n(y(v) + nudge)}" r="3" fill="{color}"/>'
            for k, v in enumerate(values, start=1)
        ]
        legend_y = _TOP + 8 + 18 * index
        legend_x = _LEFT + plot_w + 14
        out.append(
            f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 18}" y2="{legend_y}" '
            f'stroke="{color}" stroke-width="2"{dash}/>'
        )
        shown = label if not same else f"{label} (= {same[0]})"
        short = shown if len(shown) <= _LEGEND_CHARS else shown[: _LEGEND_CHARS - 1] + "…"
        legend = f"{escape(short)}<title>{escape(shown)}</title>"
        out.append(f'<text x="{legend_x + 24}" y="{legend_y + 4}">{legend}</text>')
        same.append(label)
    out.append("</svg>")
    return "\n".join(out) + "\n"
