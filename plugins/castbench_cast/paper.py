"""The paper's experiment as one command: `castbench cast paper RECIPE [--until STAGE]`.

It runs the CAST stages (the RFT control's too), then, once the critic and both policies are
trained, the paper's grid in `castbench eval`: base / RFT / CAST policy x without / with the
trained critic x the recipe's `[paper]` test domains, n trials per task. The board
(`<out>/board.md`, `board.json`) lists every cell, measured or not yet run, and below them the
CAST paper's reported figures (from the project's MISSION, averages over its four τ sets with a
Qwen3-32B policy), marked as reported: they were not measured by this harness and are never
ranked with its rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from castbench_cast.baselines import BaselineFigures, Lookup, baseline_figures
from castbench_cast.pipeline import Pipeline, StageError
from castbench_cast.recipe import PaperTable
from castbench_cast.serving import is_checkpoint

__all__ = ["REPORTED", "Board", "Row", "paper", "render"]

Source = Literal["measured", "not run", "reported by the CAST paper (not measured here)"]


class Row(BaseModel):
    policy: str
    critic: str
    domain: str
    source: Source
    pass_1: float | None = None
    pass_k: float | None = None
    k: int | None = None
    flag_valid: float | None = None
    """Share of all labelled actions the critic flagged although valid (CAST's reporting)."""
    pass_valid: float | None = None
    verdicts: int | None = None
    unreadable: int | None = None
    """Critic answers with no readable verdict (counted as passes, never as flags)."""
    run_id: str | None = None
    note: str = ""


class CriticCell(BaseModel):
    """The trained (or untrained) critic of one grid cell beside the baselines, on its calls."""

    policy: str
    domain: str
    run_id: str
    figures: list[BaselineFigures]


def _reported(
    critic: str, pass_1: float | None, pass_4: float | None, fv: float | None, pv: float | None
) -> Row:
    return Row(
        policy="Qwen3-32B (paper)",
        critic=critic,
        domain="average of 4 τ sets",
        source="reported by the CAST paper (not measured here)",
        pass_1=pass_1,
        pass_k=pass_4,
        k=4,
        flag_valid=fv,
        pass_valid=pv,
    )


REPORTED = [
    _reported("none", 0.317, 0.115, None, None),
    _reported("GPT-4.1", 0.228, 0.060, 0.468, 0.240),
    _reported("CAST 4B", None, 0.159, 0.136, 0.622),
    _reported("CAST 8B", None, 0.195, 0.114, 0.647),
    _reported("GPT-OSS-120B", None, 0.169, None, None),
]
"""MISSION.md's figures of the paper (arXiv 2608.30147); None where it gives none."""


class Board(BaseModel):
    recipe: str
    rows: list[Row]
    critics: list[CriticCell] = []
    """Every cell with a critic, its figures beside `castbench_cast.baselines`' on the same calls."""
    reported: list[Row] = REPORTED


def _cell(
    pipeline: Pipeline,
    settings: PaperTable,
    policy: tuple[str, Path | None],
    critic: tuple[str, Path | str] | None,
    domain: str,
) -> Row:
    """One grid cell: the policy (a base model string, or a checkpoint served) alone or with a
    critic (`("trained", checkpoint)` served, or `("base", model string)`)."""
    from castbench import EvalResult, evaluate
    from castbench.domain import Verification, load_domain
    from castbench_cast.serving import CheckpointServer

    name, checkpoint = policy
    tasks = None
    if settings.limit is not None:
        tasks = [task.id for task in load_domain(domain).tasks(settings.split)[: settings.limit]]

    def run(policy_spec: str) -> Row:
        def evaluated(**loop: Any) -> EvalResult:
            return evaluate(
                db=pipeline.recipe.store_url,
                domains=domain,
                split=settings.split,
                tasks=tasks,
                user=settings.user,
                trials=settings.trials,
                policy=policy_spec,
                **loop,
            )

        verification = Verification(rounds=settings.rounds)
        if critic is None:
            result = evaluated()
        elif isinstance(critic[1], str):
            result = evaluated(critic=critic[1], verification=verification)
        else:
            with CheckpointServer(critic[1], settings.serve, gpu_memory=settings.critic_gpu_memory) as served:
                tokens = settings.max_tokens or served.answer_tokens
                spec = served.model_string(temperature=0, max_tokens=tokens)
                result = evaluated(critic=spec, verification=verification)
        report = result.summary.overall.critic
        headline = result.summary.headline
        assert headline is not None  # a finished run has its headline
        hats = headline.pass_hat
        k = min(4, settings.trials)
        confusion = report.confusion if report is not None else None
        return Row(
            policy=name,
            critic=critic[0] if critic is not None else "none",
            domain=domain,
            source="measured",
            pass_1=hats.get(1),
            pass_k=hats.get(k),
            k=k,
            flag_valid=confusion.flag_valid if confusion else None,
            pass_valid=confusion.pass_valid if confusion else None,
            verdicts=report.n_verified if report is not None else None,
            unreadable=report.unreadable if report is not None else None,
            run_id=result.outcome.run_id,
        )

    if checkpoint is None:
        return run(settings.policy)
    with CheckpointServer(checkpoint, settings.serve, gpu_memory=settings.policy_gpu_memory) as served_policy:
        tokens = settings.max_tokens or served_policy.answer_tokens
        return run(served_policy.model_string(style="prompted", temperature=0, max_tokens=tokens))


def paper(pipeline: Pipeline, until: str | None = None, log: Callable[[str], None] = print) -> Board:
    """Run the stages (up to `until`), the grid when everything it needs is trained, and write
    the board into the recipe's `out` folder."""
    settings = pipeline.recipe.paper
    if settings is None:
        raise StageError("the recipe has no [paper] table (the base policy, test domains, n)")
    pipeline.run(until)
    rft = Pipeline(
        pipeline.recipe.model_copy(
            update={"policy_data": pipeline.recipe.policy_data.model_copy(update={"rft": True})}
        ),
        force=pipeline.force,
        log=log,
    )
    if until is None:
        rft.policy_data()
        rft.train_policy()
    models: dict[str, Path] = {
        "critic": pipeline.folder("train-critic") / "model",
        "CAST": pipeline.folder("train-policy") / "model",
        "RFT": rft.folder("train-policy-rft") / "model",
    }
    missing = [name for name, path in models.items() if not is_checkpoint(path)]
    policies: list[tuple[str, Path | None]] = [
        ("base", None),
        ("RFT", models["RFT"]),
        ("CAST", models["CAST"]),
    ]
    critics: list[tuple[str, Path | str] | None] = [None, ("trained", models["critic"])]
    rows = []
    for name, checkpoint in policies:
        for critic in critics + (
            [("base", settings.base_critic)] if name == "base" and settings.base_critic else []
        ):
            for domain in settings.domains:
                needs = [
                    n
                    for n in missing
                    if n == name or (critic is not None and critic[0] == "trained" and n == "critic")
                ]
                if needs:
                    rows.append(
                        Row(
                            policy=name,
                            critic="none" if critic is None else critic[0],
                            domain=domain,
                            source="not run",
                            note=f"needs the trained {', '.join(needs)} model",
                        )
                    )
                    continue
                log(f"paper: {name} policy, critic {critic[0] if critic else 'none'}, {domain}")
                rows.append(_cell(pipeline, settings, (name, checkpoint), critic, domain))
    board = Board(recipe=pipeline.recipe.name, rows=rows, critics=_critic_cells(pipeline, rows))
    out = pipeline.recipe.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "board.json").write_text(board.model_dump_json(indent=2))
    (out / "board.md").write_text(render(board))
    log(f"paper: board -> {out / 'board.md'}")
    return board


