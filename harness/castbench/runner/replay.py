"""Re-execute a stored trial: its executed tool calls on a fresh sandbox, then grade it again.

This is what makes a published result checkable: the stored reward must follow from the stored
actions. A built-in (scripted, seeded) user is re-created and answers the stored agent replies
again, so its words and the device steps it performs on its own side are re-executed too; the
words of any other user (a model) are taken as stored. Everything the trial recorded is compared
with what the replay produces: the opening, every tool result and user reply, the reward, and
the strict reward where the trial has one (every executed action labelled again on the state
it met), and every proposal's stored label (each labelled again on the state and conversation
it met: the critic's figures are computed from them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from castbench.agents.registry import AgentSpecError, builtin_agents, resolve
from castbench.agents.views import CriticView, briefing_for, user_briefing_for
from castbench.conversation import (
    AgentTurn,
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)
from castbench.domain import Database, Domain, Task, ToolCall
from castbench.grading import Grade, GradingMode, PolicyBreak, grade_trial
from castbench.grading.labeler import ConfirmationJudge, label_action
from castbench.grading.replies import StoredVerdicts
from castbench.records.perturbations import Perturbations
from castbench.records.trial import CLEAN_ENDS, UNFINISHED_ENDS, ActionLabel, StepRecord, TrialRecord
from castbench.runner.seeds import trial_seed

__all__ = ["replay_trial"]


class _Replay:
    def __init__(
        self,
        domain: Domain,
        task: Task,
        record: TrialRecord,
        user: str,
        traits: dict[str, str],
        labels: bool,
        critic: str,
        perturbations: Perturbations | None = None,
    ):
        self.domain, self.task, self.record = domain, task, record
        self.perturber = perturbations.perturber(record.seed) if perturbations is not None else None
        self.labels = labels
        self.db = domain.initial_database(task)
        self.conversation: list[Event] = []
        self.replies: list[str] = []
        self.breaks: list[PolicyBreak] = []
        self.problems: list[str] = []
        self.verdicts: StoredVerdicts | None = None
        """A judged run's stored verdicts (`--reply-judge`): the labels' explicit yes follows them."""
        self.made_write = self.saw_tool_error = False
        self.user: Any = None
        try:
            spec = resolve("user", user)
        except AgentSpecError:
            spec = None
        if spec is not None and spec.kind == "builtin":
            self.user = spec.create(user_briefing_for(domain, task, record.seed, self.db, traits or None))
        self.critic: Any = None
        self.critic_briefing: Any = None
        builtin = {agent.name for agent in builtin_agents("critic") if not agent.model_backed}
        if labels and _name(critic) in builtin:
            critic_spec = resolve("critic", critic)
            self.critic_briefing = briefing_for(
                domain, task, record.seed, record.trial_index, critic_spec.privileged, self.db.fork
            )
            self.critic = critic_spec.create(self.critic_briefing)

    def differ(self, what: str, stored: object, replayed: object) -> None:
        if stored != replayed:
            self.problems.append(f"{what}: stored {_short(stored)}, replayed {_short(replayed)}")

    def open(self) -> None:
        if self.user is not None:
            self.differ("opening", self.record.opening, self._heard(0, self.user.open()))
        self.conversation.append(UserTurn(text=self.record.opening))

    def step(self, step: StepRecord, strict: bool) -> None:
        label = self.relabel(step)
        stored = step.observation
        action = step.action
        if action is None:  # blocked by the critic: nothing ran; the record's notice goes back
            rejected = step.proposals[-1].action if step.proposals else None
            if rejected is not None and stored is not None:
                self.conversation += [AgentTurn(action=rejected, call_id=f"call_{step.index}"), stored]
            return
        if isinstance(action, ReplyAction):
            self.reply(step, action)
        elif isinstance(action, MalformedAction):
            self.saw_tool_error = True
            if stored is not None:
                self.conversation += [AgentTurn(action=action, call_id=f"call_{step.index}"), stored]
        else:
            self.call(step, action, strict, label)

    def confirm(self, where: str, step: StepRecord, round: int) -> ConfirmationJudge | None:
        """The stored judge verdict on a proposed write's explicit yes, as its label's (None for a
        rule-graded run); a write with no stored verdict, or whose rule verdict moved, is a
        difference."""
        verdicts = self.verdicts
        if verdicts is None:
            return None

        def stored(
            call: ToolCall, confirmed: bool, since_last_write: Sequence[Event], results: Sequence[str]
        ) -> bool:
            check = verdicts.confirmations.get((step.index, round))
            if check is None:
                self.problems.append(
                    f"{where}: no stored judge verdict on the explicit yes for {call.canonical()}"
                )
                return confirmed
            self.differ(f"{where}: the rules' explicit yes", check.rule, confirmed)
            return check.decided

        return stored

    def relabel(self, step: StepRecord) -> ActionLabel | None:
        """Every stored label of the step derived again, on the state and conversation its
        proposal met, and its decision compared (valid, unknown, or invalid with its failure type:
        what the critic's figures are computed from; a verdict needs a label); returns the last
        proposal's label (the executed action's), when it has one."""
        label = None
        for proposal in step.proposals if self.labels else ():
            where = f"step {step.index} proposal {proposal.round} label"
            label = None
            if proposal.label is not None:  # its decision: its reason names the first finding,
                # which depends on the arguments' order (an export sorts keys)
                label = label_action(
                    self.domain,
                    self.task,
                    proposal.action,
                    self.db,
                    self.conversation,
                    self.confirm(where, step, proposal.round),
                )
                self.differ(where, _decision(proposal.label), _decision(label))
            elif proposal.verdict is not None:
                self.problems.append(f"{where}: a critic's verdict without the labeler's label")
            if proposal.verdict is not None and self.critic is not None:  # a built-in critic: it
                # decides from the same view again (seeded, model-free)
                view = CriticView(self.critic_briefing, tuple(self.conversation), proposal.action)
                verdict = self.critic.verify(view)
                where = f"step {step.index} proposal {proposal.round} verdict"
                self.differ(where, _judged(proposal.verdict), _judged(verdict))
        return label

    def reply(self, step: StepRecord, action: ReplyAction) -> None:
        self.replies.append(action.text)
        stored = step.observation if isinstance(step.observation, UserTurn) else None
        if self.user is not None:
            answer = self.user.reply(action.said)
            heard = self._heard(step.index + 1, answer.text)
            self.differ(f"step {step.index} user reply", stored.text if stored else None, heard)
            self.differ(f"step {step.index} user stop", step.user_stop, answer.stop)
        self.conversation += [AgentTurn(action=action), stored or UserTurn(text="")]

    def call(self, step: StepRecord, action: ToolCallAction, strict: bool, label: ActionLabel | None) -> None:
        if strict:
            confirm = self.confirm(f"step {step.index} label", step, len(step.proposals) - 1)
            label = label or label_action(self.domain, self.task, action, self.db, self.conversation, confirm)
            if label.failure_type == "domain_violation":
                self.breaks.append(PolicyBreak(step=step.index, tool=action.name, reason=label.reason))
        if self.perturber is not None and self.faulted(step, action):
            return
        observation = self.domain.toolkit.call(self.db, action.name, action.arguments)
        if self.perturber is not None:
            content = self.perturber.tool_output(step.index, observation.content)
            observation = replace(observation, content=content)
        stored = step.observation
        got = (_value(observation.content), observation.error)
        want = (_value(stored.content), stored.error) if isinstance(stored, ToolResultTurn) else None
        self.differ(f"step {step.index} {action.name} result", want, got)
        if observation.error:
            self.saw_tool_error = True
        elif self.domain.toolkit.is_write(action.name):
            self.made_write = True
        call_id = f"call_{step.index}"
        self.conversation += [
            AgentTurn(action=action, call_id=call_id),
            ToolResultTurn(
                call_id=call_id, name=action.name, content=observation.content, error=observation.error
            ),
        ]

    def _heard(self, turn: int, text: str) -> str:
        """The user's words as the agent got them (under a run's user perturbations)."""
        return text if self.perturber is None else self.perturber.user_text(turn, text)

    def faulted(self, step: StepRecord, action: ToolCallAction) -> bool:
        """Draw the step's fault again (a perturbed run's); a faulted call ran nothing: its
        fault's answer goes back, compared with the stored one."""
        assert self.perturber is not None
        fault = self.perturber.fault(step.index, action)
        self.differ(f"step {step.index} injected fault", step.fault, fault)
        if fault is None:
            return False
        content, error = self.perturber.fault_output(fault)
        stored = step.observation
        want = (stored.content, stored.error) if isinstance(stored, ToolResultTurn) else None
        self.differ(f"step {step.index} {action.name} fault", want, (content, error))
        self.saw_tool_error |= error
        call_id = f"call_{step.index}"
        result = ToolResultTurn(call_id=call_id, name=action.name, content=content, error=error)
        self.conversation += [AgentTurn(action=action, call_id=call_id), result]
        return True


