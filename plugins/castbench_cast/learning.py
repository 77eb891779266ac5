"""Does training work? A critic trained through the pipeline, against its own untrained base.

The stages run as a user runs them (collect with a teacher on retail's train split, the
labeler's annotations, critic data, train-critic); the base is the model training started from
(`save_base`: for the tiny stand-in, the same tokenizer and seeded weights). Each is then served
and put in the loop of `castbench eval` on retail *test* tasks (held out: no test task is in the
training data), one verdict per step, and judged by castbench's own critic report against the
labeler: MCC, false-flag and detection rates with 95% intervals resampling tasks, and the count
of unreadable verdicts (which count as passes) apart from answers read in part. Beside them, on
the trained critic's very calls, the baselines of `castbench_cast.baselines` (majority verdict
per tool and per (previous action, tool), learned from the same annotations, and the rules
critic): the trained critic has learned more than a lookup table only if its MCC interval lies
above both majority baselines' (`beats_baselines`), and more than lexical lookup over its own
input only if it lies above the bag-of-words classifier's (`beats_bow`). With
`holdout_families`, that many retail task families (drawn with the seed) are kept out of training
altogether, and the critic is judged twice: on test tasks of the families it trained on
(`in-distribution`) and on test tasks of the families it never saw (`held-out families`), each
with its own baselines. The base is optional (`evaluate_base`): served untrained, a tiny model
cannot answer, and measuring that costs as much as the trained critic's run. `bench/cast_learning.py`
prints the result; a `train`-marked test runs it at CI size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from castbench_cast.baselines import BASELINES, BOW, BagOfWords, BaselineFigures, Lookup, baseline_figures
from castbench_cast.recipe import (
    CollectCriticStage,
    CollectStage,
    CriticDataStage,
    PolicyDataStage,
    Recipe,
    TrainStage,
)

__all__ = [
    "CriticFigures",
    "Learning",
    "PolicyFigures",
    "beats",
    "calls_digest",
    "PolicyLearning",
    "critic_learning",
    "held_out_figures",
    "policy_learning",
]


class CriticFigures(BaseModel):
    """One critic on the held-out tasks (from `castbench._results.report.critic_report`)."""

    checkpoint: str
    run_id: str
    verdicts: int
    parse_errors: int
    """Answers not read in full (`unreadable` of them not read at all)."""
    unreadable: int
    """Answers with no readable verdict: counted as passes."""
    flag_rate: float | None
    mcc: float | None
    mcc_ci: tuple[float, float] | None
    false_flag_rate: float | None
    false_flag_rate_ci: tuple[float, float] | None
    detection_rate: float | None
    detection_rate_ci: tuple[float, float] | None
    counts: dict[str, int]


class SplitFigures(BaseModel):
    """The trained critic and its baselines on one held-out split's calls."""

    name: str
    """`in-distribution` (test tasks of the families trained on) or `held-out families`."""
    families: list[str]
    tasks: list[str]
    trained: CriticFigures
    baselines: list[BaselineFigures]
    beats_baselines: bool
    beats_bow: bool
    calls_digest: str = ""
    """sha256 (16 hex digits) of the judged calls' keys (task, trial, step, round) and actions:
    two critics whose digests agree were judged on the very same calls."""


def calls_digest(records: Any) -> str:
    """The digest of `SplitFigures.calls_digest` over the judged calls of `records`."""
    import hashlib

    from castbench.agents import action_json
    from castbench_cast.annotations import moment_key
    from castbench_cast.baselines import judged_calls

    keys = sorted(
        (*moment_key(record, moment), action_json(moment.proposal.action))
        for record, moment in judged_calls(records)
    )
    return hashlib.sha256(repr(keys).encode()).hexdigest()[:16]


