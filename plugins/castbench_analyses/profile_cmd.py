"""`castbench profile`: a reliability profile of one agent (policy, with or without a critic).

The profile is `castbench_analyses.profile_run.profile`'s: one run per condition on the same tasks, trials and
seeds (clean, then with tool faults, user perturbations and environment perturbations, each a run
of its own, stored and resumed like any run), then the profile from the stored trials
(`castbench_analyses.profile_metrics`). The command takes `eval`'s flags (`castbench._cli.eval_flags`, from
their one declaration), perturbing by default, shows each run as `eval` does, then the profile: a
table, an SVG figure, and `--output` JSON with the keys consistency, robustness, predictability
and safety.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from castbench._cli.eval_cmd import (
    AllowIncompleteOption,
    CounterfactualsOption,
    DetailsOption,
    SuiteOption,
    console,
    given_options,
    show_evaluation,
)
from castbench._cli.eval_flags import with_eval_flags
from castbench._cli.options import PackOptionFlag, Tau2DataOption

if TYPE_CHECKING:
    from castbench._run.api import EvalResult
    from castbench._run.options import EvalOptions

__all__ = ["profile_command"]

_NOT_EVAL = ("paired", "sweep_traits", "add_trials", "max_trials")
"""eval flags a profile does not take: it pairs runs itself and tops none up."""
_DEFAULTS = {"tool_faults": 0.2, "user_perturb": "all", "env_perturb": "all"}
"""A profile perturbs by default; 0 / none leaves a condition out."""


def _profile(
    ctx: typer.Context,
    allow_incomplete: AllowIncompleteOption = False,
    counterfactuals: CounterfactualsOption = False,
    suite: SuiteOption = None,
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
    details: DetailsOption = False,
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
) -> None:
    """A reliability profile: runs the clean and perturbed evaluations (same tasks and seeds,
    resumable) and reports consistency, robustness, predictability and safety."""
    from castbench_analyses.profile_report import profile_table, write_profile_svg
    from castbench_analyses.profile_run import profile

    def run(name: str, options: EvalOptions) -> EvalResult:
        console.rule(f"profile: {name}")
        return show_evaluation(
            ctx, options, allow_incomplete=allow_incomplete, counterfactuals=counterfactuals, details=details
        )

    found = profile(given_options(ctx, suite), run=run).profile
    console.rule("reliability profile")
    console.print(profile_table(found))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(found.model_dump_json(indent=2))
        console.print(f"profile written to {output}", markup=False)
    svg = figure or (output.with_suffix(".svg") if output is not None else Path("profile.svg"))
    write_profile_svg(found, svg)
    console.print(f"figure written to {svg}", markup=False)


profile_command = with_eval_flags(_profile, exclude=_NOT_EVAL, defaults=_DEFAULTS)
"""`castbench profile`: `_profile`'s options and eval's flags but those of `_NOT_EVAL`."""
