"""Broken-task reasons say what happened in τ's own tools, by class: a schema deviation τ accepts
(the call runs and stores the value) is not reported as a call a tool rejects, and a failing
write the gold follows with a fallback of the same tool is not a reason at all."""

from __future__ import annotations

from castbench_tau.domain import TauDomain
from tests.support import invoke

SCHEMA_ONLY = {
    "tau-airline": ("tau-airline-test-59", "book_reservation", "flight_type='multi_city'"),
    "tau-telecom": ("tau-telecom-dev-4", "manage_billing", "paperless=True"),
}


def test_a_deviation_tau_accepts_is_listed_as_such(packs: dict[str, TauDomain]) -> None:
    for name, (task_id, tool, stored) in SCHEMA_ONLY.items():
        pack = packs[name]
        reasons = pack.broken[task_id]
        assert len(reasons) == 1 and reasons[0].startswith(f"outside the schema: action 0 {tool}: "), reasons
        assert "τ's tool accepts the call and stores " in reasons[0] and stored in reasons[0]
        assert "rejects" not in reasons[0] and "invalid arguments" not in reasons[0]
        call = pack.task(task_id).actions[0]
        answer = pack.toolkit.call(pack.fresh_database(), call.name, call.arguments)
        assert not answer.error, answer.content  # τ's own tool runs it


def test_a_write_that_fails_in_tau_is_listed_apart(packs: dict[str, TauDomain]) -> None:
    reasons = packs["tau-airline"].broken["tau-airline-test-52"]
    assert (
        reasons[0] == "fails in τ: action 1 update_reservation_flights answers 'Error: reservation not found'"
    )
    assert any("its arguments are also outside the schema: argument 'cabin'" in r for r in reasons)
    assert reasons[-1].startswith("changes nothing: ")


def test_a_fallback_write_is_not_a_reason(packs: dict[str, TauDomain]) -> None:
    """Retail test 13 tries PayPal, then the credit card the user accepts; telehealth test 6 and 7
    try slots in the order the user gives until one is free."""
    for task_id in ("tau-retail-test-13", "tau-telehealth-test-6", "tau-telehealth-test-7"):
        pack = packs[task_id.rsplit("-", 2)[0]]
        assert task_id not in pack.broken
        assert task_id in {task.id for task in pack.tasks("test")}


def test_tasks_list_and_validate_show_the_reason() -> None:
    listed = invoke("tasks", "list", "--domain", "tau-airline", "--split", "test")
    assert listed.exit_code == 0, listed.output
    assert "8 broken task(s) excluded from this split's scores" in listed.output
    assert "tau-airline-test-59: outside the schema: action 0 book_reservation" in listed.output
    validated = invoke("domains", "validate", "--domain", "tau-telecom")
    assert validated.exit_code == 0, validated.output
    assert "tau-telecom-dev-4: outside the schema: action 0 manage_billing" in validated.output
