"""A built board in its four forms: board.json (data), board.csv (spreadsheets), board.md
(a README section) and index.html (a static page with a sortable table and the pass^k curve).

Output depends only on the board and its rows: no timestamps, sorted keys, fixed number
formats, so building twice from the same exports gives the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
import re

from markupsafe import Markup
from pydantic import BaseModel, Field

from castbench._results.publish.board import BoardMetric
from castbench_analyses.counterfactual_metrics import NetSaved
from castbench_boards.profile import profile_markdown
from castbench_boards.rows import BoardRow, Cell
from castbench_boards.viewer.page import template_environment

__all__ = [
    "Board",
    "Excluded",
    "badge",
    "board_csv",
    "board_html",
    "board_json",
    "board_markdown",
    "id_parts",
    "short_id",
]

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
    def has_paper_columns(self) -> bool:
        """A critic row carries the CAST paper's columns (`paper_columns`)."""
        return any(row.critic_figures is not None and row.critic_figures.paper for row in self.rows)

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


ID_CHARS = 64
"""Characters of an id (a policy, critic or user spec) a board cell shows whole; a longer one
is shortened with an ellipsis (`short_id`), the full id in the cell's title."""

_ID_BOUNDARY = re.compile(r"[^:./?&=]*[:./?&=]|[^:./?&=]+$")


def short_id(text: str, limit: int = ID_CHARS) -> str:
    """An id of at most `limit` characters that still tells two agents apart: the options after
    `?` are cut first (`team.bot:CancelBot?model=gpt-4.1-mi…`), then the module path in the
    middle, keeping the name after the last `:` (`team.age…:CancelBotV2`)."""
    if len(text) <= limit:
        return text
    base, sep, query = text.partition("?")
    if sep and len(base) + 2 < limit:
        return f"{base}?{query[: limit - len(base) - 2]}…"
    module, colon, name = base.rpartition(":")
    if colon and len(name) + 8 <= limit:
        return module[: limit - len(name) - 2] + "…:" + name
    tail = (limit - 1) // 2
    return text[: limit - 1 - tail] + "…" + text[-tail:]


def id_parts(text: str) -> list[str]:
    """`short_id(text)` in pieces that end at `:`, `.`, `/`, `?`, `&` or `=`: the page lets a long
    id wrap between pieces only, never inside a word."""
    return _ID_BOUNDARY.findall(short_id(text))


def badge(row: BoardRow) -> str:
    """The provenance in a word or two (`re-run`, `submitted · outside sandbox`); `_provenance`
    has the details."""
    parts: list[str] = [row.origin]
    if row.outside_castbench:
        parts.append("outside sandbox")
    if any(placement.where == "unsandboxed" for placement in row.agents.values()):
        parts.append("unsandboxed")
    return " · ".join(parts)


def strict_metrics(board: Board) -> list[str]:
    """The strict figures a board shows: strict pass^1 and the strict ranking metric."""
    return list(dict.fromkeys(["pass^1", board.rank_by]))


def _interval(found: tuple[float, float] | None) -> str:
    return "" if found is None else f"{found[0]:.2f}–{found[1]:.2f}"


def critic_lines(row: BoardRow) -> list[tuple[str, str, str]]:
    """(label, figure, interval or "") of a critic row's flag, false-flag, detection and
    correction rates."""
    figures = row.critic_figures
    if figures is None:
        return []
    lines = [
        ("flags", _rate(figures.flag_rate), ""),
        ("false flags", _rate(figures.false_flag_rate), _interval(figures.false_flag_rate_ci)),
        ("detection", _rate(figures.detection_rate), _interval(figures.detection_rate_ci)),
        ("correction", _rate(figures.correction_rate), ""),
    ]
    paper = figures.paper
    if paper is not None:
        lines += [(label, _rate(getattr(paper, name)), "") for name, label in PAPER_COLUMNS]
    return lines


PAPER_COLUMNS = (
    ("flag_valid", "flag ∧ valid"),
    ("pass_valid", "pass ∧ valid"),
    ("flag_invalid", "flag ∧ invalid"),
    ("pass_invalid", "pass ∧ invalid"),
    ("resistance", "resistance (paper)"),
    ("correction", "correction (paper)"),
    ("resistance_castbench", "resistance (castbench: false flags)"),
)
"""The CAST paper's critic columns (`PaperCells`' fields, their labels): the confusion shares of
all labelled verdicts, and resistance and correction as the paper defines them beside
castbench's resistance; castbench's correction is the board's "correction rate"."""


