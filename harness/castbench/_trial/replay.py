"""Re-execute a stored trial through the loop that played it, then compare it with its record.

This is what makes a published result checkable: the stored reward must follow from the stored
actions. The replay is an `Episode` (`castbench._trial.episode`), the loop `eval` plays, stepped
with the record's proposals as an outside policy's actions are stepped (the MCP server's way), so
labelling, execution, critic gating, the run's limits, perturbations and grading are the code
that produced the record, not a second copy of it. The other agents are the run's own where
castbench can run them again (model-free, seeded): a built-in user answers the stored replies
again (its words and the device steps it performs on its own side are re-executed), and a
built-in critic decides every verdict again from the same view, the loop acting on its verdict.
Those it cannot (a model, a team's agent) are recorded stand-ins that answer with what the record
holds and fail the replay, naming the step, when the loop asks for something the record does not
have. A judged run's judge is its stored verdicts (`StoredVerdicts`).

Everything the trial recorded is then compared with what the replay produced, each difference
naming its step: the opening, every tool result and user reply, every proposal's label (derived
again on the state and conversation it met: the critic's figures are computed from them) and
verdict, a step the replay ran otherwise than the record (a revision it does not ask for, an
ending where the record goes on), the reward, and the strict reward where the trial has one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence

from castbench._agents.models.settings import ModelSettings
from castbench._agents.protocols import UserReply
from castbench._agents.registry import AgentSpec, AgentSpecError, Role, builtin_agents, resolve
from castbench._agents.views import CriticView, UserBriefing
from castbench._base.conversation import (
    Action,
    Event,
    ToolCallAction,
    ToolResultTurn,
    Usage,
    UserTurn,
    Verdict,
    canonical_action,
)
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task, ToolCall
from castbench._grading import Grade, GradingMode
from castbench._grading.labeler import CallRun, ConfirmationJudge, label_action
from castbench._grading.replies import ReplyCheck, StoredVerdicts
from castbench._records.config import Limits, Verification
from castbench._records.execution import ExecutionPlan
from castbench._records.perturbations import Perturbations
from castbench._records.trial import ActionLabel, Proposal, StepRecord, TrialRecord
from castbench._trial.deadline import TimeLimits
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.execution import plan_execution
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import Labeler, TrialRuntime, TrialSpec

__all__ = ["replay_trial"]

_UNTIMED = TimeLimits(step_s=None, trial_s=None)
"""Nothing in a replay waits on an agent: no time limits."""


_LOOP_ENDS = frozenset({"user_stop", "transfer"})
"""Endings only the loop decides that let a trial be graded (a driver ends a trial as `agent_error`,
`agent_stop`, `max_steps`): a record claiming one where the loop goes on was cut or edited. An
unfinished ending the loop would not have made (`too_many_errors` under another harness's limit,
an imported τ² run's) is taken as its driver's: it scores the trial 0, so it can only cost the run."""


class _Cursor:
    """Where the replay is in the record: the stored step and proposal the loop is stepping. The
    recorded stand-ins answer from it, and what they find missing is kept here, by step."""

    def __init__(self, record: TrialRecord) -> None:
        self.record = record
        self.step: StepRecord | None = None
        self.proposal: Proposal | None = None
        self.problems: dict[int, list[str]] = {}
        self.gap: str | None = None
        """What the loop asked for that the record does not have (the replay ended there)."""

    @property
    def index(self) -> int:
        return self.step.index if self.step is not None else 0

    def note(self, step: int, problem: str) -> None:
        self.problems.setdefault(step, []).append(problem)

    def missing(self, what: str) -> RuntimeError:
        self.gap = what
        return RuntimeError(what)


class _RecordedUser:
    """A user castbench cannot run again (a model): its words as stored, and the device steps it
    took on its own side (τ²'s dual control) taken again on the trial's state, as it took them."""

    def __init__(self, briefing: UserBriefing, cursor: _Cursor) -> None:
        self._perform, self._cursor = briefing.perform, cursor

    def open(self) -> str:
        return self._cursor.record.opening

    def reply(self, message: str) -> UserReply:
        step, k = self._cursor.step, self._cursor.index
        turn = step.observation if step is not None else None
        if step is None or not isinstance(turn, UserTurn):
            raise self._cursor.missing(
                f"step {k}: the loop asks the user for a reply the record does not have"
            )
        for call in turn.tool_calls:
            if self._perform is None:
                raise self._cursor.missing(f"step {k}: the record's user runs {call.name}, a tool it has not")
            self._perform(ToolCall(name=call.name, arguments=call.arguments, actor="user"))
        return UserReply(turn.text, stop=step.user_stop)


class _RecordedCritic:
    """A critic castbench cannot run again (a model, a team's, or one recorded before labels were
    derived again): its verdicts as stored, which the loop acts on."""

    def __init__(self, cursor: _Cursor) -> None:
        self._cursor = cursor

    def verify(self, view: CriticView) -> Verdict:
        proposal = self._cursor.proposal
        if proposal is None or proposal.verdict is None:
            where = f"step {self._cursor.index} proposal {proposal.round if proposal else 0}"
            raise self._cursor.missing(
                f"{where}: the loop asks the critic for a verdict the record does not have"
            )
        return proposal.verdict


class _StoredJudge:
    """A judged run's judge in the replay: its stored verdicts on the reply checks
    (`StoredVerdicts`), and on each write's explicit yes by (step, round), the rules' own
    verdict on it compared with the stored one. A write with no stored verdict is a difference."""

    def __init__(self, stored: StoredVerdicts, cursor: _Cursor) -> None:
        self._stored, self._cursor = stored, cursor
        self.settings = ModelSettings(model="the stored judge verdicts")
        self.usage = Usage()

    def __call__(
        self, checks: Sequence[ReplyCheck], replies: Sequence[str], records: Sequence[str]
    ) -> list[ReplyCheck]:
        asked = [check for check in checks if check.kind != "confirmation"]
        judged = iter(self._stored(asked, replies, records) if asked else [])
        return [self._confirmed(check) if check.kind == "confirmation" else next(judged) for check in checks]

    def _confirmed(self, check: ReplyCheck) -> ReplyCheck:
        step, round = check.step or 0, check.round or 0
        where = f"step {step} proposal {round} label"
        stored = self._stored.confirmations.get((step, round))
        if stored is None:
            self._cursor.note(
                step, f"{where}: no stored judge verdict on the explicit yes for {check.subject}"
            )
            return check
        if stored.rule != check.rule:
            self._cursor.note(
                step,
                f"{where}: the rules' explicit yes: stored {stored.rule!r}, replayed {check.rule!r}",
            )
        return stored


def _labeler(cursor: _Cursor, strict: bool) -> Labeler:
    """The labels the record holds, derived again by castbench's labeler (and, for a strictly
    graded trial, the executed tool call's, which its strict reward reads): a proposal the record
    left unlabelled (a reference floor's) stays so, as it was played."""

    def label(
        domain: Domain,
        task: Task,
        action: Action,
        db: Database,
        conversation: Sequence[Event],
        confirm: ConfirmationJudge | None = None,
        run: CallRun | None = None,
    ) -> ActionLabel | None:
        step, proposal = cursor.step, cursor.proposal
        executes = (  # the step's executed tool call (its last proposal, or its only action)
            strict
            and step is not None
            and isinstance(step.action, ToolCallAction)
            and (not step.proposals or proposal is step.proposals[-1])
        )
        if proposal is not None and (proposal.label is not None or executes):
            return label_action(domain, task, action, db, conversation, confirm, run)
        return None

    return label


def _name(spec: str) -> str:
    return spec.partition("?")[0].strip()


@functools.lru_cache(maxsize=64)
def _resolved(role: Role, spec: str) -> AgentSpec | None:
    """The run's agent for `role`, resolved once per verification (not once per trial)."""
    try:
        return resolve(role, spec)
    except (AgentSpecError, ValueError):  # not an agent castbench can start (an imported run's
        # label such as `tau2:castbench:scripted`, a package the sandbox refuses): recorded stand-in
        return None


@functools.cache
def _replayable_critics() -> frozenset[str]:
    """castbench's model-free critics: each decides again from the same view (seeded)."""
    return frozenset(agent.name for agent in builtin_agents("critic") if not agent.model_backed)


@functools.cache
def _plan(critic: bool) -> ExecutionPlan:
    """Every agent of a replay is castbench's (built-in, or a recorded stand-in): called inline."""
    scripted = AgentSpec("user", "recorded", "recorded", None)
    agents = AgentSet(None, scripted, AgentSpec("critic", "recorded", "recorded", None) if critic else None)
    return plan_execution(agents)


def _agents(user: str, critic: str, labels: bool, cursor: _Cursor) -> tuple[AgentSet, bool, bool]:
    """The replay's user and critic: the run's own where castbench can run them again, recorded
    stand-ins otherwise; and whether each is the run's own (its output is then compared)."""
    user_spec = _resolved("user", user)
    live_user = user_spec is not None and user_spec.kind == "builtin"
    if user_spec is None or not live_user:
        user_spec = AgentSpec("user", user, "recorded", lambda briefing: _RecordedUser(briefing, cursor))
    critic_spec: AgentSpec | None = None
    live_critic = False
    if _name(critic) != "none":
        live_critic = labels and _name(critic) in _replayable_critics()
        if live_critic:
            critic_spec = _resolved("critic", critic)
        else:
            critic_spec = AgentSpec("critic", critic, "recorded", lambda _: _RecordedCritic(cursor))
    return AgentSet(policy=None, user=user_spec, critic=critic_spec), live_user, live_critic


def _drive(episode: Episode, record: TrialRecord, cursor: _Cursor) -> str | None:
    """Step `episode` with the record's proposals, in order; None when the loop went the record's
    way to its end (ending it as the record ends, if the record's driver ended it), else why not."""
    episode.reset()
    for step in record.steps:
        cursor.step = step
        proposals = step.proposals or (
            [Proposal(round=0, action=step.action)] if step.action is not None else []
        )
        if not proposals:
            return f"step {step.index}: the record holds no proposal for it"
        last = proposals[-1]
        for proposal in proposals:
            if episode.done:
                return cursor.gap or (
                    f"step {step.index} proposal {proposal.round}: the replay ended the trial "
                    f"({episode.end_reason}) there"
                )
            cursor.proposal = proposal
            taken = len(episode.steps)
            episode.step(proposal.action, 0.0)
            if cursor.gap is not None:
                return cursor.gap
            revising = len(episode.steps) == taken and not episode.done
            if revising == (proposal is last):
                where = f"step {step.index} proposal {proposal.round}"
                if revising:
                    return f"{where}: the critic asks for a revision the record does not have"
                return f"{where}: the replay ended the step where the record has a revision"
    if episode.done:
        if episode.end_reason != record.end_reason:
            return f"end: stored {record.end_reason}, replayed {episode.end_reason}"
        return None
    if record.end_reason in _LOOP_ENDS:
        return f"end: stored {record.end_reason}, but the loop goes on after step {len(episode.steps) - 1}"
    episode.fail(record.end_reason, record.error or "")  # its driver ended it (an agent's failure, ...)
    return None


def _compare_steps(
    record: TrialRecord, played: list[StepRecord], cursor: _Cursor, labels: bool, live: tuple[bool, bool]
) -> list[str]:
    """Every difference between the record's steps and the replay's, in order, each naming its step."""
    problems: list[str] = []
    for stored, step in zip(record.steps, played, strict=False):
        problems += cursor.problems.get(stored.index, [])
        problems += _step_differences(stored, step, labels, live)
    problems += [p for k, noted in cursor.problems.items() if k >= len(played) for p in noted]
    return problems


def _step_differences(
    stored: StepRecord, step: StepRecord, labels: bool, live: tuple[bool, bool]
) -> list[str]:
    """How the replay's step differs from the stored one: its proposals' labels (and, with the
    run's own critic, verdicts), its action, and what the action got back (a tool's result or
    injected fault; with the run's own user, the reply)."""
    live_user, live_critic = live
    k = stored.index
    problems = _proposal_differences(stored, step, labels, live_critic)
    differ = _differ(problems)
    if not _same(stored.action, step.action):
        differ(f"step {k} action", _shown(stored.action), _shown(step.action))
    elif isinstance(step.action, ToolCallAction):
        turn = stored.observation if isinstance(stored.observation, ToolResultTurn) else None
        got = step.observation
        assert isinstance(got, ToolResultTurn)
        differ(f"step {k} injected fault", stored.fault, step.fault)
        if step.fault is not None:  # a fault's answer, as the harness wrote it
            want: tuple[object, bool] | None = (turn.content, turn.error) if turn else None
            differ(f"step {k} {step.action.name} fault", want, (got.content, got.error))
        elif turn is None or (turn.content, turn.error) != (got.content, got.error):
            differ(f"step {k} {step.action.name} result", _result(turn), _result(got))
    elif step.action is not None and step.action.kind == "reply" and live_user:
        kept_text = stored.observation.text if isinstance(stored.observation, UserTurn) else None
        text = step.observation.text if isinstance(step.observation, UserTurn) else None
        differ(f"step {k} user reply", kept_text, text)
        differ(f"step {k} user stop", stored.user_stop, step.user_stop)
    return problems


def _proposal_differences(stored: StepRecord, step: StepRecord, labels: bool, live_critic: bool) -> list[str]:
    """Each proposal's label derived again (where the record labelled it), and its verdict given
    again by the run's own critic, against the stored ones."""
    problems: list[str] = []
    differ = _differ(problems)
    for kept, again in zip(stored.proposals, step.proposals, strict=False):
        where = f"step {stored.index} proposal {kept.round}"
        if labels and kept.label is not None:
            differ(f"{where} label", _decision(kept.label), _decision(again.label))
        elif labels and kept.verdict is not None:
            problems.append(f"{where} label: a critic's verdict without the labeler's label")
        if live_critic and (kept.verdict is not None or again.verdict is not None):
            differ(f"{where} verdict", _judged(kept.verdict), _judged(again.verdict))
    return problems


def _differ(problems: list[str]) -> Callable[[str, object, object], None]:
    """A check that notes in `problems` a value the replay stored otherwise."""

    def differ(what: str, stored: object, replayed: object) -> None:
        if stored != replayed:
            problems.append(f"{what}: stored {_short(stored)}, replayed {_short(replayed)}")

    return differ


def _same(stored: Action | None, replayed: Action | None) -> bool:
    """The same action: equal, or the same tool call with the same arguments (a NaN an agent put
    in its arguments is not equal to itself)."""
    if stored == replayed:
        return True
    calls = isinstance(stored, ToolCallAction) and isinstance(replayed, ToolCallAction)
    return calls and canonical_action(stored) == canonical_action(replayed)  # type: ignore[arg-type]


def _shown(action: Action | None) -> str:
    return "blocked by the critic" if action is None else canonical_action(action)


def _judged(verdict: Verdict | None) -> str | None:
    if verdict is None:
        return None
    return f"invalid ({verdict.failure_type})" if verdict.flags else "valid"


def _decision(label: ActionLabel | None) -> str | None:
    if label is None:
        return None
    return f"{label.label} ({label.failure_type})" if label.label == "invalid" else label.label


def _result(turn: ToolResultTurn | None) -> tuple[object, bool] | None:
    return (_value(turn.content), turn.error) if turn is not None else None


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
    limits: Limits | None = None,
    verification: Verification | None = None,
) -> tuple[Grade | None, list[str]]:
    """Re-execute `record` through the episode loop under the run's settings (`limits`,
    `verification`: its config's) and grade it again; returns the new grade (None for an unscored
    trial, or one the replay could not take to its end) and every difference from what the record
    says, each naming its step. Its labels are derived again when `labels` (a run recorded with a
    grading mode: by the current labeler) or when the trial was graded strictly (so was each of its
    labels); older labels came from an earlier labeler, whose decisions this one does not
    reproduce. So are the verdicts of a built-in `critic` (rules, oracle, the seeded noisy one):
    model-free, each decides again from the same view; a model's or a team's verdicts are taken
    as stored."""
    problems: list[str] = []
    seed = trial_seed(run_seed, record.domain, record.task_id, record.trial_index)
    if record.seed != seed:
        problems.append(f"seed {record.seed} is not the run's seed for this trial ({seed})")
    if not _replayable(record, domain, problems):
        return None, problems
    strict = record.grade is not None and record.grade.strict_reward is not None
    labels = labels or strict
    cursor = _Cursor(record)
    agents, live_user, live_critic = _agents(user, critic, labels, cursor)
    spec = TrialSpec(
        domain,
        task,
        record.trial_index,
        record.seed,
        agents,
        expected,
        limits or Limits(),
        verification or Verification(),
        traits or None,
        grading,
        _perturbations(perturbations, live_user),
        labels,
    )
    stored_judge = None
    if judged:
        stored_judge = _StoredJudge(StoredVerdicts(record.grade.reply_checks if record.grade else []), cursor)
    runtime = TrialRuntime(
        plan=_plan(agents.critic is not None),
        time_limits=_UNTIMED,
        judge=stored_judge,
        labeler=_labeler(cursor, strict),
        stored_actions=True,
    )
    episode = Episode(spec, runtime)
    try:
        left = _drive(episode, record, cursor)
    finally:
        episode.close()
    replayed = episode.record()
    if live_user and record.opening != replayed.opening:
        problems.append(f"opening: stored {_short(record.opening)}, replayed {_short(replayed.opening)}")
    problems += _compare_steps(record, replayed.steps, cursor, labels, (live_user, live_critic))
    grade = replayed.grade
    if left is not None or grade is None:  # the loop left the record: its grade says nothing of it
        problems.append(left or f"the replay was not graded ({replayed.end_reason}: {replayed.error})")
        if record.grade is None:
            problems.append("a scored trial without a grade")
        return None, problems
    if judged and record.grade is not None:
        problems += _judge_differences(record.grade, grade)
    return grade, problems + _grade_differences(record, grade, strict)


def _replayable(record: TrialRecord, domain: Domain, problems: list[str]) -> bool:
    """Whether the loop can take `record` again: a scored trial of the installed domain version
    that ended with a grade. One that cannot is checked for what its ending implies (noted in
    `problems`): an unscored trial has no reward, a timed-out one or an agent's failure stored
    without a grade scores 0."""
    if record.domain_version != domain.version:
        problems.append(f"recorded on domain version {record.domain_version}, installed {domain.version}")
        return False
    if record.status != "scored":
        if record.reward is not None:
            problems.append(f"an unscored trial with reward {record.reward}")
        return False
    if record.end_reason == "timeout":  # an abandoned agent's trial is scored 0 without a grade
        if record.reward != 0.0 or record.grade is not None:
            problems.append(f"a timed-out trial with reward {record.reward}")
        return False
    if record.end_reason == "agent_error" and record.grade is None:  # its output could not be stored
        if record.reward != 0.0:
            problems.append(f"an agent's failure stored without a grade, with reward {record.reward}")
        return False
    return True


def _perturbations(perturbations: Perturbations | None, live_user: bool) -> Perturbations | None:
    """The run's perturbations as the replay applies them (None when none is active): a recorded
    user's words are stored as the agent heard them, so they are not reworded again."""
    active = perturbations if perturbations is not None and perturbations.active else None
    if active is not None and not live_user:
        active = active.model_copy(update={"user": []})
        active = active if active.active else None
    return active


def _judge_differences(stored: Grade, regraded: Grade) -> list[str]:
    """A judged trial's reply checks whose rules' verdict (kept beside the judge's) changed."""
    kept = {(c.kind, c.subject): c.rule for c in stored.reply_checks}
    return [
        f"reply check {c.kind} {c.subject!r}: stored rules' verdict {kept[(c.kind, c.subject)]}, "
        f"re-graded {c.rule}"
        for c in regraded.reply_checks
        if (c.kind, c.subject) in kept and kept[(c.kind, c.subject)] != c.rule
    ]


def _grade_differences(record: TrialRecord, grade: Grade, strict: bool) -> list[str]:
    """The stored reward, grade and strict reward against the replay's grade."""
    problems: list[str] = []
    if record.reward != grade.reward:
        problems.append(f"stored reward {record.reward}, re-graded {grade.reward}")
    if record.grade is None:
        problems.append("a scored trial without a grade")
        return problems
    if record.grade.reward != grade.reward:
        problems.append(f"stored grade says reward {record.grade.reward}, re-graded {grade.reward}")
    if strict and record.grade.strict_reward != grade.strict_reward:
        problems.append(f"stored strict reward {record.grade.strict_reward}, re-graded {grade.strict_reward}")
    return problems
