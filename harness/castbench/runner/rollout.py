"""One trial: the simulated user, the policy, an optional critic and the environment.

    user opens
    loop until the user stops, a tool ends the conversation, or a limit is hit:
        the policy proposes an action                     (it sees a PolicyView)
        the critic verifies it, up to `rounds` times      (it sees a CriticView)
            rejected -> the critique goes back, the policy revises
        the action executes: a tool call on the sandbox, or a reply the user answers
    grade the final state against the expected state (and, for the strict reward, every executed
    action against the domain policy: the privileged labeler labels each proposal as it is made)

An agent's bad output is recorded and answered with an error observation. Whatever else an agent
does wrong ends its trial, never the run: a policy or critic that raises (in `__init__` too; a
provider's refusal of the conversation it built, `ProviderRejection`, included), returns the
wrong type or something that cannot be stored fails the trial (`agent_error`, scored 0); one
that overruns its time limit ends it as `timeout` (scored 0). A simulated user that does so leaves
the trial unscored (it is the environment, not the agent under test). Infrastructure errors and
domain bugs mark the trial `error`: it is not scored.

Every call into agent code goes through `_Trial._guarded`, on the trial's `AgentThread`, so the
trial can stop waiting for it (see `castbench.runner.deadline`). Agents are reached through their
transports (`castbench.agents.transports`): in process, or in a worker process of their own,
which the transport stops when it overruns the step time limit and which is released (or
stopped, if still at work) when the trial ends.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
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
    Verdict,
    as_action,
)
from castbench.agents.protocols import UserReply, output_problem
from castbench.agents.registry import AgentSpec
from castbench.agents.transports import Transport, connect
from castbench.agents.views import CriticView, PolicyView, briefing_for, user_briefing_for
from castbench.domain import Database, Domain, Task, ToolCrash
from castbench.errors import AgentError, AgentTimeout, FatalInfrastructureError, InfrastructureError
from castbench.grading import GradingMode, grade_trial
from castbench.grading.labeler import label_action
from castbench.runner.deadline import AgentThread, Cancelled, TimeLimits
from castbench.runner.records import (
    CLEAN_ENDS,
    UNFINISHED_ENDS,
    EndReason,
    Proposal,
    StepRecord,
    StepTiming,
    TrialRecord,
    policy_breaks,
)

__all__ = ["AgentSet", "Limits", "TimeLimits", "Verification", "run_trial"]

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


class _TrialEnd(Exception):
    """An agent ended the trial early: it raised, returned something unusable, or overran."""

    def __init__(self, reason: EndReason, message: str, scored: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.scored = scored


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
    time_limits: TimeLimits = field(default_factory=TimeLimits)
    stop: threading.Event | None = None
    """Set when the run is interrupted: the trial is abandoned at its next agent call."""
    db: Database = field(init=False)
    conversation: list[Event] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=dict)
    made_write: bool = False
    saw_tool_error: bool = False
    opening: str = ""
    opened: list[tuple[Transport, Any]] = field(default_factory=list)
    """Every agent this trial opened, with its transport: all are released when it ends."""

    def __post_init__(self) -> None:
        self.db = self.domain.fresh_database()
        self.started = time.monotonic()
        self.step_started = self.started
        self.agent_thread = AgentThread(f"agents-{self.task.id}-{self.trial_index}", self.stop)
        self.policy_briefing = briefing_for(
            self.domain, self.task, self.seed, self.trial_index, self.agents.policy.privileged, self._state
        )
        self.critic_briefing: Any = None
        if self.agents.critic is not None and self.agents.critic.kind != "none":
            self.critic_briefing = briefing_for(
                self.domain,
                self.task,
                self.seed,
                self.trial_index,
                self.agents.critic.privileged,
                self._state,
            )
        self.policy: Any = None
        self.critic: Any = None
        self.user: Any = None

    def _create_agents(self) -> None:
        """Agents are built inside the trial: a constructor that raises or hangs is that trial's
        failure, like any other agent code."""
        user_briefing = user_briefing_for(self.domain, self.task, self.seed, self.db, self.traits)
        self.user = self._open("user", self.agents.user, user_briefing)
        self.policy = self._open("policy", self.agents.policy, self.policy_briefing)
        if self.critic_briefing is not None:
            assert self.agents.critic is not None
            self.critic = self._open("critic", self.agents.critic, self.critic_briefing)

    def _open(self, role: str, spec: AgentSpec, briefing: Any) -> Any:
        """The role's agent for this trial, through its transport. A worker agent is held to the
        time limit by its transport, which can stop its process; starting a fresh worker (after
        one was stopped: seconds on a busy machine) is castbench's time, not the agent's."""
        transport = connect(spec)
        deadline, _ = self._deadline()
        opening = time.monotonic()
        left = None if deadline is None else max(0.0, deadline - opening)
        agent = self._guarded(
            role, transport.open, briefing, left, what=f"creating the {role}", wait=transport.isolated
        )
        self.opened.append((transport, agent))
        if transport.isolated:  # bounded by what was left; the clocks run on from here
            spent = time.monotonic() - opening
            self.started += spent
            self.step_started += spent
        return agent

    def release(self) -> None:
        for transport, agent in self.opened:
            transport.release(agent)
        self.opened.clear()

    def _deadline(self) -> tuple[float | None, str]:
        """The nearer of the step's and the trial's deadline, and which limit it is."""
        limits = self.time_limits
        candidates = []
        if limits.step_s is not None:
            candidates.append((self.step_started + limits.step_s, f"step time limit ({limits.step_s:g} s)"))
        if limits.trial_s is not None:
            candidates.append((self.started + limits.trial_s, f"trial time limit ({limits.trial_s:g} s)"))
        return min(candidates) if candidates else (None, "")

    def _guarded(self, role: str, fn: Callable[..., Any], *args: Any, what: str, wait: bool = False) -> Any:
        """Call agent code. Its exceptions and overruns end the trial: as the agent's failure for
        the policy and critic; unscored for the simulated user (not the agent under test), and as
        a harness error when that user is a built-in one (our bug). `wait`: no deadline here, the
        callee enforces its own."""
        deadline, limit = self._deadline()
        try:
            return self.agent_thread.call(fn, *args, deadline=None if wait else deadline, what=what)
        except (InfrastructureError, Cancelled):
            raise
        except AgentTimeout as exc:
            message = f"{role} overran the {limit} while {what} at step {len(self.steps)}"
            raise _TrialEnd("timeout", str(exc) if not limit else message, role != "user") from exc
        except AgentError as exc:  # seen by its transport: the message says what happened
            self._fail(role, f"{exc} (while {what})")
        except (Exception, SystemExit) as exc:  # an agent calling sys.exit() ends its trial only
            self._fail(role, f"{role} raised {exc!r} while {what}\n{traceback.format_exc()}")
        raise AssertionError("unreachable")

    def _fail(self, role: str, message: str) -> None:
        if role != "user":
            raise _TrialEnd("agent_error", message)
        builtin = self.agents.user.kind == "builtin"
        raise _TrialEnd("harness_error" if builtin else "agent_error", message, scored=False)

    def _check(self, role: str, value: Any, expected: type | tuple[type, ...], what: str) -> None:
        problem = output_problem(role, value, expected, what)
        if problem is not None:
            self._fail(role, problem)

    def _state(self) -> Database:
        """A copy of the true state for privileged agents (they can read it, not change it)."""
        return self.db.fork()

    def _charge(self, role: str, usage: Usage | None) -> None:
        if usage is not None:
            self.usage[role] = self.usage.get(role, Usage()) + usage

    def _propose(self, conversation: tuple[Event, ...]) -> tuple[Action, float]:
        start = _clock()
        view = PolicyView(self.policy_briefing, conversation)
        action = as_action(
            self._guarded("policy", self.policy.propose, view, what="proposing an action"), "policy"
        )
        self._check("policy", action, (ToolCallAction, ReplyAction, MalformedAction), "action")
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
            # the privileged truth judges the critic and, for the strict reward, the executed action
            label = label_action(self.domain, self.task, action, self.db, history)
            proposal = Proposal(round=round_index, action=action, label=label, policy_s=spent)
            proposals.append(proposal)
            if self.critic is None or not _in_scope(
                action, self.verification.scope, self.policy_briefing.write_tools
            ):
                return proposals, action
            start = _clock()
            view = CriticView(self.critic_briefing, history, action)
            verdict = self._guarded("critic", self.critic.verify, view, what="verifying an action")
            self._check("critic", verdict, Verdict, "verdict")
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
            reply = self._guarded("user", self.user.reply, action.text, what="replying")
            self._check("user", reply, UserReply, "reply")
            self._check("user", reply.text, str, "reply text")
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

    def run(self) -> tuple[EndReason, str | None, bool]:
        """How the trial ended, the error if any, and whether it is scored."""
        try:
            return (*self._converse(), True)
        except _TrialEnd as end:
            return end.reason, str(end), end.scored
        except FatalInfrastructureError:
            raise  # no trial can succeed: the engine stops the run
        except InfrastructureError as exc:
            return "infra_error", str(exc), False
        except ToolCrash as exc:
            return "harness_error", str(exc), False
        finally:
            self.agent_thread.close()
            self.release()

    def _converse(self) -> tuple[EndReason, str | None]:
        self._create_agents()
        opening = self._guarded("user", self.user.open, what="opening")
        self._check("user", opening, str, "opening")
        self.opening = opening
        self.conversation.append(UserTurn(text=self.opening))
        while True:
            if len(self.steps) >= self.limits.max_steps:
                return "max_steps", None
            self.step_started = time.monotonic()
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
    time_limits: TimeLimits | None = None,
    stop: threading.Event | None = None,
    grading: GradingMode = "castbench",
) -> TrialRecord:
    """One trial, start to grade. `Cancelled` when `stop` is set while an agent is at work (the
    trial is then dropped)."""
    started = _clock()
    trial = _Trial(
        domain,
        task,
        agents,
        limits or Limits(),
        verification or Verification(),
        seed,
        trial_index,
        traits,
        time_limits or TimeLimits(),
        stop,
    )
    end_reason, error, scored = trial.run()
    user_usage = getattr(trial.user, "usage", None)
    if isinstance(user_usage, Usage):
        trial.usage["user"] = user_usage
    scored = scored and end_reason not in ("infra_error", "harness_error")
    grade = None
    if scored and end_reason != "timeout":  # an abandoned agent may still be at work: no grade
        grade = grade_trial(
            task,
            trial.db,
            expected,
            trial.replies,
            ended_cleanly=end_reason in CLEAN_ENDS,
            made_write=trial.made_write,
            saw_tool_error=trial.saw_tool_error,
            finished=end_reason not in UNFINISHED_ENDS,
            mode=grading,
            policy_breaks=policy_breaks(trial.steps),
            conversation=trial.conversation,
        )
    return TrialRecord(
        domain=domain.name,
        domain_version=domain.version,
        task_id=task.id,
        trial_index=trial_index,
        seed=seed,
        status="scored" if scored else "error",
        reward=grade.reward if grade is not None else (0.0 if scored else None),
        end_reason=end_reason,
        opening=trial.opening,
        steps=trial.steps,
        grade=grade,
        usage=trial.usage,
        error=error,
        duration_s=_clock() - started,
    )
