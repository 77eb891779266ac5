"""What a trial is, as one frozen value (`TrialSpec`), and the runtime handles that play it apart
(`TrialRuntime`).

A `TrialSpec` is everything that decides a trial's record: the domain and task, which trial of it
(`trial_index`) and its seed, the agents, the expected final state, the run's limits and critic
loop, the user's traits, the grading mode and reply judge, the perturbations, and whether the
privileged labeler labels its proposals. Two equal specs played by castbench's own agents give
the same record (timings aside).

A `TrialRuntime` holds what only says *how* it is played here and now: the execution plan (the
transports and the pool, `castbench._trial.execution`), the agents' time limits (a run-time
setting, not part of a run's identity), the run's stop flag, and the hooks a counterfactual
branch or a verifier's replay drives the loop with (`Overrule`, a made judge, a labeler, stored
actions). Every driver of a trial builds an `Episode` (`castbench._trial.episode`) from the two;
`run_trial` (`castbench._trial.rollout`) plays one to its grade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from castbench._agents.models.settings import ModelSettings
from castbench._base.conversation import Action, Event, Usage, Verdict
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task
from castbench._grading import GradingMode
from castbench._grading.labeler import CallRun, ConfirmationJudge
from castbench._grading.replies import ReplyJudge
from castbench._records.config import Limits, Verification
from castbench._records.execution import ExecutionPlan
from castbench._records.perturbations import Perturbations
from castbench._records.trial import ActionLabel
from castbench._trial.deadline import Halt, TimeLimits
from castbench._trial.execution import AgentSet

__all__ = ["Labeler", "Overrule", "TrialJudge", "TrialRuntime", "TrialSpec"]


@dataclass(frozen=True)
class TrialSpec:
    """One trial: what it plays and how it is graded. Frozen: a driver that needs another (a
    service that holds its own policy) makes one with `dataclasses.replace`."""

    domain: Domain
    task: Task
    trial_index: int
    """Which trial of the task (0, 1, ...): with the run seed it gives `seed` (`trial_seed`)."""
    seed: int
    """The trial's seed: every seeded draw of its agents, user and perturbations comes from it."""
    agents: AgentSet
    """Policy (None: the actions come from outside), user and critic: specs, each trial builds its own."""
    expected: Database
    """The state the task's ground truth reaches (`Domain.replay`), graded against; read-only."""
    limits: Limits = field(default_factory=Limits)
    verification: Verification = field(default_factory=Verification)
    """How the critic sits in the loop: rounds per step, what an exhausted rejection does, scope."""
    traits: dict[str, str] | None = None
    """The simulated user's trait profile (impatience=high, ...); None for none."""
    grading: GradingMode = "castbench"
    perturbations: Perturbations | None = None
    """Faults and rewordings the harness injects; None (or inactive ones) for none."""
    labelled: bool = True
    """The privileged labeler judges each proposal (the critic's figures and the strict reward
    read its labels); False for a trial whose plain reward is all that is read (a reference
    floor's: its record then has no labels and no strict reward)."""
    reply_judge: ModelSettings | None = None
    """A model that decides the reply checks when the trial is graded, and each write's explicit
    yes inside the labeler (`castbench._agents.models.reply_judge`): nothing it says reaches an agent."""


class Overrule(Protocol):
    """How a counterfactual branch (`castbench_analyses.counterfactual`) takes the verdict its trial
    did not take, through the loop every trial runs: nothing of it reaches an agent but the
    verdict's consequences (which proposal executes, which critique the policy reads)."""

    def before(self, step: int, round_: int, since_view: float, since_start: float) -> Verdict | None:
        """Called before the critic is asked about proposal `round_` of step `step`, `since_view`
        seconds after the step's view was given out and `since_start` after the trial began (it
        may wait first): a verdict the loop acts on without asking the critic, or None to ask it."""

    def after(self, step: int, round_: int, verdict: Verdict) -> Verdict:
        """The verdict the loop acts on, given the critic's."""

    def stands(self, step: int, round_: int) -> float | None:
        """After a flag with rounds left: None to give the policy the critique, as in every
        trial; else the policy stands by its proposal, which is proposed again (the policy is not
        asked) after that many seconds."""


Labeler = Callable[
    [Domain, Task, Action, Database, Sequence[Event], ConfirmationJudge | None, CallRun | None],
    ActionLabel | None,
]
"""(domain, task, the proposal, the state it meets, the conversation before it, the judge of its
explicit yes, the call's run on a copy of the state that the loop may adopt) -> its label:
`castbench._grading.labeler.label_action`'s signature, None for a proposal left unlabelled."""


class TrialJudge(ReplyJudge, Protocol):
    """A trial's reply judge: castbench's model judge (`ModelReplyJudge`), or the stored verdicts
    a verifier re-grades a judged run with (`castbench._trial.replay`)."""

    settings: ModelSettings
    usage: Usage


@dataclass(frozen=True)
class TrialRuntime:
    """How a trial is played here: none of it changes its record but its timings (the hooks
    aside, which exist to drive the loop otherwise: a branch's verdicts, a verifier's replay)."""

    plan: ExecutionPlan | None = None
    """The run's execution plan: each role's transport and where trials run (by default the plan
    of a run of one trial at a time, `plan_execution`; the trial itself runs where its driver
    plays it)."""
    time_limits: TimeLimits = field(default_factory=TimeLimits)
    """The agents' wall-clock limits per step and per trial."""
    stop: Halt | None = None
    """The run's stop flag: set while an agent is at work, the trial is dropped (`Cancelled`)."""
    overrule: Overrule | None = None
    """A counterfactual branch's verdicts (`Overrule`); None for every ordinary trial."""
    judge: TrialJudge | None = None
    """A reply judge already made (a verifier's stored verdicts), instead of the spec's model."""
    labeler: Labeler | None = None
    """What labels each proposal of a labelled trial (by default castbench's labeler; a verifier's
    derives the labels its record holds, through the same loop)."""
    stored_actions: bool = False
    """The actions stepped were read back from a store (a verifier's replay): each was found
    storable when it was stored, so only its type is checked, it is not serialized again."""


DEFAULT_RUNTIME = TrialRuntime()
"""The plan of one trial at a time, default time limits, no hooks."""
