"""The frozen task splits: sizes, ids, families, and ground truth that replays on the seed state."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from castbench.domain import Database, Domain, ToolCall
from castbench_airline.families import FAMILIES
from castbench_airline.schema import Reservation, User
from castbench_authoring.validate import validate_domain

SPLITS = ["test", "train"]


def _writes(airline: Domain, actions: list[ToolCall]) -> list[ToolCall]:
    return [call for call in actions if airline.toolkit.is_write(call.name)]


def test_split_sizes_and_families(airline: Domain) -> None:
    assert airline.splits == SPLITS
    assert len(airline.tasks("test")) >= 50
    assert len(airline.tasks("train")) >= 200
    for split in SPLITS:
        assert set(Counter(task.family for task in airline.tasks(split))) == set(FAMILIES)


def test_ids_are_unique_and_numbered_in_order(airline: Domain) -> None:
    for split in SPLITS:
        ids = [task.id for task in airline.tasks(split)]
        assert ids == [f"airline-{split}-{number:04d}" for number in range(1, len(ids) + 1)]


def test_domain_validates(airline: Domain) -> None:
    report = validate_domain(airline)
    assert report.ok, report.problems[:5]


@pytest.mark.parametrize("split", SPLITS)
def test_ground_truth_replays_and_matches_outcome(airline: Domain, split: str) -> None:
    for task in airline.tasks(split):
        db = airline.replay(task)
        writes = _writes(airline, task.actions)
        if task.outcome == "change":
            assert writes and db.has_changes(), task.id
        else:
            assert not writes and not db.has_changes(), task.id


def test_account_tasks_verify_first_and_public_ones_need_no_account(airline: Domain) -> None:
    public = {"lookup_flight_status", "lookup_cheapest_flight"}
    for task in airline.tasks():
        if task.family in public:
            assert all(call.name in airline.rules.public_tools for call in task.actions), task.id
        else:
            assert task.actions[0].name == "verify_user_identity", task.id
            names = [fact.name for fact in task.scenario.facts]
            assert names[:2] == ["user_id", "date_of_birth"], task.id


def test_facts_have_distinct_leading_keywords(airline: Domain) -> None:
    for task in airline.tasks():
        leading = [fact.keywords[0].lower() for fact in task.scenario.facts]
        assert len(leading) == len(set(leading)), task.id
        assert task.scenario.request and task.scenario.instructions and task.scenario.persona


def test_required_outputs_are_said_by_the_tools(airline: Domain) -> None:
    for task in airline.tasks():
        db = Database(airline.pristine, airline.now)
        seen = " ".join(airline.toolkit.call(db, call.name, call.arguments).content for call in task.actions)
        for output in task.required_outputs:
            assert output in seen, (task.id, output)


def test_declined_writes_would_succeed(airline: Domain) -> None:
    declined = [task for task in airline.tasks() if task.declined_actions]
    assert declined
    for task in declined:
        assert not task.scenario.confirm and task.outcome == "no_change"
        db = airline.replay(task)
        for call in task.declined_actions:
            assert not airline.toolkit.call(db, call.name, call.arguments).error, task.id


def test_outcome_mix(airline: Domain) -> None:
    outcomes = Counter(task.outcome for task in airline.tasks("test"))
    assert outcomes["change"] > outcomes["refuse"] > 0 and outcomes["no_change"] > 0


def test_splits_use_different_customers_and_no_reservation_twice(airline: Domain) -> None:
    def customers(split: str) -> set[str]:
        return {
            t.actions[0].arguments["user_id"]
            for t in airline.tasks(split)
            if "user_id" in t.actions[0].arguments
        }

    assert not customers("test") & customers("train")
    for split in SPLITS:
        reservations = [
            call.arguments["reservation_id"]
            for task in airline.tasks(split)
            for call in task.actions[:3]
            if call.name == "get_reservation_details"
        ]
        assert len(reservations) == len(set(reservations))


def test_ids_look_like_airline_ids(airline: Domain) -> None:
    reservation, flight = re.compile(r"^[A-Z]{2}\d{4}$"), re.compile(r"^CB\d{3}$")
    for task in airline.tasks():
        for call in task.actions:
            if "reservation_id" in call.arguments:
                assert reservation.match(call.arguments["reservation_id"]), task.id
            if "flight_number" in call.arguments:
                assert flight.match(call.arguments["flight_number"]), task.id


def test_seed_state_is_consistent(airline: Domain, db: Database) -> None:
    users = {user.user_id: user for user in db.scan(User)}
    reservations = list(db.scan(Reservation))
    assert 250 <= len(users) <= 350 and 800 <= len(reservations) <= 1200
    for reservation in reservations:
        assert reservation.reservation_id in users[reservation.user_id].reservations
        assert reservation.created_at <= airline.now
        assert all(
            p.payment_id in users[reservation.user_id].payment_methods for p in reservation.payment_history
        )
