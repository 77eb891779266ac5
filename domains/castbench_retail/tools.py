"""The store's tools: what a customer-service agent can look up and change.

Every precondition of the policy that the back end can check is checked here and raised as a
`ToolError`; the rest (authentication, explicit confirmation) is the agent's job.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from castbench.domain import Database, ToolError, calculate, read_tool, transfer_to_human_agents, write_tool
from castbench_retail.schema import (
    Address,
    CreditCard,
    GiftCard,
    Order,
    OrderItem,
    Payment,
    PayPal,
    Product,
    User,
    money,
)

__all__ = ["TOOLS"]


# -- helpers ---------------------------------------------------------------------------------
def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> Address:
    return Address(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)


def _order_in_status(db: Database, order_id: str, *statuses: str) -> Order:
    order = db.get(Order, order_id)
    if order.status not in statuses:
        wanted = " or ".join(f"'{status}'" for status in statuses)
        raise ToolError(f"order {order_id} is '{order.status}'; this needs an order that is {wanted}")
    return order


def _check_items_in_order(order: Order, item_ids: list[str]) -> None:
    if not item_ids:
        raise ToolError("item_ids must name at least one item")
    have = Counter(item.item_id for item in order.items)
    for item_id, count in Counter(item_ids).items():
        if have[item_id] < count:
            raise ToolError(f"item {item_id} is not in order {order.order_id} (or not that many times)")


def _replacements(
    db: Database, order: Order, item_ids: list[str], new_item_ids: list[str]
) -> list[OrderItem]:
    """The new order lines for `item_ids` -> `new_item_ids`: same product, available variant."""
    if len(item_ids) != len(new_item_ids):
        raise ToolError("item_ids and new_item_ids must have the same length")
    _check_items_in_order(order, item_ids)
    by_id = {item.item_id: item for item in order.items}
    lines: list[OrderItem] = []
    for old_id, new_id in zip(item_ids, new_item_ids, strict=True):
        old = by_id[old_id]
        if new_id == old_id:
            raise ToolError(f"new item {new_id} is the same as the item it replaces")
        product = db.get(Product, old.product_id)
        variant = product.variants.get(new_id)
        if variant is None:
            raise ToolError(f"new item {new_id} is not a variant of {product.name} ({product.product_id})")
        if not variant.available:
            raise ToolError(f"new item {new_id} is not available")
        lines.append(
            OrderItem(
                name=product.name,
                product_id=product.product_id,
                item_id=new_id,
                price=variant.price,
                options=dict(variant.options),
            )
        )
    return lines


def _price_difference(order: Order, item_ids: list[str], lines: list[OrderItem]) -> float:
    by_id = {item.item_id: item for item in order.items}
    return money(sum(line.price for line in lines) - sum(by_id[item_id].price for item_id in item_ids))


def _user_method(user: User, payment_method_id: str) -> CreditCard | PayPal | GiftCard:
    method = user.payment_methods.get(payment_method_id)
    if method is None:
        raise ToolError(f"payment method {payment_method_id} does not belong to user {user.user_id}")
    return method


def _adjust_gift_card(user: User, payment_method_id: str, delta: float) -> None:
    """Add `delta` to a gift card's balance (no-op for other methods); refuse overdrafts."""
    method = user.payment_methods[payment_method_id]
    if not isinstance(method, GiftCard):
        return
    balance = money(method.balance + delta)
    if balance < 0:
        raise ToolError(f"gift card {payment_method_id} has insufficient balance ({method.balance:.2f})")
    method.balance = balance


def _settle(order: Order, user: User, amount: float, payment_method_id: str) -> None:
    """Charge (amount > 0) or refund (amount < 0) a price difference on the order."""
    if amount == 0:
        return
    _adjust_gift_card(user, payment_method_id, -amount)
    kind: Literal["payment", "refund"] = "payment" if amount > 0 else "refund"
    order.payment_history.append(
        Payment(transaction_type=kind, amount=money(abs(amount)), payment_method_id=payment_method_id)
    )


# -- lookups ---------------------------------------------------------------------------------
@read_tool(authenticates=True)
def find_user_id_by_email(db: Database, email: str) -> str:
    """Find a customer's user id from their email address.

    Args:
        email: The customer's email address, e.g. 'ana.silva42@example.com'.
    """
    matches = db.find(User, email=email)
    if not matches:
        wanted = email.strip().lower()
        matches = [user for user in db.scan(User) if user.email.lower() == wanted]
    if not matches:
        raise ToolError(f"no user with email '{email}'")
    return matches[0].user_id


