"""Does training work? A critic trained through the pipeline, against its own untrained base.

The stages run as a user runs them (collect with a teacher on retail's train split, the
labeler's annotations, critic data, train-critic); the base is the model training started from
(`save_base`: for the tiny stand-in, the same tokenizer and seeded weights). Each is then served
and put in the loop of `castbench eval` on retail *test* tasks (held out: no test task is in the
training data), one verdict per step, and judged by castbench's own critic report against the
labeler: MCC, false-flag and detection rates with 95% intervals resampling tasks, and the count
of unreadable verdicts (which count as passes). `bench/cast_learning.py` prints the result; a
`train`-marked test runs it at CI size.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from castbench_cast.recipe import CollectStage, CriticDataStage, Recipe, TrainStage

__all__ = ["CriticFigures", "Learning", "critic_learning", "held_out_figures"]


class CriticFigures(BaseModel):
    """One critic on the held-out tasks (from `castbench.report.critic_report`)."""

    checkpoint: str
    run_id: str
    verdicts: int
    parse_errors: int
    flag_rate: float | None
    mcc: float | None
    mcc_ci: tuple[float, float] | None
    false_flag_rate: float | None
    false_flag_rate_ci: tuple[float, float] | None
    detection_rate: float | None
    detection_rate_ci: tuple[float, float] | None
    counts: dict[str, int]


class Learning(BaseModel):
    base: CriticFigures
    trained: CriticFigures
    train: dict[str, Any]
    """The train-critic stage's figures (examples, steps, loss, what the context rule dropped)."""
    data: dict[str, Any]
    """The critic data's counts and verdict balance."""
    held_out: dict[str, Any]
    beats_base: bool
    """The trained critic's MCC interval lies above the base's MCC (a critic that never flags,
    as the unreadable base does, carries no information: MCC 0, the convention for a constant
    classifier)."""


def held_out_figures(
    checkpoint: Path, db: str, tasks: list[str], policy: str, trials: int, seed: int, max_tokens: int
) -> CriticFigures:
    """`checkpoint` served as the critic of `policy` on retail test `tasks`, one verdict a step."""
    from castbench.api import evaluate
    from castbench.report.critic_report import critic_report
    from castbench.runner.rollout import Verification
    from castbench.store import ResultsStore
    from castbench_cast.serving import CheckpointServer

    with CheckpointServer(checkpoint) as server:
        result = evaluate(
            db=db,
            domains="retail",
            split="test",
            tasks=tasks,
            policy=policy,
            critic=server.model_string(temperature=0, max_tokens=max_tokens),
            user="scripted",
            trials=trials,
            seed=seed,
            verification=Verification(rounds=1),
        )
    run_id = result.outcome.run_id
    report = critic_report(ResultsStore(db).trials(run_id))
    if report is None:
        raise RuntimeError(f"run {run_id}: the critic judged no action on the held-out tasks")
    return CriticFigures(
        checkpoint=str(checkpoint),
        run_id=run_id,
        verdicts=report.n_verified,
        parse_errors=report.parse_errors,
        flag_rate=report.flag_rate,
        mcc=report.mcc,
        mcc_ci=report.mcc_ci,
        false_flag_rate=report.false_flag_rate,
        false_flag_rate_ci=report.false_flag_rate_ci,
        detection_rate=report.detection_rate,
        detection_rate_ci=report.detection_rate_ci,
        counts=report.counts.model_dump(),
    )


def critic_learning(
    out: Path,
    train: TrainStage,
    *,
    train_tasks: int,
    test_tasks: int,
    samples: int = 2,
    test_trials: int = 1,
    teacher: str = "scripted:noisy?p=0.5",
    seed: int = 0,
    max_tokens: int = 96,
    target: str = "annotation",
    log: Callable[[str], None] = print,
) -> Learning:
    """Train a critic on the first `train_tasks` retail train tasks and compare it with its base
    on the first `test_tasks` retail test tasks (see the module's docstring)."""
    from castbench.domain import load_domain
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.train import save_base

    recipe = Recipe(
        name="cast-learning",
        out=out.resolve(),
        collect=CollectStage(domains="retail", limit=train_tasks, policy=teacher, samples=samples, seed=seed),
        critic_data=CriticDataStage(target=target),  # type: ignore[arg-type]
        train_critic=train,
    )
    pipeline = Pipeline(recipe, log=log)
    pipeline.collect()
    pipeline.annotate()
    data = pipeline.critic_data()
    trained = pipeline.train_critic()
    base = save_base(pipeline.folder("critic-data"), out.resolve() / "base-critic" / "model", train)
    tasks = [task.id for task in load_domain("retail").tasks("test")[:test_tasks]]
    figures = {
        name: held_out_figures(path, recipe.store_url, tasks, teacher, test_trials, seed + 1, max_tokens)
        for name, path in (("base", base), ("trained", pipeline.folder("train-critic") / "model"))
    }
    base_mcc = figures["base"].mcc if figures["base"].mcc is not None else 0.0
    interval = figures["trained"].mcc_ci
    return Learning(
        beats_base=interval is not None and interval[0] > base_mcc,
        base=figures["base"],
        trained=figures["trained"],
        train=trained.info,
        data={"counts": data.counts, "balance": data.balance},
        held_out={
            "domain": "retail",
            "split": "test",
            "tasks": tasks,
            "trials": test_trials,
            "policy": teacher,
            "max_tokens": max_tokens,
        },
    )
