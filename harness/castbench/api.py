"""The Python entry point the CLI is a thin layer over: `castbench.evaluate(...)`."""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from castbench.agents.registry import AgentSpec, Role
from castbench.agents.traits import parse_traits
from castbench.defaults import DEFAULT_DB, DEFAULT_LEASE_S, DEFAULT_MAX_TRIALS
from castbench.domain import Domain, resolve_domains
from castbench.grading import GradingMode
from castbench.models.resolve import ModelOptions, resolve_agent
from castbench.records.config import RunConfig
from castbench.records.identity import fingerprint
from castbench.records.perturbations import Perturbations
from castbench.records.provenance import (
    AgentPlacement,
    Provenance,
    RunOrigin,
    SandboxState,
    placement_of,
    provenance,
    run_origin,
    sandbox_state,
)
from castbench.records.trial import TrialRecord
from castbench.report.floors import reference_floors
from castbench.report.kept import kept_summary
from castbench.report.summary import RunSummary, pair_with_baseline, summarize_run
from castbench.runner.deadline import TimeLimits
from castbench.runner.engine import EvalOutcome, run_eval
from castbench.runner.executors import Executor
from castbench.runner.plan import plan_tasks
from castbench.runner.rollout import AgentSet, Limits, Verification
from castbench.runner.topup import top_up
from castbench.store import ResultsStore

__all__ = ["DEFAULT_MAX_TRIALS", "EvalResult", "build_config", "evaluate", "run_metadata"]


def _git_commit() -> str | None:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty.strip() else "")


def run_metadata() -> dict[str, Any]:
    packages: dict[str, str | None] = {}
    for name in ("castbench", "pydantic", "litellm", "numpy", "scipy", "sqlmodel"):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"packages": packages, "git_commit": _git_commit(), "python": platform.python_version()}


def build_config(
    *,
    domains: str | None = "all",
    policy: str = "scripted:noisy",
    critic: str = "none",
    user: str = "scripted",
    split: str = "test",
    trials: int = 8,
    seed: int = 0,
    tasks: list[str] | None = None,
    limits: Limits | None = None,
    verification: Verification | None = None,
    traits: str | None = None,
    perturbations: Perturbations | None = None,
    extra: dict[str, Any] | None = None,
    grading: GradingMode = "castbench",
    models_config: str | Path | dict[str, dict[str, Any]] | None = None,
    api_base: str | None = None,
    cache_dir: str | None = None,
    concurrency: int | None = None,
    in_process: bool = False,
) -> tuple[RunConfig, AgentSet]:
    """`models_config` (a TOML/JSON file or its parsed tables) and `api_base` set model roles'
    settings (see `castbench.models.settings`); they are recorded in `extra["models"]`.
    `cache_dir` caches model answers and `concurrency` (trials at once) sizes the model servers'
    default limits; neither is part of the run's identity. `in_process` runs import-path agents
    inside this process (debugging): the roles it affects are recorded in the config, and
    leaderboards refuse the run."""
    resolved = resolve_domains(domains)
    layers: dict[str, dict[str, Any]] | None
    if isinstance(models_config, str | Path):
        from castbench.models.settings import load_models_config  # model runs' only (tomllib, checks)

        layers = load_models_config(models_config)
    else:
        layers = models_config
    models: dict[str, Any] = {}
    options = ModelOptions(layers, api_base, cache_dir, concurrency)

    def configured(role: Role, spec: str) -> AgentSpec:
        agent, recorded = resolve_agent(role, spec, in_process=in_process, options=options)
        if recorded is not None:
            models[role] = recorded
        return agent

    policy_spec, user_spec = configured("policy", policy), configured("user", user)
    critic_spec = configured("critic", critic)
    specs = AgentSet(
        policy=policy_spec, user=user_spec, critic=critic_spec if critic_spec.kind != "none" else None
    )
    privileged = [
        role for role, spec in (("policy", policy_spec), ("critic", critic_spec)) if spec.privileged
    ]
    config = RunConfig(
        domains={domain.name: domain.version for domain in resolved},
        split=split,
        task_ids=tasks,
        planned_tasks=plan_tasks(resolved, split, tasks),
        policy=policy,
        critic=critic,
        user=user,
        trials=trials,
        seed=seed,
        limits=limits or default_limits(resolved),
        verification=verification or Verification(),
        traits=parse_traits(traits),
        perturbations=perturbations or Perturbations(),
        privileged=privileged,
        in_process=[
            role
            for role, spec in (("policy", policy_spec), ("critic", critic_spec), ("user", user_spec))
            if spec.kind == "import" and spec.transport == "in-process" and not spec.privileged
        ],
        placement=_placement([policy_spec, critic_spec, user_spec]),
        extra={**(extra or {}), **({"models": models} if models else {}), **_data_origins(resolved)},
        grading=grading,
        fingerprint=fingerprint(resolved, [policy_spec, user_spec, critic_spec]),
    )
    return config, specs


def default_limits(domains: list[Domain]) -> Limits:
    """A run's limits when its options give none: the packs' own (`Domain.default_limits`, τ²'s
    on its packs) when every pack of the run has the same, else castbench's."""
    chosen = {tuple(sorted(domain.default_limits.items())) for domain in domains}
    return Limits.model_validate(dict(chosen.pop())) if len(chosen) == 1 else Limits()


