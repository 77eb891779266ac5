"""An LLM judge of failed trials, by model string, checked against the rules.

The rules (`castbench._results.attribution.rules`) are the default: free, deterministic, and measured
against known injected mistakes. A judge reads what a human reviewer would (the transcript, the
state diff, what the grade missed) and names the first decisive step, the party and the cause
from the same vocabulary; its agreement with the rules is reported beside its verdicts, so a
team sees where the two part ways instead of trusting either blindly. It calls its model through
castbench's model client (`castbench._agents.models.client`: litellm, or the lean OpenAI-compatible route
to a server of one's own), with the same settings as any model role.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel

from castbench._agents.models.client import ModelClient, TrialKey
from castbench._agents.models.parse import find_json_object
from castbench._agents.models.prompts import response_format
from castbench._agents.models.settings import ModelSettings
from castbench._records.trial import TrialRecord
from castbench._results.attribution.model import Attribution, Cause, Evidence, party_of
from castbench._results.attribution.user_faults import transcript

__all__ = ["UNREADABLE", "JudgeAgreement", "LLMJudge", "agreement", "unreadable"]

_CAUSES: tuple[str, ...] = get_args(Cause)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "step": {"type": ["integer", "null"]},
        "cause": {"type": "string", "enum": list(_CAUSES)},
        "reason": {"type": "string"},
    },
    "required": ["step", "cause"],
}
_SYSTEM = (
    "You review one failed trial of a customer-service agent that talks to a simulated user and "
    "calls tools. Find the first step that decided the failure and its cause. Agent causes: "
    "hallucination (an argument or fact nothing in the conversation supported), domain_violation "
    "(broke the written policy: no authentication, no explicit yes), wrong_tool, "
    "tool_error_unrecovered, missing_state_change, wrong_state_update, incomplete_reply, "
    "unearned_outcome, malformed_output, ran_out_of_steps, agent_error, timeout. "
    "Simulated-user causes: leaked_goal "
    "(said what it should keep until asked, or its private instructions), contradicted_facts "
    "(facts or wishes its instructions contradict), ended_early, never_ended, broke_persona, "
    "user_error. Harness causes: harness_error, infra_error. Answer with one JSON object: "
    '{"step": <step number or null>, "cause": "<cause>", "reason": "<one sentence>"}.'
)
_CLIP = 400
UNREADABLE = "unreadable judge answer"
"""How a judge's attribution that could not be read begins its reason."""


def unreadable(judged: Attribution) -> bool:
    """Whether the judge's answer for this trial could not be read (no verdict to compare)."""
    return judged.source == "judge" and judged.evidence.detail.startswith(UNREADABLE)


def _render(record: TrialRecord) -> str:
    lines = [f"task {record.task_id}, ended: {record.end_reason}"]
    for step, event in transcript(record):
        where = "opening" if step is None else f"step {step}"
        role = getattr(event, "role", "")
        if role == "user":
            body = event.text  # type: ignore[union-attr]
        elif role == "tool":
            body = ("ERROR " if event.error else "") + event.content  # type: ignore[union-attr]
        else:
            body = event.action.model_dump_json(exclude={"usage"})  # type: ignore[union-attr]
        lines.append(f"[{where}] {role}: {body[:_CLIP]}")
    grade = record.grade
    if grade is not None:
        diff = [d.model_dump(mode="json") for d in grade.diff[:10]]
        lines.append(f"state diff (expected vs got): {json.dumps(diff)}")
        if grade.missing_outputs:
            lines.append(f"missing outputs: {grade.missing_outputs}")
        if grade.unearned:
            lines.append(f"not earned: {'; '.join(grade.unearned)}")
    if record.error:
        lines.append(f"error: {record.error[:_CLIP]}")
    return "\n".join(lines)


class LLMJudge:
    def __init__(self, model: str, **settings: Any) -> None:
        self.settings = ModelSettings(model=model, **settings)
        self._format = response_format(self.settings.response_format, "attribution", _SCHEMA)

    def judge(self, record: TrialRecord) -> Attribution:
        """The judge's attribution of one trial that did not pass; an answer it cannot read is
        kept as `incomplete_reply` with the reason saying so (counted as a disagreement)."""
        client = ModelClient(self.settings, "judge", TrialKey(record.seed, record.trial_index))
        messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _render(record)}]
        text = client.complete(messages, None, self._format).text
        found = find_json_object(text) or {}
        cause = str(found.get("cause", "")).strip().lower().replace(" ", "_")
        step = found.get("step")
        detail = str(found.get("reason") or "")
        if cause not in _CAUSES:
            cause, detail = "incomplete_reply", f"{UNREADABLE}: {text[:200]!r}"
        return Attribution(
            domain=record.domain,
            task=record.task_id,
            trial=record.trial_index,
            step=step if isinstance(step, int) and not isinstance(step, bool) else None,
            party=party_of(cause),
            cause=cause,  # type: ignore[arg-type]
            evidence=Evidence(rule=f"judge:{self.settings.model}", detail=detail),
            source="judge",
        )


class JudgeAgreement(BaseModel):
    judged: int
    """Trials whose judge answer could be read (the shares below are of these)."""
    party: float | None
    """Share of judged trials where the judge names the rules' party; None when none was read."""
    cause: float | None
    step: float | None
    """Share where it names the rules' decisive step."""
    unreadable: int = 0
    """Trials whose judge answer could not be read: no agreement either way, left out of the shares."""


def agreement(rules: Sequence[Attribution], judged: Sequence[Attribution]) -> JudgeAgreement:
    """How often the judge agrees with the rules, trial by trial (paired in order), over the
    answers it could read: an unreadable answer is neither agreement nor disagreement."""
    if len(rules) != len(judged):
        raise ValueError(f"{len(rules)} rule attributions but {len(judged)} judged")
    pairs = [(a, b) for a, b in zip(rules, judged, strict=True) if not unreadable(b)]
    n = len(pairs)

    def share(same: int) -> float | None:
        return same / n if n else None

    return JudgeAgreement(
        judged=n,
        party=share(sum(a.party == b.party for a, b in pairs)),
        cause=share(sum(a.cause == b.cause for a, b in pairs)),
        step=share(sum(a.step == b.step for a, b in pairs)),
        unreadable=len(rules) - n,
    )