class Learning(BaseModel):
    base: CriticFigures | None
    """The untrained base, served the same way (None: not measured, `evaluate_base=False`)."""
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
    baselines: list[BaselineFigures]
    """The trained critic and the baselines on the same held-out calls (`castbench_cast.baselines`)."""
    beats_baselines: bool
    """The trained critic's MCC interval lies wholly above both majority baselines' intervals."""
    beats_bow: bool = False
    """The trained critic's MCC interval lies wholly above the bag-of-words classifier's."""
    splits: list[SplitFigures] = []
    """Every held-out split measured, `in-distribution` first (its figures are also the
    top-level `trained`, `baselines`, `beats_baselines` and `beats_bow`)."""
    held_out_families: list[str] = []
    bow: dict[str, Any] = {}
    """The bag-of-words classifier: train examples, vocabulary size, backend."""


def held_out_families(count: int, seed: int) -> list[str]:
    """`count` of retail's task families, drawn with `seed` (sorted): never trained on."""
    import random

    from castbench.domain import load_domain

    if count <= 0:
        return []
    domain = load_domain("retail")
    families = sorted({task.family for split in ("train", "test") for task in domain.tasks(split)})
    if count >= len(families):
        raise ValueError(f"holdout_families {count}: retail has {len(families)} families, some must train")
    return sorted(random.Random(f"families:{seed}").sample(families, count))


def split_tasks(split: str, limit: int, families: list[str], held_out: bool) -> list[str]:
    """The first `limit` retail `split` tasks in `families` (`held_out`) or outside them."""
    from castbench.domain import load_domain

    chosen = [task.id for task in load_domain("retail").tasks(split) if (task.family in families) == held_out]
    return chosen[:limit]


def _recipe(
    out: Path,
    critic: TrainStage,
    train_tasks: int,
    samples: int,
    teacher: str,
    seed: int,
    target: str,
    balance: bool = True,
    families_out: list[str] | None = None,
) -> Recipe:
    """The recipe both benches share: `policy_learning` in the same folder reuses the critic
    stages `critic_learning` ran."""
    if families_out:
        collect = CollectStage(
            domains="retail",
            tasks=split_tasks("train", train_tasks, families_out, held_out=False),
            policy=teacher,
            samples=samples,
            seed=seed,
        )
    else:
        collect = CollectStage(
            domains="retail", limit=train_tasks, policy=teacher, samples=samples, seed=seed
        )
    return Recipe(
        name="cast-learning",
        out=out.resolve(),
        collect=collect,
        critic_data=CriticDataStage(target=target, balance=balance, seed=seed),  # type: ignore[arg-type]
        train_critic=critic,
    )


