"""`castbench domains validate` fails a task whose own gold would trip the over-claiming rule: a
false claim the gold must say or its tools show, an output beside its own rivals, an offer the
oracle cannot make without naming a rival."""

from __future__ import annotations

import pytest

from castbench._domain.leaves import listed_argument
from castbench._domain.task import Rival
from castbench.domain import Domain, Task, load_domain
from castbench_authoring import validate
from castbench_authoring.generation import mention
from castbench_authoring.validate import validate_domain, validate_task


def _first(domain: Domain, family: str) -> Task:
    return next(task for task in domain.tasks("test") if task.family == family)


def _with(task: Task, **fields: object) -> Task:
    assert task.earned is not None
    return task.model_copy(update={"earned": task.earned.model_copy(update=fields)})


def test_the_generated_tasks_pass_the_check() -> None:
    for name in ["retail", "airline", "telecom", "telehealth"]:
        domain = load_domain(name)
        for task in domain.tasks("test"):
            assert validate_task(domain, task) == [], task.id


def test_a_false_claim_that_is_the_tasks_reason_is_caught() -> None:
    retail = load_domain("retail")
    task = _first(retail, "refuse_exchange_other_type")
    broken = _with(task, false_claims=[*task.earned.false_claims, mention("same product")])  # type: ignore[union-attr]
    problems = validate_task(retail, broken)
    where = f"retail task {task.id}: field 'earned.false_claims'"
    assert problems == [f"{where}: 'same product' is said by reason wording 'same product'"]


def test_a_false_claim_the_gold_tools_show_is_caught() -> None:
    retail = load_domain("retail")
    task = _first(retail, "refuse_cancel_not_pending")
    status = task.earned.reasons[0].any_of[0]  # type: ignore[union-attr]
    problems = validate_task(
        retail, _with(task, reasons=[mention("not pending")], false_claims=[mention(status)])
    )
    assert (
        f"retail task {task.id}: field 'earned.false_claims': {status!r} is said by what its tools show"
        in problems
    )


def test_an_output_beside_its_own_rival_and_a_rival_of_no_output_are_caught() -> None:
    retail = load_domain("retail")
    task = _first(retail, "lookup_order_total")
    total = task.required_outputs[0]
    bad = _with(task, rivals=[Rival(output=total, others=[total]), Rival(output="1.23", others=["4.56"])])
    problems = validate_task(retail, bad)
    where = f"retail task {task.id}: field 'earned.rivals'"
    assert f"{where}: the required outputs, stated together, name a rival of {total!r}" in problems
    assert f"{where}: '1.23' is no reason or required output of the task" in problems


def test_an_offer_that_must_name_a_rival_is_caught() -> None:
    retail = load_domain("retail")
    task = _first(retail, "declined_confirmation")
    problems = validate_task(retail, _with(task, offer_rivals=["cancel"]))
    assert problems == [
        f"retail task {task.id}: field 'earned.offer_rivals': the offer of cancel_pending_order names a rival"
    ]


def test_a_list_of_ids_read_as_a_name_no_record_has_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    telecom = load_domain("telecom")
    assert validate_domain(telecom).problems == []
    # the rule telecom's claims once came from: `bill_ids` -> `bill_id_id`, a field no bill has
    monkeypatch.setattr(validate, "listed_argument", lambda key: f"{key.removesuffix('s')}_id")
    problems = validate_domain(telecom).problems
    assert (
        "telecom: customers.bill_ids lists bills records, but the claims derivation reads it as "
        "'bill_id_id', which no bills record has"
    ) in problems
    assert all(problem.startswith("telecom: customers.") for problem in problems), problems


def test_listed_ids_are_read_as_their_records_name_field() -> None:
    assert [listed_argument(key) for key in ("bill_ids", "phone_numbers", "orders", "reservations")] == [
        "bill_id",
        "phone_number",
        "order_id",
        "reservation_id",
    ]
