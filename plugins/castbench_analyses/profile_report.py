"""A reliability profile on screen (a rich table) and as a figure (SVG, written by hand: plotting
libraries are not among castbench's dependencies). One figure per agent: four panels, one per
group, every bar on the same 0..1 scale where longer is more reliable, so profiles compare by eye."""

from __future__ import annotations

from html import escape
from pathlib import Path

from rich.table import Table

from castbench_analyses.profile_metrics import Condition, ReliabilityProfile

__all__ = ["profile_bars", "profile_svg", "profile_table", "write_profile_svg"]

_NOT_REPORTED = "not reported"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _robust_line(name: str, condition: Condition | None) -> tuple[str, str, str]:
    if condition is None:
        return ("robustness", f"pass^1 under {name}", "not run")
    k = max(condition.clean, default=1)
    cells = [f"{_pct(condition.perturbed.get(1))} vs clean {_pct(condition.clean.get(1))}"]
    if k > 1:
        cells.append(f"pass^{k} {_pct(condition.perturbed.get(k))} vs {_pct(condition.clean.get(k))}")
    ratio = condition.ratio.get(1)
    cells.append(f"ratio {_num(ratio, 2)}")
    if condition.passed_despite_faults is not None:
        cells.append(f"{_pct(condition.passed_despite_faults)} of faulted trials passed")
    return ("robustness", f"{name}: {condition.perturbations}", "; ".join(cells))


def profile_table(profile: ReliabilityProfile) -> Table:
    """Group, metric, value: every figure of the profile."""
    title = f"reliability profile: policy {profile.policy}" + (
        f", critic {profile.critic}" if profile.critic != "none" else ""
    )
    table = Table(title=title, title_justify="left")
    for column in ("group", "metric", "value"):
        table.add_column(column)
    c = profile.consistency
    n = max(c.pass_hat, default=1)
    rows: list[tuple[str, str, str]] = [
        ("consistency", f"pass^1 / pass^{n}", f"{_pct(c.pass_hat.get(1))} / {_pct(c.pass_hat.get(n))}"),
        ("consistency", "tasks whose trials disagree", _pct(c.disagreement)),
        ("consistency", "outcome consistency (1 − 4p(1−p))", _num(c.outcome_consistency)),
        ("consistency", "trajectory similarity", _num(c.trajectory_similarity)),
        ("consistency", "tasks with identical trajectories", _pct(c.identical_trajectories)),
    ]
    for name, spread in c.resources.items():
        rows.append(("consistency", f"{name}: mean, CV", f"{spread.mean:.4g}, {_num(spread.cv)}"))
    r = profile.robustness
    rows += [_robust_line("faults", r.faults), _robust_line("user", r.user), _robust_line("env", r.env)]
    rows += [_robust_line("other", other) for other in r.other]
    p = profile.predictability
    if p.reported:
        rows += [
            ("predictability", "Brier score", _num(p.brier)),
            ("predictability", "expected calibration error", _num(p.ece)),
            (
                "predictability",
                "mean confidence / success",
                f"{_pct(p.mean_confidence)} / {_pct(p.success_rate)}",
            ),
        ]
    else:
        rows.append(("predictability", "confidence", _NOT_REPORTED))
    s = profile.safety
    broken = ", ".join(f"{name} ({n})" for name, n in list(s.broken.items())[:4]) or "–"
    rows += [
        ("safety", "policy violations per trial", _num(s.violations_per_trial)),
        ("safety", "trials with a violation", _pct(s.trials_with_violation)),
        ("safety", "unconfirmed irreversible actions per trial", _num(s.unconfirmed_irreversible_per_trial)),
        ("safety", "what they broke (state diff)", broken),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def profile_bars(profile: ReliabilityProfile) -> dict[str, list[tuple[str, float | None]]]:
    """The figure's panels: bars in 0..1, longer = more reliable (None: not measured)."""
    c, r, p, s = profile.consistency, profile.robustness, profile.predictability, profile.safety
    n = max(c.pass_hat, default=1)

    def inverse(value: float | None) -> float | None:
        return None if value is None else max(0.0, 1.0 - value)

    def ratio(condition: Condition | None) -> float | None:
        value = condition.ratio.get(1) if condition is not None else None
        return None if value is None else min(1.0, value)

    return {
        "consistency": [
            ("pass^1", c.pass_hat.get(1)),
            (f"pass^{n}", c.pass_hat.get(n)),
            ("trials agree", inverse(c.disagreement)),
            ("same actions", c.trajectory_similarity),
        ],
        "robustness": [("faults", ratio(r.faults)), ("user", ratio(r.user)), ("env", ratio(r.env))],
        "predictability": [("1 − Brier", inverse(p.brier)), ("1 − ECE", inverse(p.ece))],
        "safety": [
            ("no violation", inverse(s.trials_with_violation)),
            ("confirmed", inverse(min(1.0, s.unconfirmed_irreversible_per_trial or 0.0))),
        ],
    }


_W, _PANEL_H, _BAR_H, _LABEL_W, _BAR_W = 560, 26, 16, 130, 330


def profile_svg(profile: ReliabilityProfile) -> str:
    """The profile as a standalone SVG: a panel per group, a bar per figure, value at its end."""
    panels = profile_bars(profile)
    lines: list[str] = []
    y = 44
    for group, bars in panels.items():
        lines.append(f'<text x="10" y="{y}" font-weight="bold">{group}</text>')
        y += 8
        if group == "predictability" and not profile.predictability.reported:
            lines.append(f'<text x="{_LABEL_W}" y="{y + 14}" fill="#777">confidence {_NOT_REPORTED}</text>')
            y += _PANEL_H
        else:
            for label, value in bars:
                lines.append(
                    f'<text x="{_LABEL_W - 8}" y="{y + 13}" text-anchor="end">{escape(label)}</text>'
                )
                lines.append(f'<rect x="{_LABEL_W}" y="{y}" width="{_BAR_W}" height="{_BAR_H}" fill="#eee"/>')
                if value is None:
                    lines.append(f'<text x="{_LABEL_W + 6}" y="{y + 13}" fill="#777">not measured</text>')
                else:
                    width = round(_BAR_W * value, 1)
                    lines.append(
                        f'<rect x="{_LABEL_W}" y="{y}" width="{width}" height="{_BAR_H}" fill="#3b6ea8"/>'
                    )
                    lines.append(f'<text x="{_LABEL_W + _BAR_W + 6}" y="{y + 13}">{value:.2f}</text>')
                y += _PANEL_H - 4
        y += 18
    title = f"reliability profile: {profile.policy}" + (
        f" + {profile.critic}" if profile.critic != "none" else ""
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{y}" viewBox="0 0 {_W} {y}" '
        'font-family="sans-serif" font-size="12">'
        f'<rect width="{_W}" height="{y}" fill="white"/>'
        f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>'
        f'<text x="{_LABEL_W}" y="34" fill="#777" font-size="10">0 … 1, longer is more reliable</text>'
    )
    return head + "".join(lines) + "</svg>\n"


def write_profile_svg(profile: ReliabilityProfile, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(profile_svg(profile))
