"""`castbench runs why RUN`: why each trial did not pass and whose fault it was, grouped by cause,
with the trials that passed plain but failed strict; `--judge MODEL` asks an LLM judge too and
reports its agreement with the rules (the `castbench.commands` entry point `runs.why`). The
attributions themselves are the core's (`castbench.attribute`, which the run's summary counts)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.options import DbOption

__all__ = ["judge_line", "why_command"]

console = Console()


def why_command(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'latest'.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON array, an object per trial that did not pass.")
    ] = False,
    judge: Annotated[
        str | None,
        typer.Option(
            help="Also ask an LLM judge (a litellm model string) and report its agreement with the rules."
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(envvar="CASTBENCH_API_BASE", help="OpenAI-compatible server for --judge.")
    ] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Why each trial failed and whose fault it was (the agent, the simulated user or the harness),
    grouped by cause with one example each (`castbench runs show RUN --task T --trial I` for it)."""
    from castbench._records.store import ResultsStore
    from castbench._results.attribution import attribute
    from castbench_analyses.why import strict_failure, strict_table, why_rows, why_table

    store = ResultsStore(db, read_only=True)
    row = store.run(run)
    # one record at a time: the attributions are kept, not the records (bounded memory at 100k trials)
    attributions = []
    stricts = []
    for record in store.iter_trials(row.id):
        if (found := attribute(record)) is not None:
            attributions.append(found)
        elif (strict := strict_failure(record)) is not None:
            stricts.append(strict)
    judged = None
    if judge is not None:
        from castbench_analyses.why_judge import LLMJudge, agreement

        by_trial = {(r.domain, r.task_id, r.trial_index): r for r in store.trials(row.id)}
        from castbench._agents.models.settings import check_environment

        llm = LLMJudge(judge, **({"api_base": api_base} if api_base else {}))
        check_environment("--judge", llm.settings)  # a missing key or unknown provider: fail now,
        # not after the client's retries on every trial
        judged = [llm.judge(by_trial[(a.domain, a.task, a.trial)]) for a in attributions]
    if as_json:
        print(json.dumps(why_rows(attributions, judged) + why_rows(stricts), indent=2))
        return
    if not attributions and not stricts:
        console.print(f"run {row.id}: every trial passed")
        return
    if attributions:
        console.print(
            why_table(attributions, f"why trials did not pass — run {row.id} ({len(attributions)} trials)")
        )
    else:
        console.print(f"run {row.id}: every trial passed plain; {len(stricts)} failed strict")
    if stricts:
        console.print(
            strict_table(
                stricts,
                f"why trials that passed failed strict — an executed action broke the policy "
                f"({len(stricts)} trials)",
            )
        )
    if judged is not None:
        agreed = agreement(attributions, judged)
        console.print(judge_line(str(judge), agreed))


def judge_line(judge: str, agreed: Any) -> str:
    """The judge's agreement with the rules in one line; answers it could not read are said
    apart, never counted as agreement."""
    lost = f"; {agreed.unreadable} answer(s) could not be read" if agreed.unreadable else ""
    if not agreed.judged:
        return (
            f"judge {escape(judge)}: no answer could be read on {agreed.unreadable} trial(s), "
            "no agreement to report"
        )
    return (
        f"judge {escape(judge)} agrees with the rules on {agreed.judged} trials: "
        f"party {agreed.party:.0%}, cause {agreed.cause:.0%}, step {agreed.step:.0%}{lost}"
    )
