"""Counterfactual critic evaluation: what each verdict of a critic did to its trial.

A confusion matrix says whether a verdict was right; it cannot say what the verdict *did*. Two
runs with and without the critic differ in every later sample, so comparing them mixes the
critic's effect with noise. castbench's sandboxes are resettable and its trials seeded, so a
trial can be branched at a verdict and the branch the verdict did not take played to its end:

- a **flag**: the action executes as proposed and the loop goes on without that critique (later
  proposals are verified by the critic as usual). The policy stands by the flagged proposal: it
  comes back, unrevised, in the step's remaining rounds (the critic is asked as a policy that
  insists would have it asked) and executes when the critic passes it or the rounds run out; the
  policy never reads the critique. Where no round is left to stand in (a run that blocks an
  exhausted proposal), the flag is overruled where it stands;
- a **pass**: the action is flagged instead, with a critique that carries nothing but the flag
  (`BARE_CRITIQUE`: no failure type, no reason). The critic is not asked about that proposal at
  all (the flag spends the round its own flag would have); should its own verdicts run the step
  out one round short of a real step's, it is asked once more, on the same proposal, which then
  goes as an exhausted one does. The labeler's rationale would make a sharper
  critique, but it is privileged (it is computed from the gold actions) and would reach the
  policy: the branch would measure a critic that knows the answer. A pass's branch therefore
  measures what a flag *without a rationale* would have done: a lower bound on what a flag of
  this critic would have been worth, honestly defined for every critic alike.

What the critic sees (issue 56, route 9). A critic that could tell a branch from its trial could
play trials straight and sink branches (a flag then reads as a trial saved, a pass as nothing
lost). So a branch is played through the loop every trial runs, with the trial's time limits,
the same transport, worker pool, sandbox and bounds, and the critic is shown only what a real
trial could show it: never a verdict of its own overruled while it had rounds left (a flag's
proposal comes back as an insisting policy's does; a pass is never asked for), never fewer
verdicts at a step that ran out of rounds, and, for a critic of one's own (an import path), its
calls up to the branch point when they came in the trial (a policy answering from a cache in the
replay would otherwise rush them). What stays visible is written in docs/sandbox.md.

A verdict whose opposite would change nothing is not played: a flag in the last round when the
run executes an exhausted proposal anyway (`on_exhausted=execute`) executes in both branches, and
so does a pass there.

Taking the snapshot. The branch point's domain state and conversation are rebuilt by re-creating
every agent with the trial's seed and replaying the trial to the branch point: castbench cannot
copy an agent's hidden state (its plan, its random generator, a worker process's memory), but an
agent re-created from the same briefing and shown the same views rebuilds it. That requires each
agent (policy, critic, user) to be *replayable*: the same seed and the same views give the same
outputs. castbench checks it: the replayed prefix must equal the trial's record (every proposal,
verdict, tool result and user turn); where it does not, the branch is refused naming the agent
(`NotBranchable`) rather than reported on a different trial. An agent service cannot be
re-created at all (it holds its own state behind the network): refused up front
(`branch_refusal`). After the branch point the re-created agents go on from the state the replay
left them in, so every draw of a branch derives from the trial's own seed and a rerun gives the
same branches.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from castbench._base.conversation import Verdict
from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._domain.task import Task
from castbench._records.config import RunConfig, Verification
from castbench._records.trial import TrialRecord
from castbench._run.plan import TrialJob
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.deadline import TimeLimits
from castbench._trial.rollout import AgentSet
from castbench_analyses.branches import Branch, BranchPoint, Effect, TrialBranches

__all__ = [
    "BARE_CRITIQUE",
    "Branch",
    "BranchPoint",
    "Effect",
    "NotBranchable",
    "OtherVerdict",
    "TrialBranches",
    "branch_points",
    "branch_refusal",
    "branch_run",
    "branch_trial",
    "plays",
    "succeeded",
]

BARE_CRITIQUE = "Please reconsider this action before it is executed."
"""The whole critique of a pass's branch: no failure type and no reason (see the module's
docstring for why the labeler's rationale is not used)."""

PASSED_IN_BRANCH = "(counterfactual branch: this flag was overruled and the action executed)"


class NotBranchable(ValueError):
    """An agent that castbench cannot re-create at a branch point: the message names it."""


def branch_points(record: TrialRecord) -> Iterator[BranchPoint]:
    """Every critic verdict of the trial, in the order the critic gave them."""
    for step in record.steps:
        for proposal in step.proposals:
            if proposal.verdict is not None:
                label = proposal.label.label if proposal.label is not None else None
                yield BranchPoint(
                    step=step.index, round=proposal.round, flagged=proposal.verdict.flags, label=label
                )


def branch_refusal(agents: AgentSet) -> str | None:
    """Why the trials of `agents` cannot be branched at all, naming the agent; None if they may
    be (replayability is then checked branch by branch)."""
    for role, spec in agents.roles():
        if spec.kind == "service":
            return (
                f"the {role} '{spec.spec}' is an agent service: it holds its state behind the network, "
                "so castbench cannot re-create it at a branch point"
            )
    return None


