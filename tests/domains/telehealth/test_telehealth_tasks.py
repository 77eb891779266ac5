"""The frozen task splits: sizes, ids, and ground truth that replays on the seed state."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from castbench.domain import Database, Domain, ToolCall
from castbench_authoring.validate import validate_domain
from castbench_telehealth.families import FAMILIES
from castbench_telehealth.schema import Patient, Prescription

SPLITS = ["test", "train"]
AUTH = ("find_patient_by_email", "find_patient_by_name_dob")


def _writes(telehealth: Domain, actions: list[ToolCall]) -> list[ToolCall]:
    return [call for call in actions if telehealth.toolkit.is_write(call.name)]


def test_split_sizes_and_families(telehealth: Domain) -> None:
    assert telehealth.splits == SPLITS
    assert len(telehealth.tasks("test")) >= 40
    assert len(telehealth.tasks("train")) >= 150
    for split in SPLITS:
        counts = Counter(task.family for task in telehealth.tasks(split))
        assert set(counts) == set(FAMILIES)
        for family, (_, test_count, train_count) in FAMILIES.items():
            assert counts[family] == (test_count if split == "test" else train_count), family


def test_ids_are_unique_and_numbered_in_order(telehealth: Domain) -> None:
    for split in SPLITS:
        ids = [task.id for task in telehealth.tasks(split)]
        assert ids == [f"telehealth-{split}-{number:04d}" for number in range(1, len(ids) + 1)]


def test_every_task_authenticates_first_and_half_by_email(telehealth: Domain) -> None:
    for split in SPLITS:
        tasks = telehealth.tasks(split)
        assert all(task.actions[0].name in AUTH for task in tasks)
        by_email = sum(task.actions[0].name == "find_patient_by_email" for task in tasks)
        assert 0.3 < by_email / len(tasks) < 0.7


def test_facts_have_distinct_leading_keywords(telehealth: Domain) -> None:
    for task in telehealth.tasks():
        leading = [fact.keywords[0].lower() for fact in task.scenario.facts]
        assert len(leading) == len(set(leading)), task.id
        assert task.scenario.request and task.scenario.instructions and task.scenario.persona


def test_the_domain_validates() -> None:
    from castbench.domain import load_domain

    report = validate_domain(load_domain("telehealth"))
    assert report.ok, report.problems[:5]


@pytest.mark.parametrize("split", SPLITS)
def test_ground_truth_replays_and_matches_outcome(telehealth: Domain, split: str) -> None:
    for task in telehealth.tasks(split):
        db = telehealth.replay(task)
        writes = _writes(telehealth, task.actions)
        if task.outcome == "change":
            assert len(writes) == 1 and db.has_changes(), task.id
        else:
            assert not writes and not db.has_changes(), task.id


def test_declined_writes_would_have_worked(telehealth: Domain) -> None:
    declined = [task for task in telehealth.tasks() if task.declined_actions]
    assert declined and all(not task.scenario.confirm and task.outcome == "no_change" for task in declined)
    for task in declined:
        db = telehealth.replay(task)
        for call in task.declined_actions:
            assert not telehealth.toolkit.call(db, call.name, call.arguments).error, task.id


def test_required_outputs_are_said_by_the_tools(telehealth: Domain) -> None:
    for task in telehealth.tasks():
        db = Database(telehealth.pristine, telehealth.now)
        seen = " ".join(
            telehealth.toolkit.call(db, call.name, call.arguments).content for call in task.actions
        )
        for output in task.required_outputs:
            assert output in seen, (task.id, output)


def test_emergencies_tell_to_call_911_and_escalate_as_emergency(telehealth: Domain) -> None:
    tasks = [task for task in telehealth.tasks() if task.family == "emergency_escalation"]
    for task in tasks:
        assert task.required_outputs == ["911"]
        assert task.actions[-1].name == "escalate_to_clinician"
        assert task.actions[-1].arguments["urgency"] == "emergency"


def test_coverage_tasks_require_the_copay(telehealth: Domain) -> None:
    for task in telehealth.tasks():
        if task.family == "coverage_lookup":
            assert len(task.required_outputs) == 1 and task.required_outputs[0].startswith("$")


def test_refusals_concern_what_the_policy_forbids(telehealth: Domain) -> None:
    db = telehealth.fresh_database()
    for task in telehealth.tasks():
        if task.family.startswith("refuse_refill"):
            patient = telehealth.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
            medication = next(
                rx
                for rx in db.find(Prescription, patient_id=patient)
                if rx.medication in task.scenario.request
            )
            if task.family == "refuse_refill_controlled":
                assert medication.controlled and medication.refills_left > 0, task.id
            else:
                assert not medication.controlled and medication.refills_left == 0, task.id
        if task.family == "refuse_unlicensed_provider":
            patient_id = telehealth.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
            search = task.actions[-1]
            (found,) = json.loads(telehealth.toolkit.call(db, search.name, search.arguments).content)
            assert db.get(Patient, patient_id).state not in found["licensed_states"], task.id


def test_guardians_book_for_their_own_minors(telehealth: Domain) -> None:
    db = telehealth.fresh_database()
    tasks = [task for task in telehealth.tasks() if task.family == "guardian_books_minor"]
    assert tasks
    for task in tasks:
        guardian = telehealth.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
        child = db.get(Patient, task.actions[-1].arguments["patient_id"])
        assert child.guardian_id == guardian and child.email is None


def test_test_and_train_use_different_patients(telehealth: Domain) -> None:
    def speakers(split: str) -> set[str]:
        db = telehealth.fresh_database()
        return {
            telehealth.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
            for task in telehealth.tasks(split)
        }

    assert not speakers("test") & speakers("train")
