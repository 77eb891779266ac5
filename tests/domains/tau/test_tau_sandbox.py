"""τ's tools on castbench's copy-on-write sandbox: per-trial isolation, τ's own semantics."""

from __future__ import annotations

import json
import sys

import pytest

from castbench._grading.state_diff import state_diff
from castbench.domain import load_domain
from castbench_tau.cow import TauData, plain
from castbench_tau.domain import TauDomain


@pytest.fixture(scope="module")
def retail() -> TauDomain:
    return load_domain("tau-retail")  # type: ignore[return-value]


def _pending_order(retail: TauDomain) -> tuple[str, dict]:
    orders = retail.pristine["orders"]
    key = next(k for k, row in orders.items() if row["status"] == "pending")
    return key, orders[key]


def test_a_write_lands_in_its_own_sandbox_only(retail: TauDomain) -> None:
    key, row = _pending_order(retail)
    before = json.dumps(row, sort_keys=True)
    first, second = retail.fresh_database(), retail.fresh_database()
    observation = retail.toolkit.call(
        first, "cancel_pending_order", {"order_id": key, "reason": "no longer needed"}
    )
    assert not observation.error and json.loads(observation.content)["status"] == "cancelled"
    assert first.row("orders", key)["status"] == "cancelled"
    assert second.row("orders", key)["status"] == "pending"
    assert json.dumps(retail.pristine["orders"][key], sort_keys=True) == before
    assert key in first.touched()["orders"] and set(first.touched()) <= {"orders", "users"}


def test_reads_write_nothing(retail: TauDomain) -> None:
    db = retail.fresh_database()
    user = next(iter(retail.pristine["users"].values()))
    retail.toolkit.call(db, "find_user_id_by_email", {"email": user["email"]})
    retail.toolkit.call(db, "find_user_id_by_email", {"email": "nobody@example.com"})
    retail.toolkit.call(db, "list_all_product_types", {})
    assert db.touched() == {}


def test_errors_read_as_under_tau(retail: TauDomain) -> None:
    db = retail.fresh_database()
    unknown = retail.toolkit.call(db, "no_such_tool", {})
    assert unknown.content == "Unknown action no_such_tool" and unknown.error
    wrong = retail.toolkit.call(db, "get_order_details", {"order": "#W1"})
    assert (
        wrong.error
        and wrong.content.startswith("Error: ")
        and "unexpected keyword argument 'order'" in wrong.content
    )
    missing = retail.toolkit.call(db, "get_order_details", {"order_id": "#W0"})
    assert missing.content == "Error: order not found"


def test_a_tool_that_raises_keeps_what_it_changed_as_tau_does(retail: TauDomain) -> None:
    key, _ = _pending_order(retail)
    db = retail.fresh_database()
    data = TauData(db)
    data["orders"][key]["status"] = "half-done"
    with pytest.raises(TypeError, match="whole table"):
        data["orders"] = {}
    data.commit()
    assert db.row("orders", key)["status"] == "half-done"
    assert retail.pristine["orders"][key]["status"] == "pending"


def test_nested_mutation_and_aliases_behave_like_a_dict(retail: TauDomain) -> None:
    key, row = _pending_order(retail)
    db = retail.fresh_database()
    data = TauData(db)
    order = data["orders"][key]
    mine = {"transaction_type": "note", "amount": 1}
    order["payment_history"].append(mine)
    mine["amount"] = 2  # the tool's own object, still aliased
    order["items"][0]["price"] = 0.5
    assert type(order).__name__ == "dict" and json.loads(json.dumps(order))["items"][0]["price"] == 0.5
    data.commit()
    stored = db.row("orders", key)
    assert stored["payment_history"][-1] == {"transaction_type": "note", "amount": 2}
    assert stored["items"][0]["price"] == 0.5 and row["items"][0]["price"] != 0.5
    assert type(stored) is dict and type(stored["items"]) is list and plain(stored) == stored


def test_scans_keep_taus_order_after_a_change(retail: TauDomain) -> None:
    db = retail.fresh_database()
    keys = list(retail.pristine["orders"])
    data = TauData(db)
    data["orders"][keys[0]]["status"] = "changed"
    data["orders"]["#W-new"] = {"order_id": "#W-new"}
    data.commit()
    again = TauData(db)
    assert list(again["orders"]) == [*keys, "#W-new"]
    assert [k for k, _ in again["orders"].items()][:2] == keys[:2]
    assert again["orders"][keys[0]]["status"] == "changed"