class OtherVerdict:
    """Takes the other verdict at the branch point through the loop every trial runs (`Overrule`),
    so that what reaches the critic is what a real trial could show it (see the module's
    docstring, "What the critic sees"); keeps what the replay did there, for the check against
    the record.

    `record`: the trial as it ran; with `pace`, the replay waits so that each of the critic's calls
    up to the branch point comes when it came in the trial (within its step), and a flagged
    proposal the policy stands by comes back after the policy's own revision time."""

    def __init__(
        self,
        point: BranchPoint,
        verification: Verification | None = None,
        record: TrialRecord | None = None,
        pace: bool = False,
    ) -> None:
        self.point = point
        rules = verification or Verification()
        self.stand = point.flagged and rules.on_exhausted == "execute" and point.round + 1 < rules.rounds
        """A flag with rounds left under `execute`: the policy stands by the proposal (it comes
        back until the critic passes it or the rounds run out, and then it executes), as a
        policy that insists does in any trial. Otherwise the flag is overruled where it stands."""
        self.record = record if pace else None
        self.reached = False
        """The replay reached the branch point (the same proposal there: checked with the rest)."""
        self.seen: Verdict | None = None
        """The critic's own verdict at the branch point (a flag's branch asks it; a pass's never)."""
        self._origin: float | None = None
        """With `pace`: when the replay's first step's view came, from the trial's start."""

    def _recorded(self, step: int, round_: int) -> tuple[float, float] | None:
        """When, in the trial, step `step`'s view came and the critic was called about its proposal
        `round_`: seconds from the first step's view (each view came as the step before ended)."""
        if self.record is None or step >= len(self.record.steps):
            return None
        proposals = self.record.steps[step].proposals
        if round_ >= len(proposals):
            return None
        viewed = sum(earlier.timing.total_s for earlier in self.record.steps[:step])
        called = sum(p.policy_s for p in proposals[: round_ + 1]) + sum(
            p.critic_s for p in proposals[:round_]
        )
        if (step, round_) == (self.point.step, self.point.round) and not self.point.flagged:
            called += proposals[round_].critic_s  # a pass's branch: when its verdict came out
        return viewed, viewed + called

    def before(self, step: int, round_: int, since_view: float, since_start: float) -> Verdict | None:
        here = (step, round_) == (self.point.step, self.point.round)
        if (step, round_) <= (self.point.step, self.point.round):
            recorded = self._recorded(step, round_)
            if recorded is not None:  # the prefix as it ran: each of the critic's calls when it came
                viewed, called = recorded
                if self._origin is None:  # the replay's first view, from the trial's start
                    self._origin = since_start - since_view - viewed
                wait = self._origin + called - since_start
                if wait > 0:
                    time.sleep(wait)
        if not here:
            return None
        self.reached = True
        if self.point.flagged:
            return None
        # a pass's branch: the critic is not asked about this proposal at all, so no call of its
        # shows a verdict it gave being overruled (the next proposal it sees here is, to it, the
        # step's first or a revision of its own flag)
        return Verdict(verdict="invalid", explanation=BARE_CRITIQUE)

    def after(self, step: int, round_: int, verdict: Verdict) -> Verdict:
        if (step, round_) != (self.point.step, self.point.round):
            return verdict
        self.seen = verdict
        if verdict.flags and not self.stand:
            return Verdict(verdict="valid", explanation=PASSED_IN_BRANCH)
        return verdict

    def stands(self, step: int, round_: int) -> float | None:
        if not (self.stand and step == self.point.step and round_ >= self.point.round):
            return None
        if self.record is None:
            return 0.0
        proposals = self.record.steps[step].proposals if step < len(self.record.steps) else []
        revision = proposals[round_ + 1] if round_ + 1 < len(proposals) else None
        return revision.policy_s if revision is not None else 0.0


def _plain(value: BaseModel | None) -> Any:
    """What a replay must reproduce of an output: everything but its usage and timings."""
    return None if value is None else value.model_dump(mode="json", exclude={"usage"})


def _divergence(factual: TrialRecord, branch: TrialRecord, overrule: OtherVerdict) -> tuple[str, str] | None:
    """The role whose replayed output first differs from the record before the branch point, and
    what differed; None when the replay reproduced the trial up to it."""
    if branch.opening != factual.opening:
        return "user", "its opening message"
    point = overrule.point
    if not overrule.reached:  # the replay never came to the verdict: it went another way
        return (
            "policy",
            f"the replay ended at step {len(branch.steps)} ({branch.end_reason}) before the verdict",
        )
    for index, recorded in enumerate(factual.steps[: point.step + 1]):
        replayed = branch.steps[index] if index < len(branch.steps) else None
        if replayed is None:  # the branch ended inside the branch step: its verdict was checked
            break
        rounds = recorded.proposals if index < point.step else recorded.proposals[: point.round + 1]
        for round_, proposal in enumerate(rounds):
            again = replayed.proposals[round_] if round_ < len(replayed.proposals) else None
            if again is None or _plain(again.action) != _plain(proposal.action):
                return "policy", f"its proposal at step {index}, round {round_}"
            if (index, round_) == (point.step, point.round):
                break  # the verdict at the branch point: checked below, where the critic gave one
            if _plain(again.verdict) != _plain(proposal.verdict):
                return "critic", f"its verdict at step {index}, round {round_}"
        if index < point.step and _plain(replayed.observation) != _plain(recorded.observation):
            return "user", f"the answer at step {index}"
    given = factual.steps[point.step].proposals[point.round].verdict
    if point.flagged and _plain(overrule.seen) != _plain(given):
        return "critic", f"its verdict at step {point.step}, round {point.round}"
    return None


