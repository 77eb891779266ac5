"""The frozen task splits: sizes, ids, and ground truth that replays on the seed state."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from castbench.domain import Database, Domain, ToolCall
from castbench_retail.families import FAMILIES

SPLITS = ["test", "train"]


def _write_calls(retail: Domain, actions: list[ToolCall]) -> list[ToolCall]:
    return [call for call in actions if retail.toolkit.is_write(call.name)]


def test_split_sizes_and_families(retail: Domain) -> None:
    assert retail.splits == SPLITS
    assert len(retail.tasks("test")) >= 114
    assert len(retail.tasks("train")) >= 500
    for split in SPLITS:
        assert set(Counter(task.family for task in retail.tasks(split))) == set(FAMILIES)


def test_ids_are_unique_and_numbered_in_order(retail: Domain) -> None:
    for split in SPLITS:
        ids = [task.id for task in retail.tasks(split)]
        assert ids == [f"retail-{split}-{number:04d}" for number in range(1, len(ids) + 1)]
    assert len({task.id for task in retail.tasks()}) == len(retail.tasks())


def test_half_of_tasks_authenticate_by_email(retail: Domain) -> None:
    for split in SPLITS:
        tasks = retail.tasks(split)
        by_email = sum(task.actions[0].name == "find_user_id_by_email" for task in tasks)
        assert 0.35 < by_email / len(tasks) < 0.65
        assert all(
            task.actions[0].name in ("find_user_id_by_email", "find_user_id_by_name_zip") for task in tasks
        )


def test_facts_have_distinct_leading_keywords(retail: Domain) -> None:
    for task in retail.tasks():
        leading = [fact.keywords[0].lower() for fact in task.scenario.facts]
        assert len(leading) == len(set(leading)), task.id
        assert task.scenario.request and task.scenario.instructions


@pytest.mark.parametrize("split", SPLITS)
def test_ground_truth_replays_and_matches_outcome(retail: Domain, split: str) -> None:
    for task in retail.tasks(split):
        db = retail.replay(task)  # raises ExpectedStateError on any error observation
        writes = _write_calls(retail, task.actions)
        if task.outcome == "change":
            assert writes and db.has_changes(), task.id
        else:
            assert not writes and not db.has_changes(), task.id


def test_unordered_writes_commute(retail: Domain) -> None:
    for task in retail.tasks():
        writes = _write_calls(retail, task.actions)
        if task.ordered or len(writes) < 2:
            continue
        reads = [call for call in task.actions if not retail.toolkit.is_write(call.name)]
        forward = retail.replay(task)
        backward = retail.replay(task.model_copy(update={"actions": reads + writes[::-1]}))
        assert forward.materialize() == backward.materialize(), task.id


def test_required_outputs_are_said_by_the_tools(retail: Domain) -> None:
    """What the agent must tell the user appears verbatim in what the ground-truth calls return."""
    for task in retail.tasks():
        if not task.required_outputs:
            continue
        db = Database(retail.pristine, retail.now)
        seen = " ".join(retail.toolkit.call(db, call.name, call.arguments).content for call in task.actions)
        for output in task.required_outputs:
            assert output in seen, (task.id, output)


def test_refusals_and_declines_have_no_write(retail: Domain) -> None:
    outcomes = Counter(task.outcome for task in retail.tasks("test"))
    assert outcomes["refuse"] > 0 and outcomes["no_change"] > 0
    declined = [task for task in retail.tasks() if not task.scenario.confirm]
    assert declined and all(task.outcome == "no_change" for task in declined)


def test_test_and_train_use_different_customers(retail: Domain) -> None:
    def customers(split: str) -> set[str]:
        db = retail.fresh_database()
        return {
            retail.toolkit.call(db, task.actions[0].name, task.actions[0].arguments).content
            for task in retail.tasks(split)
        }

    assert not customers("test") & customers("train")


def test_order_ids_look_like_store_ids(retail: Domain) -> None:
    pattern = re.compile(r"^#W\d{7}$")
    for task in retail.tasks():
        for call in task.actions:
            if "order_id" in call.arguments:
                assert pattern.match(call.arguments["order_id"]), task.id
