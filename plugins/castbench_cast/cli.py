"""`castbench cast ...`: the CAST stages as commands (registered under the `castbench.commands`
entry point; listed only when the `train` extra is installed).

This module imports typer alone: the stages load torch, TRL and the store when they run. Each
stage command takes the recipe file; `run` does every stage in order, skipping those already done.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from castbench import CastbenchGroup, fail

__all__ = ["app"]

_EXTRA = ("torch", "transformers", "trl", "datasets", "peft", "accelerate")
_missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
if _missing:  # the core then leaves `cast` out of `castbench --help` and names the extra
    raise ImportError(f"the train extra is not installed (missing: {', '.join(_missing)})")

app = typer.Typer(
    name="cast",
    help="CAST training stages: collect, annotate, critic-data, train-critic, collect --critic, "
    "policy-data, train-policy (or run them all).",
    no_args_is_help=True,
    cls=CastbenchGroup,
    pretty_exceptions_enable=False,
)

RecipeFile = Annotated[Path, typer.Argument(help="The recipe (TOML) that fixes the pipeline run.")]
Force = Annotated[bool, typer.Option("--force", help="Run the stage again even if it is up to date.")]
Rft = Annotated[
    bool, typer.Option("--rft", help="The RFT control: successful trajectories without critiques.")
]


@contextmanager
def _reported() -> Iterator[None]:
    """The plugin's errors of input, and a model server that is down, as one line (as castbench's
    own commands report theirs)."""
    from castbench.agents import AgentSpecError, ServerDown
    from castbench_cast.annotations import AnnotationError
    from castbench_cast.pipeline import StageError
    from castbench_cast.recipe import RecipeError
    from castbench_cast.train import TrainError

    try:
        yield
    except (AnnotationError, RecipeError, StageError, TrainError, ServerDown, AgentSpecError) as exc:
        fail(exc)


def _pipeline(recipe: Path, force: bool, rft: bool = False) -> Any:
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.recipe import load_recipe

    loaded = load_recipe(recipe)
    if rft:
        loaded = loaded.model_copy(
            update={"policy_data": loaded.policy_data.model_copy(update={"rft": True})}
        )
    return Pipeline(loaded, force=force, log=typer.echo)


@app.command()
def collect(
    recipe: RecipeFile,
    critic: Annotated[
        Path | None,
        typer.Option(help="A trained critic checkpoint: collect with it in the loop (stage 5)."),
    ] = None,
    force: Force = False,
) -> None:
    """Run the teacher (or, with --critic, the policy and that critic) on the train split."""
    with _reported():
        pipeline = _pipeline(recipe, force)
        pipeline.collect() if critic is None else pipeline.collect_critic(critic)


@app.command()
def annotate(recipe: RecipeFile, force: Force = False) -> None:
    """Annotate every proposed tool call: the privileged labeler, and the LLM pipeline if set."""
    with _reported():
        _pipeline(recipe, force).annotate()


@app.command("critic-data")
def critic_data(recipe: RecipeFile, force: Force = False) -> None:
    """Critic examples: what a deployed critic sees -> rationale and verdict (messages JSONL)."""
    with _reported():
        _pipeline(recipe, force).critic_data()


@app.command("train-critic")
def train_critic(recipe: RecipeFile, force: Force = False) -> None:
    """Fine-tune the critic on the critic data (TRL SFT, full or LoRA)."""
    with _reported():
        _pipeline(recipe, force).train_critic()


@app.command("policy-data")
def policy_data(recipe: RecipeFile, rft: Rft = False, force: Force = False) -> None:
    """Policy examples from the successful trajectories, with their critiques (or without: --rft)."""
    with _reported():
        _pipeline(recipe, force, rft).policy_data()


@app.command("train-policy")
def train_policy(recipe: RecipeFile, rft: Rft = False, force: Force = False) -> None:
    """Fine-tune the policy on the policy data (--rft: on the RFT data)."""
    with _reported():
        _pipeline(recipe, force, rft).train_policy()


@app.command()
def run(
    recipe: RecipeFile,
    until: Annotated[str | None, typer.Option(help="Stop after this stage.")] = None,
    force: Force = False,
) -> None:
    """Every stage in order; stages already done for the same inputs are skipped."""
    from castbench_cast.pipeline import STAGES

    if until is not None and until not in STAGES:
        fail(f"--until {until}: not a stage ({', '.join(STAGES)})")
    with _reported():
        _pipeline(recipe, force).run(until)


@app.command()
def paper(
    recipe: RecipeFile,
    until: Annotated[
        str | None, typer.Option(help="Stop the stages after this one (the grid runs what it can).")
    ] = None,
    force: Force = False,
) -> None:
    """The paper's experiment: every stage, the RFT control, then base / RFT / CAST policy x
    without / with the trained critic on the [paper] test domains; writes board.md beside them."""
    from castbench_cast.paper import paper as run_paper
    from castbench_cast.pipeline import STAGES

    if until is not None and until not in STAGES:
        fail(f"--until {until}: not a stage ({', '.join(STAGES)})")
    with _reported():
        run_paper(_pipeline(recipe, force), until, log=typer.echo)


@app.command()
def serve(
    checkpoint: Annotated[Path, typer.Argument(help="A trained model folder (a stage's model/).")],
    backend: Annotated[str, typer.Option(help="transformers (CPU or GPU) or vllm (GPU).")] = "transformers",
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (0: the checkpoint's own, fixed by its weights).")
    ] = 0,
) -> None:
    """Serve a checkpoint as an OpenAI-compatible server; print the --critic and --policy strings."""
    from castbench_cast.serving import CheckpointServer, is_checkpoint

    if backend not in ("transformers", "vllm"):
        fail(f"--backend {backend}: use transformers or vllm")
    if not is_checkpoint(checkpoint):
        fail(
            f"{checkpoint}: no config.json or adapter_config.json "
            f"(give the model/ folder a train stage wrote)"
        )
    with CheckpointServer(checkpoint, backend, port) as server:  # type: ignore[arg-type]
        typer.echo(
            json.dumps(
                {
                    "critic": server.full_model_string(temperature=0),
                    "policy": server.full_model_string(temperature=0, style="prompted"),
                }
            )
        )
        typer.echo("serving; Ctrl-C stops", err=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
