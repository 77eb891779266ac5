"""One trial as a state machine: every driver of castbench (the eval engine with a policy it holds,
the MCP server whose tool calls come from an outside agent, the agent-service adapter, the
trainers' `Environment`, `verify`'s replay of a stored trial) runs its trials through an
`Episode`, so records, labels and grades come out the same whoever proposes the actions. Each is
built from a `TrialSpec` (what the trial is: domain, task, seed, agents, expected state, limits,
critic loop, traits, grading, perturbations) and a `TrialRuntime` (how it is played here: the
execution plan, time limits, stop flag, a branch's or a verifier's hooks), `castbench._trial.spec`.

    reset()        the user opens; the policy's first view
    step(action)   one proposal: the critic verifies it (a rejection with rounds left gives the
                   policy a revision view ending in the critique); an accepted (or exhausted)
                   proposal executes: a tool call on the sandbox, or a reply the user answers;
                   the next view, or None when the trial is over
    record()       the graded `TrialRecord` (the grade from the same grader as every run)

An agent's bad output is recorded and answered with an error observation. Whatever else an agent
does wrong ends its trial, never the run: a policy or critic that raises (in `__init__` too; a
provider's refusal of the conversation it built, `ProviderRejection`, included), returns the
wrong type or something that cannot be stored fails the trial (`agent_error`, scored 0); one
that overruns its time limit ends it as `timeout` (scored 0). A simulated user that does so leaves
the trial unscored (it is the environment, not the agent under test). Infrastructure errors and
domain bugs mark the trial `error`: it is not scored. A driver whose outside agent fails (a
service that times out, crashes or hangs up) ends the episode with `fail`.

Every call into agent code goes through `_guarded`, which runs it as the run's execution plan
says for its role (`castbench._trial.execution`): castbench's own scripted agents, which never
block, on the trial's thread; a model on the lean client, when the trial runs on the model loop
(`castbench._agents.models.loop`), directly, its waits awaits on the loop bounded by the step
deadline; anything else (and a lean-client model whose driver steps the episode on a thread of
its own: a replay, the MCP server, a trainer) on the trial's `AgentThread`, so the trial can stop
waiting for it (see `castbench._trial.deadline`). Agents are reached through the transports the plan chose
(`castbench._agents.transports`): in process, or in a worker process of their own, which the
transport stops when it overruns the step time limit and which is released (or stopped, if still
at work) when the trial ends.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from castbench._agents.models import loop
from castbench._agents.protocols import Critic, Policy, UserReply, UserSimulator, output_problem
from castbench._agents.registry import AgentSpec, Role
from castbench._agents.transports import CallMode, Transport, connect
from castbench._agents.views import Briefing, CriticView, PolicyView, briefing_for, user_briefing_for
from castbench._base.conversation import (
    Action,
    AgentTurn,
    CritiqueTurn,
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    Usage,
    UserToolCall,
    UserTurn,
    Verdict,
)
from castbench._base.errors import AgentError, AgentTimeout, FatalInfrastructureError, InfrastructureError
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task, ToolCall
from castbench._domain.tools import ToolCrash
from castbench._grading import Grade, grade_trial
from castbench._grading.labeler import CallRun, ConfirmationJudge, label_action
from castbench._grading.replies import ReplyCheck, confirmation_check
from castbench._records.config import Limits, Verification
from castbench._records.trial import (
    CLEAN_ENDS,
    UNFINISHED_ENDS,
    ActionLabel,
    EndReason,
    Proposal,
    StepRecord,
    StepTiming,
    TrialRecord,
    policy_breaks,
)
from castbench._trial.deadline import AgentThread, Cancelled
from castbench._trial.execution import AgentSet, plan_execution
from castbench._trial.spec import DEFAULT_RUNTIME, Labeler, Overrule, TrialJudge, TrialRuntime, TrialSpec

__all__ = [
    "AgentSet",
    "Episode",
    "EpisodeOver",
    "Labeler",
    "Limits",
    "Overrule",
    "StepOutcome",
    "TrialJudge",
    "TrialRuntime",
    "TrialSpec",
    "Verification",
]


_clock = time.perf_counter
_ACTIONS = (ToolCallAction, ReplyAction, MalformedAction)


class StepOutcome(NamedTuple):
    view: PolicyView | None
    """The policy's next view; `None` once the trial is over."""
    observation: ToolResultTurn | UserTurn | CritiqueTurn | None
    """What this action produced: a tool result (or the block of it), the user's answer, or the
    critique of it; `None` when the trial ended while it was handled (an agent failed)."""


