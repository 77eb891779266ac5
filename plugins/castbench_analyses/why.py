"""`castbench runs why`: a run's failures grouped by cause, one example each, so a team reads ten
causes rather than a thousand transcripts; and the flat rows `--json` prints.

A trial that passed plain but failed strict (an executed action broke the domain policy: a write
with no explicit yes, before authentication, a change the policy forbids) is explained too, apart
from the failures (`strict_failure`): the labeler's rule, the write and the user turn it read (the
last thing the user said before it). Its cause is the labeler's failure type, a confirmation break
a domain violation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from castbench._base.conversation import ToolCallAction, UserTurn
from castbench._records.trial import TrialRecord
from castbench._results.attribution.model import Attribution, Evidence, party_of

__all__ = ["StrictFailure", "strict_failure", "strict_table", "user_turn_before", "why_rows", "why_table"]

STRICT_RULE = "strict_policy_break"


class StrictFailure(Attribution):
    """A trial that passed plain and failed strict: the first executed action the labeler found
    broke the policy, with the write and the user turn before it."""

    write: str
    user_turn: str


def user_turn_before(record: TrialRecord, step: int) -> str:
    """What the user said last before step `step` (the opening when nothing since)."""
    said = record.opening
    for earlier in record.steps:
        if earlier.index >= step:
            break
        if isinstance(earlier.observation, UserTurn):
            said = earlier.observation.text
    return said


def _shown_action(record: TrialRecord, step: int) -> str:
    action = next((s.action for s in record.steps if s.index == step), None)
    if isinstance(action, ToolCallAction):
        arguments = action.arguments if isinstance(action.arguments, str) else dict(action.arguments)
        return f"{action.name}({arguments})"
    return "(no tool call)" if action is None else action.kind


def strict_failure(record: TrialRecord) -> StrictFailure | None:
    """Why a trial that passed plain failed strict; None for any other trial."""
    grade = record.grade
    if not record.passed or grade is None or grade.strict_reward != 0.0 or not grade.policy_breaks:
        return None
    first = grade.policy_breaks[0]
    step = next((s for s in record.steps if s.index == first.step), None)
    label = step.proposals[-1].label if step is not None and step.proposals else None
    kind = label.failure_type if label is not None else "domain_violation"
    cause = kind if kind in ("hallucination", "domain_violation", "wrong_tool") else "domain_violation"
    said = user_turn_before(record, first.step)
    write = _shown_action(record, first.step)
    more = f" (and {len(grade.policy_breaks) - 1} more)" if len(grade.policy_breaks) > 1 else ""
    return StrictFailure(
        domain=record.domain,
        task=record.task_id,
        trial=record.trial_index,
        step=first.step,
        party=party_of(cause),
        cause=cause,  # type: ignore[arg-type]
        evidence=Evidence(
            rule=STRICT_RULE,
            steps=[b.step for b in grade.policy_breaks],
            detail=f"{first.reason}{more}; the user turn before it: {said!r}",
        ),
        write=write,
        user_turn=said,
    )


def why_rows(
    attributions: Sequence[Attribution], judged: Sequence[Attribution] | None = None
) -> list[dict[str, Any]]:
    """One object per trial that did not pass: task, trial, step, party, cause, and the evidence;
    with a judge, what it said beside them."""
    rows = []
    for position, item in enumerate(attributions):
        row: dict[str, Any] = {
            "domain": item.domain,
            "task": item.task,
            "trial": item.trial,
            "step": item.step,
            "party": item.party,
            "cause": item.cause,
            "rule": item.evidence.rule,
            "detail": item.evidence.detail,
            "evidence_steps": item.evidence.steps,
            "diff": [d.model_dump(mode="json") for d in item.evidence.diff],
            "grading": "strict" if isinstance(item, StrictFailure) else "plain",
        }
        if isinstance(item, StrictFailure):
            row["write"] = item.write
            row["user_turn"] = item.user_turn
        if judged is not None:
            other = judged[position]
            row["judge"] = {
                "step": other.step,
                "party": other.party,
                "cause": other.cause,
                "reason": other.evidence.detail,
            }
        rows.append(row)
    return rows


def why_table(attributions: Sequence[Attribution], title: str) -> Table:
    groups: dict[str, list[Attribution]] = defaultdict(list)
    for item in attributions:
        groups[item.cause].append(item)
    total = len(attributions) or 1
    table = Table(title=escape(title), title_justify="left")
    for column in ("cause", "party", "trials", "share", "example (task #trial @step: evidence)"):
        table.add_column(column, overflow="fold")
    for cause, items in sorted(groups.items(), key=lambda group: (-len(group[1]), group[0])):
        first = items[0]
        where = f"{first.domain} {first.task} #{first.trial} @{'–' if first.step is None else first.step}"
        table.add_row(
            cause,
            first.party,
            str(len(items)),
            f"{len(items) / total:.0%}",
            escape(f"{where}: {first.evidence.rule}: {first.evidence.detail}"[:300]),
        )
    return table


def strict_table(failures: Sequence[StrictFailure], title: str) -> Table:
    """Strict failures grouped by the labeler's rule: the write and the user turn it read."""
    groups: dict[tuple[str, str], list[StrictFailure]] = defaultdict(list)
    for item in failures:
        groups[(item.cause, item.evidence.detail.split(";")[0].split(" (and ")[0])].append(item)
    table = Table(title=escape(title), title_justify="left")
    for column in (
        "cause",
        "rule (the labeler's reason)",
        "trials",
        "example (task #trial @step: write; user turn)",
    ):
        table.add_column(column, overflow="fold")
    for (cause, rule), items in sorted(groups.items(), key=lambda group: (-len(group[1]), group[0])):
        first = items[0]
        where = f"{first.domain} {first.task} #{first.trial} @{first.step}"
        example = f"{where}: {first.write[:160]}; the user said before it: {first.user_turn[:160]!r}"
        table.add_row(cause, escape(rule), str(len(items)), escape(example))
    return table