def succeeded(record: TrialRecord) -> bool:
    """A trial's success as branches compare it: passed with no executed action breaking the domain
    policy (the strict reward), where the trial was graded strictly; else its plain pass. Under
    the plain reward an unconfirmed write that reaches the right state passes, and a critic's flag
    that stopped it would read as a cost."""
    strict = record.strict_passed
    return record.passed if strict is None else strict


def _effect(factual: bool, branch: TrialRecord) -> Effect:
    if branch.status != "scored":
        return "unscored"
    if factual and not succeeded(branch):
        return "saved"
    if succeeded(branch) and not factual:
        return "cost"
    return "unchanged"


def plays(point: BranchPoint, config: RunConfig) -> bool:
    """Whether the opposite verdict could change anything (see the module's docstring)."""
    last_round = point.round + 1 >= config.verification.rounds
    return not (last_round and config.verification.on_exhausted == "execute")


def paced(agents: AgentSet) -> bool:
    """Whether a branch's replay keeps the trial's timing for the critic: when the critic is code
    of one's own (an import path), which could read the replay's pace (a policy whose model
    answers from a cache in the replay, in seconds in the trial). castbench's own critics read
    no clock."""
    return agents.critic is not None and agents.critic.kind == "import"


def branch_trial(
    record: TrialRecord,
    config: RunConfig,
    agents: AgentSet,
    job: TrialJob,
    expected: ExpectedStates,
    time_limits: TimeLimits | None = None,
) -> TrialBranches:
    """A branch for every critic verdict of the scored trial `record` (run `job` of `config`).
    `NotBranchable` when an agent cannot be re-created there."""
    refusal = branch_refusal(agents)
    if refusal is not None:
        raise NotBranchable(refusal)
    branches: list[Branch] = []
    for point in branch_points(record):
        if not plays(point, config):
            unchanged = Branch(
                point=point,
                played=False,
                passed=succeeded(record),
                reward=record.reward,
                end_reason=record.end_reason,
                steps=[],
                effect="unchanged",
            )
            branches.append(unchanged)
            continue
        overrule = OtherVerdict(point, config.verification, record, pace=paced(agents))
        played = run_job(job, config, agents, expected, time_limits, overrule=overrule)
        diverged = _divergence(record, played, overrule)
        if diverged is not None:
            role, what = diverged
            spec = {"policy": config.policy, "critic": config.critic, "user": config.user}[role]
            raise NotBranchable(
                f"trial {record.task_id}#{record.trial_index}: the {role} '{spec}' answered otherwise "
                f"when the trial was replayed to the branch at step {point.step} ({what}): castbench "
                "re-creates the agents at a branch point and replays the trial to it, which needs "
                "every agent to give the same outputs for the same seed and views"
            )
        branches.append(
            Branch(
                point=point,
                played=True,
                passed=succeeded(played),
                reward=played.reward,
                end_reason=played.end_reason,
                steps=played.steps[point.step :],
                effect=_effect(succeeded(record), played),
            )
        )
    return TrialBranches(
        domain=record.domain,
        task_id=record.task_id,
        trial_index=record.trial_index,
        seed=record.seed,
        passed=succeeded(record),
        branches=branches,
    )


def branch_run(
    config: RunConfig,
    agents: AgentSet,
    records: Iterable[TrialRecord],
    time_limits: TimeLimits | None = None,
) -> list[TrialBranches]:
    """Branches for every scored trial of a critic run (its trials' `records`), in record order.
    A run without a critic has no verdicts to branch: `ValueError`."""
    if agents.critic is None or agents.critic.kind == "none":
        raise ValueError("counterfactuals need a critic run: this run has no critic (--critic)")
    refusal = branch_refusal(agents)
    if refusal is not None:
        raise NotBranchable(refusal)
    domains: dict[str, Domain] = {}
    tasks: dict[tuple[str, str], Task] = {}
    expected = ExpectedStates()
    found: list[TrialBranches] = []
    for record in records:
        if record.status != "scored":
            continue
        if record.domain not in domains:
            domains[record.domain] = domain = load_domain(record.domain)
            tasks.update({(domain.name, task.id): task for task in domain.tasks(config.split)})
        task = tasks.get((record.domain, record.task_id))
        if task is None:
            raise ValueError(f"domain {record.domain}: task {record.task_id} is not in split {config.split}")
        job = TrialJob(domains[record.domain], task, record.trial_index, record.seed)
        found.append(branch_trial(record, config, agents, job, expected, time_limits))
    return found
