"""Rule-based failure attribution against known truth: the mistakes `scripted:noisy` injected (its
log, which the attribution never reads) and users made to misbehave on purpose."""

from __future__ import annotations

from castbench._base.conversation import ReplyAction, UserTurn
from castbench._records.trial import ActionLabel, Proposal, StepRecord, TrialRecord
from castbench._results.attribution import attribute, near_miss, user_faults
from castbench._results.attribution.accuracy import MISBEHAVING_USERS, _trials, noisy_agreement, user_blame
from castbench._results.attribution.rules import context
from castbench.domain import load_domain

DOMAINS = ("airline", "retail", "telecom", "telehealth")


def test_noisy_failures_are_attributed_to_the_mistake_injected() -> None:
    """CI-sized `bench/attribution_accuracy.py`: step and cause of an injected mistake."""
    report = noisy_agreement(DOMAINS, trials=1, seed=3, limit=30)
    failed = sum(a.failed for a in report.values())
    agreed = sum(a.agreed for a in report.values())
    assert failed >= 20, report
    assert agreed / failed >= 0.95, [d for a in report.values() for d in a.disagreements]
    causes = {cause for a in report.values() for cause in a.causes}
    assert {"hallucination", "wrong_tool"} <= causes


def test_failures_a_misbehaving_user_causes_are_blamed_on_the_user() -> None:
    report = user_blame(DOMAINS, seed=1, limit=8)
    assert set(report) == set(MISBEHAVING_USERS)
    for user, agreement in report.items():
        assert agreement.failed >= 5, (user, agreement)
        assert agreement.share >= 0.9, (user, agreement.disagreements)
    assert set(report["scripted:quitter"].causes) == {"ended_early"}
    assert set(report["scripted:contradicting"].causes) == {"contradicted_facts"}
    assert set(report["scripted:leaky"].causes) == {"leaked_goal"}


def test_the_oracle_with_the_scripted_user_shows_no_simulator_fault() -> None:
    """The well-behaved user, confused or impatient as its traits say, is not a faulty one."""
    domain = load_domain("retail")
    for record, _ in _trials(domain, "oracle", "scripted", 1, 0, "test", limit=25):
        task = context(record.domain, record.task_id)[1]
        assert record.passed and user_faults(record, task) == [], record.task_id


def test_attribution_is_computed_from_the_stored_record() -> None:
    domain = load_domain("telecom")
    failed = [
        r
        for r, _ in _trials(domain, "scripted:noisy?p=0.6", "scripted", 1, 0, "test", limit=12)
        if not r.passed
    ]
    assert failed
    for record in failed:
        stored = TrialRecord.model_validate_json(record.model_dump_json())
        assert attribute(stored) == attribute(record) is not None


def _record(**fields: object) -> TrialRecord:
    base: dict[str, object] = dict(
        domain="retail", domain_version="1", task_id="retail-test-0001", trial_index=0, seed=1,
        status="scored", reward=0.0, end_reason="user_stop", opening="Hi",
    )  # fmt: skip
    return TrialRecord.model_validate({**base, **fields})


def test_unscored_and_crashed_trials_name_the_harness_the_user_or_the_agent() -> None:
    harness = attribute(_record(status="error", reward=None, end_reason="infra_error", error="503"))
    user = attribute(_record(status="error", reward=None, end_reason="agent_error", error="user raised"))
    agent = attribute(_record(end_reason="agent_error", error="policy raised"))
    assert harness is not None and (harness.party, harness.cause) == ("harness", "infra_error")
    assert user is not None and (user.party, user.cause) == ("user", "user_error")
    assert agent is not None and (agent.party, agent.cause) == ("agent", "agent_error")
    assert attribute(_record(status="scored", reward=1.0)) is None


def test_a_user_leaving_while_the_agent_waits_is_the_users_fault_a_repeated_question_is_not() -> None:
    asked = ReplyAction(text="Could you tell me your order id?")
    step = StepRecord(
        index=0,
        proposals=[Proposal(round=0, action=asked, label=ActionLabel(label="unknown"))],
        action=asked,
        observation=UserTurn(text="Bye."),
        user_stop=True,
    )
    first = attribute(_record(steps=[step]), lookup=False)
    assert first is not None and (first.party, first.cause, first.step) == ("user", "ended_early", 0)
    again = step.model_copy(update={"index": 1})
    answered = step.model_copy(update={"observation": UserTurn(text="It is #W1."), "user_stop": False})
    repeated = attribute(_record(steps=[answered, again]), lookup=False)
    assert repeated is not None and repeated.party == "agent"


def test_near_misses_are_passes_that_broke_the_policy() -> None:
    domain = load_domain("retail")
    passed = [
        r for r, _ in _trials(domain, "scripted:noisy?p=0.5", "scripted", 1, 0, "test", limit=40) if r.passed
    ]
    misses = [m for r in passed if (m := near_miss(r)) is not None]
    assert misses and {m.cause for m in misses} <= {"domain_violation", "hallucination"}
    for miss in misses:
        record = next(r for r in passed if (r.task_id, r.trial_index) == (miss.task, miss.trial))
        label = record.steps[miss.step].proposals[-1].label
        assert label is not None and label.label == "invalid"
    oracle = [r for r, _ in _trials(domain, "oracle", "scripted", 1, 0, "test", limit=10)]
    assert all(near_miss(r) is None for r in oracle)
