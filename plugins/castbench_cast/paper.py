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
    """One grid cell. The paper's definitions first, castbench's own variants beside them, each
    named: `resistance` and `correction` as the CAST paper defines them (resistance over every
    rejection the policy answered; correction over the flags that could be corrected: a true
    flag the policy answered with a revision, not one in the step's last round), and
    `resistance_castbench` (over false flags only: keeping a valid action) and
    `correction_castbench` (over every true flag, the last round's included) as castbench's
    critic report computes them."""

    policy: str
    critic: str
    domain: str
    source: Source
    pass_1: float | None = None
    pass_k: float | None = None
    k: int | None = None
    pass_3: float | None = None
    pass_4: float | None = None
    flag_valid: float | None = None
    """Share of all labelled actions the critic flagged although valid (CAST's reporting)."""
    pass_valid: float | None = None
    flag_invalid: float | None = None
    pass_invalid: float | None = None
    flag_rate: float | None = None
    """Share of all verified actions the critic flagged."""
    resistance: float | None = None
    """The paper's: of all rejections answered by a revision, the share after which the policy
    proposed the same action again."""
    correction: float | None = None
    """The paper's: of true flags answered by a revision (correctable), the share whose step then
    executed a valid action."""
    resistance_castbench: float | None = None
    """castbench's `resistance_rate`: the same over false flags only (a valid action kept)."""
    correction_castbench: float | None = None
    """castbench's `correction_rate`: corrected over every true flag, last-round flags included."""
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


def paper_reactions(reactions: Any) -> tuple[float | None, float | None]:
    """(resistance, correction) as the CAST paper defines them, from a critic report's
    `FlagReactions` counts: resistance over every rejection the policy answered (true and false
    flags), correction over the true flags the policy answered (a last-round flag cannot be
    corrected)."""
    answered = reactions.false_flags_answered + reactions.true_flags_answered
    resisted = reactions.kept + reactions.insisted
    resistance = resisted / answered if answered else None
    correction = (
        reactions.corrected / reactions.true_flags_answered if reactions.true_flags_answered else None
    )
    return resistance, correction


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
        pass_4=pass_4,
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

    def run(policy_spec: str, policy_config: dict[str, dict[str, Any]] | None = None) -> Row:
        def evaluated(**loop: Any) -> EvalResult:
            models_config = {**(policy_config or {}), **loop.pop("models_config", {})}
            return evaluate(
                db=pipeline.recipe.store_url,
                domains=domain,
                split=settings.split,
                tasks=tasks,
                user=settings.user,
                trials=settings.trials,
                policy=policy_spec,
                models_config=models_config or None,
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
                result = evaluated(
                    critic=spec, verification=verification, models_config=served.models_config("critic")
                )
        report = result.summary.overall.critic
        headline = result.summary.headline
        assert headline is not None  # a finished run has its headline
        hats = headline.pass_hat
        k = min(4, settings.trials)
        confusion = report.confusion if report is not None else None
        resistance, correction = paper_reactions(report.reactions) if report is not None else (None, None)
        return Row(
            policy=name,
            critic=critic[0] if critic is not None else "none",
            domain=domain,
            source="measured",
            pass_1=hats.get(1),
            pass_k=hats.get(k),
            k=k,
            pass_3=hats.get(3),
            pass_4=hats.get(4),
            flag_valid=confusion.flag_valid if confusion else None,
            pass_valid=confusion.pass_valid if confusion else None,
            flag_invalid=confusion.flag_invalid if confusion else None,
            pass_invalid=confusion.pass_invalid if confusion else None,
            flag_rate=report.flag_rate if report is not None else None,
            resistance=resistance,
            correction=correction,
            resistance_castbench=report.resistance_rate if report is not None else None,
            correction_castbench=report.correction_rate if report is not None else None,
            verdicts=report.n_verified if report is not None else None,
            unreadable=report.unreadable if report is not None else None,
            run_id=result.outcome.run_id,
        )

    if checkpoint is None:
        return run(settings.policy)
    with CheckpointServer(checkpoint, settings.serve, gpu_memory=settings.policy_gpu_memory) as served_policy:
        tokens = settings.max_tokens or served_policy.answer_tokens
        return run(
            served_policy.model_string(style="prompted", temperature=0, max_tokens=tokens),
            served_policy.models_config("policy"),
        )


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
        "| policy | critic | domain | pass^1 % | pass^3 % | pass^4 % | flag ∧ valid % | pass ∧ valid % "
        "| flag ∧ invalid % | pass ∧ invalid % | flag rate % | resistance % (paper) | correction % (paper) "
        "| resistance % (castbench: false flags) | correction % (castbench: all true flags) | verdicts "
        "| unreadable (as pass) | run / note |"
    )
    rule = "|" + "---|" * 18

    def line(row: Row) -> str:
        where = row.run_id or row.note or row.source
        figures = (
            row.pass_1,
            row.pass_3,
            row.pass_4,
            row.flag_valid,
            row.pass_valid,
            row.flag_invalid,
            row.pass_invalid,
            row.flag_rate,
            row.resistance,
            row.correction,
            row.resistance_castbench,
            row.correction_castbench,
        )
        return (
            f"| {row.policy} | {row.critic} | {row.domain} | "
            + " | ".join(_figure(value) for value in figures)
            + f" | {_count(row.verdicts)} | {_count(row.unreadable)} | {where} |"
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
        "Measured by castbench (or not run yet). The four confusion shares are of all labelled "
        "actions (they sum to 100), as the paper reports them. Resistance and correction are the "
        "paper's (resistance over every rejection the policy answered; correction over the true flags "
        "it answered, which could be corrected), castbench's variants beside them, named.",
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
        "Reported by the CAST paper (arXiv 2608.30147; not measured here, not ranked with the rows above). "
        "The paper also reports resistance 26-40% for untrained and 11-26% for trained policies, "
        "correction 82-88% with CAST critics and a flag rate of about a third (ranges: not in the rows). "
        "The published τ sets differ from the paper's counts: the paper ran retail 114, airline 50, "
        "telecom 18 and telehealth 20 test tasks; tau-trait 0.1.1 publishes retail 120 (113 scoreable, 7 "
        "with broken gold), airline 60 (52 + 8), telehealth 12 and telecom 2 (1 + 1): docs/tau.md.",
        "",
        header,
        rule,
        *(line(row) for row in board.reported),
        "",
    ]
    return "\n".join(parts)
