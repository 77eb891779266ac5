"""The Python entry point the CLI is a thin layer over: `castbench.evaluate(...)`."""

from __future__ import annotations

import dataclasses
import json
import platform
import subprocess
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack, cast

from castbench._agents import confine
from castbench._agents.models.costs import warn_max_cost_gaps
from castbench._agents.models.resolve import resolve_agent
from castbench._agents.registry import AgentSpec, Role
from castbench._agents.traits import parse_traits
from castbench._domain.domain import Domain
from castbench._domain.pack_options import set_pack_option
from castbench._domain.private import use_tasks_file
from castbench._domain.registry import resolve_domains
from castbench._records.config import RunConfig
from castbench._records.execution import ExecutorName
from castbench._records.identity import fingerprint
from castbench._records.provenance import (
    AgentPlacement,
    Provenance,
    RunOrigin,
    SandboxState,
    placement_of,
    provenance,
    run_origin,
    sandbox_state,
)
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.kept import kept_summary
from castbench._results.report.streamed import StreamedSummary
from castbench._results.report.summary import RunSummary, pair_with_baseline, summarize_run
from castbench._run.collector import tuned_for_a_run
from castbench._run.floors import reference_floors, start_reference_floors
from castbench._run.options import EvalFields, EvalOptions
from castbench._run.outcome import EvalOutcome
from castbench._run.plan import plan_tasks, planned_trials
from castbench._trial.execution import AgentSet, plan_execution

if TYPE_CHECKING:  # the engine and executors load once a trial is to run: a complete run resumed runs none
    from castbench._records.store.store import StoredRun
    from castbench._run.executors import Executor

__all__ = [
    "EvalOptions",
    "EvalResult",
    "build_config",
    "evaluate",
    "run_metadata",
    "set_pack_option",
]