PAPER_NOTE = (
    "The CAST paper's critic columns: the four confusion shares are of all labelled verdicts (they "
    "sum to 1); resistance (paper) is the rejections the policy kept its action through or insisted "
    "against, over every rejection it answered; correction (paper) is the corrected flags over the true "
    "flags it answered (a last-round flag cannot be corrected). castbench's variants beside them: "
    "resistance over false flags only, correction over every true flag (the correction rate)."
)


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


STRICT_NOTE = (
    "Strict: a trial counts as failed if an action it executed broke the domain policy, whatever "
    "the final state (the headline's strict pass^k)."
)

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
    header += [f"strict {name}" for name in strict_metrics(board)]
    header += [f"strict {name} {side}" for name in strict_metrics(board) for side in ("low", "high")]
    header += ["false_flag_rate", "detection_rate", "cost_per_trial"]
    header += ["failures_agent", "failures_user", "failures_harness", "run_id", "viewer"]
    header += ["malformed_actions", "proposed_actions", "rank_note"]
    header += ["flag_rate", "false_flag_rate low", "false_flag_rate high"]
    header += ["detection_rate low", "detection_rate high", "correction_rate"]
    if board.has_paper_columns:
        header += [name for name, _ in PAPER_COLUMNS]
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
        strict = [row.strict.get(name) for name in strict_metrics(board)]
        values += ["" if cell is None else f"{cell.value:.4f}" for cell in strict]
        for found in strict:
            values += ["", ""] if found is None else [f"{found.low:.4f}", f"{found.high:.4f}"]
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
            row.rank_note,
        ]
        critic = row.critic_figures
        values += [
            "" if value is None else f"{value:.4f}"
            for value in (
                critic and critic.flag_rate,
                critic and critic.false_flag_rate_ci and critic.false_flag_rate_ci[0],
                critic and critic.false_flag_rate_ci and critic.false_flag_rate_ci[1],
                critic and critic.detection_rate_ci and critic.detection_rate_ci[0],
                critic and critic.detection_rate_ci and critic.detection_rate_ci[1],
                critic and critic.correction_rate,
            )
        ]
        if board.has_paper_columns:
            paper = critic.paper if critic is not None else None
            values += [
                "" if paper is None or getattr(paper, name) is None else f"{getattr(paper, name):.4f}"
                for name, _ in PAPER_COLUMNS
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
    header += [f"strict {name}" for name in strict_metrics(board)]
    header.append("malformed actions")
    if board.has_critic:
        header += ["flag rate", "false-flag rate", "detection rate", "correction rate", "unreadable verdicts"]
    if board.has_paper_columns:
        header[header.index("correction rate")] = "correction rate (castbench: all true flags)"
        header += [label for _, label in PAPER_COLUMNS]
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
        cells += [_cell(row.strict[name]) if name in row.strict else "–" for name in strict_metrics(board)]
        cells.append(f"{row.malformed_actions} / {row.proposed_actions}")
        if board.has_critic:
            shown = {
                label: figure + (f" ({interval})" if interval else "")
                for label, figure, interval in critic_lines(row)
            }
            cells += [shown.get(label, "–") for label in ("flags", "false flags", "detection", "correction")]
            cells.append("–" if row.critic_parse_errors is None else str(row.critic_parse_errors))
        if board.has_paper_columns:
            cells += [shown.get(label, "–") if board.has_critic else "–" for _, label in PAPER_COLUMNS]
        if board.has_counterfactuals:
            cells.append(_net(row.net_saved))
        cells += [_cost(row.cost_per_trial), _md(_blamed(row)), f"[view]({row.viewer})"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    notes = [row for row in board.rows if row.rank_note]
    if notes:
        lines += ["Ranks not credibly different:", ""]
        lines += [f"- #{row.rank} {_md(row.name)}: {_md(row.rank_note)}" for row in notes]
        lines.append("")
    lines += [STRICT_NOTE, ""]
    if board.has_paper_columns:
        lines += [PAPER_NOTE, ""]
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
        template_environment("castbench_boards")
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
            badge=badge,
            short_id=short_id,
            id_parts=id_parts,
            strict_metrics=strict_metrics(board),
            critic_lines=critic_lines,
            strict_note=STRICT_NOTE,
            origin_note=ORIGIN_NOTE,
            privileged_mark=PRIVILEGED_MARK,
        )
    )
