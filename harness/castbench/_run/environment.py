"""A step-wise environment for trainers: `reset` a trial, `step` it with the policy's actions, get
the final reward from the same grader (and, when asked, the labeler's truth about each action).

    env = Environment(critic="rules")
    view = env.reset("retail", "retail-test-0002", trial=0, seed=0)
    while True:
        result = env.step(my_policy(view))
        if result.done:
            break
        view = result.view
    result.reward, result.record            # the graded TrialRecord, as `eval` stores it

It is a thin layer over `castbench._trial.episode.Episode`, the state machine `eval` runs every
trial through, with the trial seed `eval --seed` gives (run seed, domain, task, trial): the same
action sequence gets the same observations and the same grade as in an eval run. The policy
driving it sees the public `Briefing` only; the task stays inside the episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Unpack

from castbench._agents.models.resolve import resolve_agent
from castbench._agents.registry import AgentSpec, Role
from castbench._agents.views import PolicyView
from castbench._base.conversation import CritiqueTurn, ToolResultTurn, UserTurn
from castbench._domain.database import Database
from castbench._domain.registry import load_domain
from castbench._records.trial import ActionLabel, TrialRecord
from castbench._run.options import EvalFields, EvalOptions
from castbench._trial.episode import AgentSet, Episode, EpisodeOver
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialRuntime, TrialSpec

__all__ = ["EnvStep", "Environment", "EpisodeOver"]


@dataclass(frozen=True)
class EnvStep:
    view: PolicyView | None
    """The policy's next view (during a revision it ends with the critique); `None` when done."""
    observation: ToolResultTurn | UserTurn | CritiqueTurn | None
    done: bool
    reward: float | None = None
    """The grader's reward once done (`None` for an unscored trial)."""
    label: ActionLabel | None = None
    """The labeler's truth about the action just stepped, when the environment was asked for
    labels (privileged: for training signals, never for the policy's input)."""
    record: TrialRecord | None = None
    """The full record once done."""


class Environment:
    """One trial at a time over castbench's domains, driven by the caller's actions."""

    def __init__(
        self, options: EvalOptions | None = None, *, labels: bool = False, **fields: Unpack[EvalFields]
    ) -> None:
        """The trials `options` (with `fields` changed, as `castbench.evaluate` takes them) describe:
        its user, critic, limits, verification, time limits, grading and model settings, the same
        as `eval` builds from them. `labels`: each step carries the labeler's truth about it."""
        if fields.get("critic", "") is None:  # `critic=None`: none, as this class always took it
            del fields["critic"]
        self.options = EvalOptions.of(options, **fields)
        agents, model_options = self.options.agents, self.options.model_options()

        def resolved(role: Role, spec: str) -> AgentSpec:
            return resolve_agent(role, spec, in_process=agents.in_process, options=model_options)[0]

        self.agents = AgentSet(
            policy=None,
            user=resolved("user", agents.user),
            critic=None if agents.critic == "none" else resolved("critic", agents.critic),
        )
        self.verification = self.options.verification
        self.time_limits, self.grading, self.labels = self.options.time_limits, self.options.grading, labels
        self.reply_judge = None
        if self.options.reply_judge is not None:  # graded as `eval --reply-judge` grades
            from castbench._agents.models.reply_judge import judge_settings

            self.reply_judge = judge_settings(self.options.reply_judge, self.options.models.api_base)
        self._expected: dict[tuple[str, str], Database] = {}
        self.episode: Episode | None = None

    def reset(self, domain: str, task: str, trial: int = 0, seed: int = 0) -> PolicyView | None:
        """Start trial `trial` of `task` (`seed`: the run seed, as `eval --seed`); the policy's
        first view (`None` if the trial could not start: its record says why)."""
        if self.episode is not None:
            self.episode.close()
        pack = load_domain(domain)
        found = pack.task(task)
        key = (pack.name, found.id)
        if key not in self._expected:
            self._expected[key] = pack.replay(found)
        spec = TrialSpec(
            pack,
            found,
            trial,
            trial_seed(seed, pack.name, found.id, trial),
            self.agents,
            self._expected[key],
            self.options.limits_for([pack]),
            self.verification,
            grading=self.grading,
            reply_judge=self.reply_judge,
        )
        self.episode = Episode(spec, TrialRuntime(time_limits=self.time_limits))
        return self.episode.reset()

    def step(self, action: Any) -> EnvStep:
        """Step the current trial with one action (a `ToolCallAction` or `ReplyAction`)."""
        episode = self._current()
        outcome = episode.step(action)
        label = episode.last_proposal.label if self.labels and episode.last_proposal else None
        if not episode.done:
            return EnvStep(outcome.view, outcome.observation, False, label=label)
        record = episode.record()
        return EnvStep(None, outcome.observation, True, record.reward, label, record)

    def _current(self) -> Episode:
        if self.episode is None:
            raise EpisodeOver("call reset() before step()")
        return self.episode
