"""One trial: the simulated user, the policy, an optional critic and the environment.

    user opens
    loop until the user stops, a tool ends the conversation, or a limit is hit:
        the policy proposes an action                     (it sees a PolicyView)
        the critic verifies it, up to `rounds` times      (it sees a CriticView)
            rejected -> the critique goes back, the policy revises
        the action executes: a tool call on the sandbox, or a reply the user answers
    grade the final state against the expected state

An agent's bad output is recorded and answered with an error observation; an exception raised by
the policy's own code ends the trial as its failure (`agent_error`). Infrastructure errors and
domain bugs mark the trial `error`: it is not scored.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from castbench.agents.conversation import (
    Action,
    AgentTurn,
    CritiqueTurn,
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    Usage,
    UserTurn,
)
from castbench.agents.registry import AgentSpec
from castbench.agents.views import CriticView, PolicyView, briefing_for, user_briefing_for
from castbench.domain import Database, Domain, Task, ToolCrash
from castbench.errors import FatalInfrastructureError, InfrastructureError
from castbench.grading import grade_trial
from castbench.grading.labeler import label_action
from castbench.runner.records import EndReason, Proposal, StepRecord, StepTiming, TrialRecord

__all__ = ["AgentSet", "Limits", "Verification", "run_trial"]

_clock = time.perf_counter


class Limits(BaseModel):
    max_steps: int = Field(40, ge=1, description="agent actions per trial")


class Verification(BaseModel):
    """How a critic sits in the loop."""

    rounds: int = Field(3, ge=1, le=10, description="critic verdicts per step at most")
    on_exhausted: Literal["execute", "block"] = "execute"
    """What happens to a proposal still rejected in the last round."""
    scope: Literal["tool_calls", "writes", "all"] = "tool_calls"
    """Which actions are verified: every tool call, write calls only, or replies too."""


@dataclass(frozen=True)
class AgentSet:
    policy: AgentSpec
    user: AgentSpec
    critic: AgentSpec | None = None


class _AgentCrash(Exception):
    """The policy's (or critic's) own code raised: the agent's failure, not the harness's."""


def _in_scope(action: Action, scope: str, write_tools: frozenset[str]) -> bool:
    if isinstance(action, ToolCallAction):
        return scope != "writes" or action.name in write_tools
    return scope == "all"


@dataclass
class _Trial:
    domain: Domain
    task: Task
    agents: AgentSet
    limits: Limits
    verification: Verification
    seed: int
    trial_index: int
    traits: dict[str, str] | None = None
    db: Database = field(init=False)
    conversation: list[Event] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=dict)
    made_write: bool = False
    saw_tool_error: bool = False
    opening: str = ""

    def __post_init__(self) -> None:
        self.db = self.domain.fresh_database()
        privileged_policy = self.agents.policy.privileged
        self.policy_briefing = briefing_for(
            self.domain, self.task, self.seed, self.trial_index, privileged_policy, self._state
        )
        self.policy: Any = self.agents.policy.create(self.policy_briefing)
        self.critic: Any = None
        if self.agents.critic is not None and self.agents.critic.factory is not None:
            critic_briefing = briefing_for(
                self.domain,
                self.task,
                self.seed,
                self.trial_index,
                self.agents.critic.privileged,
                self._state,
            )
            self.critic_briefing = critic_briefing
            self.critic = self.agents.critic.create(critic_briefing)
        self.user: Any = self.agents.user.create(
            user_briefing_for(self.domain, self.task, self.seed, self.db, self.traits)
        )

    def _state(self) -> Database:
        """A copy of the true state for privileged agents (they can read it, not change it)."""
        return self.db.fork()

    def _charge(self, role: str, usage: Usage | None) -> None:
        if usage is not None:
            self.usage[role] = self.usage.get(role, Usage()) + usage

    def _propose(self, conversation: tuple[Event, ...]) -> tuple[Action, float]:
        start = _clock()
        try:
            action = self.policy.propose(PolicyView(self.policy_briefing, conversation))
        except InfrastructureError:
            raise
        except Exception as exc:
            raise _AgentCrash(f"policy raised {exc!r}\n{traceback.format_exc()}") from exc
        if not isinstance(action, ToolCallAction | ReplyAction | MalformedAction):
            action = MalformedAction(
                raw=repr(action)[:500], reason=f"policy returned {type(action).__name__}"
            )
        self._charge("policy", action.usage)
        return action, _clock() - start

    def _decide(self, timing: StepTiming) -> tuple[list[Proposal], Action | None]:
        """Propose, then verify and revise within the round budget."""
        history = tuple(self.conversation)
        action, spent = self._propose(history)
        timing.policy_s += spent
        proposals: list[Proposal] = []
        critiques: list[Event] = []
        for round_index in range(self.verification.rounds):
            # the privileged truth is only needed to judge a critic; without one it is skipped
            label = label_action(self.domain, self.task, action, self.db, history) if self.critic else None
            proposal = Proposal(round=round_index, action=action, label=label, policy_s=spent)
            proposals.append(proposal)
            if self.critic is None or not _in_scope(
                action, self.verification.scope, self.policy_briefing.write_tools
            ):
                return proposals, action
            start = _clock()
            try:
                verdict = self.critic.verify(CriticView(self.critic_briefing, history, action))
            except InfrastructureError:
                raise
            except Exception as exc:
                raise _AgentCrash(f"critic raised {exc!r}\n{traceback.format_exc()}") from exc
            proposal.critic_s = _clock() - start
            proposal.verdict = verdict
            timing.critic_s += proposal.critic_s
            self._charge("critic", verdict.usage)
            if not verdict.flags:
                return proposals, action
            if round_index + 1 == self.verification.rounds:
                break
            critiques.append(CritiqueTurn(verdict=verdict, proposal=action))
            action, spent = self._propose(history + tuple(critiques))
            timing.policy_s += spent
        if self.verification.on_exhausted == "execute":
            return proposals, action
        return proposals, None

    def _execute(self, step_index: int, action: Action, timing: StepTiming) -> tuple[Any, EndReason | None]:
        call_id = f"call_{step_index}"
        if isinstance(action, ReplyAction):
            self.replies.append(action.text)
            start = _clock()
            reply = self.user.reply(action.text)
            timing.user_s += _clock() - start
            turn = UserTurn(text=reply.text)
            self.conversation += [AgentTurn(action=action), turn]
            return turn, ("user_stop" if reply.stop else None)
        if isinstance(action, MalformedAction):
            result = ToolResultTurn(
                call_id=call_id,
                name="(malformed)",
                content=f"Error: your last output could not be used ({action.reason}).",
                error=True,
            )
            self.saw_tool_error = True
            self.conversation += [AgentTurn(action=action, call_id=call_id), result]
            return result, None
        observation = self.domain.toolkit.call(self.db, action.name, action.arguments)
        result = ToolResultTurn(
            call_id=call_id, name=action.name, content=observation.content, error=observation.error
        )
        if observation.error:
            self.saw_tool_error = True
        elif self.domain.toolkit.is_write(action.name):
            self.made_write = True
        self.conversation += [AgentTurn(action=action, call_id=call_id), result]
        return result, ("transfer" if observation.ends_conversation else None)

    def _block(self, step_index: int, proposals: list[Proposal]) -> ToolResultTurn:
        rejected = proposals[-1]
        critique = rejected.verdict.explanation if rejected.verdict else ""
        call_id = f"call_{step_index}"
        result = ToolResultTurn(
            call_id=call_id,
            name=getattr(rejected.action, "name", "(reply)"),
            content=f"Not executed: the verifier rejected this action. {critique}".strip(),
            error=True,
        )
        self.conversation += [AgentTurn(action=rejected.action, call_id=call_id), result]
        return result

    def run(self) -> tuple[EndReason, str | None]:
        try:
            self.opening = self.user.open()
            self.conversation.append(UserTurn(text=self.opening))
            while True:
                if len(self.steps) >= self.limits.max_steps:
                    return "max_steps", None
                step_start = _clock()
                timing = StepTiming()
                index = len(self.steps)
                proposals, action = self._decide(timing)
                end: EndReason | None = None
                if action is None:
                    observation: Any = self._block(index, proposals)
                else:
                    observation, end = self._execute(index, action, timing)
                timing.total_s = _clock() - step_start
                self.steps.append(
                    StepRecord(
                        index=index,
                        proposals=proposals,
                        action=action,
                        observation=observation,
                        user_stop=end == "user_stop",
                        timing=timing,
                    )
                )
                if end is not None:
                    return end, None
        except _AgentCrash as exc:
            return "agent_error", str(exc)
        except FatalInfrastructureError:
            raise  # no trial can succeed: the engine stops the run
        except InfrastructureError as exc:
            return "infra_error", str(exc)
        except ToolCrash as exc:
            return "harness_error", str(exc)


def run_trial(
    domain: Domain,
    task: Task,
    trial_index: int,
    seed: int,
    agents: AgentSet,
    expected: Database,
    limits: Limits | None = None,
    verification: Verification | None = None,
    traits: dict[str, str] | None = None,
) -> TrialRecord:
    started = _clock()
    trial = _Trial(
        domain, task, agents, limits or Limits(), verification or Verification(), seed, trial_index, traits
    )
    end_reason, error = trial.run()
    user_usage = getattr(trial.user, "usage", None)
    if isinstance(user_usage, Usage):
        trial.usage["user"] = user_usage
    scored = end_reason not in ("infra_error", "harness_error")
    grade = None
    if scored:
        grade = grade_trial(
            task,
            trial.db,
            expected,
            trial.replies,
            ended_cleanly=end_reason in ("user_stop", "transfer"),
            made_write=trial.made_write,
            saw_tool_error=trial.saw_tool_error,
            finished=end_reason not in ("agent_error", "max_steps"),
        )
    return TrialRecord(
        domain=domain.name,
        domain_version=domain.version,
        task_id=task.id,
        trial_index=trial_index,
        seed=seed,
        status="scored" if scored else "error",
        reward=grade.reward if grade is not None else None,
        end_reason=end_reason,
        opening=trial.opening,
        steps=trial.steps,
        grade=grade,
        usage=trial.usage,
        error=error,
        duration_s=_clock() - started,
    )
