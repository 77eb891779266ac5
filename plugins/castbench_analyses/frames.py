"""A stored run as pandas DataFrames, for analysis in a notebook: one row per trial, per step, per
critic verdict (as inspect_ai's `samples_df` gives an eval log's samples).

    from castbench_analyses.frames import trials_df, steps_df, verdicts_df
    trials = trials_df("latest", db="results/castbench.db")
    trials.groupby("task_id")["passed"].mean()

Why a module of its own, read through the store's public reading API (`ResultsStore.run`,
`ResultsStore.config`, `ResultsStore.trials`): the summaries castbench prints are fixed tables,
while a user's question ("which tool do failing trials call last?", "how often does the critic
flag an action the labeler calls valid?") is a group-by over the same records. The frames hold
the records' own values, derived as little as possible (counts, totals over roles), so a figure
computed from them can be checked against the stored records; castbench's own figures are never
computed from them. pandas is imported when a frame is built, not with `castbench`.

`run` is a run id, a unique prefix or `latest`, or a list of them (their rows one after the
other); `db` a store URL or SQLite path (default: `$CASTBENCH_DB`, else castbench's default store).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn, Usage, UserTurn
from castbench._base.defaults import DEFAULT_DB
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import StepRecord, TrialRecord

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ROLES", "steps_df", "trials_df", "verdicts_df"]

ROLES = ("policy", "critic", "user")
"""The roles whose tokens and cost a trial's row gives apart (`policy_cost`, `user_input_tokens`)."""

Runs = str | Sequence[str]


def trials_df(
    run: Runs = "latest", db: str | None = None, *, domains: Iterable[str] | None = None
) -> pd.DataFrame:
    """One row per stored trial: what it scored, why it ended, what it cost.

    Columns: the run (`run_id`, `policy`, `critic`, `user`), the trial (`domain`,
    `domain_version`, `task_id`, `trial_index`, `seed`), its score (`status`, `reward`,
    `strict_reward`, `passed`, `strict_passed`, `end_reason`, `failure_category`, `state_ok`,
    `outputs_ok`, `earned_ok`, `surface_success`, `policy_breaks`, `error`), its size (`steps`,
    `tool_calls`, `tool_errors`, `revisions`, `attempts`, `duration_s`) and its spend
    (`input_tokens`, `output_tokens`, `cost` over every role, then per role `policy_cost`,
    `policy_input_tokens`, `policy_output_tokens`, ... for policy, critic and user). A cost is
    NaN where no model call was priced (scripted agents, unpriced models), not 0."""
    rows = [_trial_row(run_id, config, record) for run_id, config, record in _trials(run, db, domains)]
    return _frame(rows, _TRIAL_COLUMNS)


def steps_df(
    run: Runs = "latest", db: str | None = None, *, domains: Iterable[str] | None = None
) -> pd.DataFrame:
    """One row per step of every trial: what the agent did and what came back.

    Columns: `run_id`, `domain`, `task_id`, `trial_index`, `step`; the executed action (`kind`:
    `tool_call`, `reply`, `malformed`, or `blocked` when a critic rejected its last proposal;
    `tool`, `arguments` as JSON, `text`); what answered it (`observed_from`: `tool` or `user`,
    `observation`, `tool_error`, `user_tool_calls` the user ran on their own side before
    answering, `user_stop`, `fault` the harness injected); the critic loop
    (`proposals`, `verdict` and `labeler_verdict` of the executed proposal, the labeler's
    `failure_type` and `label_reason`); time (`policy_s`, `critic_s`, `user_s`, `total_s`) and
    the action's own `input_tokens`, `output_tokens` and `cost`."""
    rows = [
        _step_row(run_id, record, step)
        for run_id, _, record in _trials(run, db, domains)
        for step in record.steps
    ]
    return _frame(rows, _STEP_COLUMNS)


