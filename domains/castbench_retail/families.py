"""Task families: each picks entities that meet its preconditions, writes the user's scenario and
derives the ground truth with a reference solver that follows policy.md.

A family returns a `Draft`, or `None` when the pool holds no fitting entity this draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from random import Random

from castbench.domain import (
    DraftBase,
    Fact,
    Families,
    Mention,
    ToolCall,
    confirm_answer,
    mention,
    spoken_list,
)
from castbench_retail.schema import (
    Address,
    CreditCard,
    GiftCard,
    Order,
    OrderItem,
    PayPal,
    Product,
    User,
    money,
)
from castbench_retail.vocabulary import PERSONAS
from castbench_retail.world import World, random_address

__all__ = ["FAMILIES", "Draft", "Pool", "equivalents"]

CANCEL_REASONS = ["no longer needed", "ordered by mistake"]
NOT_DELIVERED = ["not delivered", "not been delivered"]


@dataclass(kw_only=True)
class Draft(DraftBase):
    user: User

    def instructions(self) -> str:
        return self.brief(
            f"{self.user.name.first_name} {self.user.name.last_name}",
            "a customer of an online store",
            unknown="your user id or any item ids",
            answer=confirm_answer(self.confirm),
        )


class Pool:
    """The customers one split draws from, and the orders it has already used."""

    def __init__(self, world: World, users: list[User], rng: Random) -> None:
        self.world = world
        self.users = users
        self.rng = rng
        self.used: set[str] = set()

    def pick_orders(
        self, count: int, *tests: Callable[[User, Order], bool]
    ) -> tuple[User, list[Order]] | None:
        """A user with `count` distinct orders passing `tests[i]` each, preferring unused orders."""
        for fresh_only in (True, False):
            candidates = []
            for user in self.users:
                chosen: list[Order] = []
                for test in tests[:count]:
                    options = [
                        order
                        for order_id in user.orders
                        if (order := self.world.orders[order_id]) not in chosen
                        and test(user, order)
                        and not (fresh_only and order_id in self.used)
                    ]
                    if not options:
                        break
                    chosen.append(self.rng.choice(options))
                if len(chosen) == count:
                    candidates.append((user, chosen))
            if candidates:
                user, orders = self.rng.choice(candidates)
                self.used.update(order.order_id for order in orders)
                return user, orders
        return None

    def product(self, product_id: str) -> Product:
        return self.world.products[product_id]


# -- wording helpers -------------------------------------------------------------------------
def _options(options: dict[str, str]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in options.items())


def describe_item(item: OrderItem) -> str:
    return f"the {item.name} ({_options(item.options)})"


def describe_method(method: CreditCard | PayPal | GiftCard) -> str:
    if isinstance(method, CreditCard):
        return f"my {method.brand} credit card ending in {method.last_four}"
    if isinstance(method, PayPal):
        return "my PayPal account"
    return "my gift card"


def describe_address(address: Address) -> str:
    line2 = f", {address.address2}" if address.address2 else ""
    return f"{address.address1}{line2}, {address.city}, {address.state} {address.zip}, {address.country}"


def _address_args(address: Address) -> dict[str, str]:
    return address.model_dump()


# -- fact builders ---------------------------------------------------------------------------
def _by_email(user: User) -> ToolCall:
    return ToolCall(name="find_user_id_by_email", arguments={"email": user.email})


def _by_name_zip(user: User) -> ToolCall:
    name = user.name
    return ToolCall(
        name="find_user_id_by_name_zip",
        arguments={"first_name": name.first_name, "last_name": name.last_name, "zip": user.address.zip},
    )


def equivalents(world: World, call: ToolCall) -> list[ToolCall]:
    """The same customer found the other way (by email, or by name and zip code)."""
    for user in world.users.values():
        ways = [_by_email(user), _by_name_zip(user)]
        if call in ways:
            return ways
    return []


def authenticate(rng: Random, user: User) -> tuple[list[Fact], ToolCall]:
    """Half of the tasks authenticate by email, half by name and zip code."""
    if rng.random() < 0.5:
        fact = Fact(
            name="email", value=user.email, keywords=["email"], statement=f"My email is {user.email}."
        )
        return [fact], _by_email(user)
    first, last, zip_code = user.name.first_name, user.name.last_name, user.address.zip
    facts = [
        Fact(
            name="first_name",
            value=first,
            keywords=["first name", "full name", "your name"],
            statement=f"My first name is {first}.",
        ),
        Fact(
            name="last_name",
            value=last,
            keywords=["last name", "surname", "full name", "your name"],
            statement=f"My last name is {last}.",
        ),
        Fact(name="zip", value=zip_code, keywords=["zip", "postal"], statement=f"My zip code is {zip_code}."),
    ]
    return facts, _by_name_zip(user)


def order_fact(order: Order, second: bool = False) -> Fact:
    if second:
        return Fact(
            name="second_order_id",
            value=order.order_id,
            keywords=["second order", "other order"],
            statement=f"The id of my other order is {order.order_id}.",
        )
    return Fact(
        name="order_id",
        value=order.order_id,
        keywords=["order id", "order number"],
        statement=f"The order id is {order.order_id}.",
    )


def method_fact(user: User, method_id: str, purpose: str) -> Fact:
    text = describe_method(user.payment_methods[method_id])
    return Fact(
        name="payment_method",
        value=method_id,
        keywords=["payment method", "pay", "charge"],
        statement=f"For the {purpose}, use {text}.",
    )


def address_fact(address: Address) -> Fact:
    return Fact(
        name="new_address",
        value=describe_address(address),
        keywords=["new address", "shipping address", "which address"],
        statement=f"The new address is {describe_address(address)}.",
    )


def reason_fact(reason: str) -> Fact:
    return Fact(
        name="cancel_reason",
        value=reason,
        keywords=["reason", "why"],
        statement=f"The reason is that the order is {reason}."
        if reason == "no longer needed"
        else "The reason is that I ordered it by mistake.",
    )


def refund_fact(user: User, method_id: str, original: bool) -> Fact:
    where = "the original payment method" if original else describe_method(user.payment_methods[method_id])
    return Fact(
        name="refund_method",
        value=method_id,
        keywords=["refund", "money back"],
        statement=f"I'd like the refund to go to {where}.",
    )


def read(name: str, **arguments: str) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


# -- what a reply about one order must not claim of the others --------------------------------
def other_orders(pool: Pool, user: User, order: Order) -> list[Order]:
    return [pool.world.orders[order_id] for order_id in user.orders if order_id != order.order_id]


def other_totals(pool: Pool, user: User, order: Order) -> list[Mention]:
    """What the customer's other orders cost: a total stated for the asked order is not one of
    them, and a reply that names them answers about orders the customer did not ask about."""
    totals = {
        f"{money(sum(item.price for item in other.items)):.2f}" for other in other_orders(pool, user, order)
    } | {
        f"{payment.amount:.2f}"
        for other in other_orders(pool, user, order)
        for payment in other.payment_history
    }
    return [mention(total) for total in sorted(totals) if not total.endswith(".00")]  # "12" is any number


def other_tracking(pool: Pool, user: User, order: Order) -> list[Mention]:
    ids = {
        tracking
        for other in other_orders(pool, user, order)
        for fulfillment in other.fulfillments
        for tracking in fulfillment.tracking_id
    }
    return [mention(tracking) for tracking in sorted(ids)]


# -- reference solver pieces -----------------------------------------------------------------
def is_pending(user: User, order: Order) -> bool:
    return order.status == "pending"


def is_delivered(user: User, order: Order) -> bool:
    return order.status == "delivered"


def swappable(pool: Pool, item: OrderItem) -> list[str]:
    """Item ids of the available variants this item may become (same product, not itself)."""
    product = pool.product(item.product_id)
    return [v.item_id for v in product.variants.values() if v.available and v.item_id != item.item_id]


def has_swappable(pool: Pool) -> Callable[[User, Order], bool]:
    return lambda user, order: any(swappable(pool, item) for item in order.items)


def choose_swaps(pool: Pool, order: Order) -> tuple[list[OrderItem], list[str]]:
    rng = pool.rng
    eligible = [item for item in order.items if swappable(pool, item)]
    chosen = rng.sample(eligible, min(len(eligible), rng.choice([1, 1, 2])))
    chosen.sort(key=lambda item: order.items.index(item))
    return chosen, [rng.choice(swappable(pool, item)) for item in chosen]


def feasible_method(pool: Pool, user: User, charge: float, exclude: str | None = None) -> str | None:
    """A payment method the customer prefers that can pay `charge` (gift cards need the balance)."""
    methods = [m for m in user.payment_methods.values() if m.id != exclude]
    pool.rng.shuffle(methods)
    for method in methods:
        if isinstance(method, GiftCard) and method.balance < charge:
            continue
        return method.id
    return None


def swap_sentence(pool: Pool, items: list[OrderItem], new_ids: list[str]) -> str:
    parts = []
    for item, new_id in zip(items, new_ids, strict=True):
        variant = pool.product(item.product_id).variants[new_id]
        parts.append(f"{describe_item(item)} to the one with {_options(variant.options)}")
    return spoken_list(parts)


def returned_items(rng: Random, order: Order) -> list[OrderItem]:
    """Some of a delivered order's items, in the order's own order."""
    items = rng.sample(order.items, rng.randint(1, len(order.items)))
    items.sort(key=lambda item: order.items.index(item))
    return items


def cancel_call(order: Order, reason: str) -> ToolCall:
    return ToolCall(name="cancel_pending_order", arguments={"order_id": order.order_id, "reason": reason})


def readdress_call(order: Order, address: Address) -> ToolCall:
    return ToolCall(
        name="modify_pending_order_address", arguments={"order_id": order.order_id, **_address_args(address)}
    )


def return_call(order: Order, items: list[OrderItem], method_id: str) -> ToolCall:
    return ToolCall(
        name="return_delivered_order_items",
        arguments={
            "order_id": order.order_id,
            "item_ids": [item.item_id for item in items],
            "payment_method_id": method_id,
        },
    )


def _start(pool: Pool, user: User) -> tuple[list[Fact], list[ToolCall], str]:
    facts, call = authenticate(pool.rng, user)
    return facts, [call], pool.rng.choice(PERSONAS)


# -- the families ----------------------------------------------------------------------------
def _cancel(pool: Pool, declined: bool) -> Draft | None:
    """Cancel a pending order, or think about it and keep the order when asked to confirm."""
    picked = pool.pick_orders(1, is_pending)
    if picked is None:
        return None
    user, (order,) = picked
    reason = pool.rng.choice(CANCEL_REASONS)
    facts, actions, persona = _start(pool, user)
    facts = [*facts, order_fact(order), reason_fact(reason)]
    actions = [*actions, read("get_order_details", order_id=order.order_id)]
    if declined:
        return Draft(
            family="declined_confirmation",
            outcome="no_change",
            user=user,
            request="Hi, I'm thinking about cancelling one of my orders.",
            goal=f"consider cancelling pending order {order.order_id}, but keep it in the end.",
            facts=facts,
            actions=actions,
            declined_actions=[cancel_call(order, reason)],
            confirm=False,
            offer=[mention(order.order_id), mention("cancel")],
            offer_rivals=[other.order_id for other in other_orders(pool, user, order)],
            allowed_claims=NOT_DELIVERED,
            persona=persona,
        )
    what = spoken_list([describe_item(item) for item in order.items])
    return Draft(
        family="cancel_pending",
        outcome="change",
        user=user,
        request="Hi, I'd like to cancel an order I placed recently.",
        goal=f"cancel your pending order {order.order_id} (it contains {what}).",
        facts=facts,
        actions=[*actions, cancel_call(order, reason)],
        persona=persona,
    )


def modify_order_address(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(1, is_pending)
    if picked is None:
        return None
    user, (order,) = picked
    address = random_address(pool.rng)
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="modify_order_address",
        outcome="change",
        user=user,
        request="Hello, I need to change where one of my orders is being shipped.",
        goal=f"have pending order {order.order_id} shipped to {describe_address(address)}. "
        "Only this order's address should change, not your default address.",
        facts=[*facts, order_fact(order), address_fact(address)],
        actions=[
            *actions,
            read("get_order_details", order_id=order.order_id),
            readdress_call(order, address),
        ],
        persona=persona,
    )


def _swap_items(pool: Pool, delivered: bool) -> Draft | None:
    """Swap items for other variants of the same product: modify a pending order, or exchange
    items of a delivered one. The customer pays or is refunded the price difference."""
    status = is_delivered if delivered else is_pending
    picked = pool.pick_orders(1, lambda u, o: status(u, o) and has_swappable(pool)(u, o))
    if picked is None:
        return None
    user, (order,) = picked
    items, new_ids = choose_swaps(pool, order)
    difference = money(
        sum(pool.product(i.product_id).variants[n].price for i, n in zip(items, new_ids, strict=True))
        - sum(item.price for item in items)
    )
    method_id = feasible_method(pool, user, difference)
    if method_id is None:
        return None
    facts, actions, persona = _start(pool, user)
    products = list(dict.fromkeys(item.product_id for item in items))
    swaps = swap_sentence(pool, items, new_ids)
    if delivered:
        request = f"Hello, I'd like to exchange {swaps} from an order I received."
        goal = f"in delivered order {order.order_id}, exchange {swaps}."
        together = " Both exchanges must be made together."
    else:
        request = f"Hi! My order hasn't shipped yet and I'd like to change {swaps}."
        goal = f"in pending order {order.order_id}, change {swaps}."
        together = " Both changes must be made together."
    return Draft(
        family="exchange_items" if delivered else "modify_order_items",
        outcome="change",
        user=user,
        request=request,
        goal=goal + (together if len(items) > 1 else ""),
        facts=[*facts, order_fact(order), method_fact(user, method_id, "price difference")],
        actions=[
            *actions,
            read("get_user_details", user_id=user.user_id),
            read("get_order_details", order_id=order.order_id),
            *[read("get_product_details", product_id=product_id) for product_id in products],
            ToolCall(
                name="exchange_delivered_order_items" if delivered else "modify_pending_order_items",
                arguments={
                    "order_id": order.order_id,
                    "item_ids": [item.item_id for item in items],
                    "new_item_ids": new_ids,
                    "payment_method_id": method_id,
                },
            ),
        ],
        persona=persona,
    )


def modify_order_payment(pool: Pool) -> Draft | None:
    def fits(user: User, order: Order) -> bool:
        return (
            is_pending(user, order)
            and len(order.payment_history) == 1
            and any(
                m.id != order.payment_history[0].payment_method_id
                and not (isinstance(m, GiftCard) and m.balance < order.payment_history[0].amount)
                for m in user.payment_methods.values()
            )
        )

    picked = pool.pick_orders(1, fits)
    if picked is None:
        return None
    user, (order,) = picked
    paid = order.payment_history[0]
    method_id = feasible_method(pool, user, paid.amount, exclude=paid.payment_method_id)
    assert method_id is not None
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="modify_order_payment",
        outcome="change",
        user=user,
        request="Hi, can I change how I'm paying for an order that hasn't shipped?",
        goal=f"pay pending order {order.order_id} with "
        f"{describe_method(user.payment_methods[method_id])} instead of the current method.",
        facts=[*facts, order_fact(order), method_fact(user, method_id, "new payment")],
        actions=[
            *actions,
            read("get_user_details", user_id=user.user_id),
            read("get_order_details", order_id=order.order_id),
            ToolCall(
                name="modify_pending_order_payment",
                arguments={"order_id": order.order_id, "payment_method_id": method_id},
            ),
        ],
        persona=persona,
    )


def modify_user_address(pool: Pool) -> Draft | None:
    user = pool.rng.choice(pool.users)
    address = random_address(pool.rng)
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="modify_user_address",
        outcome="change",
        user=user,
        request="Hi, I've moved and need to update the address on my account.",
        goal=f"change your account's default address to {describe_address(address)}. "
        "You do not want any existing order changed.",
        facts=[*facts, address_fact(address)],
        actions=[
            *actions,
            ToolCall(
                name="modify_user_address", arguments={"user_id": user.user_id, **_address_args(address)}
            ),
        ],
        persona=persona,
    )


def _return(pool: Pool, to_gift_card: bool) -> Draft | None:
    def fits(user: User, order: Order) -> bool:
        if not is_delivered(user, order):
            return False
        if not to_gift_card:
            return True
        original = order.payment_history[0].payment_method_id
        return any(isinstance(m, GiftCard) and m.id != original for m in user.payment_methods.values())

    picked = pool.pick_orders(1, fits)
    if picked is None:
        return None
    user, (order,) = picked
    items = returned_items(pool.rng, order)
    if to_gift_card:
        method_id = next(m.id for m in user.payment_methods.values() if isinstance(m, GiftCard))
        family = "return_to_gift_card"
    else:
        method_id = order.payment_history[0].payment_method_id
        family = "return_to_original"
    facts, actions, persona = _start(pool, user)
    lookups = [read("get_user_details", user_id=user.user_id)] if to_gift_card else []
    what = spoken_list([describe_item(item) for item in items])
    return Draft(
        family=family,
        outcome="change",
        user=user,
        request=f"Hi, I received my order but I'd like to return {what}.",
        goal=f"return {what} from delivered order {order.order_id}, refunded to "
        + ("your gift card." if to_gift_card else "the payment method you originally used."),
        facts=[*facts, order_fact(order), refund_fact(user, method_id, original=not to_gift_card)],
        actions=[
            *actions,
            *lookups,
            read("get_order_details", order_id=order.order_id),
            return_call(order, items, method_id),
        ],
        persona=persona,
    )


def multi_request(pool: Pool) -> Draft | None:
    """Two independent changes: cancel or re-address a pending order, and return delivered items."""
    picked = pool.pick_orders(2, is_pending, is_delivered)
    if picked is None:
        return None
    user, (first, second) = picked
    rng = pool.rng
    facts, actions, persona = _start(pool, user)
    if rng.random() < 0.5:
        reason = rng.choice(CANCEL_REASONS)
        first_facts = [order_fact(first), reason_fact(reason)]
        first_goal = f"cancel pending order {first.order_id}"
        first_call = cancel_call(first, reason)
        opening = "cancel one order"
    else:
        address = random_address(rng)
        first_facts = [order_fact(first), address_fact(address)]
        first_goal = f"have pending order {first.order_id} shipped to {describe_address(address)}"
        first_call = readdress_call(first, address)
        opening = "change the shipping address of one order"
    items = returned_items(rng, second)
    method_id = second.payment_history[0].payment_method_id
    what = spoken_list([describe_item(item) for item in items])
    return Draft(
        family="multi_request",
        outcome="change",
        user=user,
        request=f"Hi, I have two things today: I want to {opening}, and return {what} from another order.",
        goal=f"(1) {first_goal}; (2) return {what} from delivered order {second.order_id}, refunded to the "
        "original payment method.",
        facts=[
            *facts,
            *first_facts,
            order_fact(second, second=True),
            refund_fact(user, method_id, original=True),
        ],
        actions=[
            *actions,
            read("get_order_details", order_id=first.order_id),
            first_call,
            read("get_order_details", order_id=second.order_id),
            return_call(second, items, method_id),
        ],
        persona=persona,
    )


def lookup_order_total(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(
        1, lambda u, o: o.status in ("pending", "processed", "delivered") and len(o.items) >= 2
    )
    if picked is None:
        return None
    user, (order,) = picked
    expression = " + ".join(f"{item.price}" for item in order.items)
    total = f"{money(sum(item.price for item in order.items)):.2f}"
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="lookup_order_total",
        outcome="no_change",
        user=user,
        request="Hi, could you tell me the total price of the items in one of my orders?",
        goal=f"learn the total price of the items in order {order.order_id}. You want no changes.",
        facts=[*facts, order_fact(order)],
        actions=[
            *actions,
            read("get_order_details", order_id=order.order_id),
            read("calculate", expression=expression),
        ],
        required_outputs=[total],
        false_claims=other_totals(pool, user, order),
        persona=persona,
    )


def lookup_tracking(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(1, lambda u, o: o.status in ("processed", "delivered") and bool(o.fulfillments))
    if picked is None:
        return None
    user, (order,) = picked
    tracking = order.fulfillments[0].tracking_id[0]
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="lookup_tracking",
        outcome="no_change",
        user=user,
        request="Hello, I'd like the tracking number for one of my orders, please.",
        goal=f"get the tracking number of order {order.order_id}. You want no changes.",
        facts=[*facts, order_fact(order)],
        actions=[*actions, read("get_order_details", order_id=order.order_id)],
        required_outputs=[tracking],
        false_claims=other_tracking(pool, user, order),
        persona=persona,
    )


def refuse_cancel_not_pending(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(1, lambda u, o: o.status in ("processed", "delivered"))
    if picked is None:
        return None
    user, (order,) = picked
    reason = pool.rng.choice(CANCEL_REASONS)
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="refuse_cancel_not_pending",
        outcome="refuse",
        user=user,
        request="I want to cancel my order, please.",
        goal=f"cancel order {order.order_id}. You believe it can still be cancelled.",
        facts=[*facts, order_fact(order), reason_fact(reason)],
        actions=[*actions, read("get_order_details", order_id=order.order_id)],
        notes=["If the agent says the order cannot be cancelled, accept it; do not ask for anything else."],
        reasons=[mention(order.status)],
        # the rule names both statuses ("processed ... can no longer be changed", a delivered
        # order is returned instead); a processed order is indeed not delivered
        allowed_claims=["processed", "delivered", *(NOT_DELIVERED if order.status == "processed" else [])],
        persona=persona,
    )


def refuse_exchange_other_type(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(1, is_delivered)
    if picked is None:
        return None
    user, (order,) = picked
    item = pool.rng.choice(order.items)
    other = pool.rng.choice(sorted({p.name for p in pool.world.products.values()} - {item.name}))
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="refuse_exchange_other_type",
        outcome="refuse",
        user=user,
        request=f"Hi, I'd like to exchange {describe_item(item)} I received for a {other} instead.",
        goal=f"exchange {describe_item(item)} from delivered order {order.order_id} for a {other}.",
        facts=[*facts, order_fact(order)],
        actions=[*actions, read("get_order_details", order_id=order.order_id)],
        notes=[
            "If the agent says this exchange is not possible, accept it; you do not want a return or "
            "anything else."
        ],
        reasons=[mention("same product", "different kind of product")],
        persona=persona,
    )


def refuse_return_not_delivered(pool: Pool) -> Draft | None:
    picked = pool.pick_orders(1, lambda u, o: o.status == "processed")
    if picked is None:
        return None
    user, (order,) = picked
    item = pool.rng.choice(order.items)
    facts, actions, persona = _start(pool, user)
    return Draft(
        family="refuse_return_not_delivered",
        outcome="refuse",
        user=user,
        request=f"I want to return {describe_item(item)} from my latest order.",
        goal=f"return {describe_item(item)} from order {order.order_id}, which has not arrived yet.",
        facts=[
            *facts,
            order_fact(order),
            refund_fact(user, order.payment_history[0].payment_method_id, True),
        ],
        actions=[*actions, read("get_order_details", order_id=order.order_id)],
        notes=["If the agent says it cannot be returned yet, accept it; you want nothing else."],
        reasons=[mention(order.status, *NOT_DELIVERED)],
        allowed_claims=["delivered"],  # the rule: only delivered orders are returned
        persona=persona,
    )


FAMILIES: Families[Pool, Draft] = {
    # family: (builder, test count, train count)
    "cancel_pending": (partial(_cancel, declined=False), 10, 40),
    "modify_order_address": (modify_order_address, 8, 35),
    "modify_order_items": (partial(_swap_items, delivered=False), 10, 45),
    "modify_order_payment": (modify_order_payment, 8, 35),
    "modify_user_address": (modify_user_address, 6, 30),
    "return_to_original": (partial(_return, to_gift_card=False), 10, 40),
    "return_to_gift_card": (partial(_return, to_gift_card=True), 8, 35),
    "exchange_items": (partial(_swap_items, delivered=True), 10, 45),
    "multi_request": (multi_request, 10, 45),
    "lookup_order_total": (lookup_order_total, 6, 25),
    "lookup_tracking": (lookup_tracking, 6, 25),
    "refuse_cancel_not_pending": (refuse_cancel_not_pending, 8, 30),
    "refuse_exchange_other_type": (refuse_exchange_other_type, 6, 30),
    "refuse_return_not_delivered": (refuse_return_not_delivered, 6, 25),
    "declined_confirmation": (partial(_cancel, declined=True), 8, 35),
}