def _name(spec: str) -> str:
    return spec.partition("?")[0].strip()


def _judged(verdict: Verdict) -> str:
    return f"invalid ({verdict.failure_type})" if verdict.flags else "valid"


def _decision(label: ActionLabel) -> str:
    return f"{label.label} ({label.failure_type})" if label.label == "invalid" else label.label


def _value(content: str) -> object:
    """A tool result as the value it states: JSON is compared as JSON, so a result whose object
    keys come out in another order (a tool echoing its arguments, whose order an export does not
    keep) is the same result."""
    try:
        return json.loads(content)
    except ValueError:
        return content


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def replay_trial(
    domain: Domain,
    task: Task,
    record: TrialRecord,
    expected: Database,
    *,
    run_seed: int,
    user: str,
    traits: dict[str, str],
    grading: GradingMode,
    labels: bool = True,
    critic: str = "none",
    perturbations: Perturbations | None = None,
    judged: bool = False,
) -> tuple[Grade | None, list[str]]:
    """Re-execute `record` and grade it again; returns the new grade (None for an unscored trial)
    and every difference from what the record says, each naming its step. Its labels are derived
    again when `labels` (a run recorded with a grading mode: by the current labeler) or when the
    trial was graded strictly (so was each of its labels); older labels came from an earlier
    labeler, whose decisions this one does not reproduce. So are the verdicts of a built-in
    `critic` (rules, oracle, the seeded noisy one): model-free, each decides again from the same
    view; a model's or a team's verdicts are taken as stored."""
    problems: list[str] = []
    seed = trial_seed(run_seed, record.domain, record.task_id, record.trial_index)
    if record.seed != seed:
        problems.append(f"seed {record.seed} is not the run's seed for this trial ({seed})")
    if record.domain_version != domain.version:
        problems.append(f"recorded on domain version {record.domain_version}, installed {domain.version}")
        return None, problems
    if record.status != "scored":
        if record.reward is not None:
            problems.append(f"an unscored trial with reward {record.reward}")
        return None, problems
    if record.end_reason == "timeout":  # an abandoned agent's trial is scored 0 without a grade
        if record.reward != 0.0 or record.grade is not None:
            problems.append(f"a timed-out trial with reward {record.reward}")
        return None, problems
    if record.end_reason == "agent_error" and record.grade is None:  # its output could not be stored
        if record.reward != 0.0:
            problems.append(f"an agent's failure stored without a grade, with reward {record.reward}")
        return None, problems
    strict = record.grade is not None and record.grade.strict_reward is not None
    active = perturbations if perturbations is not None and perturbations.active else None
    replay = _Replay(domain, task, record, user, traits, labels or strict, critic, active)
    verdicts = StoredVerdicts(record.grade.reply_checks if record.grade else []) if judged else None
    replay.verdicts = verdicts
    replay.open()
    for step in record.steps:
        replay.step(step, strict)
    grade = grade_trial(
        task,
        replay.db,
        expected,
        replay.replies,
        ended_cleanly=record.end_reason in CLEAN_ENDS,
        made_write=replay.made_write,
        saw_tool_error=replay.saw_tool_error,
        finished=record.end_reason not in UNFINISHED_ENDS,
        mode=grading,
        policy_breaks=replay.breaks,
        conversation=replay.conversation,
        checks=domain.task_checks(task, replay.db, replay.conversation),
        judge=verdicts,
        confirmations=list(verdicts.confirmations.values()) if verdicts is not None else [],
    )
    problems += replay.problems
    if judged and record.grade is not None:
        stored = {(c.kind, c.subject): c.rule for c in record.grade.reply_checks}
        problems += [
            f"reply check {c.kind} {c.subject!r}: stored rules' verdict {stored[(c.kind, c.subject)]}, "
            f"re-graded {c.rule}"
            for c in grade.reply_checks
            if (c.kind, c.subject) in stored and stored[(c.kind, c.subject)] != c.rule
        ]
    if record.reward != grade.reward:
        problems.append(f"stored reward {record.reward}, re-graded {grade.reward}")
    if record.grade is None:
        problems.append("a scored trial without a grade")
    else:
        if record.grade.reward != grade.reward:
            problems.append(f"stored grade says reward {record.grade.reward}, re-graded {grade.reward}")
        if strict and record.grade.strict_reward != grade.strict_reward:
            problems.append(
                f"stored strict reward {record.grade.strict_reward}, re-graded {grade.strict_reward}"
            )
    return grade, problems