def _critic_cells(pipeline: Pipeline, rows: list[Row]) -> list[CriticCell]:
    """Each measured cell with a critic, beside the baselines learned from the critic's own
    training annotations, on that cell's calls."""
    from castbench import ResultsStore
    from castbench_cast.annotations import read_annotations

    judged = [row for row in rows if row.source == "measured" and row.critic != "none" and row.run_id]
    if not judged:
        return []
    lookup = Lookup(
        pipeline.records("collect"), read_annotations(pipeline.folder("annotate") / "annotations.jsonl")
    )
    store = ResultsStore(pipeline.recipe.store_url)
    return [
        CriticCell(
            policy=row.policy,
            domain=row.domain,
            run_id=row.run_id,
            figures=baseline_figures(store.trials(row.run_id), lookup, measured=f"{row.critic} critic"),
        )
        for row in judged
        if row.run_id is not None
    ]


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _count(value: int | None) -> str:
    return "–" if value is None else str(value)


def _interval(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")


def render(board: Board) -> str:
    """Markdown: this harness's cells, each critic beside its baselines, then the paper's
    reported figures under their own header. `flag ∧ valid` and `pass ∧ valid` are shares of
    all labelled actions, as the paper reports them (not rates among valid calls)."""
    header = (
        "| policy | critic | domain | pass^1 % | pass^k % (k) | flag ∧ valid % of actions "
        "| pass ∧ valid % of actions | verdicts | unreadable (as pass) | run / note |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|---|"

    def line(row: Row) -> str:
        k = f"{_figure(row.pass_k)} ({row.k})" if row.k else "–"
        where = row.run_id or row.note or row.source
        return (
            f"| {row.policy} | {row.critic} | {row.domain} | {_figure(row.pass_1)} | {k} | "
            f"{_figure(row.flag_valid)} | {_figure(row.pass_valid)} | {_count(row.verdicts)} | "
            f"{_count(row.unreadable)} | {where} |"
        )

    critic_lines = [
        f"| {cell.policy} | {cell.domain} | {item.name} | {item.calls} | "
        f"{_interval(item.mcc, item.mcc_ci)} | {_interval(item.false_flag_rate, item.false_flag_rate_ci)} | "
        f"{_figure(item.flag_share_of_actions)} |"
        for cell in board.critics
        for item in cell.figures
    ]
    parts = [
        f"# CAST paper grid: {board.recipe}",
        "",
        "Measured by castbench (or not run yet):",
        "",
        header,
        rule,
        *(line(row) for row in board.rows),
        "",
        "Each critic against its baselines on the same calls (majority verdicts learned from the critic's "
        "training annotations, the model-free rules critic; 95% intervals resample tasks):",
        "",
        "| policy | domain | critic | calls | MCC [95% CI] | false-flag rate [95% CI] "
        "| flag ∧ valid % of actions |",
        "|---|---|---|---|---|---|---|",
        *(critic_lines or ["| – | – | no cell with a critic has run | – | – | – | – |"]),
        "",
        "Reported by the CAST paper (arXiv 2608.30147; not measured here, not ranked with the rows above):",
        "",
        header,
        rule,
        *(line(row) for row in board.reported),
        "",
    ]
    return "\n".join(parts)
