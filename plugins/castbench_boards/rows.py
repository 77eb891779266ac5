"""From exported runs to leaderboard rows: eligibility, figures with intervals, ranking.

A row's figures are recomputed from the run's trial records (per-task counts pooled over the
board's domains, keyed `domain/task`), with a fixed bootstrap seed, so the same exports give
the same board whatever seed each run used.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from castbench._agents.registry import Role
from castbench._records.config import RunConfig
from castbench._records.journal import is_lost
from castbench._records.metrics import ReliabilitySummary, TaskOutcome, summarize_counts
from castbench._records.provenance import AgentPlacement, Provenance, placement_problems, provenance
from castbench._records.store.export import ExportedRun
from castbench._results.compare.comparability import comparability_number
from castbench._results.compare.metric import parse_metric
from castbench._results.compare.paired import paired_metric
from castbench._results.publish.board import BoardError, BoardSpec, Entry, slug
from castbench._results.report.critic_report import critic_report
from castbench._results.report.summary import DomainReport, RunSummary, summarize_run
from castbench_analyses.counterfactual import NotBranchable
from castbench_analyses.counterfactual_metrics import NetSaved, summarize_branches
from castbench_analyses.counterfactual_report import play_branches
from castbench_boards.profile import ProfileCells

__all__ = ["BoardRow", "Cell", "CriticCells", "eligibility_problems", "entry_row", "rank_rows"]

_DIGITS = 4


class Cell(BaseModel):
    value: float
    low: float
    high: float


class PaperCells(BaseModel):
    """The CAST paper's critic figures of a row (a board with `paper_columns`): the confusion
    shares of all labelled verdicts, and resistance and correction as the paper defines them,
    with castbench's resistance (over false flags only) beside them."""

    flag_valid: float | None
    pass_valid: float | None
    flag_invalid: float | None
    pass_invalid: float | None
    resistance: float | None
    """The paper's: rejections kept or insisted against, over every rejection the policy answered."""
    correction: float | None
    """The paper's: corrected, over the true flags the policy answered (a last-round flag cannot
    be corrected)."""
    resistance_castbench: float | None
    """castbench's `resistance_rate`: a valid action kept, over the false flags answered."""


def paper_reactions(reactions: Any) -> tuple[float | None, float | None]:
    """(resistance, correction) as the CAST paper defines them, from a critic report's
    `FlagReactions` counts (see `PaperCells`)."""
    answered = reactions.false_flags_answered + reactions.true_flags_answered
    resisted = reactions.kept + reactions.insisted
    resistance = resisted / answered if answered else None
    answered_true = reactions.true_flags_answered
    return resistance, (reactions.corrected / answered_true if answered_true else None)


class CriticCells(BaseModel):
    """A critic row's figures over the board's domains (`castbench._results.report.critic_report`), each
    rate None where it is undefined, each interval None where too few resamples define it."""

    flag_rate: float | None
    false_flag_rate: float | None
    false_flag_rate_ci: tuple[float, float] | None
    detection_rate: float | None
    detection_rate_ci: tuple[float, float] | None
    correction_rate: float | None
    """castbench's: corrected over every true flag, the last round's included."""
    paper: PaperCells | None = Field(None, exclude_if=lambda value: value is None)
    """The paper's columns, on a board with `paper_columns` (None: not asked for)."""


