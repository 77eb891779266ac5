"""A built board in its four forms: board.json (data), board.csv (spreadsheets), board.md
(a README section) and index.html (a static page with a sortable table and the pass^k curve).

Output depends only on the board and its rows: no timestamps, sorted keys, fixed number
formats, so building twice from the same exports gives the same bytes.
"""

from __future__ import annotations

import csv
import io
import json

from markupsafe import Markup
from pydantic import BaseModel, Field

from castbench.metrics.counterfactual import NetSaved
from castbench.publish.board import BoardMetric
from castbench.publish.profile import profile_markdown
from castbench.publish.rows import BoardRow, Cell
from castbench.viewer.page import template_environment

__all__ = ["Board", "Excluded", "board_csv", "board_html", "board_json", "board_markdown"]

PRIVILEGED_MARK = "†"


class Excluded(BaseModel):
    source: str
    reason: str


class Board(BaseModel):
    name: str
    title: str
    description: str
    domains: dict[str, int]
    split: str
    trials: int
    metrics: list[BoardMetric]
    rank_by: str
    allow_privileged: bool
    allow_unsandboxed: bool = False
    require_rerun: bool = False
    rows: list[BoardRow]
    excluded: list[Excluded] = Field(default_factory=list)

    @property
    def has_critic(self) -> bool:
        return any(row.false_flag_rate is not None or row.detection_rate is not None for row in self.rows)

    @property
    def domain_columns(self) -> list[str]:
        """The domains the page gives a column each (the ranking metric on its tasks alone):
        every domain of a board of several, none of a board of one."""
        return sorted(self.domains) if len(self.domains) > 1 else []

    @property
    def has_counterfactuals(self) -> bool:
        return any(row.net_saved is not None for row in self.rows)

    @property
    def scope(self) -> str:
        domains = ", ".join(f"{name} (version {number}-x)" for name, number in sorted(self.domains.items()))
        return (
            f"{domains}; {self.split} split; at least {self.trials} trials per task; ranked by {self.rank_by}"
        )


def _cell(cell: Cell) -> str:
    return f"{cell.value:.3f} ({cell.low:.2f}–{cell.high:.2f})"


def _net_parts(net: NetSaved | None) -> tuple[float | None, float | None, float | None]:
    return (None, None, None) if net is None else (net.point, net.low, net.high)


