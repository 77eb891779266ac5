"""`castbench profile`: a reliability profile of one agent (policy, with or without a critic).

It takes `eval`'s options (the same signature: `eval`'s options are declared once) and runs `eval`
itself once per condition on the same tasks, trials and seeds: clean, then with tool faults,
user perturbations and environment perturbations (each a run of its own, stored and resumed
like any run). The profile is computed from the stored trials (`castbench.metrics.profile`):
a table, an SVG figure, and `--output` JSON with the keys consistency, robustness,
predictability and safety.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from castbench.cli.eval_cmd import console, eval_command

__all__ = ["profile_command"]

_PROFILE = "Profile"
_NOT_EVAL = {"paired", "sweep_traits", "add_trials", "max_trials", "output"}
"""eval options a profile does not take: it pairs runs itself, and writes its own output."""
_DEFAULTS = {"tool_faults": 0.2, "user_perturb": "all", "env_perturb": "all"}
"""A profile perturbs by default; 0 / none leaves a condition out."""


def _profile(
    ctx: typer.Context,
    output: Annotated[
        Path | None,
        typer.Option(
            help="Write the profile as JSON here (keys consistency, robustness, predictability, safety)."
        ),
    ] = None,
    figure: Annotated[
        Path | None,
        typer.Option(
            help="Write the profile's figure (SVG) here; default: next to --output, else profile.svg."
        ),
    ] = None,
    **options: Any,
) -> None:
    """A reliability profile: runs the clean and perturbed evaluations (same tasks and seeds,
    resumable) and reports consistency, robustness, predictability and safety."""
    from castbench.metrics.profile import reliability_profile
    from castbench.report.profile import profile_table, write_profile_svg
    from castbench.store import ResultsStore

    off = {"tool_faults": 0.0, "user_perturb": None, "env_perturb": None}
    conditions: dict[str, dict[str, Any]] = {"clean": off}
    if options["tool_faults"] > 0:
        conditions["faults"] = {**off, "tool_faults": options["tool_faults"]}
    for name, key in (("user", "user_perturb"), ("env", "env_perturb")):
        if options[key] not in (None, "", "none"):
            conditions[name] = {**off, key: options[key]}
    eval_options = {name: value for name, value in options.items() if name not in _NOT_EVAL}
    results = {}
    for name, overrides in conditions.items():
        console.rule(f"profile: {name}")
        results[name] = eval_command(
            ctx, **{**eval_options, **overrides}, paired=False, sweep_traits=None, add_trials=0, output=None
        )
    store = ResultsStore(options["db"])
    runs = {name: result.outcome.run_id for name, result in results.items()}
    perturbed = {}
    for name, result in results.items():
        if name != "clean":
            label = result.summary.config.perturbations.label()
            perturbed[name] = (label, store.trials(runs[name]))
    profile = reliability_profile(
        store.trials(runs["clean"]), perturbed, policy=options["policy"], critic=options["critic"], runs=runs
    )
    console.rule("reliability profile")
    console.print(profile_table(profile))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(profile.model_dump_json(indent=2))
        console.print(f"profile written to {output}", markup=False)
    svg = figure or (output.with_suffix(".svg") if output is not None else Path("profile.svg"))
    write_profile_svg(profile, svg)
    console.print(f"figure written to {svg}", markup=False)


def _with_eval_options(func: Any) -> Any:
    """`func`'s own options plus every `eval` option a profile takes (defaults from `_DEFAULTS`),
    as one signature typer reads: the options are eval's, declared once in eval_cmd."""
    own = inspect.signature(func, eval_str=True)
    taken = {name for name in own.parameters if name != "options"}
    params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for param in inspect.signature(eval_command, eval_str=True).parameters.values():
        if param.name in taken or param.name in _NOT_EVAL or param.name == "ctx":
            continue
        params.append(param.replace(default=_DEFAULTS.get(param.name, param.default)))
    func.__signature__ = own.replace(parameters=params, return_annotation=None)
    func.__annotations__ = {p.name: p.annotation for p in params}
    return func


profile_command = _with_eval_options(_profile)
