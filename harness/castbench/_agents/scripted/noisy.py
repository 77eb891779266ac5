"""A seeded, error-injecting scripted policy: the oracle plus the three CAST mistakes.

For each ground-truth action, with probability `p` it makes one mistake: a hallucinated
argument, the wrong tool, or (for a write) a domain violation — executing without the user's
confirmation; a step the user must take on their side it forgets to ask for. After a mistaken
call that errors it may first ask the user to repeat a detail (probability `clarify`: what an
impatient user resents), then recovers (makes the right call) with probability `recover`.

When a critic rejects a proposal it insists on the same action with probability `insist`
(resistance); otherwise it revises: to the right action if the proposal was a mistake
(correction; for a write it skipped confirming, by asking the user first; for a right call that
uses a value a mistaken read left unrevealed, which the labeler calls a hallucination, by making
the look-up it lost first), or to a fresh mistake if the proposal was right (a harmful revision,
which is what an over-eager critic provokes).
Every draw comes from the trial's seed, so the same seed replays the same mistakes. With
`draws=stream` (the default) the draws come one after another from one generator; with
`draws=keyed` each decision has a generator of its own, keyed by the decision (which action, which
revision, which retry) and how often it was taken: two trials that part at a critic verdict then
draw the same for every decision they share (common random numbers), so what differs between
them is the verdict's doing and not the generator's shifted stream. Counterfactual branches
(`castbench_analyses.counterfactual`) read exactly that way under keyed draws. What it
injected is kept in `injected` (step and kind): tests and benches compare failure attribution
against it; nothing in the harness reads it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import ClassVar, Literal, NamedTuple

from pydantic import BaseModel, Field

from castbench._agents.scripted.mistakes import hallucinate, wrong_tool
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.plan import PlanStep, describe_call
from castbench._agents.views import PolicyView, PrivilegedBriefing
from castbench._base.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._base.dialogue import ask_again, confirmation_request
from castbench._domain.leaves import scalars
from castbench._domain.task import ToolCall
from castbench._grading.earned import executed_calls

__all__ = ["Injected", "NoisyParams", "NoisyPolicy"]

Mistake = Literal["hallucination", "wrong_tool", "domain_violation"]


class Injected(NamedTuple):
    """One mistake made on purpose: at which step (the agent turns before it) and of what kind
    (`skipped_instruction`: a step on the user's side it never asked for)."""

    step: int
    kind: Literal["hallucination", "wrong_tool", "domain_violation", "skipped_instruction"]


class NoisyParams(BaseModel):
    p: float = Field(0.3, ge=0, le=1, description="chance of a mistake per ground-truth action")
    recover: float = Field(0.3, ge=0, le=1, description="chance to fix a mistaken call that errored")
    insist: float = Field(0.3, ge=0, le=1, description="chance to repeat an action a critic rejected")
    clarify: float = Field(0.5, ge=0, le=1, description="chance to ask the user again after a failed call")
    draws: Literal["stream", "keyed"] = Field(
        "stream", description="one random stream, or a generator per decision (counterfactual branches)"
    )


def _call_key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True, default=str)


def _call_key_of(action: Action) -> str:
    """The key of a proposed action's decisions: its call, or its text."""
    if isinstance(action, ToolCallAction):
        return json.dumps([action.name, action.arguments], sort_keys=True, default=str)
    return json.dumps(action.model_dump(mode="json", exclude={"usage"}), sort_keys=True)