def verdicts_df(
    run: Runs = "latest", db: str | None = None, *, domains: Iterable[str] | None = None
) -> pd.DataFrame:
    """One row per critic verdict: each proposal a critic judged, with the privileged labeler's
    truth about the same proposal beside it (empty for a run without a critic).

    Columns: `run_id`, `critic`, `domain`, `task_id`, `trial_index`, `step`, `round` (0 for a
    step's first proposal, then each revision), the proposal (`kind`, `tool`, `arguments`,
    `text`), the verdict (`verdict`: valid or invalid, `failure_type`, `explanation`,
    `suggested_fix`, `parse_error`), the labeler's (`labeler_verdict`: valid, invalid or unknown,
    `labeler_failure_type`, `label_reason`), `executed` (this proposal is the step's action) and
    the critic's `critic_s`, `input_tokens`, `output_tokens` and `cost` for it."""
    rows = [
        _verdict_row(run_id, config, record, step, position)
        for run_id, config, record in _trials(run, db, domains)
        for step in record.steps
        for position, proposal in enumerate(step.proposals)
        if proposal.verdict is not None
    ]
    return _frame(rows, _VERDICT_COLUMNS)


def _trials(
    runs: Runs, db: str | None, domains: Iterable[str] | None
) -> Iterator[tuple[str, RunConfig, TrialRecord]]:
    store = ResultsStore(
        db if db is not None else os.environ.get("CASTBENCH_DB") or DEFAULT_DB, read_only=True
    )
    wanted = list(domains) if domains is not None else None
    for ref in [runs] if isinstance(runs, str) else runs:
        run_id = store.run(ref).id
        config = store.config(run_id)
        for record in store.trials(run_id, wanted):
            yield run_id, config, record


_NUMBERS = frozenset({"reward", "strict_reward", "cost", *(f"{role}_cost" for role in ROLES)})
"""Columns that are numbers with gaps: float, a missing value NaN (a cost nobody priced, the
reward of a trial that errored), so that sums and means skip them instead of failing on None."""
_FLAGS = frozenset({"strict_passed", "state_ok", "outputs_ok", "earned_ok", "surface_success", "tool_error"})
"""Yes/no columns with gaps (a trial with no grade, a step that called no tool): pandas' nullable
`boolean`, so that `mean()` is the share of yes among the rows that have an answer."""


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame.from_records(rows, columns=list(columns))
    for column in _NUMBERS & set(columns):
        frame[column] = frame[column].astype("float64")
    for column in _FLAGS & set(columns):
        frame[column] = frame[column].astype("boolean")
    return frame


def _cost(usages: Iterable[Usage | None]) -> float | None:
    """The summed cost of the priced usages; None when none was priced."""
    priced = [usage.cost for usage in usages if usage is not None and usage.cost is not None]
    return sum(priced) if priced else None


def _action_fields(action: Any) -> dict[str, Any]:
    if isinstance(action, ToolCallAction):
        arguments = action.arguments if isinstance(action.arguments, str) else json.dumps(action.arguments)
        return {"kind": "tool_call", "tool": action.name, "arguments": arguments, "text": action.text or None}
    if isinstance(action, ReplyAction):
        return {"kind": "reply", "tool": None, "arguments": None, "text": action.text}
    if action is None:
        return {"kind": "blocked", "tool": None, "arguments": None, "text": None}
    return {"kind": "malformed", "tool": None, "arguments": None, "text": action.raw}


def _usage_fields(usage: Usage | None) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens if usage is not None else 0,
        "output_tokens": usage.output_tokens if usage is not None else 0,
        "cost": usage.cost if usage is not None else None,
    }


_TRIAL_COLUMNS = (
    *("run_id", "policy", "critic", "user", "domain", "domain_version", "task_id", "trial_index", "seed"),
    *("status", "reward", "strict_reward", "passed", "strict_passed", "end_reason", "failure_category"),
    *("state_ok", "outputs_ok", "earned_ok", "surface_success", "policy_breaks", "error"),
    *("steps", "tool_calls", "tool_errors", "revisions", "attempts", "duration_s"),
    *("input_tokens", "output_tokens", "cost"),
    *(f"{role}_{what}" for role in ROLES for what in ("cost", "input_tokens", "output_tokens")),
)