class BoardRow(BaseModel):
    rank: int = 0
    rank_note: str = ""
    """Why the rank above (or beside) this row is not credibly different: a tie, a paired
    difference whose interval holds 0, or overlapping intervals (empty: none of these)."""
    name: str
    slug: str
    note: str
    run_id: str
    policy: str
    critic: str
    user: str
    traits: str | None
    privileged: list[str]
    origin: Literal["re-run", "submitted"] = "submitted"
    """`re-run`: this build re-created the run from the entry's recipe (`--rerun`); `submitted`:
    the build took it from a file, whatever the file claims."""
    source: str = ""
    """The export the row's figures come from (relative to the board's folder)."""
    agents: dict[str, AgentPlacement] = Field(default_factory=dict)
    """Role -> where its agent ran (`castbench._records.provenance`; derived from the specs for an
    export stored before placements were recorded)."""
    trial_isolation: str = ""
    """What kept the run's trials independent (`castbench._records.execution.TrialIsolation`)."""
    outside_castbench: list[str] = Field(default_factory=list)
    """Roles whose agent ran outside castbench's sandbox (agent services, A2A agents)."""
    tasks: int
    trials: int
    metrics: dict[str, Cell]
    domains: dict[str, Cell] = Field(default_factory=dict)
    """Domain -> the ranking metric on that domain's tasks alone (the page's per-domain columns;
    empty on a single-domain board, whose pooled figure is that domain's)."""
    curve: list[float]
    """pass^1 .. pass^n."""
    curve_low: list[float] = Field(default_factory=list)
    curve_high: list[float] = Field(default_factory=list)
    """The 95% interval of each point of `curve` (the curve's band)."""
    strict: dict[str, Cell] = Field(default_factory=dict)
    """Strict pass^1 and the strict ranking metric (0 for a trial whose executed actions broke the
    domain policy), pooled over the board's domains; empty when a trial was graded before strict
    grading existed."""
    critic_figures: CriticCells | None = None
    """The critic's flag, false-flag, detection and correction rates with intervals (None: no critic)."""
    false_flag_rate: float | None
    detection_rate: float | None
    critic_parse_errors: int | None = None
    """Critic verdicts that could not be read (counted as passes; None: no critic)."""
    malformed_actions: int = 0
    """Proposed actions with no usable tool call or reply (`castbench._results.report.outputs`)."""
    proposed_actions: int = 0
    cost_per_trial: float | None
    profile: ProfileCells | None = None
    """Reliability-profile columns, on a board with `profile` (`castbench_boards.profile`)."""
    failures_blamed: dict[str, float] | None = None
    """Shares of the trials that did not pass blamed on the agent, the simulated user and the
    harness (`castbench._results.attribution`), over the board's domains; None: every trial passed."""
    net_saved: NetSaved | None = Field(None, exclude_if=lambda value: value is None)
    """Net trials saved per 100 critic verdicts, on a board with `counterfactuals` (None: no such
    column, no critic, or agents that cannot be branched)."""

    _figures: ReliabilitySummary | None = PrivateAttr(default=None)
    """The pooled per-task figures behind `metrics` (for the paired test between neighbours)."""
    _seed: int | None = PrivateAttr(default=None)

    @property
    def viewer(self) -> str:
        return f"runs/{self.slug}.html"


def _round(value: float) -> float:
    return round(value, _DIGITS)


def _traits(extra: dict[str, Any]) -> str | None:
    traits = extra.get("traits")
    if traits is None or traits == {} or traits == []:
        return None
    if isinstance(traits, dict):
        return ", ".join(f"{key}={traits[key]}" for key in sorted(traits))
    if isinstance(traits, list):
        return ", ".join(str(item) for item in traits)
    return str(traits)


def eligibility_problems(
    spec: BoardSpec, exported: ExportedRun, summary: RunSummary, allow_incomplete: bool = False
) -> list[str]:
    """Why this run does not belong on the board; an incomplete or failed run is refused unless
    `allow_incomplete` (its pass^k would rank part of the agent's work)."""
    config = exported.config
    problems: list[str] = []
    reason = summary.incomplete_reason()
    if reason is not None and not allow_incomplete:
        problems.append(f"{reason} (--force to rank it anyway)")
    for domain, number in sorted(spec.domains.items()):
        version = config.domains.get(domain)
        if version is None:
            problems.append(f"did not run domain {domain}")
            continue
        if comparability_number(version) != str(number):
            problems.append(
                f"domain {domain} version {version} is not comparable with the board's {number}-x"
            )
        if domain not in summary.domains:
            problems.append(f"domain {domain}: no task planned or stored")
    if config.split != spec.split:
        problems.append(f"ran the {config.split} split, the board ranks {spec.split}")
    if config.task_ids is not None:
        problems.append(f"ran a subset of {len(config.task_ids)} task(s), the board needs every task")
    if config.trials < spec.trials:
        problems.append(f"ran {config.trials} trials per task, the board needs at least {spec.trials}")
    if config.privileged and not spec.allow_privileged:
        problems.append(
            f"privileged {', '.join(config.privileged)} (read the ground truth); the board allows none"
        )
    if config.in_process:
        problems.append(
            f"ran the {', '.join(config.in_process)} inside castbench's process (--in-process), "
            "where it could read the ground truth"
        )
    problems += _provenance_problems(spec, config)
    problems += _isolation_problems(spec, provenance(config, exported.meta))
    problems += _retry_problems(exported)
    if spec.user is not None and config.user != spec.user:
        problems.append(f"user simulator {config.user}, the board uses {spec.user}")
    return problems