@read_tool(authenticates=True)
def find_user_id_by_name_zip(db: Database, first_name: str, last_name: str, zip: str) -> str:
    """Find a customer's user id from their first name, last name and zip code.

    Args:
        first_name: The customer's first name, e.g. 'Ana'.
        last_name: The customer's last name, e.g. 'Silva'.
        zip: The zip code of the customer's default address, e.g. '30308'.
    """
    exact = db.find(User, name={"first_name": first_name, "last_name": last_name})
    matches = [user for user in exact if user.address.zip == zip.strip()]
    if not matches:
        wanted = (first_name.strip().lower(), last_name.strip().lower(), zip.strip())
        matches = [
            user
            for user in db.scan(User)
            if (user.name.first_name.lower(), user.name.last_name.lower(), user.address.zip) == wanted
        ]
    if not matches:
        raise ToolError("no user with that first name, last name and zip code")
    return matches[0].user_id


@read_tool
def get_user_details(db: Database, user_id: str) -> User:
    """Get a customer's profile: name, default address, email, payment methods and order ids.

    Args:
        user_id: The customer's user id, e.g. 'ana_silva_4821'.
    """
    return db.get(User, user_id)


@read_tool
def get_order_details(db: Database, order_id: str) -> Order:
    """Get an order: its status, items, shipping address, fulfillments and payment history.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
    """
    return db.get(Order, order_id)


@read_tool(public=True)
def get_product_details(db: Database, product_id: str) -> Product:
    """Get a product type's variants: each item id with its options, price and availability.

    Args:
        product_id: The product id, e.g. '4820197365'. It is not an item id.
    """
    return db.get(Product, product_id)


@read_tool(public=True)
def list_all_product_types(db: Database) -> dict[str, str]:
    """List every product type the store sells, as a map from product name to product id."""
    return {product.name: product.product_id for product in sorted(db.scan(Product), key=lambda p: p.name)}


# -- changes to pending orders ---------------------------------------------------------------
@write_tool(requires={"status": "pending"})
def cancel_pending_order(
    db: Database, order_id: str, reason: Literal["no longer needed", "ordered by mistake"]
) -> Order:
    """Cancel a pending order and refund every payment to the method it was paid with.

    Gift card refunds are credited at once; other refunds take 5-7 business days.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        reason: Why the customer cancels: 'no longer needed' or 'ordered by mistake'.
    """
    order = _order_in_status(db, order_id, "pending")
    user = db.get(User, order.user_id)
    net: dict[str, float] = {}
    for entry in order.payment_history:
        sign = 1 if entry.transaction_type == "payment" else -1
        net[entry.payment_method_id] = money(net.get(entry.payment_method_id, 0.0) + sign * entry.amount)
    refunds = [
        Payment(transaction_type="refund", amount=amount, payment_method_id=method_id)
        for method_id, amount in net.items()
        if amount > 0
    ]
    for entry in refunds:
        if entry.payment_method_id in user.payment_methods:
            _adjust_gift_card(user, entry.payment_method_id, entry.amount)
    order.payment_history.extend(refunds)
    order.status = "cancelled"
    order.cancel_reason = reason
    db.put(order)
    db.put(user)
    return order