def _git_commit() -> str | None:
    """The checkout's commit, `-dirty` when it has changes: one `git status` (its v2 header names
    the commit; any other line is a change), None outside a checkout or before its first commit."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain=v2", "--branch"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = status.splitlines()
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if commit is None or commit == "(initial)":
        return None
    return commit + ("-dirty" if any(not line.startswith("#") for line in lines) else "")


def run_metadata() -> dict[str, Any]:
    packages: dict[str, str | None] = {}
    for name in ("castbench", "pydantic", "litellm", "numpy", "scipy"):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"packages": packages, "git_commit": _git_commit(), "python": platform.python_version()}


def build_config(
    options: EvalOptions | None = None, **fields: Unpack[EvalFields]
) -> tuple[RunConfig, AgentSet]:
    """The run `options` (with `fields` changed, as `EvalOptions.of` takes them) ask for, and its
    agents. Model roles' settings (`models_config`, `api_base`) are recorded in `extra["models"]`;
    `cache_dir` and `concurrency` (which sizes the model servers' default limits) are not part of
    the run's identity. `in_process` roles are recorded in the config, and leaderboards refuse
    the run."""
    chosen = EvalOptions.of(options, **fields)
    agents, selection = chosen.agents, chosen.selection
    domains, split, tasks = selection.domains, selection.split, selection.tasks
    if selection.tasks_file is not None:  # a private split: its domain, its tasks
        private = use_tasks_file(Path(selection.tasks_file))
        domains, split = private.domain, private.split
    resolved = resolve_domains(domains)
    models: dict[str, Any] = {}
    model_options = chosen.model_options()

    def configured(role: Role, spec: str) -> AgentSpec:
        agent, recorded = resolve_agent(role, spec, in_process=agents.in_process, options=model_options)
        if recorded is not None:
            models[role] = recorded
        return agent

    policy_spec, user_spec = configured("policy", agents.policy), configured("user", agents.user)
    critic_spec = configured("critic", agents.critic)
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
        policy=agents.policy,
        critic=agents.critic,
        user=agents.user,
        trials=selection.trials,
        seed=selection.seed,
        limits=chosen.limits_for(resolved),
        verification=chosen.verification,
        traits=parse_traits(agents.traits),
        perturbations=chosen.perturbations,
        privileged=privileged,
        in_process=[
            role
            for role, spec in (("policy", policy_spec), ("critic", critic_spec), ("user", user_spec))
            if spec.kind == "import" and spec.transport == "in-process" and not spec.privileged
        ],
        placement=_placement([policy_spec, critic_spec, user_spec]),
        extra={**chosen.extra, **({"models": models} if models else {}), **_data_origins(resolved)},
        grading=chosen.grading,
        reply_judge=_reply_judge(chosen),
        fingerprint=fingerprint(resolved, [policy_spec, user_spec, critic_spec]),
    )
    return config, specs


def _reply_judge(options: EvalOptions) -> dict[str, Any] | None:
    """The reply judge's recorded settings (its environment checked now), or None: the rules."""
    if options.reply_judge is None:
        return None
    from castbench._agents.models.reply_judge import judge_settings  # model runs' only

    return judge_settings(options.reply_judge, options.models.api_base).recorded()


def _data_origins(domains: list[Domain]) -> dict[str, dict[str, str]]:
    """`{"data": {pack: origin}}` for packs that read another data directory (`tau2.data`): in
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
    slowly. A llama.cpp server that would hide a policy's native tools from its model refuses the
    run too (`castbench._agents.models.toolcheck`), instead of scoring every trial blind."""
    if agents.policy is not None and agents.policy.kind == "service":
        from castbench._agents.models.breaker import check_service  # httpx: only when a service is used

        check_service(agents.policy.name, agents.policy.role)
    servers = {
        settings["api_base"]: role
        for role, settings in config.extra.get("models", {}).items()
        if settings.get("api_base")
    }
    if config.reply_judge is not None and config.reply_judge.get("api_base"):
        servers.setdefault(config.reply_judge["api_base"], "reply judge")
    if servers:
        from castbench._agents.models.breaker import check_server  # httpx: only when models are used

        for api_base, role in servers.items():
            check_server(api_base, role)
        from castbench._agents.models.settings import ModelSettings
        from castbench._agents.models.toolcheck import check_native_tools

        for role, settings in config.extra.get("models", {}).items():
            check_native_tools(role, ModelSettings.model_validate(settings))


_HERE = RunOrigin(kind="run").model_dump()
"""The origin `evaluate` records: trials played here (an import records `submitted`)."""


def _stored(store: ResultsStore, config: RunConfig, fresh: bool) -> StoredRun | None:
    """The stored run `config` resumes (the latest with its hash, as `ResultsStore.open_run`
    picks it), or None: a new run (`fresh`, or none stored)."""
    same = [] if fresh else store.runs_of(config.config_hash())
    return same[-1] if same else None


def _origin(stored: StoredRun | None) -> RunOrigin:
    """The origin of the run a config opens: a resumed run keeps the one it was stored with (a
    submitted run resumed here stays submitted: some of its trials came from a file)."""
    return run_origin(json.loads(stored.meta_json)) if stored is not None else RunOrigin(kind="run")


def _complete(store: ResultsStore, config: RunConfig, stored: StoredRun | None) -> EvalOutcome | None:
    """The outcome of resuming `stored` when it is complete (every planned trial scored): what the
    engine would answer, found without it (no trial to run, so no engine, executor, grading or
    agent code is imported, #59); None when the engine has work to do."""
    if stored is None or stored.status != "complete":
        return None
    total = planned_trials(config)
    done = min(len(store.scored_keys(stored.id)), total)
    if done < total:
        return None
    store.set_status(stored.id, "complete")  # written now, as the engine's resume writes it: `latest`
    return EvalOutcome(stored.id, resumed=True, already_done=done, ran=0, total=total)


class _Executor:
    """The executor `--executor` names, made when a run first has a trial to start: a complete
    run resumed imports no executor (the local one imports the engine's trial machinery). Any
    executor but the local one is made at once, so that a missing plugin fails before the run."""

    def __init__(self, name: str, address: str | None) -> None:
        self.name = cast(ExecutorName, name)  # any other name fails below, in `make_executor`
        self.address = address
        self._made: Executor | None = None
        if name != "local":
            self.made()

    def made(self) -> Executor:
        if self._made is None:
            from castbench._run.executors import make_executor

            self._made = make_executor(self.name, self.address)
        return self._made


class EvalResult:
    def __init__(self, outcome: EvalOutcome, summary: RunSummary) -> None:
        self.outcome = outcome
        self.summary = summary


OnStart = Callable[[int, int], None]
OnTrial = Callable[[TrialRecord], None]
OnConfig = Callable[[RunConfig, Provenance], None]


def evaluate(
    options: EvalOptions | None = None,
    *,
    on_start: OnStart | None = None,
    on_trial: OnTrial | None = None,
    on_config: OnConfig | None = None,
    **fields: Unpack[EvalFields],
) -> EvalResult:
    """Run (or resume) the evaluation `options` ask for, with `fields` changed (`EvalOptions.of`:
    `evaluate(domains="retail", trials=4)` is `evaluate(EvalOptions.of(domains="retail", trials=4))`),
    and summarise it.

    With `paired` and a critic, the same tasks, seeds and policy also run without the critic
    (a run of its own, resumable like any other) and the summary gains the critic's trial-level
    helpfulness and harmfulness. With `sweep_traits`, each trait profile also runs (these options
    with `traits` set to it) and the summary gains `trait_sweep`, each profile's pass^k drop
    against the options without traits. `max_cost` (USD) stops each run once it has spent that
    much; `time_limits` bound each agent's step and trial time (recorded in the run's metadata,
    not part of its identity, so a resume may change them). `add_trials` tops up the stored run
    with these options (whatever its trials per task) by that many more trials per task, up to
    `max_trials` (see `castbench._run.topup`).

    With a Postgres `db`, several processes calling this with the same options split the run's
    trials; a worker silent for `lease_s` seconds loses its trials to the others. `executor`
    `ray` runs the trials on a Ray cluster (`castbench._run.executors`). `on_start` hears each
    run's trials already stored and planned, `on_trial` each trial as it is stored, and
    `on_config` each run's config and provenance before its first trial (the console shows where
    its agents run); the summary carries the provenance the store records."""
    chosen = EvalOptions.of(options, **fields)
    hooks = (on_start, on_trial, on_config)
    executor = _Executor(chosen.execution.executor, chosen.execution.ray_address)
    result = _evaluate(chosen, executor, *hooks)
    profiles = chosen.baselines.sweep_traits
    if not profiles:
        return result
    swept = {
        profile: _evaluate(chosen.replace(traits=profile), executor, *hooks).summary for profile in profiles
    }
    from castbench._results.report.traits import trait_sweep

    unswept = chosen.replace(traits=None)
    baseline = _evaluate(unswept, executor, *hooks).summary if chosen.agents.traits else result.summary
    summary = result.summary.model_copy(update={"trait_sweep": trait_sweep(baseline, swept)})
    return EvalResult(result.outcome, summary)


def _evaluate(
    options: EvalOptions,
    executor: _Executor,
    on_start: OnStart | None,
    on_trial: OnTrial | None,
    on_config: OnConfig | None,
) -> EvalResult:
    """One evaluation (and, `paired`, the same without its critic), summarised. The collector
    stays tuned for a run (`castbench._run.collector`) until the summary is made: undone when
    the trials end, its first full collection walked the whole heap of the run (0.2 s after the
    last trial of 1,024, in the user's wait)."""
    with tuned_for_a_run():
        return _evaluate_tuned(options, executor, on_start, on_trial, on_config)


def _evaluate_tuned(
    options: EvalOptions,
    executor: _Executor,
    on_start: OnStart | None,
    on_trial: OnTrial | None,
    on_config: OnConfig | None,
) -> EvalResult:
    execution, store = options.execution, ResultsStore(options.execution.db)
    streamed = StreamedSummary()  # the run asked for: its summary's cells made as its trials are stored

    def run(chosen: EvalOptions, stream: StreamedSummary | None = None) -> tuple[RunConfig, EvalOutcome]:
        config, agents = build_config(chosen)
        if chosen.selection.add_trials:
            from castbench._run.topup import top_up

            _, config, _ = top_up(store, config, chosen.selection.add_trials, chosen.selection.max_trials)
        if stream is not None:
            stream.config = config
        _check_servers(config, agents)
        warn_max_cost_gaps(agents.roles(), chosen.models.max_cost)
        start_reference_floors(config, store)  # while the trials run
        plan = plan_execution(agents, executor.name, execution.concurrency, store.shared, execution.workers)
        stored = _stored(store, config, execution.fresh)
        if on_config is not None:
            meta = {"origin": _origin(stored).model_dump(), "execution": plan}
            on_config(config, provenance(config, meta))
        complete = _complete(store, config, stored)
        if complete is not None:
            if on_start is not None:
                on_start(complete.already_done, complete.total)
            return config, complete
        from castbench._run.engine import run_eval

        outcome = run_eval(
            config,
            agents,
            store,
            meta={
                **run_metadata(),
                "time_limits": chosen.time_limits.model_dump(),
                "trial_limits": dataclasses.asdict(confine.limits_from_env()),  # its branches' too
                "origin": _HERE,
            },
            concurrency=execution.concurrency,
            fresh=execution.fresh,
            max_cost=chosen.models.max_cost,
            time_limits=chosen.time_limits,
            on_start=on_start,
            on_trial=on_trial,
            lease_s=execution.lease_s,
            executor=executor.made(),
            plan=plan,
            on_stored=None if stream is None else stream.add,
        )
        return config, outcome

    config, outcome = run(options, streamed)
    row = store.run(outcome.run_id)
    records: list[TrialRecord] = []

    def summarize() -> RunSummary:
        kept = streamed.records(store, outcome.run_id)
        if kept is not None:  # every trial of the run, as stored: no need to read them back
            records.extend(kept)
            return streamed.summarize(records, outcome.run_id, config, row.status)
        if options.baselines.paired and config.critic != "none":  # paired trial by trial below
            records.extend(store.trials(outcome.run_id))
            return summarize_run(outcome.run_id, config, records, row.status, judged=streamed.judged)
        # read back one trial at a time, with the judgements made as they were stored
        trials = store.iter_trials(outcome.run_id)
        return summarize_run(outcome.run_id, config, trials, row.status, judged=streamed.judged)

    # a complete run resumed reads its summary back rather than reading every trial again
    summary = kept_summary(store, outcome.run_id, config, row.status, summarize)
    if options.baselines.paired and config.critic != "none":
        if not records:
            records.extend(store.trials(outcome.run_id))
        alone_config, alone = run(options.replace(critic="none"))
        alone_records = store.trials(alone.run_id)
        alone_summary = summarize_run(
            alone.run_id, alone_config, alone_records, store.run(alone.run_id).status
        )
        summary = pair_with_baseline(summary, alone_summary, records, alone_records)
    recorded = provenance(config, json.loads(row.meta_json))
    summary = summary.model_copy(update={"floors": reference_floors(config, store), "provenance": recorded})
    return EvalResult(outcome, summary)
