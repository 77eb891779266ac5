"""Rich tables of a run's summary and of single trials (what `castbench eval` and `runs show`
print)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._records.metrics import ReliabilitySummary
from castbench._records.metrics.passk import reported_ks
from castbench._records.trial import TrialRecord
from castbench._results.attribution.shares import AttributionShares
from castbench._results.report.critic_report import CriticReport
from castbench._results.report.outputs import OutputCounts
from castbench._results.report.reasons import trial_reasons
from castbench._results.report.reply_judge import reply_judge_lines
from castbench._results.report.summary import DomainReport, RunSummary

__all__ = [
    "FLOOR_LEGEND",
    "STRICT_LEGEND",
    "critic_table",
    "headline_table",
    "print_summary",
    "print_trial",
    "reliability_table",
]


def _cell(value: float, interval: tuple[float, float] | None) -> str:
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [dim]{interval[0]:.2f}–{interval[1]:.2f}[/dim]"


def _ks(n: int) -> list[int]:
    return reported_ks(n)


LABEL_WIDTH = 26
"""The widest a split table's label column gets (its words wrap under it): room for the figures."""


@dataclass
class _Grid:
    """A table of a label column and one column per domain (the `--details` tables), printed
    whole where it fits the terminal; where it does not, split by columns into tables that each
    fit, the label column repeated in every part, so every figure and interval stays whole on
    one line of its cell (rich would otherwise shrink the columns until `0.67–0.…`).

    `headers` are (name, note) pairs: "name (note)" in a whole table, the note on a line of its
    own in a part."""

    title: str
    corner: str
    headers: list[tuple[str, str | None]]
    label: dict[str, Any] = field(default_factory=dict)
    """The label column's options (justify, style, no_wrap)."""
    rows: list[tuple[str, list[str], str | None]] = field(default_factory=list)

    def add_row(self, label: str, *cells: str, style: str | None = None) -> None:
        self.rows.append((label, list(cells), style))

    def table(self, columns: range | None = None, wrap: bool = False) -> Table:
        """The whole table, or the part with `columns` (indexes into `headers`): its figures on
        one line each, unless `wrap` (a terminal too narrow for even one column), where its
        cells wrap between words and fold a word that is still too wide, cutting nothing."""
        whole = columns is None
        shown = range(len(self.headers)) if columns is None else columns
        title = self.title
        if not whole and len(self.headers) > 1:
            span = f"column {shown[0] + 1}" if len(shown) == 1 else f"columns {shown[0] + 1}–{shown[-1] + 1}"
            title += f" ({span} of {len(self.headers)})"
        table = Table(title=title, title_justify="left")
        options = dict(self.label)
        if not whole:
            options.update(no_wrap=False, max_width=LABEL_WIDTH, overflow="fold")
        table.add_column(self.corner, **options)
        for index in shown:
            name, note = self.headers[index]
            header = name if note is None else f"{name} ({note})" if whole else f"{name}\n({note})"
            table.add_column(
                escape(header),
                justify="right",
                no_wrap=not whole and not wrap,
                overflow="fold" if wrap else "ellipsis",
            )
        for label, cells, style in self.rows:
            table.add_row(label, *[cells[index] for index in shown], style=style)
        return table

    def tables(self, width: int) -> list[Table]:
        """What fits `width` columns: the whole table, else its parts, as few and as even as
        fit; a terminal too narrow for even one column gets one column a part, its cells
        wrapped."""
        whole = self.table()
        if _natural_width(whole) <= width:
            return [whole]
        count = len(self.headers)
        if _natural_width(self.table(range(1))) > width:
            return [self.table(range(index, index + 1), wrap=True) for index in range(count)]
        per_part = 1
        while per_part < count and _natural_width(self.table(range(per_part + 1))) <= width:
            per_part += 1
        parts = -(-count // per_part)
        while True:
            bounds = [(count * index + parts - 1) // parts for index in range(parts + 1)]
            built = [self.table(range(bounds[i], bounds[i + 1])) for i in range(parts)]
            if parts >= count or all(_natural_width(table) <= width for table in built):
                return built
            parts += 1


def _natural_width(table: Table) -> int:
    """The width `table` takes with nothing wrapped or cut (its title aside)."""
    console = Console(width=10_000)
    return console.measure(table, options=console.options.update_width(10_000)).maximum


def _pass_hat(report: ReliabilitySummary | None, k: int) -> str:
    """pass^k with its interval; in an incomplete run the conservative bound comes first (the
    figure no agent can raise by leaving trials unscored), the estimate from scored trials after."""
    if report is None or k not in report.pass_hat:
        return "–"
    cell = _cell(report.pass_hat[k], report.ci95[k])
    bound = (getattr(report, "pass_hat_conservative", None) or {}).get(k)
    return cell if bound is None else f"[bold]{bound:.3f}[/] [yellow](scored only: {cell})[/]"


def reliability_table(summary: RunSummary) -> Table:
    """One row per k, one column per domain: pass^k with its 95% interval over tasks, and right
    under it the strict pass^k (no executed action broke the domain policy) where the trials
    were graded strictly; then the reference floors (refusing everything, looking up then
    refusing) on the same tasks."""
    return _reliability_grid(summary).table()


def _reliability_grid(summary: RunSummary) -> _Grid:
    n = summary.overall.trials_per_task
    columns: list[tuple[str, DomainReport]] = list(summary.domains.items())
    if len(columns) > 1:
        columns.append(("overall", summary.overall))
    strict = any(report.strict is not None for _, report in columns)
    title = f"pass^k, 95% CI over tasks — run {summary.run_id}"
    if any(report.pass_hat_conservative for _, report in columns):
        title += (
            "\nincomplete: first every unscored planned trial counted as a failure (the headline),"
            " then the estimate from scored trials only"
        )
    grid = _Grid(
        title,
        "k",
        [(name, f"{report.n_tasks} tasks") for name, report in columns],
        {"justify": "right", "style": "bold", "no_wrap": True},
    )
    for k in _ks(n):
        grid.add_row(f"pass^{k}", *[_pass_hat(report, k) for _, report in columns])
        if strict:
            grid.add_row(f"strict pass^{k}", *[_pass_hat(report.strict, k) for _, report in columns])
    grid.add_row(f"pass@{n}", *[f"{report.pass_at.get(n, float('nan')):.3f}" for _, report in columns])
    if summary.floors is not None:
        floors = summary.floors
        for floor in floors.policies:
            by_column = [
                floors.overall.get(floor) if name == "overall" else floors.domains.get(name, {}).get(floor)
                for name, _ in columns
            ]
            grid.add_row(f"floor: {floor}", *[_floor_cell(values, n) for values in by_column])
    return grid


def _floor_cell(values: dict[int, float] | None, n: int) -> str:
    """A floor's pass^1, and its pass^n when that differs (a floor run with traits)."""
    if not values:
        return "–"
    first, last = values[1], values.get(n, values[max(values)])
    return f"{first:.3f}" if abs(first - last) < 5e-4 else f"{first:.3f} → {last:.3f} (pass^{n})"


def _details_grid(summary: RunSummary) -> _Grid:
    """Trial-level facts per domain: steps, errors, why trials ended and why they failed."""
    columns = list(summary.domains.items())
    grid = _Grid("trials", "", [(name, None) for name, _ in columns], {"style": "bold"})
    facts: list[tuple[str, Callable[[DomainReport], str]]] = [
        ("trials", lambda r: str(r.n_trials)),
        ("steps per trial", lambda r: f"{r.steps_mean:.1f}"),
        ("errored / retried", lambda r: f"{r.errored_trials} / {r.retried_trials}"),
        ("timed out (scored 0)", lambda r: str(r.timed_out_trials)),
        ("incomplete / missing tasks", lambda r: f"{len(r.incomplete_tasks)} / {len(r.missing_tasks)}"),
        ("failed but looked fine", lambda r: str(r.surface_success)),
        ("cost per trial", lambda r: "–" if r.cost_per_trial is None else f"${r.cost_per_trial:.4f}"),
    ]
    for label, value in facts:
        grid.add_row(label, *[value(report) for _, report in columns])
    _output_rows(grid, [report for _, report in columns])
    reasons = sorted({reason for _, report in columns for reason in report.end_reasons})
    for reason in reasons:
        grid.add_row(f"ended: {reason}", *[str(report.end_reasons.get(reason, 0)) for _, report in columns])
    categories = sorted({c for _, report in columns for c in report.failure_categories})
    for category in categories:
        grid.add_row(
            f"failed: {category}", *[str(report.failure_categories.get(category, 0)) for _, report in columns]
        )
    _attribution_rows(grid, [report for _, report in columns])
    return grid


def _share(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else str(count)


def _attribution_rows(grid: _Grid, reports: list[DomainReport]) -> None:
    """Whose fault the trials that did not pass were and why (`castbench runs why` lists them),
    near-misses among passes, and trials where the simulated user broke its scenario."""
    shares = [report.attribution for report in reports]
    if all(share is None for share in shares):
        return

    def cells(value: Callable[[AttributionShares], str]) -> list[str]:
        return ["–" if share is None else value(share) for share in shares]

    def blamed(party: str) -> Callable[[AttributionShares], str]:
        return lambda share: _share(share.by_party.get(party, 0), share.not_passed)

    def caused(cause: str) -> Callable[[AttributionShares], str]:
        return lambda share: str(share.by_cause.get(cause, 0))

    for party in ("agent", "user", "harness"):
        grid.add_row(f"blamed: {party}", *cells(blamed(party)))
    for cause in sorted({c for share in shares if share is not None for c in share.by_cause}):
        grid.add_row(f"  cause: {cause}", *cells(caused(cause)))
    grid.add_row("near-misses among passes", *cells(lambda s: _share(s.near_misses, s.passed)))
    grid.add_row(
        "trials with a simulator fault", *cells(lambda s: _share(s.simulator_fault_trials, s.trials))
    )


def _output_rows(grid: _Grid, reports: list[DomainReport]) -> None:
    """What the agents wrote that could not be used, and what their model calls cost per trial
    (`castbench._results.report.outputs`): model rows only when some role is a model."""
    outputs = [report.outputs for report in reports]
    rows: list[tuple[str, Callable[[OutputCounts], str]]] = [
        ("malformed actions", lambda o: f"{o.malformed_actions} / {o.actions}"),
    ]
    if any(o.verdicts for o in outputs):
        rows.append(("unparseable verdicts", lambda o: f"{o.unparseable_verdicts} / {o.verdicts}"))
    if any(o.model_calls for o in outputs):
        rows += [
            ("unusable user turns", lambda o: f"{o.unusable_user_turns} / {o.user_turns}"),
            ("model calls per trial", lambda o: f"{o.per_trial(o.model_calls):.1f}, {o.failed_calls} failed"),
            (
                "tokens in / out per trial",
                lambda o: f"{o.per_trial(o.tokens_in):,.0f} / {o.per_trial(o.tokens_out):,.0f}",
            ),
            ("model time per trial", lambda o: f"{o.per_trial(o.model_s):.1f} s"),
        ]
    for label, value in rows:
        grid.add_row(label, *[value(o) for o in outputs])


STRICT_LEGEND = "strict: 0 if an action broke the policy"
FLOOR_LEGEND = "floor: what refusing policies score"
"""What the headline's "strict" rows and "floor" column mean, on one line under it."""


def headline_table(summary: RunSummary) -> Table:
    """The first screen: one row per domain (and overall) with pass^1 and pass^n and their 95%
    intervals, the strict figures on the line below, pass@n and the best reference floor;
    about 66 columns wide whatever the number of domains."""
    n = summary.overall.trials_per_task
    ks = sorted({1, n})
    columns: list[tuple[str, DomainReport]] = list(summary.domains.items())
    if len(columns) > 1:
        columns.append(("overall", summary.overall))
    table = Table(
        title=f"pass^k (95% CI over tasks), {n} trials per task — run {summary.run_id}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("domain", no_wrap=True, style="bold")
    table.add_column("tasks", justify="right", no_wrap=True)
    for k in ks:
        table.add_column(f"pass^{k}", justify="right", no_wrap=True)
    table.add_column(f"pass@{n}", justify="right", no_wrap=True)
    floors = summary.floors
    if floors is not None:
        table.add_column("floor", justify="right", no_wrap=True)
    for name, report in columns:
        row = [escape(name), str(report.n_tasks), *[_pass_hat(report, k) for k in ks]]
        row.append(f"{report.pass_at.get(n, float('nan')):.3f}")
        if floors is not None:
            values = floors.overall if name == "overall" else floors.domains.get(name, {})
            firsts = [found[1] for found in values.values() if found]
            row.append(f"{max(firsts):.3f}" if firsts else "–")
        table.add_row(*row)
        if report.strict is not None:
            table.add_row("  strict", "", *[_pass_hat(report.strict, k) for k in ks], style="dim")
    return table


def _headline_note(summary: RunSummary) -> str:
    """One line of trial facts under the headline."""
    overall = summary.overall
    failed = overall.n_trials - sum(task.successes for task in overall.per_task.values())
    note = f"{overall.n_trials} trials, {failed} failed"
    shares = overall.attribution
    if shares is not None and shares.not_passed:
        blamed = [f"{party} {shares.by_party.get(party, 0)}" for party in ("agent", "user", "harness")]
        note += f" (blamed: {', '.join(blamed)})"
    if overall.surface_success:
        note += f"; {overall.surface_success} looked fine"
    if overall.errored_trials or overall.timed_out_trials:
        note += f"; {overall.errored_trials} errored, {overall.timed_out_trials} timed out"
    return note


def _with_interval(value: float | None, bounds: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" + (f" ({bounds[0]:.2f}–{bounds[1]:.2f})" if bounds is not None else "")


def headline_extras(summary: RunSummary) -> list[str]:
    """What the headline adds when it applies, each line within 80 columns: the critic's figures
    when a critic verified actions (flag rate, false-flag rate and detection with their 95%
    intervals over tasks, correction), and a model's spending and unusable output when a model
    answered (tokens, cost, malformed actions, calls that got no answer)."""
    overall, lines = summary.overall, []
    critic = overall.critic
    if critic is not None and critic.n_verified:
        lines.append(
            f"critic: {critic.n_verified:,} verified actions, flag rate {_rate(critic.flag_rate)}, "
            f"correction {_rate(critic.correction_rate)}"
        )
        lines.append(
            f"  false flags {_with_interval(critic.false_flag_rate, critic.false_flag_rate_ci)}, "
            f"detection {_with_interval(critic.detection_rate, critic.detection_rate_ci)}"
        )
    counts = overall.outputs
    if counts.model_calls:
        cost = sum(u.cost for u in overall.usage.values() if u.cost is not None)
        priced = any(u.cost is not None for u in overall.usage.values())
        line = (
            f"models: {counts.model_calls:,} calls, {counts.tokens_in:,} tokens in, {counts.tokens_out:,} out"
        )
        lines.append(line + (f", ${cost:,.2f}" if priced else ""))
        problems = [
            f"{counts.malformed_actions:,} of {counts.actions:,} actions malformed",
            f"{counts.failed_calls:,} calls unanswered",
        ]
        if counts.unparseable_verdicts:
            problems.append(f"{counts.unparseable_verdicts:,} verdicts unreadable")
        lines.append("  " + ", ".join(problems))
    return lines


def _legend(summary: RunSummary) -> str | None:
    reports = [summary.overall, *summary.domains.values()]
    parts = [STRICT_LEGEND] if any(report.strict is not None for report in reports) else []
    if summary.floors is not None:
        parts.append(FLOOR_LEGEND)
    return " · ".join(parts) or None


def print_summary(summary: RunSummary, console: Console, details: bool = False) -> None:
    """The run's figures: the headline table with its legend and one line of trial facts, or with
    `details` every table (pass^k for every k, the trial facts per domain, the critic's)."""
    reason = summary.incomplete_reason()
    if reason is not None:
        console.print(f"[bold red]{summary.status.upper()}:[/] {escape(reason)}; its figures are not final")
    if details:  # each table whole where it fits the terminal, else split by columns
        grids = [_reliability_grid(summary), _details_grid(summary), _critic_grid(summary)]
        for grid in grids:
            for table in grid.tables(console.width) if grid is not None else []:
                console.print(table)
    else:
        console.print(headline_table(summary))
        legend = _legend(summary)
        if legend is not None:
            console.print(legend, style="dim", markup=False)
        console.print(_headline_note(summary), markup=False)
        for line in headline_extras(summary):
            console.print(line, markup=False, highlight=False)
        console.print("every table: --details", style="dim", markup=False)
    judge, agreement = summary.config.reply_judge, summary.overall.reply_judge
    if judge is not None and agreement is not None:
        for line in reply_judge_lines(str(judge.get("model")), agreement):
            console.print(line, markup=False, highlight=False)
    for warning in summary.warnings:
        console.print(f"[bold yellow]warning:[/] {escape(warning)}")


SHOWN_CHARS = 2000
"""The most of one text (a reply, a tool call, a result) `runs show` prints; the rest is said,
not printed (a 30 MB reply kept the terminal busy for over 14 minutes)."""


def _printable(text: str) -> str:
    """Agent text for the terminal: cut at `SHOWN_CHARS` (saying so), markup escaped, and a lone
    surrogate (stored as the agent produced it, `castbench._base.lossless`) shown as its escape
    instead of failing the write."""
    if len(text) > SHOWN_CHARS:
        cut = f"{len(text):,} characters, the first {SHOWN_CHARS:,} shown; all in `castbench export`"
        text = f"{text[:SHOWN_CHARS]} … [{cut}]"
    return escape(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def print_trial(record: TrialRecord, console: Console) -> None:
    status = "[green]pass[/]" if record.passed else "[red]fail[/]"
    console.print(
        f"[bold]{_printable(record.domain)} {_printable(record.task_id)} #{record.trial_index}[/] {status} "
        f"end={record.end_reason} steps={len(record.steps)} seed={record.seed}"
    )
    console.print(f"  [cyan]user[/]: {_printable(record.opening)}")
    for step in record.steps:
        for proposal in step.proposals:
            if proposal.verdict is None and len(step.proposals) == 1:
                continue
            verdict = proposal.verdict
            label = f" label={proposal.label.label}" if proposal.label else ""
            judged = f"{verdict.verdict} ({verdict.failure_type}) {verdict.explanation}" if verdict else "–"
            if verdict is not None and verdict.parse_error is not None:
                judged = f"unparseable ({verdict.parse_error}) {verdict.explanation[:200]}"
            shown = _printable(f"{_show(proposal.action)} → critic {judged}{label}")
            console.print(f"    [dim]round {proposal.round}: {shown}[/]")
        if step.action is None:
            console.print("  [magenta]blocked[/] by the critic")
        else:
            console.print(f"  [magenta]agent[/]: {_printable(_show(step.action))}")
        observation = step.observation
        if observation is not None:
            who = (
                "user"
                if observation.role == "user"
                else ("tool!" if getattr(observation, "error", False) else "tool")
            )
            text = observation.text if observation.role == "user" else observation.content
            fault = f"[yellow]fault injected: {step.fault}[/] " if step.fault else ""
            console.print(f"  [cyan]{who}[/]: {fault}{_printable(text[:300])}")
    if record.grade is not None and record.grade.diff:
        diff = Table(title="state diff (expected vs got)", title_justify="left")
        for column in ("table", "key", "field", "expected", "got"):
            diff.add_column(column, overflow="fold")  # a long value folds onto more lines, never cut
        for item in record.grade.diff[:40]:
            cells = (item.table, item.key, item.field, repr(item.expected), repr(item.got))
            diff.add_row(*map(_printable, cells))
        console.print(diff)
    for reason in trial_reasons(record):
        label, _, rest = reason.partition(":")
        console.print(f"  [red]{escape(label)}[/]:{_printable(rest)}")
    for check in record.grade.reply_checks if record.grade is not None else []:
        if check.judge is not None and check.judge != ("pass" if check.rule else "fail"):
            rules = "pass" if check.rule else "fail"
            where = f" (step {check.step})" if check.step is not None else ""
            said = f"{check.kind} {check.subject!r}{where}: rules {rules}, judge {check.judge}"
            said += f" ({check.judge_reason})" if check.judge_reason else ""
            console.print(f"  [yellow]reply judge parts ways[/]: {_printable(said)}")
    for role, output in record.agent_output.items():  # what its processes wrote (stdout, stderr)
        console.print(f"  [dim]{role} output[/]: {_printable(output)}")
    for attempt, reason in enumerate(record.retried_for, start=1):
        first = reason.splitlines()[0] if reason else ""
        console.print(f"  [yellow]try {attempt} abandoned, restarted from the seed[/]: {_printable(first)}")
    for role, usage in sorted(record.usage.items()):
        failed = f", {usage.failed_calls} failed" if usage.failed_calls else ""
        cost = "" if usage.cost is None else f", ${usage.cost:.4f}"
        console.print(
            f"  [dim]{role}: {usage.calls} call(s){failed}, {usage.input_tokens:,} tokens in / "
            f"{usage.output_tokens:,} out, {usage.latency_s:.1f} s{cost}[/]"
        )


def _show(action: object) -> str:
    kind = getattr(action, "kind", "")
    if kind == "tool_call":
        shown = f"{action.name}({action.arguments})"  # type: ignore[attr-defined]
        return shown if len(shown) <= 600 else f"{shown[:600]} … [{len(shown):,} characters]"
    if kind == "reply":
        return repr(action.text)  # type: ignore[attr-defined]
    raw = getattr(action, "raw", "")
    return f"malformed: {getattr(action, 'reason', '')} {raw[:300]!r}"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _interval(bounds: tuple[float, float] | None) -> str:
    return "–" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _round_reactions(round_: int) -> Callable[[CriticReport], str]:
    def cell(critic: CriticReport) -> str:
        r = critic.reactions_by_round.get(round_)
        if r is None:
            return "–"
        return f"{_rate(r.resistance_rate)} / {_rate(r.insistence_rate)} / {_rate(r.correction_rate)}"

    return cell


def critic_table(summary: RunSummary) -> Table | None:
    """Confusion matrix (shares of labelled verified actions, as CAST reports them) and rates,
    one column per domain."""
    grid = _critic_grid(summary)
    return None if grid is None else grid.table()


def _critic_grid(summary: RunSummary) -> _Grid | None:
    columns = [(name, report.critic) for name, report in summary.domains.items() if report.critic is not None]
    if not columns:
        return None
    if len(columns) > 1 and summary.overall.critic is not None:
        columns.append(("overall", summary.overall.critic))
    grid = _Grid(escape(f"critic {summary.config.critic}"), "", [(name, None) for name, _ in columns])
    grid.label = {"style": "bold"}
    rows: list[tuple[str, Callable[[CriticReport], str]]] = [
        ("verified actions", lambda c: str(c.n_verified)),
        ("labels unknown", lambda c: str(c.unknown)),
        ("flag ∧ invalid (share)", lambda c: _rate(c.confusion.flag_invalid if c.confusion else None)),
        ("flag ∧ valid (share)", lambda c: _rate(c.confusion.flag_valid if c.confusion else None)),
        ("pass ∧ invalid (share)", lambda c: _rate(c.confusion.pass_invalid if c.confusion else None)),
        ("pass ∧ valid (share)", lambda c: _rate(c.confusion.pass_valid if c.confusion else None)),
        ("false-flag rate", lambda c: _rate(c.false_flag_rate)),
        ("detection rate", lambda c: _rate(c.detection_rate)),
        ("precision", lambda c: _rate(c.precision)),
        ("F1", lambda c: _rate(c.f1)),
        ("MCC", lambda c: _rate(c.mcc)),
        ("MCC 95% CI (tasks resampled)", lambda c: _interval(c.mcc_ci)),
        ("unreadable verdicts (counted as pass)", lambda c: str(c.unreadable)),
        ("verdicts read in part", lambda c: str(c.parse_errors - c.unreadable)),
        ("flag rate", lambda c: _rate(c.flag_rate)),
        ("resistance (false flags: kept)", lambda c: _rate(c.resistance_rate)),
        ("insistence (true flags: re-proposed)", lambda c: _rate(c.insistence_rate)),
        ("correction (true flags: valid next)", lambda c: _rate(c.correction_rate)),
        ("harmful-revision rate", lambda c: _rate(c.harmful_revision_rate)),
        ("rounds per verified step", lambda c: _rate(c.rounds_mean)),
        ("blocked steps", lambda c: str(c.blocked_steps)),
        ("critic / policy seconds", lambda c: f"{c.critic_seconds:.2f} / {c.policy_seconds:.2f}"),
        (
            "critic tokens in / out",
            lambda c: f"{c.critic_usage.input_tokens} / {c.critic_usage.output_tokens}",
        ),
    ]
    rounds = sorted({r for _, c in columns for r in c.reactions_by_round})
    rows += [(f"  round {r}: resist / insist / correct", _round_reactions(r)) for r in rounds]
    if any(c.helpfulness is not None for _, c in columns):
        rows += [
            ("helpfulness (paired)", lambda c: _rate(c.helpfulness)),
            ("harmfulness (paired)", lambda c: _rate(c.harmfulness)),
            ("pass^1 without critic", lambda c: _rate((c.pass_hat_without_critic or {}).get(1))),
        ]
    for label, value in rows:
        grid.add_row(label, *[value(critic) for _, critic in columns])
    return grid
