"""The copy-on-write sandbox: trials never see each other's writes, the pristine snapshot never
changes, a failed tool call leaves nothing behind (not even an id drawn from a sequence)."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from castbench.domain import Database, Domain, RecordNotFound, ToolCrash
from castbench_retail.schema import Order, User
from tests.core.toy import Counter, Ticket, build_toy_domain


@pytest.fixture
def toy(tmp_path: Path) -> Domain:
    return build_toy_domain(tmp_path)


def _digest(snapshot: object) -> str:
    return hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest()


def _some_order(db: Database) -> Order:
    return next(order for order in db.scan(Order) if order.items)


def test_writes_stay_in_their_own_database(retail: Domain) -> None:
    before = _digest(retail.pristine)
    first, second = retail.fresh_database(), retail.fresh_database()
    order = _some_order(first)
    changed = order.model_copy(update={"status": "cancelled", "cancel_reason": "test"})
    first.put(changed)

    assert first.get(Order, order.order_id).status == "cancelled"
    assert second.get(Order, order.order_id) == order
    assert retail.fresh_database().get(Order, order.order_id) == order
    assert retail.pristine["orders"][order.order_id]["status"] == order.status
    assert _digest(retail.pristine) == before
    assert first.touched() == {"orders": {order.order_id}}
    assert second.touched() == {} and not second.has_changes()


def test_inserts_and_deletes_stay_in_their_own_database(toy: Domain) -> None:
    first, second = toy.fresh_database(), toy.fresh_database()
    first.insert(Ticket(ticket_id="T-9", title="mine"))
    first.delete(Counter, "y")

    assert first.keys(Counter) == ["x"] and not first.exists(Counter, "y")
    assert second.keys(Counter) == ["x", "y"] and second.get(Counter, "y").value == 10
    assert second.keys(Ticket) == [] and first.keys(Ticket) == ["T-9"]
    with pytest.raises(RecordNotFound, match="counters 'y' not found"):
        first.get(Counter, "y")
    with pytest.raises(KeyError, match="already exists"):
        first.insert(Ticket(ticket_id="T-9", title="again"))
    assert first.materialize()["counters"].keys() == {"x"}
    assert "y" in toy.pristine["counters"]


def test_mutating_a_read_record_changes_nothing_without_put(retail: Domain) -> None:
    db = retail.fresh_database()
    order = _some_order(db)
    original_price = order.items[0].price
    order.status = "cancelled"
    order.items[0].price = -1.0
    order.address.city = "Nowhere"
    user = db.get(User, order.user_id)
    user.payment_methods.clear()
    user.orders.append("#W0000000")
    for found in db.find(Order, order_id=order.order_id):
        found.items.clear()

    again = db.get(Order, order.order_id)
    assert again.status != "cancelled"
    assert again.items[0].price == original_price and again.address.city != "Nowhere"
    assert db.get(User, order.user_id).payment_methods
    assert "#W0000000" not in db.get(User, order.user_id).orders
    assert not db.has_changes() and db.touched() == {}


def test_a_record_changed_after_put_is_not_stored_twice(toy: Domain) -> None:
    db = toy.fresh_database()
    counter = db.get(Counter, "x")
    counter.value = 6
    db.put(counter)
    counter.value = 999
    counter.tags.append("blue")
    assert db.get(Counter, "x").value == 6 and db.get(Counter, "x").tags == ["red"]


def test_a_tool_error_mid_way_leaves_none_of_its_writes(toy: Domain) -> None:
    db = toy.fresh_database()
    observation = toy.toolkit.call(db, "transfer", {"source": "x", "target": "y", "amount": 50})
    assert observation.error and "counter x has only 5" in observation.content
    assert db.get(Counter, "y").value == 10  # the write to the target was undone
    assert db.touched() == {} and not db.has_changes()

    missing = toy.toolkit.call(db, "transfer", {"source": "nope", "target": "y", "amount": 1})
    assert missing.error and "counters 'nope' not found" in missing.content
    assert db.touched() == {}

    done = toy.toolkit.call(db, "transfer", {"source": "x", "target": "y", "amount": 5})
    assert not done.error
    assert (db.get(Counter, "x").value, db.get(Counter, "y").value) == (0, 15)


def test_a_crashing_tool_is_rolled_back_and_raised(toy: Domain) -> None:
    db = toy.fresh_database()
    with pytest.raises(ToolCrash, match=r"tool crash crashed on .*ZeroDivisionError"):
        toy.toolkit.call(db, "crash", {"name": "x"})
    assert db.get(Counter, "x").value == 5 and db.touched() == {}


def test_new_id_rolls_back_with_a_failed_call(toy: Domain) -> None:
    db = toy.fresh_database()
    refused = toy.toolkit.call(db, "open_ticket", {"title": "reject"})
    assert refused.error and "refused" in refused.content
    assert db.keys(Ticket) == [] and db.touched() == {}

    first = json.loads(toy.toolkit.call(db, "open_ticket", {"title": "one"}).content)
    second = json.loads(toy.toolkit.call(db, "open_ticket", {"title": "two"}).content)
    assert (first["ticket_id"], second["ticket_id"]) == ("T-0001", "T-0002")
    # another sandbox draws its own ids from the same pristine counter
    other = toy.fresh_database()
    assert json.loads(toy.toolkit.call(other, "open_ticket", {"title": "x"}).content)["ticket_id"] == "T-0001"
    assert toy.pristine["_sequences"]["ticket"]["next"] == 1


def test_new_id_of_an_undeclared_sequence_is_an_error(toy: Domain) -> None:
    with pytest.raises(KeyError, match="'nope' is not declared"):
        toy.fresh_database().new_id("nope")


def test_fork_is_independent(toy: Domain) -> None:
    db = toy.fresh_database()
    toy.toolkit.call(db, "add", {"name": "x", "amount": 1})
    twin = db.fork()
    toy.toolkit.call(twin, "add", {"name": "x", "amount": 10})
    toy.toolkit.call(db, "configure", {"name": "x", "mode": "b", "tags": ["z"]})
    assert db.get(Counter, "x").value == 6 and db.get(Counter, "x").mode == "b"
    assert twin.get(Counter, "x").value == 16 and twin.get(Counter, "x").mode == "a"


def _final_state(domain: Domain, task_index: int) -> dict[str, dict[str, object]]:
    task = domain.tasks("test")[task_index]
    db = domain.replay(task)
    return {
        table: {key: db.row(table, key) for key in sorted(keys)}
        for table, keys in sorted(db.touched().items())
    }


def test_sandboxes_are_isolated_under_threads(retail: Domain) -> None:
    before = _digest(retail.pristine)
    count = len(retail.tasks("test"))
    sequential = [_final_state(retail, index) for index in range(count)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        # every task three times, interleaved, all on one shared pristine snapshot
        threaded = list(pool.map(lambda i: _final_state(retail, i % count), range(3 * count)))
    for index, state in enumerate(threaded):
        assert state == sequential[index % count], retail.tasks("test")[index % count].id
    assert _digest(retail.pristine) == before