def _provenance_problems(spec: BoardSpec, config: RunConfig) -> list[str]:
    """Recorded placements that contradict the run's specs, agents that ran without the sandbox
    (unless the board allows them), and privileged roles the `privileged` list does not name."""
    problems = [f"provenance contradicts the run's config: {item}" for item in placement_problems(config)]
    agents = provenance(config, {}).agents
    unsandboxed = [role for role, placement in agents.items() if placement.where == "unsandboxed"]
    if unsandboxed and not spec.allow_unsandboxed:
        reasons = "; ".join(f"{role} {agents[role].agent}: {agents[role].detail}" for role in unsandboxed)
        problems.append(
            f"ran import-path agents in worker processes without the OS sandbox ({reasons}); "
            "the board allows none (allow_unsandboxed = true to rank them)"
        )
    problems += _declaration_problems(spec, agents)
    unlisted = [role for role, found in agents.items() if found.privileged and role not in config.privileged]
    if unlisted and not spec.allow_privileged:
        problems.append(f"privileged {', '.join(unlisted)} (read the ground truth); the board allows none")
    return problems


def _isolation_problems(spec: BoardSpec, recorded: Provenance) -> list[str]:
    """Trials that were not isolated from each other where the board requires it, and agents
    outside castbench's sandbox where the board refuses them."""
    problems = []
    if spec.require_isolated_trials and not recorded.isolated_trials:
        problems.append(
            f"trial isolation {recorded.trial_isolation}: the board requires isolated trials "
            "(require_isolated_trials)"
        )
    outside = recorded.outside_castbench
    if outside and not spec.allow_outside_castbench:
        problems.append(
            f"the {', '.join(outside)} ran outside castbench's sandbox (an agent service); the board "
            "allows none (allow_outside_castbench = false)"
        )
    return problems


def _retry_problems(exported: ExportedRun) -> list[str]:
    """Retries an agent could have caused (`Provenance.could_fake_infrastructure`): a re-rolled
    trial is not an independent one."""
    roles = provenance(exported.config, exported.meta).could_fake_infrastructure
    retried = sum(1 for record in exported.trials if record.attempts > 1)
    lost = sum(1 for record in exported.trials if any(is_lost(reason) for reason in record.retried_for))
    problems = []
    if lost:  # castbench killed mid-trial: a re-roll, whoever caused it
        problems.append(
            f"{lost} trial(s) played again after castbench's process was lost during them; a "
            "re-rolled trial is not an independent one"
        )
    if retried and roles:
        problems.append(
            f"{retried} trial(s) retried after infrastructure errors that its {', '.join(roles)} could "
            "have raised; a re-rolled trial is not an independent one"
        )
    return problems