def _data_origins(domains: list[Domain]) -> dict[str, dict[str, str]]:
    """`{"data": {pack: origin}}` for packs that read another data directory (`--tau2-data`): in
    the config, so `runs show` says it and a resume needs the same directory; nothing otherwise."""
    origins = {domain.name: domain.data_origin for domain in domains if domain.data_origin}
    return {"data": origins} if origins else {}


def _placement(specs: list[AgentSpec]) -> dict[Role, AgentPlacement]:
    """Where each role's agent runs; the sandbox is asked about only when a worker needs it."""
    workers = any(spec.kind == "import" and spec.transport == "worker" for spec in specs)
    sandbox = sandbox_state() if workers else SandboxState(available=False, reason="no worker")
    return {spec.role: placement_of(spec, sandbox) for spec in specs if spec.kind != "none"}


def _check_servers(config: RunConfig, agents: AgentSet) -> None:
    """One cheap request to each model server and agent service the run uses, before its first
    trial: a server that is down fails the command at once (`ServerDown`) instead of every trial
    slowly."""
    if agents.policy is not None and agents.policy.kind == "service":
        from castbench.models.breaker import check_service  # httpx: only when a service is used

        check_service(agents.policy.name, agents.policy.role)
    servers = {
        settings["api_base"]: role
        for role, settings in config.extra.get("models", {}).items()
        if settings.get("api_base")
    }
    if servers:
        from castbench.models.breaker import check_server  # httpx: only when models are used

        for api_base, role in servers.items():
            check_server(api_base, role)


_HERE = RunOrigin(kind="run").model_dump()
"""The origin `evaluate` records: trials played here (an import records `submitted`)."""


def _origin(store: ResultsStore, config: RunConfig, fresh: bool) -> RunOrigin:
    """The origin of the run `config` opens: a resumed run keeps the one it was stored with (a
    submitted run resumed here stays submitted: some of its trials came from a file)."""
    if not fresh:
        digest = config.config_hash()
        same = [row for row in store.runs() if row.config_hash == digest]
        if same:
            return run_origin(json.loads(same[-1].meta_json))
    return RunOrigin(kind="run")


class EvalResult:
    def __init__(self, outcome: EvalOutcome, summary: RunSummary) -> None:
        self.outcome = outcome
        self.summary = summary


def evaluate(
    *,
    db: str = DEFAULT_DB,
    concurrency: int = 1,
    fresh: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
    on_config: Callable[[RunConfig, Provenance], None] | None = None,
    paired: bool = False,
    max_cost: float | None = None,
    time_limits: TimeLimits | None = None,
    lease_s: float = DEFAULT_LEASE_S,
    executor: Executor | None = None,
    add_trials: int = 0,
    max_trials: int = DEFAULT_MAX_TRIALS,
    **config_options: Any,
) -> EvalResult:
    """Run (or resume) an evaluation and summarise it. Options as in `build_config`.

    With `paired` and a critic, the same tasks, seeds and policy also run without the critic
    (a run of its own, resumable like any other) and the summary gains the critic's trial-level
    helpfulness and harmfulness. `max_cost` (USD) stops each run once it has spent that much.
    `time_limits` bound each agent's step and trial time (recorded in the run's metadata; not
    part of its identity, so a resume may change them).
    `add_trials` tops up the stored run with these options (whatever its trials per task) with
    that many more trials per task, up to `max_trials` (see `castbench.runner.topup`).

    With a Postgres `db`, several processes calling this with the same options split the run's
    trials; a worker silent for `lease_s` seconds loses its trials to the others. `executor`
    (`castbench.runner.executors.make_executor`) runs the trials elsewhere, e.g. on Ray.
    `on_config` hears each run's config and provenance before its first trial (the console shows
    where its agents run); the summary carries the provenance the store records."""
    store = ResultsStore(db)
    time_limits = time_limits or TimeLimits()

    def run(options: dict[str, Any]) -> tuple[RunConfig, EvalOutcome]:
        config, agents = build_config(**options, concurrency=concurrency)
        if add_trials:
            _, config, _ = top_up(store, config, add_trials, max_trials)
        _check_servers(config, agents)
        if on_config is not None:
            on_config(config, provenance(config, {"origin": _origin(store, config, fresh).model_dump()}))
        outcome = run_eval(
            config,
            agents,
            store,
            meta={**run_metadata(), "time_limits": time_limits.model_dump(), "origin": _HERE},
            concurrency=concurrency,
            fresh=fresh,
            max_cost=max_cost,
            time_limits=time_limits,
            on_start=on_start,
            on_trial=on_trial,
            lease_s=lease_s,
            executor=executor,
        )
        return config, outcome

    config, outcome = run(config_options)
    row = store.run(outcome.run_id)
    records: list[TrialRecord] = []

    def summarize() -> RunSummary:
        records.extend(store.trials(outcome.run_id))
        return summarize_run(outcome.run_id, config, records, row.status)

    # a complete run resumed reads its summary back rather than reading every trial again
    summary = kept_summary(store, outcome.run_id, config, row.status, summarize)
    if paired and config.critic != "none":
        if not records:
            summary = summarize()
        alone_config, alone = run({**config_options, "critic": "none"})
        alone_records = store.trials(alone.run_id)
        alone_summary = summarize_run(
            alone.run_id, alone_config, alone_records, store.run(alone.run_id).status
        )
        summary = pair_with_baseline(summary, alone_summary, records, alone_records)
    recorded = provenance(config, json.loads(row.meta_json))
    summary = summary.model_copy(update={"floors": reference_floors(config, store), "provenance": recorded})
    return EvalResult(outcome, summary)