def held_out_figures(
    checkpoint: Path, db: str, tasks: list[str], policy: str, trials: int, seed: int, max_tokens: int
) -> CriticFigures:
    """`checkpoint` served as the critic of `policy` on retail test `tasks`, one verdict a step."""
    from castbench import ResultsStore, critic_report, evaluate
    from castbench.domain import Verification
    from castbench_cast.serving import CheckpointServer

    with CheckpointServer(checkpoint) as server:
        result = evaluate(
            db=db,
            domains="retail",
            split="test",
            tasks=tasks,
            policy=policy,
            critic=server.model_string(temperature=0, max_tokens=max_tokens),
            models_config=server.models_config("critic"),
            concurrency=1,
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
        unreadable=report.unreadable,
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
    balance: bool = True,
    holdout_families: int = 0,
    evaluate_base: bool = True,
    log: Callable[[str], None] = print,
) -> Learning:
    """Train a critic on the first `train_tasks` retail train tasks and compare it with its base
    on the first `test_tasks` retail test tasks (see the module's docstring)."""
    from castbench import ResultsStore
    from castbench.domain import load_domain
    from castbench_cast.annotations import read_annotations
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.train import save_base

    families_out = held_out_families(holdout_families, seed)
    recipe = _recipe(out, train, train_tasks, samples, teacher, seed, target, balance, families_out)
    pipeline = Pipeline(recipe, log=log)
    pipeline.collect()
    pipeline.annotate()
    data = pipeline.critic_data()
    trained = pipeline.train_critic()
    checkpoint = pipeline.folder("train-critic") / "model"
    base = None
    if evaluate_base:
        saved = save_base(pipeline.folder("critic-data"), out.resolve() / "base-critic" / "model", train)
        tasks = split_tasks("test", test_tasks, families_out, held_out=False)
        base = held_out_figures(saved, recipe.store_url, tasks, teacher, test_trials, seed + 1, max_tokens)
    annotations = read_annotations(pipeline.folder("annotate") / "annotations.jsonl")
    records = pipeline.records("collect")
    lookup = Lookup(records, annotations)
    bow = BagOfWords(records, annotations)
    store = ResultsStore(recipe.store_url)
    splits = []
    names = [("in-distribution", False)] + ([("held-out families", True)] if families_out else [])
    for name, held_out in names:
        tasks = split_tasks("test", test_tasks, families_out, held_out=held_out)
        figures = held_out_figures(
            checkpoint, recipe.store_url, tasks, teacher, test_trials, seed + 1, max_tokens
        )
        judged = store.trials(figures.run_id)
        rows = baseline_figures(judged, lookup, bow=bow)
        families = sorted(
            {task.family for task in load_domain("retail").tasks("test") if task.id in set(tasks)}
        )
        splits.append(
            SplitFigures(
                name=name,
                families=families,
                tasks=tasks,
                trained=figures,
                baselines=rows,
                beats_baselines=beats(rows[0], [b for b in rows if b.name in BASELINES[:2]]),
                beats_bow=beats(rows[0], [b for b in rows if b.name == BOW]),
                calls_digest=calls_digest(judged),
            )
        )
    first = splits[0]
    base_mcc = (base.mcc if base is not None else None) or 0.0
    interval = first.trained.mcc_ci
    return Learning(
        beats_base=base is not None and interval is not None and interval[0] > base_mcc,
        baselines=first.baselines,
        beats_baselines=first.beats_baselines,
        beats_bow=first.beats_bow,
        splits=splits,
        held_out_families=families_out,
        bow={"examples": bow.examples, "vocabulary": len(bow.vocabulary), "backend": bow.backend},
        base=base,
        trained=first.trained,
        train=trained.info,
        data={"counts": data.counts, "balance": data.balance},
        held_out={
            "domain": "retail",
            "split": "test",
            "tasks": first.tasks,
            "trials": test_trials,
            "policy": teacher,
            "max_tokens": max_tokens,
        },
    )


def beats(critic: BaselineFigures, others: list[BaselineFigures]) -> bool:
    """`critic`'s MCC interval lies wholly above every one of `others`' (non-overlapping)."""
    if critic.mcc_ci is None:
        return False
    return all(other.mcc_ci is not None and critic.mcc_ci[0] > other.mcc_ci[1] for other in others)


class PolicyFigures(BaseModel):
    """One policy on the held-out tasks: pass^1 with its interval, and what its actions were
    (the labeler's judgement of each proposal; unreadable answers are `malformed`)."""

    name: str
    run_id: str
    pass_1: float | None
    pass_1_ci: tuple[float, float] | None
    steps: int
    malformed_rate: float | None
    valid_call_rate: float | None
    """Of its tool calls, the share the labeler marks valid."""
    labels: dict[str, int]


class PolicyLearning(BaseModel):
    policies: dict[str, PolicyFigures]
    """`base` (the untrained model), `RFT` (trained on successful trajectories), `CAST` (the
    same trajectories, collected with the trained critic in the loop, with its critiques)."""
    data: dict[str, dict[str, Any]]
    """Each policy data stage's counts (examples, trajectories with critiques, dropped targets)."""
    train: dict[str, dict[str, Any]]
    held_out: dict[str, Any]