def _declaration_problems(spec: BoardSpec, agents: dict[Role, AgentPlacement]) -> list[str]:
    """What sandboxed agents declared beyond the board's allow-lists, and declarations that
    opened a resource whole (unless the board allows unsandboxed rows)."""
    problems: list[str] = []
    for role, placement in agents.items():
        needs = placement.needs
        if placement.where != "sandboxed" or needs is None:
            continue
        outside = [f"read {path}" for path in needs.read if not _allowed_path(path, spec.allowed_reads)]
        outside += [f"port {port}" for port in needs.connect if port not in spec.allowed_ports]
        outside += [f"udp port {port}" for port in needs.udp if port not in spec.allowed_ports]
        outside += [f"env {name}" for name in needs.env if name not in spec.allowed_env]
        if outside:
            shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
            problems.append(
                f"the {role} declared {shown}: outside the board's allowed_reads, allowed_ports, allowed_env"
            )
        if placement.unsandboxed_for and not spec.allow_unsandboxed:
            problems.append(
                f"the {role}'s declarations leave it unsandboxed for {', '.join(placement.unsandboxed_for)}; "
                "the board allows none (allow_unsandboxed = true to rank it)"
            )
    return problems


def _allowed_path(path: str, allowed: list[str]) -> bool:
    real = os.path.normpath(path)
    return any(real == folder.rstrip("/") or real.startswith(folder.rstrip("/") + "/") for folder in allowed)


def _entry_mismatch(entry: Entry, exported: ExportedRun) -> list[str]:
    """A run file that no longer matches its entry's recipe is stale: rebuild it."""
    if entry.policy is None:
        return []
    config = exported.config
    wanted = {"policy": entry.policy, "critic": entry.critic, "user": entry.user, "seed": entry.seed}
    got = {"policy": config.policy, "critic": config.critic, "user": config.user, "seed": config.seed}
    return [
        f"{key} is {got[key]!r}, the entry says {wanted[key]!r}" for key in wanted if wanted[key] != got[key]
    ]


def _critic_rates(reports: list[DomainReport]) -> tuple[float | None, float | None]:
    """False-flag and detection rates over the board's domains, pooled from the confusion
    counts (not averaged: a domain with more verified actions weighs more)."""
    critics = [report.critic for report in reports]
    if not critics or any(critic is None for critic in critics):
        return None, None
    counts = [critic.counts for critic in critics if critic is not None]
    flag_valid = sum(c.flag_valid for c in counts)
    valid = flag_valid + sum(c.pass_valid for c in counts)
    flag_invalid = sum(c.flag_invalid for c in counts)
    invalid = flag_invalid + sum(c.pass_invalid for c in counts)
    return (flag_valid / valid if valid else None, flag_invalid / invalid if invalid else None)


def _cost(reports: list[DomainReport]) -> float | None:
    priced = [
        (r.cost_per_trial, r.n_trials + r.errored_trials) for r in reports if r.cost_per_trial is not None
    ]
    if not priced:
        return None
    return sum(cost * trials for cost, trials in priced) / sum(r.n_trials + r.errored_trials for r in reports)


def _blamed(reports: list[DomainReport]) -> dict[str, float] | None:
    """Failures by party, pooled over the board's domains."""
    counts = {party: 0 for party in ("agent", "user", "harness")}
    for report in reports:
        for party, count in (report.attribution.by_party if report.attribution else {}).items():
            counts[party] = counts.get(party, 0) + count
    total = sum(counts.values())
    return {party: _round(count / total) for party, count in counts.items()} if total else None


