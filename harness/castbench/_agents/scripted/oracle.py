"""The oracle policy: replays the task's ground truth through the conversation.

Privileged (it reads the task), so it is an upper bound and a validator of tasks, never a
leaderboard entry. It asks for the user's facts, confirms each write, runs the ground-truth
calls, says the required outputs and closes. If the user declines a write, it does not run it;
if the user asks why, it explains and asks again; facts the user has not said correctly yet
(left out, garbled) it asks for again.

It authenticates the user as the domain's policy requires (`DomainRules.auth_tools`), even where
the ground truth does not (τ's retail test tasks 70-114 write without looking the customer up):
before a ground-truth call of a tool that is neither an authenticating nor a public one, which no
ground-truth authentication that succeeds on the published data comes before, and with no
authenticating call succeeded yet in the trial, it calls an authenticating tool whose arguments
are all facts the user gives (an email, a name and a zip code). That call only reads, so the
final state and the state check are the ground truth's; it is made once (if it fails, the plan
goes on).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import ClassVar

from castbench._agents.scripted.plan import PlanStep, build_plan, describe_call
from castbench._agents.views import PolicyView, PrivilegedBriefing
from castbench._base.conversation import (
    Action,
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._base.dialogue import (
    ANYTHING_ELSE,
    ask_again,
    ask_for,
    confirmation_request,
    device_instruction,
    is_affirmative,
    is_negative,
)
from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._domain.task import Fact, ToolCall

__all__ = ["OraclePolicy"]


def _authenticated(conversation: Sequence[Event], auth_tools: frozenset[str]) -> bool:
    """Has a call of an authenticating tool succeeded in the conversation?"""
    calls: dict[str, str] = {}
    for event in conversation:
        if isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction) and event.call_id:
            calls[event.call_id] = event.action.name
        elif isinstance(event, ToolResultTurn) and not event.error and calls.get(event.call_id) in auth_tools:
            return True
    return False


def _auth_call(domain: Domain, facts: Sequence[Fact]) -> ToolCall | None:
    """The first authenticating tool of the domain whose required arguments are all facts."""
    values = {fact.name: fact.value for fact in facts}
    for tool in domain.toolkit:
        if tool.name not in domain.rules.auth_tools:
            continue
        required = tool.schema["function"]["parameters"].get("required", [])
        if required and set(required) <= set(values):
            return ToolCall(name=tool.name, arguments={name: values[name] for name in required})
    return None


def _after_authentication(domain: Domain, actions: Sequence[ToolCall]) -> list[ToolCall]:
    """The ground-truth calls that come after its first authentication that succeeds on the
    published data (none if it has none): those the ground truth itself authenticates for."""
    db = domain.fresh_database()
    for position, call in enumerate(actions):
        if (
            call.name in domain.rules.auth_tools
            and not domain.toolkit.call(db, call.name, call.arguments).error
        ):
            return list(actions[position + 1 :])
    return []


def _last_user_text(view: PolicyView) -> str:
    for event in reversed(view.conversation):
        if isinstance(event, UserTurn):
            return event.text
    return ""


class OraclePolicy:
    privileged: ClassVar[bool] = True

    def __init__(self, briefing: PrivilegedBriefing) -> None:
        self._briefing = briefing
        self._task = briefing.task
        self._plan: deque[PlanStep] = deque(build_plan(briefing.task, briefing.write_tools))
        self._asked = False
        self._reasks_left = len(briefing.task.scenario.facts)
        self._reconfirms_left = 2
        domain = load_domain(briefing.domain)
        self._rules = domain.rules
        self._auth: ToolCall | None = (
            _auth_call(domain, briefing.task.scenario.facts) if domain.rules.auth_tools else None
        )
        self._after_gold_auth = _after_authentication(domain, briefing.task.actions)

    def propose(self, view: PolicyView) -> Action:
        critique = view.critique
        if critique is not None:  # its actions are right by construction: it stands by them
            return critique.proposal
        return self._next(view)

    def _next(self, view: PolicyView) -> Action:
        missing = self._unheard_facts(view)
        if missing and self._reasks_left > 0:
            self._reasks_left -= 1
            return ReplyAction(text=ask_again([fact.keywords[0] for fact in missing]))
        while self._plan:
            step = self._plan[0]
            if step.needs_yes:
                answer = _last_user_text(view)
                if not is_affirmative(answer):
                    if not is_negative(answer) and self._reconfirms_left > 0 and step.call is not None:
                        self._reconfirms_left -= 1  # a question, not a no: explain and ask again
                        described = describe_call(step.call)
                        return ReplyAction(text=confirmation_request(described, with_reason=True))
                    self._plan.popleft()
                    continue
            if self._needs_auth(step, view):
                auth, self._auth = self._auth, None
                assert auth is not None
                return self._call(auth, view)
            self._plan.popleft()
            self._reconfirms_left = 2
            if step.kind == "ask":
                self._asked = True
            return self._render(step, view)
        return ReplyAction(text=ANYTHING_ELSE)

    def _needs_auth(self, step: PlanStep, view: PolicyView) -> bool:
        """Is the step an agent's call the policy allows only once the user is authenticated,
        with no authentication yet and the oracle's own look-up still to make?"""
        if self._auth is None or step.kind not in ("confirm", "call") or step.call is None:
            return False
        call = step.call
        if call.actor != "agent" or call.name in self._rules.auth_tools | self._rules.public_tools:
            return False
        if any(call is later for later in self._after_gold_auth):
            return False
        return not _authenticated(view.conversation, self._rules.auth_tools)

    def _unheard_facts(self, view: PolicyView) -> list[Fact]:
        """Facts the user was asked for but has not yet said correctly (it knows the truth)."""
        if not self._asked:
            return []
        heard = " ".join(event.text for event in view.conversation if isinstance(event, UserTurn))
        return [fact for fact in self._task.scenario.facts if fact.statement not in heard]

    def _render(self, step: PlanStep, view: PolicyView) -> Action:
        if step.kind == "ask":
            return ReplyAction(text=ask_for([fact.keywords[0] for fact in self._task.scenario.facts]))
        if step.kind == "confirm":
            assert step.call is not None
            return ReplyAction(text=confirmation_request(describe_call(step.call)))
        if step.kind == "call":
            assert step.call is not None
            return self._call(step.call, view)
        if step.kind == "instruct":
            device_step = next(d for d in self._task.scenario.device_steps if d.call == step.call)
            return ReplyAction(text=device_instruction(device_step.instruction))
        return ReplyAction(text=self._closing())

    def _call(self, call: ToolCall, view: PolicyView) -> Action:
        return ToolCallAction(name=call.name, arguments=dict(call.arguments))

    def _closing(self) -> str:
        parts = []
        if self._task.outcome == "refuse":
            reasons = self._task.earned.reasons if self._task.earned is not None else []
            because = "; ".join(reason.any_of[0] for reason in reasons)
            parts.append(
                "I'm sorry, but I can't do that: our policy does not allow it"
                + (f" (the reason: {because})." if because else ".")
            )
        if self._task.required_outputs:
            outputs = "; ".join(self._task.required_outputs)
            parts.append(f"Here is the information you asked for: {outputs}.")
        parts.append(ANYTHING_ELSE)
        return " ".join(parts)
