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

from castbench_cast.pipeline import Pipeline, StageError
from castbench_cast.recipe import PaperTable

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
    run_id: str | None = None
    note: str = ""


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
    reported: list[Row] = REPORTED


def _cell(
    pipeline: Pipeline,
    settings: PaperTable,
    policy: tuple[str, Path | None],
    critic: Path | None,
    domain: str,
) -> Row:
    from castbench.api import EvalResult, evaluate
    from castbench.domain import load_domain
    from castbench.runner.rollout import Verification
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

        if critic is None:
            result = evaluated()
            report = None
        else:
            with CheckpointServer(critic, settings.serve) as served:
                spec = served.model_string(temperature=0, max_tokens=settings.max_tokens)
                result = evaluated(critic=spec, verification=Verification(rounds=settings.rounds))
            report = result.summary.overall.critic
        headline = result.summary.headline
        assert headline is not None  # a finished run has its headline
        hats = headline.pass_hat
        k = min(4, settings.trials)
        confusion = report.confusion if report is not None else None
        return Row(
            policy=name,
            critic="trained" if critic is not None else "none",
            domain=domain,
            source="measured",
            pass_1=hats.get(1),
            pass_k=hats.get(k),
            k=k,
            flag_valid=confusion.flag_valid if confusion else None,
            pass_valid=confusion.pass_valid if confusion else None,
            run_id=result.outcome.run_id,
        )

    if checkpoint is None:
        return run(settings.policy)
    with CheckpointServer(checkpoint, settings.serve) as served_policy:
        return run(
            served_policy.model_string(style="prompted", temperature=0, max_tokens=settings.max_tokens)
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
    models = {
        "critic": pipeline.folder("train-critic") / "model",
        "CAST": pipeline.folder("train-policy") / "model",
        "RFT": rft.folder("train-policy-rft") / "model",
    }
    missing = [name for name, path in models.items() if not (path / "config.json").exists()]
    policies: list[tuple[str, Path | None]] = [
        ("base", None),
        ("RFT", models["RFT"]),
        ("CAST", models["CAST"]),
    ]
    rows = []
    for name, checkpoint in policies:
        for critic in (None, models["critic"]):
            for domain in settings.domains:
                needs = [n for n in missing if n == name or (critic is not None and n == "critic")]
                if needs:
                    rows.append(
                        Row(
                            policy=name,
                            critic="none" if critic is None else "trained",
                            domain=domain,
                            source="not run",
                            note=f"needs the trained {', '.join(needs)} model",
                        )
                    )
                    continue
                log(f"paper: {name} policy, critic {'trained' if critic else 'none'}, {domain}")
                rows.append(_cell(pipeline, settings, (name, checkpoint), critic, domain))
    board = Board(recipe=pipeline.recipe.name, rows=rows)
    out = pipeline.recipe.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "board.json").write_text(board.model_dump_json(indent=2))
    (out / "board.md").write_text(render(board))
    log(f"paper: board -> {out / 'board.md'}")
    return board


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def render(board: Board) -> str:
    """Markdown: this harness's cells, then the paper's reported figures under their own header."""
    header = (
        "| policy | critic | domain | pass^1 % | pass^k % (k) | flag ∧ valid % | pass ∧ valid % "
        "| run / note |"
    )
    rule = "|---|---|---|---|---|---|---|---|"

    def line(row: Row) -> str:
        k = f"{_figure(row.pass_k)} ({row.k})" if row.k else "–"
        where = row.run_id or row.note or row.source
        return (
            f"| {row.policy} | {row.critic} | {row.domain} | {_figure(row.pass_1)} | {k} | "
            f"{_figure(row.flag_valid)} | {_figure(row.pass_valid)} | {where} |"
        )

    parts = [
        f"# CAST paper grid: {board.recipe}",
        "",
        "Measured by castbench (or not run yet):",
        "",
        header,
        rule,
        *(line(row) for row in board.rows),
        "",
        "Reported by the CAST paper (arXiv 2608.30147; not measured here, not ranked with the rows above):",
        "",
        header,
        rule,
        *(line(row) for row in board.reported),
        "",
    ]
    return "\n".join(parts)
