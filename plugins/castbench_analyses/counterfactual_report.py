"""A stored critic run's counterfactual figures (`castbench counterfactuals RUN`, `eval
--counterfactuals`): its trials branched at every verdict (`castbench_analyses.counterfactual`),
kept in the store under a digest of everything they depend on (`castbench._results.report.digest`), and
the table that puts what each verdict did beside the confusion matrix."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from rich.console import Console
from rich.table import Table

from castbench._agents import confine
from castbench._agents.models.resolve import resolve_agent
from castbench._agents.registry import AgentSpec, Role
from castbench._domain.keeping import source_digest
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.digest import code_digest
from castbench._trial.deadline import TimeLimits
from castbench._trial.rollout import AgentSet
from castbench_analyses.branches import TrialBranches
from castbench_analyses.counterfactual import branch_run
from castbench_analyses.counterfactual_metrics import CounterfactualSummary, EffectCounts, NetSaved

__all__ = [
    "branches_json",
    "kept_branches",
    "play_branches",
    "print_counterfactuals",
    "run_agents",
    "run_time_limits",
    "stored_branches",
]

_BRANCHES = TypeAdapter(list[TrialBranches])

_ROWS = (
    ("true_flag", "flags of invalid actions (true flags)"),
    ("false_flag", "flags of valid actions (false flags)"),
    ("unlabelled_flag", "flags of unlabelled actions"),
    ("miss", "passes of invalid actions (misses)"),
    ("true_pass", "passes of valid actions"),
    ("unlabelled_pass", "passes of unlabelled actions"),
)


def run_agents(config: RunConfig) -> AgentSet:
    """The agents a stored run names, re-created for its branches. A model agent gets the settings
    the run recorded for it is not given here (it is resolved with the defaults): a branch of a
    model run replays its prefix and refuses it if the model answers otherwise."""
    in_process = set(config.in_process)

    def agent(role: Role, spec: str) -> AgentSpec:
        return resolve_agent(role, spec, in_process=role in in_process)[0]

    critic = agent("critic", config.critic)
    return AgentSet(
        policy=agent("policy", config.policy),
        user=agent("user", config.user),
        critic=critic if critic.kind != "none" else None,
    )


def run_time_limits(store: ResultsStore, run_id: str) -> TimeLimits | None:
    """The time limits the run's trials were held to (its metadata), for its branches: a branch is
    played as its trial was (None: a run stored before they were recorded, the defaults)."""
    return recorded_time_limits(json.loads(store.run(run_id).meta_json))


def recorded_time_limits(meta: Mapping[str, Any]) -> TimeLimits | None:
    """The time limits a run's metadata records (None: stored before they were recorded)."""
    recorded = meta.get("time_limits")
    return None if not isinstance(recorded, dict) else TimeLimits.model_validate(recorded)


@contextmanager
def _run_bounds(meta: Mapping[str, Any]) -> Iterator[None]:
    """The per-trial bounds the run's trials had (`--trial-limits`, its metadata), for its branches'
    worker processes, whatever this process was given: a branch's process is bounded as its
    trial's was (a critic reading its limits finds the same). Runs stored before they were
    recorded: this process's."""
    recorded = meta.get("trial_limits")
    if not isinstance(recorded, dict):
        yield
        return
    limits = confine.TrialLimits(**{k: int(v) for k, v in recorded.items() if k in _BOUNDS})
    spec = ",".join(f"{name}={getattr(limits, name)}" for name in _BOUNDS)
    before = os.environ.get(confine.LIMITS_ENV)
    os.environ[confine.LIMITS_ENV] = spec
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(confine.LIMITS_ENV, None)
        else:
            os.environ[confine.LIMITS_ENV] = before


def play_branches(
    config: RunConfig, records: Iterable[TrialRecord], meta: Mapping[str, Any]
) -> list[TrialBranches]:
    """Every branch of a stored critic run, played as its trials were: the run's agents, under the
    time limits and per-trial bounds its metadata records (`meta`). `runs counterfactuals` and a
    board's column both play branches through here."""
    with _run_bounds(meta):
        return branch_run(config, run_agents(config), records, recorded_time_limits(meta))


_BOUNDS = ("memory", "file", "processes", "cpu")


def _key(store: ResultsStore, run_id: str, config: RunConfig) -> str:
    trials = store.trials_version(run_id)
    code = [code_digest(tuple(config.domains)), source_digest(Path(__file__).parent)]  # and this package's
    parts = [run_id, config.config_hash(), repr(trials), *code]
    return "counterfactuals:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def stored_branches(store: ResultsStore, run_id: str, config: RunConfig) -> list[TrialBranches] | None:
    """The run's branches if the store keeps them for its present trials, config and code (the
    viewer shows them); None otherwise."""
    kept = store.cached(_key(store, run_id, config))
    return None if kept is None else _BRANCHES.validate_json(kept)


def kept_branches(store: ResultsStore, run_id: str, config: RunConfig) -> list[TrialBranches]:
    """The run's branches, read back from the store while its trials, config and castbench's code
    are those they were played from; played (and kept) otherwise."""
    kept = stored_branches(store, run_id, config)
    if kept is not None:
        return kept
    branches = play_branches(config, store.trials(run_id), json.loads(store.run(run_id).meta_json))
    store.cache(_key(store, run_id, config), "counterfactuals", _BRANCHES.dump_json(branches).decode())
    return branches


def _net(net: NetSaved, level: float) -> str:
    if net.point is None:
        return "no verdicts"
    return f"{net.point:+.1f} [{net.low:+.1f}, {net.high:+.1f}] ({level:.0%} task bootstrap)"


def print_counterfactuals(summary: CounterfactualSummary, critic: str, console: Console) -> None:
    """Per confusion-matrix cell: its verdicts and what they did; then the net figures."""
    table = Table(
        title=f"what critic {critic}'s verdicts did (each against its branch; {summary.trials} trials, "
        f"{summary.tasks} tasks)",
        title_justify="left",
    )
    for column in ("verdicts", "n", "saved a trial", "cost a trial", "changed nothing", "unscored"):
        table.add_column(column, justify="left" if column == "verdicts" else "right")

    def row(name: str, counts: EffectCounts) -> None:
        figures = (counts.verdicts, counts.saved, counts.cost, counts.unchanged, counts.unscored)
        table.add_row(name, *(str(figure) for figure in figures))

    for cell, name in _ROWS:
        counts = summary.cells[cell]  # type: ignore[index]
        if counts.verdicts or counts.unscored or cell in ("true_flag", "false_flag", "miss", "true_pass"):
            row(name, counts)
    row("all flags", summary.flags)
    row("all passes (branch: a bare flag)", summary.passes)
    console.print(table)
    nets = (("flags", summary.net_flags), ("passes", summary.net_passes), ("verdicts", summary.net_all))
    for what, net in nets:
        console.print(f"net trials saved per 100 {what + ':':<9} {_net(net, summary.level)}", markup=False)


def branches_json(branches: list[TrialBranches], summary: CounterfactualSummary) -> str:
    """The branches and their figures as one JSON document (`--output`)."""
    document = {
        "summary": summary.model_dump(mode="json"),
        "trials": json.loads(_BRANCHES.dump_json(branches)),
    }
    return json.dumps(document, indent=1)
