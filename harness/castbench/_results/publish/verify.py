"""Verify a run: re-execute every stored trial and compare with everything the run publishes.

`castbench verify`, `import` and `leaderboard build` use this, so an edited export is refused
before it reaches a store or a board. Checked:

- every trial re-executed and re-graded (`_trial/replay.py`: through the episode loop `eval`
  plays, under its run's limits and critic settings) with the grading mode recorded with its run
  (runs from before grading modes are re-graded the way they were graded): its tool results, user
  replies, endings and rewards;
- every proposal's label re-derived by the labeler on the state and conversation it met (its
  decision: valid, unknown, or invalid with its failure type): the critic figures (confusion
  matrix, false-flag rate, MCC, ...) are computed from these labels and the stored verdicts, so
  they cannot be moved without a mismatch; the verdicts of a built-in critic (rules, oracle, the
  seeded noisy one) are decided again too. Runs recorded before grading modes and strict grading
  (no `grading` in their config, no strict reward in their trials) were labelled by an earlier
  labeler, whose decisions today's does not reproduce: their labels are not re-derived;
- the config hash recomputed from the stored config (a renamed policy keeps no old hash);
- the privilege markers: a built-in agent known to read the ground truth (`oracle`, the
  simulated critics) must be marked privileged. An import path's claim cannot be proven here;
- clairvoyance (`_results/publish/forensics.py`): a run whose agents declared no privilege may not have
  passing trials whose writes use identifiers the conversation never revealed;
- for a run read from a store, each record against the digest castbench kept outside the store
  when it stored it (`castbench._records.store.digests`): a record overwritten in the store since (another
  run's passing trial of the same task, which replays as stored) is a problem of the run.

The first four and the digests are mismatches (`verify` exits 1); clairvoyance is a refusal of
its own (exit 2, naming the trials; `import --force` imports such a run marked as clairvoyant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from castbench._agents.registry import builtin_agents
from castbench._domain.database import Database
from castbench._domain.domain import Domain, DomainDataError
from castbench._domain.registry import load_domain
from castbench._domain.task import Task
from castbench._records.config import RunConfig
from castbench._records.provenance import placement_problems
from castbench._records.store.digests import DigestCheck
from castbench._records.trial import TrialRecord
from castbench._results.publish.forensics import ForensicsReport, ForensicsTally
from castbench._trial.replay import replay_trial

__all__ = ["TrialMismatch", "VerifyReport", "verify_run"]

_SHOWN = 5


class TrialMismatch(BaseModel):
    domain: str
    task_id: str
    trial_index: int
    problems: list[str]

    def describe(self, run_id: str) -> str:
        where = f"run {run_id}: {self.domain} task {self.task_id} trial {self.trial_index}"
        return f"{where}: {'; '.join(self.problems)}"


class VerifyReport(BaseModel):
    run_id: str
    trials: int
    """Trials checked."""
    mismatches: list[TrialMismatch]
    run_problems: list[str] = Field(default_factory=list)
    """What the run claims as a whole that does not hold: its config hash, its privilege markers."""
    forensics: ForensicsReport | None = None
    notes: list[str] = Field(default_factory=list)
    """What could not be checked, and why."""

    @property
    def verified(self) -> bool:
        """Every trial, label, hash and marker is what the run's own data gives."""
        return not self.mismatches and not self.run_problems

    @property
    def clairvoyant(self) -> bool:
        """Refused as clairvoyant: agents that declared no privilege acted on what nobody told them."""
        return self.forensics is not None and self.forensics.refused

    @property
    def ok(self) -> bool:
        return self.verified and not self.clairvoyant

    def describe(self) -> str:
        lines: list[str] = []
        if self.verified:
            lines.append(f"run {self.run_id}: all {self.trials} trials re-executed and re-graded as stored")
        else:
            bad = [f"run {self.run_id}: {problem}" for problem in self.run_problems]
            bad += [m.describe(self.run_id) for m in self.mismatches[:_SHOWN]]
            more = len(self.mismatches) - _SHOWN
            lines.append(
                f"run {self.run_id}: {len(self.mismatches)} of {self.trials} trials do not verify"
                + (
                    f", and {len(self.run_problems)} claim(s) of the run do not hold"
                    if self.run_problems
                    else ""
                )
                + "\n  "
                + "\n  ".join(bad)
                + (f"\n  ... and {more} more" if more > 0 else "")
            )
        if self.forensics is not None and self.forensics.clairvoyant:
            lines.append(self.forensics.describe())
        lines += [f"run {self.run_id}: {note}" for note in self.notes]
        return "\n".join(lines)


class _Domains:
    """Installed domains, their tasks and expected states, loaded once per verification."""

    def __init__(self) -> None:
        self._domains: dict[str, Domain | None] = {}
        self._tasks: dict[str, dict[str, Task]] = {}
        self._expected: dict[tuple[str, str], Database] = {}

    def domain(self, name: str) -> Domain | None:
        if name not in self._domains:
            try:
                loaded: Domain | None = load_domain(name)
            except (KeyError, DomainDataError):
                loaded = None
            self._domains[name] = loaded
            self._tasks[name] = {task.id: task for task in loaded.tasks()} if loaded else {}
        return self._domains[name]

    def task(self, domain: str, task_id: str) -> Task | None:
        """The task of a record, from any split: `tasks()` is the default split, and a run of
        another (τ² telecom's `full`, 2,285 tasks) named tasks it does not hold."""
        found = self._tasks[domain].get(task_id)
        loaded = self._domains.get(domain)
        if found is None and loaded is not None:
            try:
                found = self._tasks[domain][task_id] = loaded.task(task_id)
            except KeyError:
                return None
        return found

    def expected(self, domain: Domain, task: Task) -> Database:
        key = (domain.name, task.id)
        if key not in self._expected:
            self._expected[key] = domain.replay(task)
        return self._expected[key]