class NoisyPolicy(OraclePolicy):
    privileged: ClassVar[bool] = True

    def __init__(
        self,
        briefing: PrivilegedBriefing,
        p: float = 0.3,
        recover: float = 0.3,
        insist: float = 0.3,
        clarify: float = 0.5,
        draws: Literal["stream", "keyed"] = "stream",
    ) -> None:
        super().__init__(briefing)
        params = NoisyParams(p=p, recover=recover, insist=insist, clarify=clarify, draws=draws)
        self._p, self._recover, self._insist, self._clarify = (
            params.p,
            params.recover,
            params.insist,
            params.clarify,
        )
        self._rng = random.Random(f"noisy:{briefing.seed}")
        self._keyed = params.draws == "keyed"
        self._seed = briefing.seed
        self._taken: Counter[str] = Counter()
        self._schemas = {schema["function"]["name"]: schema for schema in briefing.tools}
        self._planned: dict[int, Mistake | None] = {}
        self._retry: ToolCall | None = None
        self._intended: ToolCall | None = None
        self._unconfirmed: ToolCall | None = None
        self._clarifying = False
        self.injected: list[Injected] = []

    def _draws(self, decision: str) -> random.Random:
        """The generator of one decision: the one stream, or (keyed) the decision's own."""
        if not self._keyed:
            return self._rng
        self._taken[decision] += 1
        return random.Random(f"noisy:{self._seed}:{decision}:{self._taken[decision]}")

    # -- revision under critique -----------------------------------------------------------
    def propose(self, view: PolicyView) -> Action:
        critique = view.critique
        if critique is None:
            return self._next(view)
        if self._draws(f"insist:{_call_key_of(critique.proposal)}").random() < self._insist:
            return critique.proposal
        proposal = critique.proposal
        intended = self._intended
        if intended is None or not isinstance(proposal, ToolCallAction):
            return proposal
        if (proposal.name, proposal.arguments) != (intended.name, intended.arguments):
            return self._as_action(intended)  # the critic caught a real mistake: correct it
        if intended is self._unconfirmed and critique.verdict.failure_type == "domain_violation":
            self._unconfirmed = None  # ask first this time; the call waits for a yes
            self._plan.appendleft(PlanStep("call", intended, needs_yes=True))
            return ReplyAction(text=confirmation_request(describe_call(intended)))
        lost = self._lost_reads(intended, view) if critique.verdict.failure_type == "hallucination" else []
        if lost:  # the critic is right: look up what a mistaken read left unrevealed, then the call
            self._plan.appendleft(
                PlanStep("call", intended, needs_yes=intended.name in self._briefing.write_tools)
            )
            for read in reversed(lost[1:]):
                self._plan.appendleft(PlanStep("call", read))
            for call in (intended, *lost):
                self._planned[id(call)] = None  # its mistake was made once; this time it is right
            self._intended = lost[0]
            return self._as_action(lost[0])
        return self._as_action(self._mistaken(intended, view))  # a right action rejected: comply wrongly

    def _lost_reads(self, intended: ToolCall, view: PolicyView) -> list[ToolCall]:
        """The ground-truth reads before `intended` that never ran, when `intended` uses a value the
        conversation has not shown: a mistaken read that went through (the wrong order looked up,
        the wrong search tool) left it unrevealed, and the policy, reading the ground truth,
        proposed the right call anyway. A critic that flags it as unsupported is right (the
        labeler calls it a hallucination), so the correction is the look-up it skipped, as an
        unconfirmed write's is asking first. Empty when every value was shown or no read was lost:
        then the flag is a false one and the policy complies wrongly."""
        shown = " ".join(
            event.text if isinstance(event, UserTurn) else event.content
            for event in view.conversation
            if isinstance(event, UserTurn) or (isinstance(event, ToolResultTurn) and not event.error)
        ).lower()
        if all(value.lower() in shown for value in scalars(intended.arguments, numbers=False)):
            return []
        ran = {_call_key(ToolCall(name=name, arguments=a)) for name, a in executed_calls(view.conversation)}
        before = next((i for i, call in enumerate(self._task.actions) if call is intended), 0)
        return [
            call
            for call in self._task.actions[:before]
            if call.actor == "agent"
            and call.name not in self._briefing.write_tools
            and _call_key(call) not in ran
        ]

    def _log(self, view: PolicyView, kind: str) -> None:
        step = sum(isinstance(event, AgentTurn) for event in view.conversation)
        self.injected.append(Injected(step, kind))  # type: ignore[arg-type]

    # -- the plan, with mistakes -----------------------------------------------------------
    def _next(self, view: PolicyView) -> Action:
        retry, self._retry = self._retry, None
        clarifying, self._clarifying = self._clarifying, False
        if retry is not None and (clarifying or self._last_call_failed(view)):
            facts = self._task.scenario.facts
            if (
                not clarifying
                and facts
                and self._draws(f"clarify:{_call_key(retry)}").random() < self._clarify
            ):
                self._retry, self._clarifying = retry, True  # ask the user again, then maybe recover
                return ReplyAction(
                    text="Sorry, something went wrong on my side. " + ask_again([facts[0].keywords[0]])
                )
            if self._draws(f"recover:{_call_key(retry)}").random() < self._recover:
                self._intended = retry
                return self._as_action(retry)
        step = self._plan[0] if self._plan else None
        if (
            step is not None
            and step.kind == "instruct"
            and self._draws(f"instruct:{_call_key(step.call) if step.call else ''}").random() < self._p
        ):
            self._plan.popleft()  # forgets to walk the user through a step on their side
            self._log(view, "skipped_instruction")
            return super()._next(view)
        if step is not None and step.kind == "confirm" and self._decide(step) == "domain_violation":
            self._plan.popleft()  # skip asking: the call that follows runs unconfirmed
            call = self._plan.popleft().call
            assert call is not None
            self._intended = self._unconfirmed = call
            self._log(view, "domain_violation")
            return self._as_action(call)
        return super()._next(view)

    def _call(self, call: ToolCall, view: PolicyView) -> Action:
        self._intended = call
        mistake = self._decide(PlanStep("call", call))
        if mistake in ("hallucination", "wrong_tool"):
            wrong = self._mistaken(call, view, kind=mistake)
            if wrong != call:  # logged by _mistaken
                self._retry = call
                return self._as_action(wrong)
        return self._as_action(call)

    def _decide(self, step: PlanStep) -> Mistake | None:
        """One draw per ground-truth action, made the first time the action comes up."""
        key = id(step.call)
        if key not in self._planned:
            rng = self._draws(f"decide:{_call_key(step.call) if step.call else ''}")
            if rng.random() >= self._p:
                self._planned[key] = None
            else:
                kinds: list[Mistake] = ["hallucination", "wrong_tool"]
                if step.call is not None and step.call.name in self._briefing.write_tools:
                    kinds.append("domain_violation")
                self._planned[key] = rng.choice(kinds)
        return self._planned[key]

    def _mistaken(self, call: ToolCall, view: PolicyView, kind: Mistake | None = None) -> ToolCall:
        """`call` with a hallucinated argument or swapped for the wrong tool."""
        rng = self._draws(f"mistake:{_call_key(call)}")
        kind = kind or rng.choice(["hallucination", "wrong_tool"])
        if kind == "wrong_tool":
            wrong = wrong_tool(call, self._briefing.tools, self._briefing.write_tools, rng)
            if wrong != call:
                self._log(view, "wrong_tool")
                return wrong
        seen = " ".join(e.content for e in view.conversation if isinstance(e, ToolResultTurn))
        wrong = hallucinate(call, self._schemas[call.name], seen, rng)
        if wrong != call:
            self._log(view, "hallucination")
        return wrong

    @staticmethod
    def _last_call_failed(view: PolicyView) -> bool:
        last = view.conversation[-1] if view.conversation else None
        return isinstance(last, ToolResultTurn) and last.error

    @staticmethod
    def _as_action(call: ToolCall) -> ToolCallAction:
        return ToolCallAction(name=call.name, arguments=dict(call.arguments))