def entry_row(
    spec: BoardSpec,
    entry: Entry,
    exported: ExportedRun,
    allow_incomplete: bool = False,
    *,
    rerun: bool = False,
) -> BoardRow:
    """The row of one entry, or BoardError saying why its run does not belong on the board.
    `rerun`: this build re-created the run from the entry's recipe (otherwise it is submitted)."""
    config = exported.config
    recorded = provenance(config, exported.meta)
    summary = summarize_run(exported.run_id, config, exported.trials, exported.status)
    problems = _entry_mismatch(entry, exported) + eligibility_problems(
        spec, exported, summary, allow_incomplete
    )
    if problems:
        raise BoardError(f"{entry.name} ({entry.run_path(spec.name)}): " + "; ".join(problems))
    reports = [summary.domains[domain] for domain in sorted(spec.domains)]
    pooled: dict[str, TaskOutcome] = {
        f"{domain}/{task_id}": outcome
        for domain, report in zip(sorted(spec.domains), reports, strict=True)
        for task_id, outcome in report.per_task.items()
    }
    figures = summarize_counts(pooled, seed=0)
    metrics = {item.metric: _metric_cell(figures, item.metric) for item in spec.metrics}
    by_domain: dict[str, Cell] = {}
    if len(spec.domains) > 1:
        for domain, report in zip(sorted(spec.domains), reports, strict=True):
            by_domain[domain] = _metric_cell(summarize_counts(report.per_task, seed=0), spec.ranking_metric)
    false_flag, detection = _critic_rates(reports)
    board_trials = [record for record in exported.trials if record.domain in spec.domains]
    unreadable = [report.critic.parse_errors for report in reports if report.critic is not None]
    cost = _cost(reports)
    row = BoardRow(
        name=entry.name,
        slug=slug(entry.name),
        note=entry.note,
        run_id=exported.run_id,
        policy=config.policy,
        critic=config.critic,
        user=config.user,
        traits=_traits(config.extra),
        privileged=list(config.privileged),
        origin="re-run" if rerun else "submitted",
        source=entry.run_path(spec.name),
        agents=dict(recorded.agents),
        trial_isolation=recorded.trial_isolation,
        outside_castbench=recorded.outside_castbench,
        tasks=figures.n_tasks,
        trials=figures.trials_per_task,
        metrics=metrics,
        domains=by_domain,
        curve=[_round(figures.pass_hat[k]) for k in sorted(figures.pass_hat)],
        curve_low=[_round(figures.ci95[k][0]) for k in sorted(figures.pass_hat)],
        curve_high=[_round(figures.ci95[k][1]) for k in sorted(figures.pass_hat)],
        strict=_strict_cells(spec, pooled, board_trials),
        critic_figures=_critic_cells(board_trials, spec.paper_columns)
        if false_flag is not None or detection is not None
        else None,
        false_flag_rate=None if false_flag is None else _round(false_flag),
        detection_rate=None if detection is None else _round(detection),
        critic_parse_errors=sum(unreadable) if unreadable else None,
        malformed_actions=sum(report.outputs.malformed_actions for report in reports),
        proposed_actions=sum(report.outputs.actions for report in reports),
        cost_per_trial=cost,
        failures_blamed=_blamed(reports),
        net_saved=_net_saved(spec, exported),
    )
    row._figures = figures
    row._seed = config.seed
    return row


def _strict_cells(spec: BoardSpec, pooled: dict[str, TaskOutcome], trials: list[Any]) -> dict[str, Cell]:
    """Strict pass^1 and the strict ranking metric over the pooled tasks (empty: some trial has
    no strict grade)."""
    strict: dict[str, TaskOutcome] = {}
    verdicts: dict[str, list[bool | None]] = {}
    for record in trials:
        if record.status == "scored":
            verdicts.setdefault(f"{record.domain}/{record.task_id}", []).append(record.strict_passed)
    for key, outcome in pooled.items():
        found = verdicts.get(key, [])
        if any(verdict is None for verdict in found):
            return {}
        strict[key] = TaskOutcome(n=outcome.n, successes=sum(bool(v) for v in found))
    figures = summarize_counts(strict, seed=0)
    names = dict.fromkeys(["pass^1", spec.ranking_metric])
    return {name: _metric_cell(figures, name) for name in names}


def _critic_cells(trials: list[Any], paper: bool = False) -> CriticCells | None:
    report = critic_report(trials)
    if report is None:
        return None

    def rate(value: float | None) -> float | None:
        return None if value is None else _round(value)

    def interval(found: tuple[float, float] | None) -> tuple[float, float] | None:
        return None if found is None else (_round(found[0]), _round(found[1]))

    return CriticCells(
        flag_rate=rate(report.flag_rate),
        false_flag_rate=rate(report.false_flag_rate),
        false_flag_rate_ci=interval(report.false_flag_rate_ci),
        detection_rate=rate(report.detection_rate),
        detection_rate_ci=interval(report.detection_rate_ci),
        correction_rate=rate(report.correction_rate),
        paper=_paper_cells(report) if paper else None,
    )


