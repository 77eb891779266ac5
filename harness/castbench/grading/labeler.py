"""The privileged labeler: is a proposed action valid, and if not, which CAST failure is it?

It knows the task's ground truth and the true state just before the action, and it applies the
same visible checks as the rules critic plus the domain's state rules. It runs inside the
harness; its labels are stored with each proposal and never shown to a policy or critic. Where
it cannot decide (a reply to the user) it says `unknown`, which is reported apart.

Decision order for a tool call:
1. unknown tool -> wrong_tool; arguments the schema rejects -> hallucination (wrong_tool if the
   tool is not one the ground truth uses);
2. a call the ground truth contains -> valid, unless it breaks a rule (no confirmation, not
   authenticated -> domain_violation; an id the conversation never showed -> hallucination,
   even when the guess happens to be right);
3. a read outside the ground truth -> valid unless it is unsupported (hallucination) or breaks
   a rule;
4. a write outside the ground truth -> the rule it breaks if any; else hallucination when the
   ground truth uses the same tool (wrong arguments), domain_violation when nothing should
   change, wrong_tool otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from castbench.agents.conversation import Action, Event, MalformedAction, ReplyAction
from castbench.agents.critics.checks import as_tool_call, visible_findings
from castbench.domain import Database, Domain, RuleFinding, Task, ToolError
from castbench.runner.records import ActionLabel

__all__ = ["label_action"]


def _label(finding: RuleFinding) -> ActionLabel:
    return ActionLabel(label="invalid", failure_type=finding.failure_type, reason=finding.message)


def label_action(
    domain: Domain, task: Task, action: Action, db: Database, conversation: Sequence[Event]
) -> ActionLabel:
    if isinstance(action, ReplyAction):
        return ActionLabel(label="unknown", reason="replies to the user are not labelled")
    if isinstance(action, MalformedAction):
        return ActionLabel(
            label="invalid", failure_type="hallucination", reason=f"malformed: {action.reason}"
        )
    truth = [call for call in task.actions if call.actor == "agent"]
    truth_tools = {call.name for call in truth}
    call = as_tool_call(action)
    if action.name not in domain.toolkit:
        return ActionLabel(label="invalid", failure_type="wrong_tool", reason=f"no tool '{action.name}'")
    if call is None:
        return ActionLabel(
            label="invalid", failure_type="hallucination", reason="arguments are not a JSON object"
        )
    try:
        domain.toolkit.validate(call.name, call.arguments)
    except ToolError as exc:
        if call.name in truth_tools:
            return ActionLabel(label="invalid", failure_type="hallucination", reason=str(exc))
        return ActionLabel(label="invalid", failure_type="wrong_tool", reason=str(exc))
    findings = visible_findings(domain, call, conversation) + domain.rules.state_findings(call, db)
    canonical = call.canonical()
    if canonical in {c.canonical() for c in truth}:
        # right by luck is still unsupported: a guessed id or a skipped confirmation stays invalid
        return _label(findings[0]) if findings else ActionLabel(label="valid", reason="in the ground truth")
    if not domain.toolkit.is_write(call.name):
        return _label(findings[0]) if findings else ActionLabel(label="valid", reason="a supported read")
    if findings:
        return _label(findings[0])
    truth_writes = [c for c in truth if domain.toolkit.is_write(c.name)]
    if canonical in {c.canonical() for c in task.declined_actions}:
        return ActionLabel(
            label="invalid", failure_type="domain_violation", reason="the user declined this change"
        )
    if any(c.name == call.name for c in truth_writes):
        return ActionLabel(
            label="invalid", failure_type="hallucination", reason="wrong arguments for this change"
        )
    if not truth_writes:
        return ActionLabel(
            label="invalid", failure_type="domain_violation", reason="no change is warranted here"
        )
    return ActionLabel(
        label="invalid", failure_type="wrong_tool", reason="the request needs a different tool"
    )