def _trial_row(run_id: str, config: RunConfig, record: TrialRecord) -> dict[str, Any]:
    grade = record.grade
    usage = record.usage
    row: dict[str, Any] = {
        "run_id": run_id,
        "policy": config.policy,
        "critic": config.critic,
        "user": config.user,
        **record.model_dump(include={"domain", "domain_version", "task_id", "trial_index", "seed"}),
        **record.model_dump(include={"status", "reward", "end_reason", "error", "attempts", "duration_s"}),
        "strict_reward": grade.strict_reward if grade is not None else None,
        "passed": record.passed,
        "strict_passed": record.strict_passed,
        "failure_category": grade.failure_category if grade is not None else None,
        "state_ok": grade.state_ok if grade is not None else None,
        "outputs_ok": grade.outputs_ok if grade is not None else None,
        "earned_ok": grade.earned_ok if grade is not None else None,
        "surface_success": grade.surface_success if grade is not None else None,
        "policy_breaks": len(grade.policy_breaks) if grade is not None else 0,
        "steps": len(record.steps),
        "tool_calls": sum(isinstance(step.action, ToolCallAction) for step in record.steps),
        "tool_errors": sum(
            isinstance(s.observation, ToolResultTurn) and s.observation.error for s in record.steps
        ),
        "revisions": sum(max(0, len(step.proposals) - 1) for step in record.steps),
        "input_tokens": sum(item.input_tokens for item in usage.values()),
        "output_tokens": sum(item.output_tokens for item in usage.values()),
        "cost": _cost(usage.values()),
    }
    for role in ROLES:
        mine = usage.get(role)
        row[f"{role}_cost"] = mine.cost if mine is not None else None
        row[f"{role}_input_tokens"] = mine.input_tokens if mine is not None else 0
        row[f"{role}_output_tokens"] = mine.output_tokens if mine is not None else 0
    return row


_STEP_COLUMNS = (
    *("run_id", "domain", "task_id", "trial_index", "step", "kind", "tool", "arguments", "text"),
    *("observed_from", "observation", "tool_error", "user_tool_calls", "user_stop", "fault", "proposals"),
    *("verdict", "labeler_verdict", "failure_type", "label_reason"),
    *("policy_s", "critic_s", "user_s", "total_s", "input_tokens", "output_tokens", "cost"),
)


def _step_row(run_id: str, record: TrialRecord, step: StepRecord) -> dict[str, Any]:
    last = step.proposals[-1] if step.proposals else None
    observation = step.observation
    return {
        "run_id": run_id,
        "domain": record.domain,
        "task_id": record.task_id,
        "trial_index": record.trial_index,
        "step": step.index,
        **_action_fields(step.action),
        "observed_from": observation.role if observation is not None else None,
        "observation": (
            observation.content
            if isinstance(observation, ToolResultTurn)
            else observation.text
            if isinstance(observation, UserTurn)
            else None
        ),
        "tool_error": observation.error if isinstance(observation, ToolResultTurn) else None,
        "user_tool_calls": len(observation.tool_calls) if isinstance(observation, UserTurn) else 0,
        "user_stop": step.user_stop,
        "fault": step.fault,
        "proposals": len(step.proposals),
        "verdict": last.verdict.verdict if last is not None and last.verdict is not None else None,
        "labeler_verdict": last.label.label if last is not None and last.label is not None else None,
        "failure_type": last.label.failure_type if last is not None and last.label is not None else None,
        "label_reason": last.label.reason if last is not None and last.label is not None else None,
        **step.timing.model_dump(include={"policy_s", "critic_s", "user_s", "total_s"}),
        **_usage_fields(getattr(step.action, "usage", None)),
    }


_VERDICT_COLUMNS = (
    *("run_id", "critic", "domain", "task_id", "trial_index", "step", "round"),
    *("kind", "tool", "arguments", "text"),
    *("verdict", "failure_type", "explanation", "suggested_fix", "parse_error"),
    *("labeler_verdict", "labeler_failure_type", "label_reason", "executed"),
    *("critic_s", "input_tokens", "output_tokens", "cost"),
)


def _verdict_row(
    run_id: str, config: RunConfig, record: TrialRecord, step: StepRecord, position: int
) -> dict[str, Any]:
    proposal = step.proposals[position]
    verdict, label = proposal.verdict, proposal.label
    assert verdict is not None
    executed = position == len(step.proposals) - 1 and step.action == proposal.action  # None: blocked
    return {
        "run_id": run_id,
        "critic": config.critic,
        "domain": record.domain,
        "task_id": record.task_id,
        "trial_index": record.trial_index,
        "step": step.index,
        "round": proposal.round,
        **_action_fields(proposal.action),
        **verdict.model_dump(
            include={"verdict", "failure_type", "explanation", "suggested_fix", "parse_error"}
        ),
        "labeler_verdict": label.label if label is not None else None,
        "labeler_failure_type": label.failure_type if label is not None else None,
        "label_reason": label.reason if label is not None else None,
        "executed": executed,
        "critic_s": proposal.critic_s,
        **_usage_fields(verdict.usage),
    }
