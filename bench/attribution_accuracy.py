"""How often rule-based failure attribution is right, where the truth is known:
`python bench/attribution_accuracy.py [--trials 4] [--seed 0] [--noisy-p 0.3]`.

1. `scripted:noisy` with the scripted user over the four castbench domains (test split): a failed
   trial agrees when the attributed step and cause are those of a mistake the policy injected
   (its log, which the attribution never reads). Done when >= 95%.
2. The oracle with each misbehaving scripted user (`scripted:leaky`, `:contradicting`,
   `:quitter`): the oracle alone passes every task, so every failure is the user's doing; it
   agrees when the attribution names the user. Done when >= 90%.

Prints the per-domain and per-user figures, the attributed causes, and the first disagreements.
No asserts: it reports (tests/attribution runs a CI-sized version with thresholds).

Each trial is driven through an `Episode` in this process, so the scripted agents can be asked
afterwards what they did (the attribution itself only ever sees the stored record).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, Field

from castbench._agents.registry import resolve
from castbench._records.trial import TrialRecord
from castbench._results.attribution.model import Attribution
from castbench._results.attribution.rules import attribute
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialSpec
from castbench.domain import Domain, load_domain

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


DOMAINS = ("airline", "retail", "telecom", "telehealth")


def _print(title: str, report: dict[str, Agreement]) -> None:
    failed = sum(a.failed for a in report.values())
    agreed = sum(a.agreed for a in report.values())
    print(f"\n{title}")
    for name, item in report.items():
        causes = ", ".join(
            f"{cause} {count}" for cause, count in sorted(item.causes.items(), key=lambda c: -c[1])
        )
        print(f"  {name:24s} {item.agreed:4d}/{item.failed:<4d} = {item.share:6.1%}   causes: {causes}")
    print(f"  {'all':24s} {agreed:4d}/{failed:<4d} = {agreed / failed if failed else 1.0:6.1%}")
    for item in report.values():
        for line in item.disagreements[:5]:
            print(f"    disagrees: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="trials per task for scripted:noisy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noisy-p", type=float, default=0.3, help="scripted:noisy's mistake rate")
    args = parser.parse_args()
    started = time.perf_counter()
    noisy = noisy_agreement(
        DOMAINS, trials=args.trials, seed=args.seed, policy=f"scripted:noisy?p={args.noisy_p}"
    )
    _print(
        f"scripted:noisy?p={args.noisy_p}, {args.trials} trials/task, seed {args.seed}: "
        "failed trials whose attributed step and cause are an injected mistake's",
        noisy,
    )
    users = user_blame(DOMAINS, trials=1, seed=args.seed)
    _print("oracle with a misbehaving user, 1 trial/task: failed trials attributed to the user", users)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
