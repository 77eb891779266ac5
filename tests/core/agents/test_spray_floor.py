"""Spray-style agents earn no more than looking up and refusing.

A reviewer's task-blind agent never changes anything: it asks for every fact, calls every read
tool it can reach, offers anything, then says every reason and every value. Five of them run here
on the refuse and no-change test tasks of each domain (where doing nothing can pass): the
built-in `scripted:lookup-spray`, the same without the policy's rules (values and offer only),
its values each beside its record's name (`tied`), one that states every refusal reason the
domain's train tasks give, and one that states every status the domain's records take. None may
pass a task that `scripted:lookup-refuse` fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from castbench._agents.registry import AgentSpec, resolve
from castbench._agents.scripted.spray import LookupSprayPolicy, policy_reasons
from castbench._agents.views import Briefing, PolicyView
from castbench._run.api import build_config
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.episode import AgentSet
from castbench.domain import Domain, load_domain

DOMAINS = ["retail", "airline", "telecom", "telehealth"]
PER_FAMILY = 2
"""Refuse and no-change test tasks per family: a few per domain keeps the test cheap."""


def _statuses(domain: Domain) -> list[str]:
    """Every value a `status` field takes in the domain's records."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "status" and isinstance(item, str):
                    found[item] = None
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(domain.pristine)
    return list(found)


def _reasons(domain: Domain) -> list[str]:
    """Every wording of every refusal reason the domain's train tasks name."""
    return list(
        dict.fromkeys(
            wording
            for task in domain.tasks("train")
            if task.earned is not None
            for reason in task.earned.reasons
            for wording in reason.any_of
        )
    )


def _saying(words: list[str], how: str) -> Callable[[Briefing], LookupSprayPolicy]:
    """A spray that states `words` (each a reason or a status) instead of the policy's rules."""

    class Sprayer(LookupSprayPolicy):
        def _spray(self, view: PolicyView) -> str:
            return super()._spray(view) + " " + how.format(", ".join(words))

    def make(briefing: Briefing) -> LookupSprayPolicy:
        return Sprayer(briefing, reasons=False)

    return make


def _policies(domain: Domain) -> dict[str, AgentSpec]:
    built = {
        "spray": resolve("policy", "scripted:lookup-spray"),
        "spray-values": resolve("policy", "scripted:lookup-spray?reasons=false"),
        # every value beside its record's name ("- B1: 37.31"): said of its record, not as the answer
        "spray-tied": resolve("policy", "scripted:lookup-spray?reasons=false&offer=false&tied=true"),
    }
    made = {
        "spray-reasons": _saying(_reasons(domain), "It cannot be done because: {}."),
        "spray-statuses": _saying(_statuses(domain), "Its status is one of: {}."),
    }
    for name, factory in made.items():
        built[name] = AgentSpec(role="policy", spec=f"test:{name}", name=f"test:{name}", factory=factory)
    return built


def _tasks(domain: Domain) -> list[str]:
    chosen: dict[str, list[str]] = {}
    for task in domain.tasks("test"):
        if task.outcome != "change" and len(chosen.setdefault(task.family, [])) < PER_FAMILY:
            chosen[task.family].append(task.id)
    return [task_id for ids in chosen.values() for task_id in ids]


def _passed(domain: Domain, tasks: list[str], policy: AgentSpec) -> set[str]:
    config, _ = build_config(domains=domain.name, policy="scripted:refuse", trials=1, tasks=tasks)
    agents = AgentSet(policy=policy, user=resolve("user", "scripted"))
    expected = ExpectedStates()
    return {job.task.id for job in plan_trials(config) if run_job(job, config, agents, expected).passed}


@pytest.mark.parametrize("name", DOMAINS)
def test_spray_agents_earn_nothing_that_looking_up_and_refusing_does_not(name: str) -> None:
    domain = load_domain(name)
    tasks = _tasks(domain)
    floor = _passed(domain, tasks, resolve("policy", "scripted:lookup-refuse"))
    for spray, policy in _policies(domain).items():
        extra = _passed(domain, tasks, policy) - floor
        assert not extra, f"{name}: {spray} passes {sorted(extra)} which lookup-refuse fails"


TAU_TASKS = {
    # read-only τ tasks the spray passed before its values were graded as claims, and two that
    # need every reservation looked up (29, 40), which looking up and refusing now also does
    "tau-airline": [
        "tau-airline-test-29",
        "tau-airline-test-35",
        "tau-airline-test-36",
        "tau-airline-test-37",
        "tau-airline-test-40",
        "tau-airline-test-47",
    ],
    "tau-retail": ["tau-retail-test-10", "tau-retail-test-62"],
}


@pytest.mark.extra("tau")
@pytest.mark.parametrize("name", sorted(TAU_TASKS))
def test_on_the_tau_packs_too(name: str) -> None:
    domain = load_domain(name)
    tasks = TAU_TASKS[name]
    floor = _passed(domain, tasks, resolve("policy", "scripted:lookup-refuse"))
    for spray in (
        "scripted:lookup-spray",
        "scripted:lookup-spray?reasons=false",
        "scripted:lookup-spray?reasons=false&offer=false&tied=true",
    ):
        extra = _passed(domain, tasks, resolve("policy", spray)) - floor
        assert not extra, f"{name}: {spray} passes {sorted(extra)} which lookup-refuse fails"
    assert floor >= {"tau-airline-test-29", "tau-airline-test-40"} & set(tasks)


def test_the_oracle_still_passes_those_tasks() -> None:
    for name in DOMAINS:
        domain = load_domain(name)
        tasks = _tasks(domain)
        assert _passed(domain, tasks, resolve("policy", "oracle")) == set(tasks), name


def test_the_spray_floor_is_not_privileged_and_says_the_policy_rules() -> None:
    assert not resolve("policy", "scripted:lookup-spray").privileged
    rules = policy_reasons(load_domain("retail").policy)
    assert any("same product" in rule for rule in rules)
    assert all(rule.strip() and "**" not in rule for rule in rules)
    assert json.dumps(rules)  # plain text, usable in a reply


def _pasting_the_policy(briefing: Briefing) -> LookupSprayPolicy:
    """A spray that pastes the whole policy document into its reply: the troubleshooting steps
    it names ("airplane mode must be off", "resets the APN settings and then restarts the phone")
    are not instructions to the customer, so the scripted user must not act on them."""

    class Paster(LookupSprayPolicy):
        def _spray(self, view: PolicyView) -> str:
            return super()._spray(view) + "\n" + view.briefing.policy

    return Paster(briefing)


def test_pasting_the_policy_makes_the_scripted_user_change_nothing_on_their_phone() -> None:
    domain = load_domain("telecom")
    tasks = [task.id for task in domain.tasks("test") if len(task.scenario.device_steps) > 1]
    assert len(tasks) >= 9, "the split has device tasks to try"
    floor = _passed(domain, tasks, resolve("policy", "scripted:lookup-refuse"))
    paster = AgentSpec(role="policy", spec="test:paste", name="test:paste", factory=_pasting_the_policy)
    extra = _passed(domain, tasks, paster) - floor
    assert not extra, f"pasting the policy passes {sorted(extra)} which lookup-refuse fails"
    assert _passed(domain, tasks, resolve("policy", "oracle")) == set(tasks)