def policy_figures(
    name: str,
    checkpoint: Path,
    db: str,
    tasks: list[str],
    trials: int,
    seed: int,
    max_tokens: int,
    max_steps: int,
) -> PolicyFigures:
    """`checkpoint` served as the policy (prompted style) on retail test `tasks`, no critic."""
    from castbench import ResultsStore, evaluate
    from castbench.agents import MalformedAction, ToolCallAction
    from castbench.domain import Limits
    from castbench_cast.serving import CheckpointServer

    with CheckpointServer(checkpoint) as server:
        result = evaluate(
            db=db,
            domains="retail",
            split="test",
            tasks=tasks,
            policy=server.model_string(style="prompted", temperature=0, max_tokens=max_tokens),
            models_config=server.models_config("policy"),
            user="scripted",
            trials=trials,
            seed=seed,
            limits=Limits(max_steps=max_steps),
        )
    records = ResultsStore(db).trials(result.outcome.run_id)
    proposals = [p for record in records for step in record.steps for p in step.proposals]
    calls = [p for p in proposals if isinstance(p.action, ToolCallAction)]
    labels = Counter(p.label.label if p.label else "none" for p in calls)
    malformed = sum(isinstance(p.action, MalformedAction) for p in proposals)
    headline = result.summary.headline
    return PolicyFigures(
        name=name,
        run_id=result.outcome.run_id,
        pass_1=headline.pass_hat.get(1) if headline is not None else None,
        pass_1_ci=result.summary.overall.ci95.get(1),
        steps=len(proposals),
        malformed_rate=malformed / len(proposals) if proposals else None,
        valid_call_rate=labels["valid"] / len(calls) if calls else None,
        labels=dict(sorted(labels.items())),
    )


def policy_learning(
    out: Path,
    critic: TrainStage,
    policy: TrainStage,
    *,
    train_tasks: int,
    policy_tasks: int,
    test_tasks: int,
    samples: int = 2,
    teacher: str = "scripted:noisy?p=0.5",
    seed: int = 0,
    rounds: int = 3,
    target: str = "verdict",
    test_trials: int = 1,
    max_steps: int = 8,
    log: Callable[[str], None] = print,
) -> PolicyLearning:
    """The policy half of CAST against its controls: the critic trained as in `critic_learning`
    sits in the loop of the teacher on the first `policy_tasks` train tasks (collect-critic), the successful
    trajectories train a CAST policy (with the critiques) and an RFT policy (without), and both
    and their untrained base are served as the policy on held-out retail test tasks. The teacher
    is the scripted one, which reads the task: a CPU stand-in, opted in here
    (`allow_privileged_teacher`), never a recipe default."""
    from castbench.domain import load_domain
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.train import save_base

    recipe = _recipe(out, critic, train_tasks, samples, teacher, seed, target).model_copy(
        update={
            "collect_critic": CollectCriticStage(
                domains="retail",
                limit=policy_tasks,
                policy=teacher,
                samples=samples,
                seed=seed,
                rounds=rounds,
                max_tokens=critic.max_completion,
            ),
            "policy_data": PolicyDataStage(allow_privileged_teacher=True, require_critiques=False),
            "train_policy": policy,
        }
    )
    pipeline = Pipeline(recipe, log=log)
    pipeline.run()
    rft_recipe = recipe.model_copy(
        update={"policy_data": recipe.policy_data.model_copy(update={"rft": True})}
    )
    rft = Pipeline(rft_recipe, log=log)
    data = {"CAST": pipeline.manifest("policy-data").counts, "RFT": rft.policy_data().counts}
    trained = {"CAST": pipeline.manifest("train-policy").info, "RFT": rft.train_policy().info}
    checkpoints = {
        "base": save_base(pipeline.folder("policy-data"), out.resolve() / "base-policy" / "model", policy),
        "RFT": rft.folder("train-policy-rft") / "model",
        "CAST": pipeline.folder("train-policy") / "model",
    }
    tasks = [task.id for task in load_domain("retail").tasks("test")[:test_tasks]]
    return PolicyLearning(
        policies={
            name: policy_figures(
                name, path, recipe.store_url, tasks, test_trials, seed + 1, policy.max_completion, max_steps
            )
            for name, path in checkpoints.items()
        },
        data=data,
        train=trained,
        held_out={
            "domain": "retail",
            "split": "test",
            "tasks": tasks,
            "trials": test_trials,
            "max_steps": max_steps,
        },
    )