class EpisodeOver(RuntimeError):
    """`step` on an episode that has ended."""


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
class _Step:
    """The step in progress: its proposals so far and the critiques the policy has seen."""

    history: tuple[Event, ...]
    started: float
    timing: StepTiming = field(default_factory=StepTiming)
    proposals: list[Proposal] = field(default_factory=list)
    critiques: list[Event] = field(default_factory=list)
    fault: str | None = None
    """The fault the harness injected into the executed tool call, if any."""
    asked: bool = True
    """The critic gave the verdict of the step's latest proposal."""
    unasked: int = 0
    """Verdicts of this step a counterfactual branch gave without asking the critic (it is still
    asked as many times as in any step that runs out of rounds)."""
    user_stop: bool = False
    """The user ended the conversation in answer to this step's reply."""


class Episode:
    """One trial over its own sandbox, simulated user and optional critic. Thread-safe: an MCP
    server's tool calls and a service driver's replies may arrive on different threads."""

    def __init__(self, spec: TrialSpec, runtime: TrialRuntime = DEFAULT_RUNTIME) -> None:
        """The trial `spec` describes (`castbench._trial.spec.TrialSpec`), played as `runtime`
        says (`TrialRuntime`: the run's execution plan, by default the plan of one trial; the
        agents' time limits; the run's stop flag; a branch's or a verifier's hooks)."""
        self.spec, self.runtime = spec, runtime
        domain, task, agents, seed = spec.domain, spec.task, spec.agents, spec.seed
        self._judge: TrialJudge | None = runtime.judge
        # the module's labeler, looked up per episode (a test stubs `episode.label_action`)
        self._labeler: Labeler = label_action if runtime.labeler is None else runtime.labeler
        self._confirmations: dict[tuple[int, int], ReplyCheck] = {}
        """With a reply judge: each proposed write's confirmation check, by (step, round)."""
        perturbations = spec.perturbations
        self._perturber = perturbations.perturber(seed) if perturbations is not None else None
        """Faults and perturbations the harness injects; None (one check per call) when off."""
        self.plan = runtime.plan or plan_execution(agents)
        self._modes: dict[str, CallMode] = {role: call.mode for role, call in self.plan.calls.items()}
        self.db = domain.initial_database(task)
        self.conversation: list[Event] = []
        self.user_calls: list[UserToolCall] = []
        """User-side calls of the reply under way (recorded on the user's turn)."""
        self.steps: list[StepRecord] = []
        self.replies: list[str] = []
        self.usage: dict[str, Usage] = {}
        self.made_write = self.saw_tool_error = False
        self.tool_errors = 0
        """Tool calls (and unusable outputs) answered with an error so far (`Limits.max_tool_errors`)."""
        self.opening = ""
        self.end_reason: EndReason | None = None
        self.error: str | None = None
        self.scored = True
        self.ended = threading.Event()
        """Set when the trial is over (a server waits on it)."""
        self._lock = threading.RLock()
        self._opened: list[tuple[Role, Transport, Any]] = []
        self.agent_output: dict[str, str] = {}
        """Per role: what its agent's processes wrote (a worker's trial process, capped)."""
        self._step: _Step | None = None
        self.last_proposal: Proposal | None = None
        """The latest proposal, with the labeler's truth about it (and the critic's verdict)."""
        self._clock_started = _clock()
        self.started = self.step_started = time.monotonic()
        self._view_at = self._clock_started
        self.agent_thread = AgentThread(f"agents-{task.id}-{spec.trial_index}", runtime.stop)
        privileged = agents.policy is not None and agents.policy.privileged
        self.policy_briefing: Briefing = briefing_for(
            domain, task, seed, spec.trial_index, privileged, self._state
        )
        self.critic_briefing: Briefing | None = None
        if agents.critic is not None and agents.critic.kind != "none":
            self.critic_briefing = briefing_for(
                domain, task, seed, spec.trial_index, agents.critic.privileged, self._state
            )
        self.policy: Policy | None = None
        """The policy this episode holds (None until `reset`, and for one driven from outside)."""
        self.critic: Critic | None = None
        self.user: UserSimulator | None = None

    # what the spec says, read through the episode (drivers and tests read these)
    @property
    def domain(self) -> Domain:
        return self.spec.domain

    @property
    def task(self) -> Task:
        return self.spec.task

    @property
    def limits(self) -> Limits:
        return self.spec.limits

    @property
    def expected(self) -> Database:
        return self.spec.expected

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    # -- driving ---------------------------------------------------------------------------

    def reset(self) -> PolicyView | None:
        """Open the agents and the conversation: the policy's first view (`None` if the trial
        already ended, an agent failing to start)."""
        with self._lock, self._ending():
            self._create_agents()
            assert self.user is not None  # a user that failed to open ended the trial above
            opening = self._guarded("user", self.user.open, what="opening")
            self._check("user", opening, str, "opening")
            self.opening = opening if self._perturber is None else self._perturber.user_text(0, opening)
            self.conversation.append(UserTurn(text=self.opening))
        return self._next_view()

    def play(self) -> None:
        """Play the trial to its end with the policy this episode holds (the caller closes it)."""
        self.reset()
        while not self.done:
            self.act()

    def act(self) -> StepOutcome:
        """One proposal of the policy this episode holds, stepped."""
        if self.policy is None:
            raise EpisodeOver("this episode holds no policy: its driver steps it with actions")
        view = self.view()
        with self._lock, self._ending():
            start = _clock()
            action = self._guarded("policy", self.policy.propose, view, what="proposing an action")
            return self.step(action, _clock() - start)
        return StepOutcome(None, None)

    def step(self, action: Any, policy_s: float | None = None) -> StepOutcome:
        """The policy's next proposal. `policy_s`: the time it took (by default, the time since
        the last view was given out: an outside agent's thinking and its transport)."""
        with self._lock:
            if self.done:
                raise EpisodeOver(
                    f"trial {self.spec.task.id}#{self.spec.trial_index} is over ({self.end_reason})"
                )
            spent = _clock() - self._view_at if policy_s is None else policy_s
            with self._ending():
                return self._advance(action, spent)
            return StepOutcome(None, None)

    def fail(self, reason: EndReason, message: str) -> None:
        """End the trial for its driver: the outside policy failed (`agent_error`, `timeout`)."""
        with self._lock:
            if not self.done:
                self._finish(reason, message, reason not in ("infra_error", "harness_error"))

    def stop(self) -> None:
        """End the trial for its driver because the outside agent ended the conversation itself
        (an MCP client that closed its session after its work): `agent_stop`, graded like any
        other ending, not `max_steps`."""
        with self._lock:
            if not self.done:
                self._finish("agent_stop", None, True)

    def view(self) -> PolicyView:
        """The policy's current view: during a revision it ends with the critiques."""
        extra = tuple(self._step.critiques) if self._step is not None else ()
        base = self._step.history if self._step is not None else tuple(self.conversation)
        return PolicyView(self.policy_briefing, base + extra)

    def close(self) -> None:
        """Let go of the agents (the trial may be abandoned: Ctrl-C, a fatal provider error)."""
        self.agent_thread.close()
        for role, transport, agent in self._opened:
            transport.release(agent)
            output = getattr(agent, "output", None)
            shown = output.shown() if output is not None and hasattr(output, "shown") else ""
            if shown:
                self.agent_output[role] = shown
        self._opened.clear()

    def record(self) -> TrialRecord:
        """The trial's record, graded (ending it as `max_steps` if its driver stopped early)."""
        with self._lock:
            if not self.done:
                self._finish("max_steps", None, True)
        usage = self._usage()
        scored = self.scored and self.end_reason not in ("infra_error", "harness_error")
        assert self.end_reason is not None
        grade = None
        judge = self._reply_judge() if scored and self.end_reason != "timeout" else None
        if scored and self.end_reason != "timeout":  # an abandoned agent may still be at work: no grade
            grade = self._grade(judge)
        end_reason, error = self.end_reason, self.error
        if self._judge is not None and self._judge.usage.calls:  # explicit yeses asked mid-trial too
            usage["reply_judge"] = self._judge.usage
        if judge is not None:
            unread = grade.judge_unreadable if grade is not None else []
            if unread:  # the judge's failure: the trial is not scored, its grade says which checks
                scored, end_reason = False, "infra_error"
                error = f"reply judge {judge.settings.model}: {unread[0].judge_reason}"
        return TrialRecord(
            domain=self.spec.domain.name,
            domain_version=self.spec.domain.version,
            task_id=self.spec.task.id,
            trial_index=self.spec.trial_index,
            seed=self.spec.seed,
            status="scored" if scored else "error",
            reward=(grade.reward if grade is not None else 0.0) if scored else None,
            end_reason=end_reason,
            opening=self.opening,
            steps=self.steps,
            grade=grade,
            usage=usage,
            agent_output=dict(self.agent_output),
            error=error,
            duration_s=_clock() - self._clock_started,
        )

    def _usage(self) -> dict[str, Usage]:
        """What each role's agent spent, a model's calls that got no answer included."""
        user_usage = getattr(self.user, "usage", None)
        if isinstance(user_usage, Usage):
            self.usage["user"] = user_usage
        usage = dict(self.usage)
        for role, agent in (("policy", self.policy), ("critic", self.critic)):
            failed = getattr(agent, "failed_usage", None)  # a model's calls that got no answer
            if isinstance(failed, Usage) and failed.calls:
                usage[role] = usage.get(role, Usage()) + failed
        return usage

    def _grade(self, judge: TrialJudge | None) -> Grade:
        """The ended trial's grade, by the grader every run uses."""
        spec, end_reason = self.spec, self.end_reason
        return grade_trial(
            spec.task,
            self.db,
            spec.expected,
            self.replies,
            ended_cleanly=end_reason in CLEAN_ENDS,
            made_write=self.made_write,
            saw_tool_error=self.saw_tool_error,
            finished=end_reason not in UNFINISHED_ENDS,
            mode=spec.grading,
            policy_breaks=policy_breaks(self.steps) if spec.labelled else None,
            conversation=self.conversation,
            checks=spec.domain.task_checks(spec.task, self.db, self.conversation),
            judge=judge,
            confirmations=[
                check
                for step in self.steps
                for proposal in step.proposals
                if (check := self._confirmations.get((step.index, proposal.round))) is not None
            ],
        )

    def _reply_judge(self) -> TrialJudge | None:
        """The trial's reply judge (one per trial: its usage is the trial's), None without one."""
        if self._judge is None and self.spec.reply_judge is not None:
            from castbench._agents.models.client import TrialKey  # judged runs' only (the model client)
            from castbench._agents.models.reply_judge import ModelReplyJudge

            self._judge = ModelReplyJudge(
                self.spec.reply_judge, TrialKey(self.spec.seed, self.spec.trial_index)
            )
        return self._judge

    def _confirmation(self, round: int) -> ConfirmationJudge | None:
        """The labeler's judge of the explicit yes for this step's proposal `round` (None without
        a reply judge): it asks the model, keeps the check, and the label follows its verdict. It
        runs inside the privileged labeler, whose labels no policy or critic ever sees."""
        judge = self._reply_judge()
        if judge is None:
            return None
        index = len(self.steps)

        def confirm(
            call: ToolCall, confirmed: bool, since_last_write: Sequence[Event], results: Sequence[str]
        ) -> bool:
            check = confirmation_check(call.canonical(), confirmed, since_last_write, index, round)
            replies = [
                e.action.text
                for e in since_last_write
                if isinstance(e, AgentTurn) and isinstance(e.action, ReplyAction)
            ]
            (judged,) = judge([check], replies, results)
            self._confirmations[(index, round)] = judged
            return judged.decided

        return confirm

    # -- the machine -----------------------------------------------------------------------

    @contextmanager
    def _ending(self) -> Iterator[None]:
        """Turn an agent's failure, an infrastructure error or a domain bug into the trial's end.
        A fatal provider error and a run interruption go up to the engine."""
        try:
            yield
        except _TrialEnd as end:
            self._finish(end.reason, str(end), end.scored)
        except (FatalInfrastructureError, Cancelled):
            self.close()
            raise
        except InfrastructureError as exc:
            self._finish("infra_error", str(exc), False)
        except ToolCrash as exc:
            self._finish("harness_error", str(exc), False)

    def _finish(self, reason: EndReason, error: str | None, scored: bool) -> None:
        self.end_reason, self.error, self.scored = reason, error, scored
        self._step = None
        self.close()
        self.ended.set()

    def _next_view(self) -> PolicyView | None:
        if self.done:
            return None
        self.step_started = time.monotonic()
        self._view_at = _clock()
        return self.view()

    def _advance(self, action: Any, spent: float, again: bool = False) -> StepOutcome:
        """`again`: the same action proposed anew in this step's next round (a branch's policy
        that stands by a flagged proposal): already checked and charged."""
        # anything but an action (a dict, None) is a bug of the agent's code: agent_error, not a
        # malformed action it would be asked to retry for every step (those are a model's output)
        if not again:
            if not (self.runtime.stored_actions and isinstance(action, _ACTIONS)):
                self._check("policy", action, _ACTIONS, "action")
            self._charge("policy", action.usage)
        step = self._step or _Step(tuple(self.conversation), self._view_at)
        self._step = step
        step.timing.policy_s += spent
        run = self._call_run(action)
        label = self._label(action, step, run) if self.spec.labelled else None
        # the step's records are built from values already checked (the action by `_check`, the
        # rest the harness's own): constructed, not validated again, at every step
        proposal = Proposal.model_construct(
            round=len(step.proposals), action=action, label=label, policy_s=spent
        )
        step.proposals.append(proposal)
        self.last_proposal = proposal
        executed: Action | None = action
        if self.critic is not None and _in_scope(
            action, self.spec.verification.scope, self.policy_briefing.write_tools
        ):
            verdict = self._verify(step, proposal)
            if verdict.flags:
                revised = self._flagged(action, step, proposal, verdict)
                if revised is not None:
                    return revised
                if self.spec.verification.on_exhausted == "block":
                    executed = None
        return self._conclude(step, action, executed, run)

    def _call_run(self, action: Action) -> CallRun | None:
        """The privileged truth judges the critic and, for the strict reward, the executed action;
        a tool call it runs on a copy of the state is the execution too, if nothing comes between
        (none under perturbations, whose faults answer instead of the tool)."""
        if (
            self.spec.labelled
            and self._perturber is None
            and isinstance(action, ToolCallAction)
            and isinstance(action.arguments, dict)
        ):
            return CallRun(self.spec.domain, action.name, action.arguments, self.db)
        return None

    def _label(self, action: Action, step: _Step, run: CallRun | None) -> ActionLabel | None:
        """The labeler's truth about the proposal, on the state and conversation it meets."""
        spec = self.spec
        confirm = self._confirmation(len(step.proposals))
        return self._labeler(spec.domain, spec.task, action, self.db, step.history, confirm, run)

    def _flagged(
        self, action: Action, step: _Step, proposal: Proposal, verdict: Verdict
    ) -> StepOutcome | None:
        """A flagged proposal with rounds left: the policy's revision view ending in the critique
        (or, on a branch whose policy stands by it, the same proposal again); None when the
        rounds ran out, the proposal then going as the run's `on_exhausted` says."""
        rounds = self.spec.verification.rounds
        if proposal.round + 1 < rounds:
            overrule = self.runtime.overrule
            pause = None if overrule is None else overrule.stands(len(self.steps), proposal.round)
            if pause is not None:
                if pause > 0:
                    time.sleep(pause)
                return self._advance(action, pause, again=True)
            critique = CritiqueTurn(verdict=verdict, proposal=action)
            step.critiques.append(critique)
            self._view_at = _clock()
            return StepOutcome(self.view(), critique)
        if step.unasked and step.asked and proposal.round + 1 - step.unasked < rounds:
            # a branch gave a verdict of this step without asking the critic: the critic has a
            # round of its own left, which it gives on the same proposal (a policy that
            # insists), the proposal then going as exhausted ones do
            time.sleep(proposal.policy_s)
            return self._advance(action, proposal.policy_s, again=True)
        return None

    def _conclude(
        self, step: _Step, action: Action, executed: Action | None, run: CallRun | None
    ) -> StepOutcome:
        """The step's outcome: its action executed (or the critic's block answered), the step
        recorded, the trial ended if a limit or the action ends it; the policy's next view."""
        index = len(self.steps)
        end: EndReason | None = None
        if executed is None:
            observation: ToolResultTurn | UserTurn = self._block(index, step.proposals)
        else:
            observation, end = self._execute(index, executed, step, run if executed is action else None)
        step.timing.total_s = _clock() - step.started
        self.steps.append(
            StepRecord.model_construct(
                index=index,
                proposals=step.proposals,
                action=executed,
                observation=observation,
                user_stop=step.user_stop,
                timing=step.timing,
                fault=step.fault,
            )
        )
        self._step = None
        end = self._limit_reached(end)
        if end is not None:
            self._finish(end, None, True)
        return StepOutcome(self._next_view(), observation)

    def _limit_reached(self, end: EndReason | None) -> EndReason | None:
        """The step's end under the run's limits, checked in τ²'s order (the later one wins):
        `max_messages` (τ² counts the user's opening and two messages per action, and its limit
        overrides a user who left at the message that reaches it), then `max_tool_errors`;
        `max_steps` (agent actions) ends a trial nothing else ended."""
        limits, taken = self.spec.limits, len(self.steps)
        if limits.max_messages is not None and 2 * taken + 1 >= limits.max_messages:
            end = "max_steps" if end in (None, "user_stop", "agent_stop") else end
        if limits.max_tool_errors is not None and self.tool_errors >= limits.max_tool_errors:
            end = "too_many_errors" if end in (None, "max_steps") else end
        if end is None and taken >= limits.max_steps:
            end = "max_steps"
        return end

    def _verify(self, step: _Step, proposal: Proposal) -> Verdict:
        index, overrule = len(self.steps), self.runtime.overrule
        now = _clock()
        given = (
            None
            if overrule is None
            else overrule.before(index, proposal.round, now - step.started, now - self._clock_started)
        )
        start = _clock()
        if given is None:
            assert self.critic is not None and self.critic_briefing is not None  # `_advance` asks
            view = CriticView(self.critic_briefing, step.history, proposal.action)
            verdict = self._guarded("critic", self.critic.verify, view, what="verifying an action")
            self._check("critic", verdict, Verdict, "verdict")
            if overrule is not None:
                verdict = overrule.after(index, proposal.round, verdict)
        else:
            verdict = given
            step.unasked += 1
        step.asked = given is None
        proposal.critic_s = _clock() - start
        proposal.verdict = verdict
        step.timing.critic_s += proposal.critic_s
        self._charge("critic", verdict.usage)
        return verdict  # type: ignore[no-any-return]

    def _execute(
        self, step_index: int, action: Action, step: _Step, run: CallRun | None = None
    ) -> tuple[Any, EndReason | None]:
        """`run`: the labeler's run of this very call on a copy of the state, taken as its
        execution when the state has not moved since (`CallRun.adoptable`)."""
        call_id, timing = f"call_{step_index}", step.timing
        if isinstance(action, ReplyAction):
            self.replies.append(action.text)
            if (
                self.spec.limits.max_messages is not None
                and 2 * (step_index + 1) >= self.spec.limits.max_messages
            ):
                self.conversation.append(AgentTurn(action=action))  # τ² ends before the user answers
                return None, "max_steps"
            start = _clock()
            assert self.user is not None  # opened by `reset`
            reply = self._guarded("user", self.user.reply, action.said, what="replying")
            self._check("user", reply, UserReply, "reply")
            self._check("user", reply.text, str, "reply text")
            timing.user_s += _clock() - start
            text = reply.text
            if self._perturber is not None:
                text = self._perturber.user_text(step_index + 1, text)
            turn = UserTurn(text=text, tool_calls=tuple(self.user_calls))
            self.user_calls.clear()
            self.conversation += [AgentTurn(action=action), turn]
            step.user_stop = reply.stop
            if action.ends:  # the agent's closing message: the user's answer is the last word
                return turn, "agent_stop"
            return turn, ("user_stop" if reply.stop else None)
        if isinstance(action, MalformedAction):
            result = ToolResultTurn(
                call_id=call_id,
                name="(malformed)",
                content=f"Error: your last output could not be used ({action.reason}).",
                error=True,
            )
            self.saw_tool_error = True
            self.tool_errors += 1
            self.conversation += [AgentTurn(action=action, call_id=call_id), result]
            return result, None
        if self._perturber is not None:
            return self._perturbed_call(step_index, action, step)
        if run is not None and run.adoptable(self.db):
            twin, observation = run.outcome
            self.db.adopt(twin)
        else:
            observation = self.spec.domain.toolkit.call(self.db, action.name, action.arguments)
        result = ToolResultTurn.model_construct(
            call_id=call_id, name=action.name, content=observation.content, error=observation.error
        )
        return self._executed(action, result, observation.ends_conversation)

    def _perturbed_call(
        self, step_index: int, action: ToolCallAction, step: _Step
    ) -> tuple[Any, EndReason | None]:
        """A tool call under the run's perturbations: a drawn fault answers instead of the tool
        (nothing executes) and is recorded on the step; otherwise the output may be reshaped."""
        assert self._perturber is not None
        call_id = f"call_{step_index}"
        step.fault = self._perturber.fault(step_index, action)
        if step.fault is not None:
            content, error = self._perturber.fault_output(step.fault)
            result = ToolResultTurn(call_id=call_id, name=action.name, content=content, error=error)
            return self._executed(action, result, False, wrote=False)
        observation = self.spec.domain.toolkit.call(self.db, action.name, action.arguments)
        content = self._perturber.tool_output(step_index, observation.content)
        result = ToolResultTurn(call_id=call_id, name=action.name, content=content, error=observation.error)
        return self._executed(action, result, observation.ends_conversation)

    def _executed(
        self, action: ToolCallAction, result: ToolResultTurn, ends: bool, wrote: bool = True
    ) -> tuple[Any, EndReason | None]:
        if result.error:
            self.saw_tool_error = True
            self.tool_errors += 1
        elif wrote and self.spec.domain.toolkit.is_write(action.name):
            self.made_write = True
        self.conversation += [AgentTurn.model_construct(action=action, call_id=result.call_id), result]
        return result, ("transfer" if ends else None)

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

    # -- agents ----------------------------------------------------------------------------

    def _create_agents(self) -> None:
        """Agents are built inside the trial: a constructor that raises or hangs is that trial's
        failure, like any other agent code."""
        user_briefing = user_briefing_for(
            self.spec.domain, self.spec.task, self.spec.seed, self.db, self.spec.traits, self.user_calls
        )
        self.user = self._open("user", self.spec.agents.user, user_briefing)
        if self.spec.agents.policy is not None:
            self.policy = self._open("policy", self.spec.agents.policy, self.policy_briefing)
        if self.critic_briefing is not None:
            assert self.spec.agents.critic is not None
            self.critic = self._open("critic", self.spec.agents.critic, self.critic_briefing)

    def _open(self, role: Role, spec: AgentSpec, briefing: Any) -> Any:
        """The role's agent for this trial, through its transport. A worker agent is held to the
        time limit by its transport, which can stop its process; starting a fresh worker (after
        one was stopped: seconds on a busy machine) is castbench's time, not the agent's."""
        transport = connect(spec, self.plan.call(role))
        deadline, _ = self.deadline()
        opening = time.monotonic()
        left = None if deadline is None else max(0.0, deadline - opening)
        agent = self._guarded(
            role, transport.open, briefing, left, what=f"creating the {role}", wait=transport.isolated
        )
        self._opened.append((role, transport, agent))
        if transport.isolated:  # bounded by what was left; the clocks run on from here
            spent = time.monotonic() - opening
            self.started += spent
            self.step_started += spent
        return agent

    def deadline(self) -> tuple[float | None, str]:
        """The nearer of the step's and the trial's deadline (a `time.monotonic()` value), and
        which limit it is: a driver waiting for an outside agent holds it to the same limits."""
        return self._nearer_limit(self.step_started)

    def _nearer_limit(self, step_from: float) -> tuple[float | None, str]:
        step_s, trial_s = self.runtime.time_limits.step_s, self.runtime.time_limits.trial_s
        step = None if step_s is None else step_from + step_s
        trial = None if trial_s is None else self.started + trial_s
        if step is not None and (trial is None or step <= trial):
            return step, f"step time limit ({step_s:g} s)"
        if trial is not None:
            return trial, f"trial time limit ({trial_s:g} s)"
        return None, ""

    def _user_deadline(self) -> tuple[float | None, str]:
        """The simulated user's limit: none for castbench's scripted user (pure Python that never
        blocks: a 1 s step limit once timed it out after a slow policy's step, leaving the trial
        unscored), else the step limit counted from its own call, not from the policy's view."""
        if self.never_blocks("user"):
            return None, ""
        return self._nearer_limit(time.monotonic())

    def _guarded(self, role: str, fn: Callable[..., Any], *args: Any, what: str, wait: bool = False) -> Any:
        """Call agent code. Its exceptions and overruns end the trial: as the agent's failure for
        the policy and critic; unscored for the simulated user (not the agent under test), and as
        a harness error when that user is a built-in one (our bug). `wait`: no deadline here, the
        callee enforces its own."""
        deadline, limit = self.deadline() if role != "user" else self._user_deadline()
        try:
            mode = self._modes.get(role)
            if mode == "inline":
                value = fn(*args)
                if deadline is not None and time.monotonic() > deadline:
                    raise AgentTimeout(what)
                return value
            if mode == "loop" and loop.on_loop():  # a driver on a thread of its own: the agent thread
                try:
                    with loop.deadline(deadline):
                        return fn(*args)
                except loop.DeadlinePassed:
                    raise AgentTimeout(what) from None
            return self.agent_thread.call(fn, *args, deadline=None if wait else deadline, what=what)
        except (InfrastructureError, Cancelled):
            raise
        except AgentTimeout as exc:
            message = f"{role} overran the {limit} while {what} at step {len(self.steps)}"
            slow_server = self._server_overran(role, fn, limit or "time limit")
            if slow_server is not None:
                raise slow_server from exc
            raise _TrialEnd("timeout", str(exc) if not limit else message, role != "user") from exc
        except AgentError as exc:  # seen by its transport: the message says what happened
            self._fail(role, f"{exc} (while {what})")
        except (Exception, SystemExit) as exc:  # an agent calling sys.exit() ends its trial only
            self._fail(role, f"{role} raised {exc!r} while {what}\n{traceback.format_exc()}")
        raise AssertionError("unreachable")

    def _server_overran(self, role: str, fn: Callable[..., Any], limit: str) -> Exception | None:
        """The infrastructure error a time limit that ran out is, when the role is one of
        castbench's model agents and the limit cut its model call short: a slow model server
        must not score the trial 0 as the agent's timeout (`ModelClient.overran`). Only
        castbench's own model agents are asked (a `model` spec in this process): an agent's own
        code cannot pass its slowness off as the server's."""
        spec = {
            "policy": self.spec.agents.policy,
            "critic": self.spec.agents.critic,
            "user": self.spec.agents.user,
        }[role]
        if spec is None or spec.kind != "model" or spec.transport != "in-process":
            return None
        client = getattr(getattr(fn, "__self__", None), "client", None)
        overran = getattr(client, "overran", None)
        return overran(limit) if callable(overran) else None

    def never_blocks(self, role: str) -> bool:
        """Whether the role's agent is one of castbench's own scripted agents: pure Python that
        never blocks, so it runs on the caller's thread (the trial's, or an MCP server's loop)
        with nothing to stop waiting for. The hop to the agent thread (two thread switches per
        call under the GIL) was a quarter of a model-bound run's CPU."""
        return self._modes.get(role) == "inline"

    def _fail(self, role: str, message: str) -> None:
        if role != "user":
            raise _TrialEnd("agent_error", message)
        builtin = self.spec.agents.user.kind == "builtin"
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
