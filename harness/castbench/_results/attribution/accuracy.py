"""How often rule-based attribution is right, measured on scripted trials whose truth is known.

Two checks, each trial driven through an `Episode` in this process so the scripted agents can be
asked afterwards what they did (the attribution itself only ever sees the stored record):

- `noisy_agreement`: `scripted:noisy` with the scripted user; a failed trial agrees when the
  attributed step and cause are those of a mistake the policy injected there (`Injected`);
- `user_blame`: the oracle with a misbehaving user (`scripted:leaky`, `:contradicting`,
  `:quitter`); the oracle alone passes every task, so each failure is the user's doing, and it
  agrees when the attribution names the user.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, Field

from castbench._agents.registry import resolve
from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._records.trial import TrialRecord
from castbench._results.attribution.model import Attribution
from castbench._results.attribution.rules import attribute
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialSpec

__all__ = ["Agreement", "MISBEHAVING_USERS", "noisy_agreement", "user_blame"]

MISBEHAVING_USERS = ("scripted:leaky", "scripted:contradicting", "scripted:quitter")
_EXPECTED_CAUSE = {"skipped_instruction": "missing_state_change"}


class Agreement(BaseModel):
    failed: int = 0
    agreed: int = 0
    causes: dict[str, int] = Field(default_factory=dict)
    """Attributed causes over the failed trials."""
    disagreements: list[str] = Field(default_factory=list)
    """The first few that disagree: trial, what was attributed, what was true."""

    @property
    def share(self) -> float:
        return self.agreed / self.failed if self.failed else 1.0


def _trials(
    domain: Domain, policy: str, user: str, trials: int, seed: int, split: str, limit: int | None = None
) -> Iterator[tuple[TrialRecord, Episode]]:
    agents = AgentSet(policy=resolve("policy", policy), user=resolve("user", user))
    for task in domain.tasks(split)[:limit]:
        expected = domain.replay(task)
        for index in range(trials):
            seeded = trial_seed(seed, domain.name, task.id, index)
            episode = Episode(TrialSpec(domain, task, index, seeded, agents, expected))
            try:
                episode.play()
            finally:
                episode.close()
            yield episode.record(), episode


def _note(agreement: Agreement, attribution: Attribution, agreed: bool, truth: str) -> None:
    agreement.failed += 1
    agreement.agreed += agreed
    agreement.causes[attribution.cause] = agreement.causes.get(attribution.cause, 0) + 1
    if not agreed and len(agreement.disagreements) < 20:
        agreement.disagreements.append(
            f"{attribution.domain} {attribution.task}#{attribution.trial}: "
            f"{attribution.party}/{attribution.cause}@{attribution.step} vs {truth}"
        )


def noisy_agreement(
    domains: Iterable[str],
    trials: int = 4,
    seed: int = 0,
    split: str = "test",
    policy: str = "scripted:noisy",
    limit: int | None = None,
) -> dict[str, Agreement]:
    """Per domain: failed `scripted:noisy` trials whose attribution names an injected mistake
    (its step and its cause). `limit`: the first tasks of each domain only."""
    report: dict[str, Agreement] = {}
    for name in domains:
        agreement = report[name] = Agreement()
        for record, episode in _trials(load_domain(name), policy, "scripted", trials, seed, split, limit):
            attribution = attribute(record)
            if attribution is None:
                continue
            mistakes = getattr(episode.policy, "injected", ())  # the noisy policy's record of them
            injected = {(item.step, _EXPECTED_CAUSE.get(item.kind, item.kind)) for item in mistakes}
            kinds = {cause for _, cause in injected}
            agreed = (attribution.step, attribution.cause) in injected or (
                attribution.cause == "missing_state_change" and "missing_state_change" in kinds
            )
            _note(
                agreement, attribution, agreed, ", ".join(f"{c}@{s}" for s, c in sorted(injected)) or "none"
            )
    return report


def user_blame(
    domains: Iterable[str],
    users: Iterable[str] = MISBEHAVING_USERS,
    trials: int = 1,
    seed: int = 0,
    split: str = "test",
    limit: int | None = None,
) -> dict[str, Agreement]:
    """Per misbehaving user: the oracle's failed trials attributed to the user."""
    report: dict[str, Agreement] = {}
    for user in users:
        agreement = report[user] = Agreement()
        for name in domains:
            for record, _ in _trials(load_domain(name), "oracle", user, trials, seed, split, limit):
                attribution = attribute(record)
                if attribution is not None:
                    _note(agreement, attribution, attribution.party == "user", "user")
    return report


def cause_counts(report: dict[str, Agreement]) -> Counter[str]:
    total: Counter[str] = Counter()
    for agreement in report.values():
        total.update(agreement.causes)
    return total
