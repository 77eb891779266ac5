"""The rules critic: deterministic, model-free, and shippable. It judges a proposed tool call
on the visible conversation alone, with the harness's generic checks and the domain's
`visible_findings`. It never sees the task or the state."""

from __future__ import annotations

from castbench._agents.critics.checks import call_findings
from castbench._agents.views import Briefing, CriticView
from castbench._base.conversation import ReplyAction, ToolCallAction, Verdict
from castbench._domain.registry import load_domain

__all__ = ["RulesCritic"]

_FIXES = {
    "domain_violation": "Follow the policy: authenticate the user, describe the change, get a yes.",
    "hallucination": "Use only ids and values the user gave or a tool returned; look them up first.",
    "wrong_tool": "Pick the tool that matches the request.",
}


class RulesCritic:
    def __init__(self, briefing: Briefing) -> None:
        self._domain = load_domain(briefing.domain)

    def verify(self, view: CriticView) -> Verdict:
        action = view.proposal
        if isinstance(action, ReplyAction):
            return Verdict(verdict="valid", explanation="replies are not checked by the rules critic")
        if not isinstance(action, ToolCallAction):
            return Verdict(
                verdict="invalid",
                failure_type="hallucination",
                explanation="the output is not a usable tool call",
                suggested_fix="Call one tool with JSON arguments.",
            )
        findings = call_findings(self._domain, action, view.conversation)
        if not findings:
            return Verdict(verdict="valid", explanation="no rule is broken by what the conversation shows")
        first = findings[0]
        return Verdict(
            verdict="invalid",
            failure_type=first.failure_type,
            explanation="; ".join(finding.message for finding in findings),
            suggested_fix=_FIXES[first.failure_type],
        )