@write_tool(requires={"status": "pending"})
def modify_pending_order_address(
    db: Database, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> Order:
    """Change the shipping address of a pending order.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        address1: First address line (street and number).
        address2: Second address line (apartment, suite), or '' if none.
        city: City.
        state: State, as a two-letter code, e.g. 'GA'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '30308'.
    """
    order = _order_in_status(db, order_id, "pending")
    order.address = _address(address1, address2, city, state, country, zip)
    db.put(order)
    return order


@write_tool(requires={"status": "pending"})
def modify_pending_order_items(
    db: Database, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> Order:
    """Swap items of a pending order for other variants of the same product (allowed once per order).

    The price difference is charged to, or refunded to, the given payment method; a gift card
    must have enough balance to cover a charge.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        item_ids: The item ids in the order to replace; repeat an id to replace several units.
        new_item_ids: The new item ids, position by position; each a different, available
            variant of the same product.
        payment_method_id: The customer's payment method that pays or receives the price
            difference, e.g. 'gift_card_1234567'.
    """
    order = _order_in_status(db, order_id, "pending")
    if order.items_modified:
        raise ToolError(f"the items of order {order_id} have already been modified once")
    user = db.get(User, order.user_id)
    _user_method(user, payment_method_id)
    lines = _replacements(db, order, item_ids, new_item_ids)
    _settle(order, user, _price_difference(order, item_ids, lines), payment_method_id)
    for old_id, line in zip(item_ids, lines, strict=True):
        position = next(i for i, item in enumerate(order.items) if item.item_id == old_id)
        order.items[position] = line
    order.items_modified = True
    db.put(order)
    db.put(user)
    return order


@write_tool(requires={"status": "pending"})
def modify_pending_order_payment(db: Database, order_id: str, payment_method_id: str) -> Order:
    """Pay a pending order with another of the customer's payment methods; the old one is refunded.

    Only an order paid in a single payment can be switched; a gift card must cover the total.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        payment_method_id: The new payment method id, e.g. 'credit_card_1234567'.
    """
    order = _order_in_status(db, order_id, "pending")
    payments = [entry for entry in order.payment_history if entry.transaction_type == "payment"]
    if len(order.payment_history) != 1 or len(payments) != 1:
        raise ToolError(f"order {order_id} has more than one transaction; its payment cannot be switched")
    old = payments[0]
    if old.payment_method_id == payment_method_id:
        raise ToolError("the new payment method is the one the order is already paid with")
    user = db.get(User, order.user_id)
    _user_method(user, payment_method_id)
    _adjust_gift_card(user, payment_method_id, -old.amount)
    if old.payment_method_id in user.payment_methods:
        _adjust_gift_card(user, old.payment_method_id, old.amount)
    order.payment_history += [
        Payment(transaction_type="payment", amount=old.amount, payment_method_id=payment_method_id),
        Payment(transaction_type="refund", amount=old.amount, payment_method_id=old.payment_method_id),
    ]
    db.put(order)
    db.put(user)
    return order


@write_tool
def modify_user_address(
    db: Database, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> User:
    """Change a customer's default address (existing orders keep their own address).

    Args:
        user_id: The customer's user id, e.g. 'ana_silva_4821'.
        address1: First address line (street and number).
        address2: Second address line (apartment, suite), or '' if none.
        city: City.
        state: State, as a two-letter code, e.g. 'GA'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '30308'.
    """
    user = db.get(User, user_id)
    user.address = _address(address1, address2, city, state, country, zip)
    db.put(user)
    return user


# -- changes to delivered orders -------------------------------------------------------------
@write_tool(requires={"status": "delivered"})
def return_delivered_order_items(
    db: Database, order_id: str, item_ids: list[str], payment_method_id: str
) -> Order:
    """Request the return of items of a delivered order; the customer gets return instructions by email.

    The refund goes to the order's original payment method or to one of the customer's gift cards.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        item_ids: The item ids to return; repeat an id to return several units.
        payment_method_id: Where the refund goes: the original payment method or a gift card of the customer.
    """
    order = _order_in_status(db, order_id, "delivered")
    _check_items_in_order(order, item_ids)
    user = db.get(User, order.user_id)
    method = _user_method(user, payment_method_id)
    original = order.payment_history[0].payment_method_id
    if payment_method_id != original and not isinstance(method, GiftCard):
        raise ToolError("a refund goes to the original payment method or to one of the customer's gift cards")
    order.status = "return requested"
    order.return_items = sorted(item_ids)
    order.return_payment_method_id = payment_method_id
    db.put(order)
    return order


@write_tool(requires={"status": "delivered"})
def exchange_delivered_order_items(
    db: Database, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> Order:
    """Request an exchange of items of a delivered order for other variants of the same product.

    One exchange per order: list every item to exchange in one call. The price difference is
    charged to, or refunded to, the given payment method; a gift card must cover a charge.

    Args:
        order_id: The order id, starting with '#', e.g. '#W0012345'.
        item_ids: The item ids in the order to exchange; repeat an id to exchange several units.
        new_item_ids: The new item ids, position by position; each a different, available
            variant of the same product.
        payment_method_id: The customer's payment method that pays or receives the price
            difference, e.g. 'paypal_1234567'.
    """
    order = _order_in_status(db, order_id, "delivered")
    user = db.get(User, order.user_id)
    _user_method(user, payment_method_id)
    lines = _replacements(db, order, item_ids, new_item_ids)
    difference = _price_difference(order, item_ids, lines)
    if difference > 0:
        method = user.payment_methods[payment_method_id]
        if isinstance(method, GiftCard) and method.balance < difference:
            raise ToolError(f"gift card {payment_method_id} has insufficient balance ({method.balance:.2f})")
    order.status = "exchange requested"
    pairs = sorted(zip(item_ids, new_item_ids, strict=True))
    order.exchange_items = [old for old, _ in pairs]
    order.exchange_new_items = [new for _, new in pairs]
    order.exchange_payment_method_id = payment_method_id
    order.exchange_price_difference = difference
    db.put(order)
    return order


TOOLS = [
    find_user_id_by_email,
    find_user_id_by_name_zip,
    get_user_details,
    get_order_details,
    get_product_details,
    list_all_product_types,
    calculate,
    cancel_pending_order,
    modify_pending_order_address,
    modify_pending_order_items,
    modify_pending_order_payment,
    modify_user_address,
    return_delivered_order_items,
    exchange_delivered_order_items,
    transfer_to_human_agents,
]
