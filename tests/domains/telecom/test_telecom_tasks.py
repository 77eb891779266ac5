"""The frozen task splits: sizes, ids, ground truth that replays, and a customer's phone that ends fixed."""

from __future__ import annotations

from collections import Counter

import pytest

from castbench.domain import Database, Domain, Task, ToolCall
from castbench_authoring.validate import validate_domain
from castbench_telecom.device import phone_status
from castbench_telecom.families import FAMILIES

SPLITS = ["test", "train"]
AUTH = ("verify_customer_by_phone", "verify_customer_by_id")


def _writes(telecom: Domain, actions: list[ToolCall]) -> list[ToolCall]:
    return [call for call in actions if telecom.toolkit_for(call.actor).is_write(call.name)]


def test_split_sizes_and_families(telecom: Domain) -> None:
    assert telecom.splits == SPLITS
    assert len(telecom.tasks("test")) >= 40
    assert len(telecom.tasks("train")) >= 150
    for split in SPLITS:
        assert set(Counter(task.family for task in telecom.tasks(split))) == set(FAMILIES)


def test_ids_are_unique_and_numbered_in_order(telecom: Domain) -> None:
    for split in SPLITS:
        ids = [task.id for task in telecom.tasks(split)]
        assert ids == [f"telecom-{split}-{number:04d}" for number in range(1, len(ids) + 1)]


def test_domain_validates(telecom: Domain) -> None:
    report = validate_domain(telecom)
    assert report.ok, report.problems[:5]


def test_both_ways_of_identifying_are_used(telecom: Domain) -> None:
    for split in SPLITS:
        first = Counter(task.actions[0].name for task in telecom.tasks(split))
        assert set(first) == set(AUTH)
        assert 0.3 < first[AUTH[0]] / len(telecom.tasks(split)) < 0.7


def test_facts_have_distinct_leading_keywords(telecom: Domain) -> None:
    for task in telecom.tasks():
        leading = [fact.keywords[0].lower() for fact in task.scenario.facts]
        assert len(leading) == len(set(leading)), task.id
        assert task.scenario.request and task.scenario.instructions and task.scenario.persona


@pytest.mark.parametrize("split", SPLITS)
def test_ground_truth_replays_and_matches_outcome(telecom: Domain, split: str) -> None:
    for task in telecom.tasks(split):
        db = telecom.replay(task)
        writes = _writes(telecom, task.actions)
        if task.outcome == "change":
            assert writes and db.has_changes(), task.id
        else:
            assert not writes and not db.has_changes(), task.id


def _device_steps_are_unambiguous(task: Task) -> None:
    """Saying one step's instruction must not trigger another step: the scripted user performs
    every step whose keywords all appear."""
    for step in task.scenario.device_steps:
        said = step.instruction.lower()
        triggered = [s for s in task.scenario.device_steps if all(k.lower() in said for k in s.keywords)]
        assert triggered == [step], (task.id, step.instruction)


def test_device_steps_cover_user_actions_and_are_unambiguous(telecom: Domain) -> None:
    for task in telecom.tasks():
        steps = [step.call for step in task.scenario.device_steps]
        for call in task.actions:
            if call.actor == "user":
                assert call in steps, task.id
                assert call.name in telecom.toolkit_for("user"), task.id
        _device_steps_are_unambiguous(task)


def test_troubleshooting_leaves_the_phone_working(telecom: Domain) -> None:
    """Where the customer checks their phone, the last check shows service and data."""
    checked = 0
    for task in telecom.tasks():
        checks = [call for call in task.actions if call.name == "check_status"]
        if not checks:
            continue
        before = phone_status(telecom.fresh_database(), checks[0].arguments["phone_number"])
        after = phone_status(telecom.replay(task), checks[-1].arguments["phone_number"])
        assert before["mobile_data_connection"] == "not connected", task.id
        assert after["signal"] in ("connected", "roaming"), task.id
        assert after["mobile_data_connection"] == "connected", task.id
        checked += 1
    assert checked > 50


def test_required_outputs_are_said_by_the_tools(telecom: Domain) -> None:
    for task in telecom.tasks():
        if not task.required_outputs:
            continue
        db = Database(telecom.pristine, telecom.now)
        seen = " ".join(telecom.toolkit.call(db, call.name, call.arguments).content for call in task.actions)
        for output in task.required_outputs:
            assert output in seen, (task.id, output)


def test_refusals_declines_and_transfers(telecom: Domain) -> None:
    outcomes = Counter(task.outcome for task in telecom.tasks("test"))
    assert outcomes["refuse"] > 0 and outcomes["no_change"] > 0
    declined = [task for task in telecom.tasks() if not task.scenario.confirm]
    assert declined and all(task.outcome == "no_change" and task.declined_actions for task in declined)
    transfers = [task for task in telecom.tasks() if task.family == "transfer_port_out"]
    assert transfers and all(task.actions[-1].name == "transfer_to_human_agents" for task in transfers)


def test_refusals_would_break_a_rule(telecom: Domain) -> None:
    """What the customer wants in a refusal task is something the rules flag on the true state."""
    for task in telecom.tasks():
        if task.family == "refuse_resume_overdue":
            db = telecom.replay(task)
            phone = task.actions[1].arguments["phone_number"]
            findings = telecom.rules.state_findings(
                ToolCall(name="resume_line", arguments={"phone_number": phone}), db
            )
            assert any("overdue" in finding.message for finding in findings), task.id


def test_test_and_train_use_different_customers(telecom: Domain) -> None:
    def customers(split: str) -> set[str]:
        db = telecom.fresh_database()
        return {
            telecom.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
            for task in telecom.tasks(split)
        }

    assert not customers("test") & customers("train")


def test_an_amount_due_has_the_other_bills_amounts_as_rivals(telecom: Domain) -> None:
    """The customer's other bills' amounts are candidates beside the amount owed (a reply listing
    every bill's amount has not said which is owed); the owed bills' own amounts are not."""
    checked = 0
    for task in telecom.tasks():
        if task.family != "lookup_amount_due" or task.earned is None:
            continue
        (bills_call,) = [call for call in task.actions if call.name == "get_bills"]
        customer = telecom.pristine["customers"][bills_call.arguments["customer_id"]]
        bills = [telecom.pristine["bills"][bill_id] for bill_id in customer["bill_ids"]]
        owed = [bill for bill in bills if bill["status"] != "paid"]
        settled = [bill for bill in bills if bill["status"] == "paid"]
        (rival,) = [r for r in task.earned.rivals if r.output == task.required_outputs[0]]
        others = {float(other) for other in rival.others if other.replace(".", "").isdigit()}
        assert {b["amount"] for b in settled} - {b["amount"] for b in owed} <= others, task.id
        assert not {b["amount"] for b in owed} & others, task.id
        checked += 1
    assert checked >= 5
