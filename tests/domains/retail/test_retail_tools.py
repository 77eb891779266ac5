"""The store's tools enforce the policy's preconditions; errors reach the agent as observations."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from castbench.domain import Database, Domain
from castbench_retail.schema import GiftCard, Order, Product, User


def _order(db: Database, test: Callable[[Order], bool]) -> Order:
    return next(order for order in db.scan(Order) if test(order))


def _swap(db: Database, order: Order) -> tuple[str, str] | None:
    """(item id, another available variant of the same product), if the order has one."""
    for item in order.items:
        product = db.get(Product, item.product_id)
        for variant in product.variants.values():
            if variant.available and variant.item_id != item.item_id:
                return item.item_id, variant.item_id
    return None


def _method(db: Database, order: Order, test: Callable[[object], bool] = lambda m: True) -> str | None:
    user = db.get(User, order.user_id)
    return next((m.id for m in user.payment_methods.values() if test(m)), None)


def test_every_parameter_is_described_in_the_schema(retail: Domain) -> None:
    assert len(retail.toolkit) == 15
    for schema in retail.toolkit.schemas:
        function = schema["function"]
        assert function["description"]
        parameters = function["parameters"]
        for name, spec in parameters["properties"].items():
            assert spec.get("description"), f"{function['name']}.{name}"
        assert set(parameters["required"]) == set(parameters["properties"])


def test_cancel_reason_is_an_enumeration(retail: Domain) -> None:
    schema = retail.toolkit["cancel_pending_order"].schema["function"]["parameters"]
    assert schema["properties"]["reason"]["enum"] == ["no longer needed", "ordered by mistake"]
    db = retail.fresh_database()
    order = _order(db, lambda o: o.status == "pending")
    observation = retail.toolkit.call(
        db, "cancel_pending_order", {"order_id": order.order_id, "reason": "meh"}
    )
    assert observation.error and not db.has_changes()


def test_cancel_of_a_delivered_order_is_refused(retail: Domain, db: Database) -> None:
    order = _order(db, lambda o: o.status == "delivered")
    observation = retail.toolkit.call(
        db, "cancel_pending_order", {"order_id": order.order_id, "reason": "no longer needed"}
    )
    assert observation.error and "delivered" in observation.content
    assert not db.has_changes()


def test_cancel_refunds_a_gift_card_at_once(retail: Domain, db: Database) -> None:
    order = _order(
        db,
        lambda o: o.status == "pending" and o.payment_history[0].payment_method_id.startswith("gift_card"),
    )
    paid = order.payment_history[0]
    before = db.get(User, order.user_id).payment_methods[paid.payment_method_id]
    assert isinstance(before, GiftCard)
    observation = retail.toolkit.call(
        db, "cancel_pending_order", {"order_id": order.order_id, "reason": "ordered by mistake"}
    )
    assert not observation.error
    after = db.get(User, order.user_id).payment_methods[paid.payment_method_id]
    assert isinstance(after, GiftCard) and after.balance == round(before.balance + paid.amount, 2)
    cancelled = db.get(Order, order.order_id)
    assert cancelled.status == "cancelled" and cancelled.payment_history[-1].transaction_type == "refund"


def test_missing_order_is_an_error_observation(retail: Domain, db: Database) -> None:
    observation = retail.toolkit.call(db, "get_order_details", {"order_id": "#W0000000"})
    assert observation.error and "not found" in observation.content


def test_exchange_for_another_product_type_is_refused(retail: Domain, db: Database) -> None:
    order = _order(db, lambda o: o.status == "delivered")
    item = order.items[0]
    other = next(p for p in db.scan(Product) if p.product_id != item.product_id)
    new_id = next(iter(other.variants))
    observation = retail.toolkit.call(
        db,
        "exchange_delivered_order_items",
        {
            "order_id": order.order_id,
            "item_ids": [item.item_id],
            "new_item_ids": [new_id],
            "payment_method_id": order.payment_history[0].payment_method_id,
        },
    )
    assert observation.error and "not a variant" in observation.content
    assert not db.has_changes()


def test_exchange_to_an_unavailable_variant_is_refused(retail: Domain, db: Database) -> None:
    for order in db.scan(Order):
        if order.status != "delivered":
            continue
        item = order.items[0]
        gone = [v.item_id for v in db.get(Product, item.product_id).variants.values() if not v.available]
        if gone:
            break
    observation = retail.toolkit.call(
        db,
        "exchange_delivered_order_items",
        {
            "order_id": order.order_id,
            "item_ids": [item.item_id],
            "new_item_ids": [gone[0]],
            "payment_method_id": order.payment_history[0].payment_method_id,
        },
    )
    assert observation.error and "not available" in observation.content


def test_items_of_a_pending_order_can_be_modified_once(retail: Domain, db: Database) -> None:
    order = _order(
        db,
        lambda o: (
            o.status == "pending"
            and _swap(db, o) is not None
            and not o.payment_history[0].payment_method_id.startswith("gift_card")
        ),
    )
    old_id, new_id = _swap(db, order)  # type: ignore[misc]
    arguments = {
        "order_id": order.order_id,
        "item_ids": [old_id],
        "new_item_ids": [new_id],
        "payment_method_id": order.payment_history[0].payment_method_id,
    }
    first = retail.toolkit.call(db, "modify_pending_order_items", arguments)
    assert not first.error
    modified = json.loads(first.content)
    assert modified["items_modified"] and new_id in [item["item_id"] for item in modified["items"]]
    after_first = db.get(Order, order.order_id)
    back = {**arguments, "item_ids": [new_id], "new_item_ids": [old_id]}
    second = retail.toolkit.call(db, "modify_pending_order_items", back)
    assert second.error and "already been modified" in second.content
    assert db.get(Order, order.order_id) == after_first


def test_refund_to_someone_elses_gift_card_is_refused(retail: Domain, db: Database) -> None:
    order = _order(db, lambda o: o.status == "delivered")
    stranger = next(
        m.id
        for user in db.scan(User)
        if user.user_id != order.user_id
        for m in user.payment_methods.values()
        if isinstance(m, GiftCard)
    )
    observation = retail.toolkit.call(
        db,
        "return_delivered_order_items",
        {"order_id": order.order_id, "item_ids": [order.items[0].item_id], "payment_method_id": stranger},
    )
    assert observation.error and "does not belong" in observation.content
    assert not db.has_changes()


def test_refund_to_a_card_that_did_not_pay_is_refused(retail: Domain, db: Database) -> None:
    def other_card(order: Order) -> str | None:
        paid = order.payment_history[0].payment_method_id
        return _method(db, order, lambda m: m.source != "gift_card" and m.id != paid)  # type: ignore[attr-defined]

    order = _order(db, lambda o: o.status == "delivered" and other_card(o) is not None)
    observation = retail.toolkit.call(
        db,
        "return_delivered_order_items",
        {
            "order_id": order.order_id,
            "item_ids": [order.items[0].item_id],
            "payment_method_id": other_card(order),
        },
    )
    assert observation.error and "original payment method" in observation.content


def test_gift_card_must_cover_a_payment_switch(retail: Domain, db: Database) -> None:
    def poor_card(order: Order) -> str | None:
        return _method(
            db,
            order,
            lambda m: (
                isinstance(m, GiftCard)
                and m.balance < order.payment_history[0].amount
                and m.id != order.payment_history[0].payment_method_id
            ),
        )

    order = _order(
        db, lambda o: o.status == "pending" and len(o.payment_history) == 1 and poor_card(o) is not None
    )
    observation = retail.toolkit.call(
        db,
        "modify_pending_order_payment",
        {"order_id": order.order_id, "payment_method_id": poor_card(order)},
    )
    assert observation.error and "insufficient balance" in observation.content
    assert not db.has_changes()


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "'a' * 10", "2 ** 999999", "open('/etc/passwd')", "x + 1"],
)
def test_calculate_rejects_anything_but_arithmetic(retail: Domain, db: Database, expression: str) -> None:
    observation = retail.toolkit.call(db, "calculate", {"expression": expression})
    assert observation.error


def test_calculate_rounds_to_cents(retail: Domain, db: Database) -> None:
    assert retail.toolkit.call(db, "calculate", {"expression": "(10.5 + 2.25) * 2 / 3"}).content == "8.50"
    assert retail.toolkit.call(db, "calculate", {"expression": "1 / 0"}).error


def test_user_lookup_by_name_and_zip_ignores_case(retail: Domain, db: Database) -> None:
    user = next(db.scan(User))
    observation = retail.toolkit.call(
        db,
        "find_user_id_by_name_zip",
        {
            "first_name": user.name.first_name.upper(),
            "last_name": user.name.last_name.lower(),
            "zip": user.address.zip,
        },
    )
    assert observation.content == user.user_id
    by_email = retail.toolkit.call(db, "find_user_id_by_email", {"email": user.email.upper()})
    assert by_email.content == user.user_id


def test_transfer_ends_the_conversation_without_changes(retail: Domain, db: Database) -> None:
    observation = retail.toolkit.call(db, "transfer_to_human_agents", {"summary": "wants a price match"})
    assert observation.ends_conversation and not observation.error
    assert not db.has_changes()


def test_products_list_maps_names_to_ids(retail: Domain, db: Database) -> None:
    listing = json.loads(retail.toolkit.call(db, "list_all_product_types", {}).content)
    assert len(listing) == 50
    assert all(db.exists(Product, product_id) for product_id in listing.values())