def test_the_diff_sees_types_as_tau_hashes_them(retail: TauDomain) -> None:
    key, row = _pending_order(retail)
    one, other = retail.fresh_database(), retail.fresh_database()
    one.set_row("orders", key, {**row, "extra": 1})
    other.set_row("orders", key, {**row, "extra": 1.0})
    diff = state_diff(one, other)
    assert [(d.field, d.expected, d.got) for d in diff] == [("extra", 1.0, 1)]


def test_tau_tools_read_the_trials_frozen_clock_not_the_wall_clock() -> None:
    """τ's telehealth stamps a cancellation with `datetime.now()`: in a sandbox it is the pack's
    frozen day, so a stored run verifies on any day (it stopped verifying at midnight)."""
    telehealth: TauDomain = load_domain("tau-telehealth")  # type: ignore[assignment]
    key = next(k for k, row in telehealth.pristine["appointments"].items() if row["status"] == "scheduled")
    db = telehealth.fresh_database()
    observation = telehealth.toolkit.call(db, "cancel_appointment", {"appointment_id": key})
    day = telehealth.now.strftime("%Y-%m-%d")
    assert not observation.error and f"Cancellation Date: {day}" in observation.content
    assert db.row("appointments", key)["cancellation_date"] == day
    tool_module = sys.modules["tau_trait.envs.telehealth.tools.cancel_appointment"]
    assert tool_module.datetime.now().year > telehealth.now.year  # outside a call: the real clock


class _Counted:
    """A τ tool class that counts its invocations (the real one does the work)."""

    def __init__(self, tool: type) -> None:
        self.tool, self.calls = tool, 0

    def invoke(self, **kwargs: object) -> object:
        self.calls += 1
        return self.tool.invoke(**kwargs)


def test_a_look_up_is_answered_once_for_the_sandboxes_it_reads_alike(
    retail: TauDomain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#59: the trials of a task ask τ the same look-ups; the answer is shared while the tables it
    read are pristine in the asking sandbox, and worked out again where they changed."""
    toolkit = retail.toolkit
    user_id, user = next(iter(retail.pristine["users"].items()))
    name, zip_code = user["name"], user["address"]["zip"]
    arguments = {"first_name": name["first_name"], "last_name": name["last_name"], "zip": zip_code}
    counted = _Counted(toolkit._classes["find_user_id_by_name_zip"])
    monkeypatch.setitem(toolkit._classes, "find_user_id_by_name_zip", counted)
    toolkit.call(retail.fresh_database(), "get_user_details", {"user_id": "warm"})  # unrelated
    first = toolkit.call(retail.fresh_database(), "find_user_id_by_name_zip", arguments)
    second = toolkit.call(retail.fresh_database(), "find_user_id_by_name_zip", arguments)
    assert first.content == second.content == user_id and counted.calls <= 1
    changed = retail.fresh_database()
    address = {**user["address"], "zip": "00000"}
    done = toolkit.call(changed, "modify_user_address", {"user_id": user_id, **address})
    assert not done.error
    before = counted.calls
    again = toolkit.call(changed, "find_user_id_by_name_zip", arguments)
    assert counted.calls == before + 1 and again.content == "Error: user not found"


def test_a_look_up_that_writes_is_never_shared(retail: TauDomain, monkeypatch: pytest.MonkeyPatch) -> None:
    """τ does not say which tools write: a tool named as a look-up that adds a row (to a table it
    never read) still writes in every sandbox that calls it."""

    class Sneaky:
        @staticmethod
        def invoke(data: dict, order_id: str) -> str:
            data["orders"][f"{order_id}-copy"] = {"order_id": order_id}
            return "looked up"

    monkeypatch.setitem(retail.toolkit._classes, "get_order_details", Sneaky)
    one, other = retail.fresh_database(), retail.fresh_database()
    for db in (one, other):
        assert retail.toolkit.call(db, "get_order_details", {"order_id": "#W-x"}).content == "looked up"
        assert db.row("orders", "#W-x-copy") == {"order_id": "#W-x"}