def _problems(record: TrialRecord, config: RunConfig, domains: _Domains) -> list[str]:
    domain = domains.domain(record.domain)
    if domain is None:
        return [f"domain {record.domain} is not installed"]
    task = domains.task(record.domain, record.task_id)
    if task is None:
        return [f"no task {record.task_id} in domain {record.domain} {domain.version}"]
    _, problems = replay_trial(
        domain,
        task,
        record,
        domains.expected(domain, task),
        run_seed=config.seed,
        user=config.user,
        traits=config.traits,
        grading=config.grading_mode,
        labels=config.grading is not None,
        critic=config.critic,
        perturbations=config.perturbations,
        judged=config.reply_judge is not None,
        limits=config.limits,
        verification=config.verification,
    )
    return problems


def _privilege_problems(config: RunConfig) -> list[str]:
    """Built-in agents known to read the ground truth that the run does not mark privileged."""
    problems = []
    roles: tuple[tuple[Literal["policy", "critic"], str], ...] = (
        ("policy", config.policy),
        ("critic", config.critic),
    )
    for role, spec in roles:
        known = {agent.name: agent for agent in builtin_agents(role)}
        agent = known.get(spec.partition("?")[0].strip())
        if agent is not None and agent.privileged and role not in config.privileged:
            problems.append(
                f"the {role} {spec!r} reads the ground truth, but the run does not mark it privileged"
            )
    return problems


def _hash_problems(config: RunConfig, config_hash: str | None) -> list[str]:
    if config_hash is None or config_hash == config.written_hash():
        return []
    return [
        f"stored config hash {config_hash[:12]} is not the hash of its config "
        f"({config.written_hash()[:12]}): the config was edited"
    ]


def verify_run(
    run_id: str,
    config: RunConfig,
    trials: Sequence[TrialRecord],
    config_hash: str | None = None,
    digests: DigestCheck | None = None,
) -> VerifyReport:
    """Re-execute and re-grade every trial of a run, re-derive its labels, check its config
    against `config_hash` (the hash stored with it), its privilege markers and its recorded
    placements, its stored records against `digests` (what castbench kept when it stored them),
    and examine its passing trials for clairvoyance."""
    domains = _Domains()
    mismatches: list[TrialMismatch] = []
    forensics = ForensicsTally()
    old_labels = 0
    count = 0
    for r in trials:  # one pass, nothing of a trial kept but what is reported (#59)
        count += 1
        problems = _problems(r, config, domains)
        if problems:
            mismatches.append(
                TrialMismatch(
                    domain=r.domain, task_id=r.task_id, trial_index=r.trial_index, problems=problems
                )
            )
        old_labels += _old_labels(config, r)
        if r.passed:
            forensics.add(r, domains.domain(r.domain))
    return VerifyReport(
        run_id=run_id,
        trials=count,
        mismatches=mismatches,
        run_problems=_hash_problems(config, config_hash)
        + _privilege_problems(config)
        + [f"provenance: {problem}" for problem in placement_problems(config)]
        + _digest_problems(digests),
        forensics=forensics.report(run_id, config.privileged),
        notes=_unchecked_labels(old_labels) + _digest_notes(digests) + _judge_notes(config),
    )


def _judge_notes(config: RunConfig) -> list[str]:
    """A judged run's reply checks are re-graded with its stored judge verdicts, not re-asked."""
    if config.reply_judge is None:
        return []
    return [
        f"replies were graded by the judge {config.reply_judge.get('model')}: the re-grade takes its "
        "stored verdicts (the rules' own are re-derived and compared), it does not ask the model again"
    ]


def _digest_problems(digests: DigestCheck | None) -> list[str]:
    if digests is None or not digests.changed:
        return []
    shown = "; ".join(digests.changed[:_SHOWN]) + (
        f"; and {len(digests.changed) - _SHOWN} more" if len(digests.changed) > _SHOWN else ""
    )
    return [
        f"{len(digests.changed)} stored record(s) differ from the digest castbench kept when it stored "
        f"them (changed in the store since): {shown}"
    ]


def _digest_notes(digests: DigestCheck | None) -> list[str]:
    if digests is None or not digests.unknown:
        return []
    return [
        f"{digests.unknown} stored record(s) have no digest on this machine (stored by another machine, "
        "or before castbench kept digests): not checked against one"
    ]


def _old_labels(config: RunConfig, trial: TrialRecord) -> int:
    """Labels of a trial recorded before grading modes (not re-derived: an earlier labeler's)."""
    if config.grading is not None or (trial.grade is not None and trial.grade.strict_reward is not None):
        return 0
    return sum(proposal.label is not None for step in trial.steps for proposal in step.proposals)


def _unchecked_labels(old: int) -> list[str]:
    if not old:
        return []
    return [f"{old} labels not re-derived: recorded before grading modes, by an earlier labeler"]
