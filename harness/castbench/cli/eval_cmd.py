"""`castbench eval`: run (or resume) an evaluation, show pass^k tables, store everything."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from castbench.agents.registry import AgentSpecError, Role
from castbench.cli.checks import (
    MAX_TRIALS_PER_TASK,
    check_choice,
    check_writable,
    sqlite_run_taken,
    task_list,
)
from castbench.cli.errors import fail
from castbench.cli.options import DbOption, DomainOption, SplitOption, Tau2DataOption
from castbench.defaults import DEFAULT_DB, DEFAULT_LEASE_S, DEFAULT_MAX_TRIALS
from castbench.errors import InfrastructureError, RunInterrupted, ServerDown
from castbench.runner.deadline import TimeLimits

if TYPE_CHECKING:
    from castbench.api import EvalResult
    from castbench.records.config import RunConfig
    from castbench.records.perturbations import Perturbations
    from castbench.records.provenance import Provenance
    from castbench.records.trial import TrialRecord

console = Console()
_AGENTS = "Agents"
_RUN = "Run"
_LOOP = "Critic loop"
_MODELS = "Models"
_PERTURB = "Perturbations"
_DEFAULT_LIMITS = TimeLimits()


def _suite_settings(
    ctx: typer.Context, suite: str, domain: str, split: str, trials: int
) -> tuple[str, str, int]:
    """The suite's domains, split and trials, except those given on the command line."""
    from castbench.publish.board import BoardError, board_path, load_board

    try:
        spec = load_board(board_path(suite, Path(".")))
    except BoardError as exc:
        raise typer.BadParameter(str(exc), param_hint="--suite") from exc

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "ENVIRONMENT")

    return (
        domain if given("domain") else ",".join(spec.domains),
        split if given("split") else spec.split,
        trials if given("trials") else spec.trials,
    )


def _perturbations(
    rate: float, faults: str, user: str | None, env: str | None, seed: int
) -> Perturbations:
    """The run's perturbations from eval's options; a bad kind is a usage error naming it."""
    from castbench.records.perturbations import ENV_KINDS, FAULT_KINDS, USER_KINDS, Perturbations, parse_kinds

    try:
        return Perturbations(
            tool_faults=rate,
            fault_kinds=parse_kinds(faults, FAULT_KINDS, "fault kind"),
            user=parse_kinds(user, USER_KINDS, "user perturbation"),
            env=parse_kinds(env, ENV_KINDS, "environment perturbation"),
            seed=seed,
        )
    except ValueError as exc:
        lines = str(exc).splitlines()  # pydantic's: the reason is on its last line
        raise typer.BadParameter(lines[-1] if "validation error" in lines[0] else str(exc)) from None


def _checked_input(
    trials: int, tasks: str | None, traits: str | None, sweep_traits: str | None, output: Path | None
) -> tuple[list[str] | None, list[str]]:
    """What can be wrong with the input, found before any trial runs (one `error:` line each):
    the task ids and the sweep's trait profiles, as lists."""
    from castbench.agents.traits import parse_traits

    if trials > MAX_TRIALS_PER_TASK:
        fail(f"--trials {trials} is more than the cap of {MAX_TRIALS_PER_TASK} trials per task")
    profiles = [p.strip() for p in sweep_traits.split(";") if p.strip()] if sweep_traits is not None else []
    if sweep_traits is not None and not profiles:
        fail("--sweep-traits is empty: give profiles like 'impatience=high;confusion=high'")
    for option, profile in [("--traits", traits), *(("--sweep-traits", p) for p in profiles)]:
        try:
            parse_traits(profile)
        except ValueError as exc:
            fail(f"{option}: {exc}")
    if output is not None:
        check_writable("--output", output)
    return task_list("--tasks", tasks), profiles


def _time_limit(what: str) -> Any:
    return typer.Option(
        min=0,
        help=f"Seconds {what} may take (0: no limit); past it the trial ends as timeout.",
        rich_help_panel=_RUN,
    )