def _paper_cells(report: Any) -> PaperCells:
    shares = report.confusion
    resistance, correction = paper_reactions(report.reactions)

    def rate(value: float | None) -> float | None:
        return None if value is None else _round(value)

    return PaperCells(
        flag_valid=rate(shares and shares.flag_valid),
        pass_valid=rate(shares and shares.pass_valid),
        flag_invalid=rate(shares and shares.flag_invalid),
        pass_invalid=rate(shares and shares.pass_invalid),
        resistance=rate(resistance),
        correction=rate(correction),
        resistance_castbench=rate(report.resistance_rate),
    )


def _metric_cell(figures: ReliabilitySummary, name: str) -> Cell:
    metric = parse_metric(name)
    values, intervals = (
        (figures.pass_hat, figures.ci95) if metric.kind == "pass_hat" else (figures.pass_at, figures.ci95_at)
    )
    low, high = intervals[metric.k]
    return Cell(value=_round(values[metric.k]), low=_round(low), high=_round(high))


def _net_saved(spec: BoardSpec, exported: ExportedRun) -> NetSaved | None:
    """The row's net trials saved per 100 verdicts, from branches played now (see `BoardSpec`),
    under the time limits and per-trial bounds the run's trials had (its metadata)."""
    config = exported.config
    if not spec.counterfactuals or config.critic == "none":
        return None
    try:
        branches = play_branches(config, exported.trials, exported.meta)
    except NotBranchable:
        return None
    net = summarize_branches(branches, seed=0).net_all
    return NetSaved(**{name: None if value is None else round(value, 2) for name, value in net})


def rank_rows(spec: BoardSpec, rows: list[BoardRow]) -> list[BoardRow]:
    """Best first by the ranking metric (name breaks ties in order); equal figures share a rank.
    Each row whose figure is not credibly different from the row above says so (`rank_note`)."""
    key = spec.ranking_metric
    ordered = sorted(rows, key=lambda row: (-row.metrics[key].value, row.name))
    ranked: list[BoardRow] = []
    for position, row in enumerate(ordered, start=1):
        tied = ranked and ranked[-1].metrics[key].value == row.metrics[key].value
        copy = row.model_copy(update={"rank": ranked[-1].rank if tied else position})
        ranked.append(copy)
    for above, below in zip(ranked, ranked[1:], strict=False):
        if above.rank == below.rank:
            value = f"{below.metrics[key].value:.3f}"
            below.rank_note = f"ties with {above.name}: equal {key} ({value})"
            if not above.rank_note.startswith("ties"):
                above.rank_note = f"ties with {below.name}: equal {key} ({value})"
            continue
        below.rank_note = _not_credibly_below(key, above, below)
    return ranked


def _not_credibly_below(key: str, above: BoardRow, below: BoardRow) -> str:
    """The note for `below` when its figure is not credibly lower than `above`'s: the gate's paired
    test (`castbench._results.compare.paired`) where both runs share tasks and seeds, overlapping 95%
    intervals otherwise; empty when the difference is credible."""
    shown = f"#{above.rank} {above.name}"
    upper, lower = above._figures, below._figures
    paired = upper is not None and lower is not None and above._seed == below._seed
    if paired and upper is not None and lower is not None and upper.per_task.keys() & lower.per_task.keys():
        found = paired_metric(lower, upper, parse_metric(key), seed=0)
        if found.low > 0:
            return ""
        return (
            f"not credibly below {shown}: paired {key} difference {found.difference:+.3f} "
            f"(95% CI {found.low:+.3f} to {found.high:+.3f}, {found.shared_tasks} shared tasks)"
        )
    top, bottom = above.metrics[key], below.metrics[key]
    if bottom.high >= top.low:
        return f"not credibly below {shown}: their 95% intervals of {key} overlap"
    return ""