def _net(net: NetSaved | None) -> str:
    """Net trials saved per 100 verdicts with its interval ('–': no critic, or not branched)."""
    point, low, high = _net_parts(net)
    if point is None or low is None or high is None:
        return "–"
    return f"{point:+.1f} ({low:+.1f}–{high:+.1f})"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _cost(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def _blamed(row: BoardRow) -> str:
    """`agent 92% · user 8% · harness 0%`: whose fault the failures were."""
    shares = row.failures_blamed
    if not shares:
        return "–"
    return " · ".join(f"{party} {share:.0%}" for party, share in shares.items())


def _name(row: BoardRow) -> str:
    return row.name + (f" {PRIVILEGED_MARK}" if row.privileged else "")


def _ran(row: BoardRow, role: str) -> str:
    placement = row.agents.get(role)
    return "" if placement is None else placement.short()


def _provenance(row: BoardRow) -> str:
    """`re-run; policy built-in †; user built-in; trials: castbench's own agents`: where the row
    came from, where its agents ran, what kept its trials independent, and a mark for agents
    that ran outside castbench's sandbox."""
    parts = [row.origin, *(f"{role} {placement.short()}" for role, placement in row.agents.items())]
    if row.trial_isolation:
        parts.append(f"trials: {row.trial_isolation}")
    if row.outside_castbench:
        parts.append(f"{', '.join(row.outside_castbench)} ran outside castbench's sandbox")
    return "; ".join(parts)


ORIGIN_NOTE = (
    "Provenance: re-run rows were re-created by this board's build from the entry's recipe; "
    "submitted rows were taken from an exported file, which cannot prove which agent produced it."
)


def board_json(board: Board) -> str:
    data = board.model_dump(mode="json")
    for row, dumped in zip(board.rows, data["rows"], strict=True):
        dumped["viewer"] = row.viewer
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def board_csv(board: Board) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["rank", "name", "note", "policy", "critic", "user", "traits", "privileged", "origin", "source"]
    header += ["policy ran", "critic ran", "user ran", "tasks", "trials"]
    for item in board.metrics:
        header += [item.name, f"{item.name} low", f"{item.name} high"]
    header += ["false_flag_rate", "detection_rate", "cost_per_trial"]
    header += ["failures_agent", "failures_user", "failures_harness", "run_id", "viewer"]
    header += ["malformed_actions", "proposed_actions"]
    if board.has_counterfactuals:
        header += ["net_saved_per_100_verdicts", "net_saved low", "net_saved high"]
    writer.writerow(header)
    for row in board.rows:
        values: list[object] = [
            row.rank, row.name, row.note, row.policy, row.critic, row.user, row.traits or "",
            ",".join(row.privileged), row.origin, row.source,
            _ran(row, "policy"), _ran(row, "critic"), _ran(row, "user"), row.tasks, row.trials,
        ]  # fmt: skip
        for item in board.metrics:
            cell = row.metrics[item.metric]
            values += [f"{cell.value:.4f}", f"{cell.low:.4f}", f"{cell.high:.4f}"]
        values += [
            "" if row.false_flag_rate is None else f"{row.false_flag_rate:.4f}",
            "" if row.detection_rate is None else f"{row.detection_rate:.4f}",
            "" if row.cost_per_trial is None else f"{row.cost_per_trial:.6f}",
            *(
                "" if row.failures_blamed is None else f"{row.failures_blamed.get(party, 0.0):.4f}"
                for party in ("agent", "user", "harness")
            ),
            row.run_id,
            row.viewer,
            row.malformed_actions,
            row.proposed_actions,
        ]
        if board.has_counterfactuals:
            net = row.net_saved
            values += ["" if net is None or value is None else f"{value:.2f}" for value in _net_parts(net)]
        writer.writerow(values)
    return out.getvalue()


def _md(text: str) -> str:
    return (
        text.replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\n", " ")
    )


def _code(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def board_markdown(board: Board) -> str:
    header = ["#", "entry", "note", "policy", "critic", "user", "traits", "provenance"]
    header += [m.name for m in board.metrics]
    header += [f"{board.rank_by} {domain}" for domain in board.domain_columns]
    header.append("malformed actions")
    if board.has_critic:
        header += ["false-flag rate", "detection rate", "unreadable verdicts"]
    if board.has_counterfactuals:
        header.append("net saved / 100 verdicts")
    header += ["cost / trial", "failures blamed on", "trajectories"]
    lines = [f"# {_md(board.title)}", ""]
    if board.description:
        lines += [board.description.strip(), ""]
    lines += [
        f"Scope: {_md(board.scope)}. Figures are means over tasks with 95% bootstrap intervals over tasks.",
        "",
        "| " + " | ".join(_md(h) for h in header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in board.rows:
        cells = [
            str(row.rank),
            _md(_name(row)),
            _md(row.note),
            _code(row.policy),
            _code(row.critic),
            _code(row.user),
        ]
        cells.append(_md(row.traits or "–"))
        cells.append(_md(_provenance(row)))
        cells += [_cell(row.metrics[m.metric]) for m in board.metrics]
        cells += [_cell(row.domains[d]) if d in row.domains else "–" for d in board.domain_columns]
        cells.append(f"{row.malformed_actions} / {row.proposed_actions}")
        if board.has_critic:
            cells += [_rate(row.false_flag_rate), _rate(row.detection_rate)]
            cells.append("–" if row.critic_parse_errors is None else str(row.critic_parse_errors))
        if board.has_counterfactuals:
            cells.append(_net(row.net_saved))
        cells += [_cost(row.cost_per_trial), _md(_blamed(row)), f"[view]({row.viewer})"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if any(row.privileged for row in board.rows):
        lines += [
            f"{PRIVILEGED_MARK} privileged: the policy or critic read the ground truth, "
            "so the row is a reference "
            "point, not a deployable agent.",
            "",
        ]
    lines += [ORIGIN_NOTE, ""]
    lines += profile_markdown(board.rows)
    lines += ["![pass^k against k](curve.svg)", ""]
    if board.excluded:
        lines += ["Runs not listed:", ""]
        lines += [f"- `{item.source}`: {_md(item.reason)}" for item in board.excluded]
        lines.append("")
    return "\n".join(lines)


def board_html(board: Board, curve: str) -> str:
    return (
        template_environment("castbench.publish")
        .get_template("board.html.j2")
        .render(
            board=board,
            curve=Markup(curve),  # noqa: S704 (built by curve_svg, which escapes every label)
            cell=_cell,
            rate=_rate,
            net=_net,
            cost=_cost,
            blamed=_blamed,
            name=_name,
            provenance=_provenance,
            origin_note=ORIGIN_NOTE,
            privileged_mark=PRIVILEGED_MARK,
        )
    )