def eval_command(
    ctx: typer.Context,
    domain: DomainOption = "all",
    policy: Annotated[
        str,
        typer.Option(
            help="Built-in name, module:Class import path, or litellm model string.", rich_help_panel=_AGENTS
        ),
    ] = "scripted:noisy",
    critic: Annotated[
        str, typer.Option(help="Critic: none, a built-in, import path or model.", rich_help_panel=_AGENTS)
    ] = "none",
    user: Annotated[
        str, typer.Option(help="User simulator: scripted, import path or model.", rich_help_panel=_AGENTS)
    ] = "scripted",
    split: SplitOption = "test",
    trials: Annotated[int, typer.Option(min=1, help="Trials per task (n).", rich_help_panel=_RUN)] = 8,
    seed: Annotated[
        int, typer.Option(help="Run seed; trial seeds derive from it.", rich_help_panel=_RUN)
    ] = 0,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated task ids.", rich_help_panel=_RUN)] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1, help="Trials run at once (and model calls in flight per server).", rich_help_panel=_RUN
        ),
    ] = 1,
    lease: Annotated[
        float,
        typer.Option(
            min=1,
            envvar="CASTBENCH_LEASE_S",
            help="Postgres --db: seconds a silent worker keeps its claimed trials before other "
            "eval processes on the same run take them over.",
            rich_help_panel=_RUN,
        ),
    ] = DEFAULT_LEASE_S,
    executor: Annotated[
        str,
        typer.Option(
            help="Where trials run: 'local' (threads in this process) or 'ray' (tasks on a Ray "
            "cluster, pip install 'castbench\\[ray]'; this process still owns the run and the store).",
            rich_help_panel=_RUN,
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            envvar="RAY_ADDRESS",
            help="--executor ray: the cluster to join (HOST:PORT or ray://HOST:PORT); default: a local one.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Agent actions per trial (default 40; τ²'s packs default to τ²'s own limits: 200 "
            "messages as τ² counts them, 10 tool errors); given, it replaces the pack's limits.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    step_timeout: Annotated[float, _time_limit("an agent step")] = _DEFAULT_LIMITS.step_s or 0,
    trial_timeout: Annotated[float, _time_limit("a trial")] = _DEFAULT_LIMITS.trial_s or 0,
    rounds: Annotated[
        int, typer.Option(min=1, max=10, help="Critic verdicts per step.", rich_help_panel=_LOOP)
    ] = 3,
    on_exhausted: Annotated[
        str, typer.Option(help="When the rounds run out: execute or block.", rich_help_panel=_LOOP)
    ] = "execute",
    verify: Annotated[
        str, typer.Option(help="Actions the critic checks: tool_calls, writes or all.", rich_help_panel=_LOOP)
    ] = "tool_calls",
    paired: Annotated[
        bool,
        typer.Option(
            help="Also run without the critic (same seeds) to measure its effect.", rich_help_panel=_LOOP
        ),
    ] = False,
    api_base: Annotated[
        str | None,
        typer.Option(
            envvar="CASTBENCH_API_BASE",
            help="OpenAI-compatible server for model roles.",
            rich_help_panel=_MODELS,
        ),
    ] = None,
    models_config: Annotated[
        Path | None,
        typer.Option(
            envvar="CASTBENCH_MODELS_CONFIG",
            help="TOML/JSON per-role model settings.",
            rich_help_panel=_MODELS,
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            envvar="CASTBENCH_CACHE", help="Cache model answers in this directory.", rich_help_panel=_MODELS
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(min=0, help="Stop starting trials after this many USD.", rich_help_panel=_MODELS),
    ] = None,
    grading: Annotated[
        str,
        typer.Option(
            help="How required outputs are found: castbench (numbers as numbers, whole words) "
            "or tau (τ-Bench's substring).",
            rich_help_panel=_RUN,
        ),
    ] = "castbench",
    add_trials: Annotated[
        int,
        typer.Option(
            min=0,
            help="Top up the stored run with these options by N more trials per task (fresh seeds); "
            "pass^k is re-estimated on all.",
            rich_help_panel=_RUN,
        ),
    ] = 0,
    max_trials: Annotated[
        int, typer.Option(min=1, help="Cap on trials per task for --add-trials.", rich_help_panel=_RUN)
    ] = DEFAULT_MAX_TRIALS,
    allow_incomplete: Annotated[
        bool,
        typer.Option(
            help="Exit 0 even if planned trials are unscored (infrastructure errors, a stopped run).",
            rich_help_panel=_RUN,
        ),
    ] = False,
    traits: Annotated[
        str | None,
        typer.Option(help="User trait profile, e.g. impatience=high,confusion=low.", rich_help_panel=_AGENTS),
    ] = None,
    sweep_traits: Annotated[
        str | None,
        typer.Option(
            help="Also run these profiles (';'-separated, e.g. 'impatience=high;confusion=high') and "
            "report each one's pass^k drop against no traits.",
            rich_help_panel=_AGENTS,
        ),
    ] = None,
    tool_faults: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of tool calls the harness fails (seeded per call; a call retried succeeds).",
            rich_help_panel=_PERTURB,
        ),
    ] = 0.0,
    fault_kinds: Annotated[
        str,
        typer.Option(
            help="Faults drawn: error, timeout, rate_limit, empty, malformed (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = "all",
    user_perturb: Annotated[
        str | None,
        typer.Option(
            help="Reword what the user says: paraphrase, reorder, typos (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = None,
    env_perturb: Annotated[
        str | None,
        typer.Option(
            help="Reshape JSON tool outputs: field_order, extra_fields (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = None,
    perturb_seed: Annotated[
        int,
        typer.Option(help="Seed of the perturbations' draws.", rich_help_panel=_PERTURB),
    ] = 0,
    in_process: Annotated[
        bool,
        typer.Option(
            "--in-process",
            help="Run import-path agents inside castbench's process (debugging; recorded in the run, "
            "refused by leaderboards). By default each runs in a worker process of its own.",
            rich_help_panel=_AGENTS,
        ),
    ] = False,
    suite: Annotated[
        str | None,
        typer.Option(
            help="A leaderboard board (name under leaderboards/ or a .toml path) whose domains, split and "
            "trials this run uses, e.g. cast-paper; --domain/--split/--trials given too win.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    db: DbOption = DEFAULT_DB,
    tau2_data: Tau2DataOption = None,  # read by the τ² packs from the environment its callback sets
    output: Annotated[Path | None, typer.Option(help="Write the JSON summary here.")] = None,
    fresh: Annotated[bool, typer.Option(help="Start a new run even if this config was run before.")] = False,
) -> Any:  # the EvalResult (typer resolves the annotations of a command: none that needs the engine)
    """Run every selected task n times and report pass^k. Re-running resumes the same run."""
    # compared by name: typer ships its own copy of click, whose enum is not click's
    sources = [ctx.get_parameter_source(name) for name in ctx.params]
    defaults = all(source is not None and source.name in ("DEFAULT", "ENVIRONMENT") for source in sources)
    if suite is not None:
        domain, split, trials = _suite_settings(ctx, suite, domain, split, trials)
    task_ids, profiles = _checked_input(trials, tasks, traits, sweep_traits, output)
    what = (
        f"domains {domain} ({split} split), policy {policy}, critic {critic}, user {user}, "
        f"{trials} trials, seed {seed}"
    )
    intro = "castbench eval on the offline defaults: " if defaults else "castbench eval: "
    console.print(intro + what, markup=False)
    # the engine, store, domains, grading: only once a run is asked for (`eval --help` needs none)
    from castbench.api import evaluate
    from castbench.domain import ExpectedStateError, TaskFileError
    from castbench.grading import GRADING_MODES
    from castbench.report import print_summary
    from castbench.report.provenance import print_provenance
    from castbench.report.traits import sweep_table, trait_sweep
    from castbench.runner.executors import make_executor
    from castbench.runner.rollout import Limits, Verification

    perturbations = _perturbations(tool_faults, fault_kinds, user_perturb, env_perturb, perturb_seed)
    if perturbations.active:
        console.print(f"perturbed: {perturbations.label()}", markup=False)
    check_choice("--grading", grading, GRADING_MODES)
    loop = Verification.model_fields
    check_choice("--on-exhausted", on_exhausted, get_args(loop["on_exhausted"].annotation))
    check_choice("--verify", verify, get_args(loop["scope"].annotation))
    verification = Verification(rounds=rounds, on_exhausted=on_exhausted, scope=verify)  # type: ignore[arg-type]
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("passed {task.fields[passed]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    bars: list[TaskID] = []
    phase: list[str] = []
    passed = 0

    def on_start(already: int, total: int) -> None:
        nonlocal passed
        if already:
            console.print(f"resuming: {already} of {total} trials already stored")
        passed = 0
        label = phase[0] if len(phase) == 1 else f"{phase[0]} without the critic"
        phase.append(label)
        bars.append(progress.add_task(label, total=total, completed=already, passed=0))

    def on_trial(record: TrialRecord) -> None:
        nonlocal passed
        passed += record.passed
        progress.update(bars[-1], advance=1, passed=passed)

    def on_config(config: RunConfig, provenance: Provenance) -> None:
        from castbench.records.identity import agent_blind_spots

        print_provenance(provenance, console)
        roles: tuple[tuple[Role, str], ...] = (
            ("policy", config.policy),
            ("critic", config.critic),
            ("user", config.user),
        )
        for role, spec in roles:
            for blind in agent_blind_spots(role, spec):
                console.print(
                    f"[yellow]note:[/] the {role}'s identity cannot see everything it loads "
                    f"({escape(blind)}): after changing what it loads that way, re-run with --fresh"
                )
        if not fresh and sqlite_run_taken(db, config.config_hash()):
            console.print(
                "[yellow]warning:[/] another eval process is running this run on the same SQLite file: "
                "both will compute every trial (the rows stay correct, the work is doubled); stop one, "
                "or use a Postgres --db, where processes share a run's trials"
            )

    def run(profile: str | None) -> EvalResult:
        phase.clear()
        phase.append(f"trials ({profile})" if profile else "trials")
        return evaluate(
            traits=profile,
            perturbations=perturbations,
            domains=domain,
            policy=policy,
            critic=critic,
            user=user,
            split=split,
            trials=trials,
            seed=seed,
            tasks=task_ids,
            limits=Limits(max_steps=max_steps) if max_steps is not None else None,
            time_limits=TimeLimits(step_s=step_timeout or None, trial_s=trial_timeout or None),
            verification=verification,
            grading=grading,
            db=db,
            concurrency=concurrency,
            fresh=fresh,
            paired=paired,
            models_config=models_config,
            api_base=api_base,
            cache_dir=str(cache) if cache is not None else None,
            max_cost=max_cost,
            lease_s=lease,
            executor=make_executor(executor, ray_address),
            in_process=in_process,
            add_trials=add_trials,
            max_trials=max_trials,
            on_start=on_start,
            on_trial=on_trial,
            on_config=on_config,
        )

    try:
        with progress:
            result = run(traits)
            swept = {profile: run(profile).summary for profile in profiles}
            baseline = run(None).summary if profiles and traits else result.summary
    except (AgentSpecError, TaskFileError, ExpectedStateError, ValueError) as exc:
        fail(exc)
    except ServerDown as exc:  # says which server and how to resume
        fail(exc)
    except InfrastructureError as exc:  # fatal: bad credentials, unknown model
        fail(f"{exc}\nfinished trials are kept; fix it and re-run to resume")
    except RunInterrupted as exc:
        console.print(
            f"[yellow]interrupted:[/] run {exc.run_id} has {exc.stored} of {exc.total} trials stored "
            "(trials in flight were dropped); re-run the same command to resume"
        )
        raise typer.Exit(130) from None
    except KeyboardInterrupt:  # after the trials (the floors, the summary): they are all stored
        console.print(
            "[yellow]interrupted:[/] the trials run so far are stored; re-run the same command to resume"
        )
        raise typer.Exit(130) from None
    outcome, summary = result.outcome, result.summary
    sweep = trait_sweep(baseline, swept) if profiles else None
    if sweep is not None:
        summary = summary.model_copy(update={"trait_sweep": sweep})
    if output is not None:  # first: a reader that leaves early (`| head`) must not cost the file
        output.write_text(summary.model_dump_json(indent=2))
    if outcome.superseded:
        console.print(
            f"[yellow]not resuming {outcome.superseded}[/]: {escape(', '.join(outcome.changes))} changed "
            "since; this is a new run"
        )
    verb = "resumed" if outcome.resumed else "stored"
    console.print(
        f"run {outcome.run_id} {verb} in {db} ({outcome.ran} trials run, {outcome.already_done} reused)",
        markup=False,
    )
    if add_trials:
        console.print(f"topped up to {summary.config['trials']} trials per task (cap {max_trials})")
    print_summary(summary, console)
    if sweep is not None:
        console.print(sweep_table(sweep))
    if outcome.stopped:
        console.print(f"[yellow]stopped:[/] {escape(outcome.stopped)}; re-run the same command to resume")
    if output is not None:
        console.print(f"summary written to {output}", markup=False)
    if summary.status != "complete" and not allow_incomplete:
        console.print(
            f"[bold red]{summary.status}:[/] {summary.overall.unscored_trials} planned trial(s) unscored; "
            "re-run the same command to retry them (--allow-incomplete to exit 0 anyway)"
        )
        raise typer.Exit(1)
    return result  # for `castbench profile`, which runs its evaluations through this command
