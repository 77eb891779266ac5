"""The seed state: catalogue, customers and their orders, drawn from one `random.Random`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from random import Random

from castbench.domain import SEQUENCES_TABLE, Row, UniqueDigits
from castbench_retail.schema import (
    Address,
    CreditCard,
    Fulfillment,
    GiftCard,
    Name,
    Order,
    OrderItem,
    OrderStatus,
    Payment,
    PayPal,
    Product,
    User,
    Variant,
    money,
)
from castbench_retail.vocabulary import (
    CARD_BRANDS,
    CATALOGUE,
    CITIES,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LAST_NAMES,
    STREETS,
)

__all__ = ["World", "build_world", "random_address"]

N_USERS = 500
STATUS_WEIGHTS: dict[OrderStatus, int] = {
    "pending": 30,
    "processed": 13,
    "delivered": 34,
    "cancelled": 7,
    "return requested": 7,
    "exchange requested": 9,
}


@dataclass
class World:
    users: dict[str, User]
    products: dict[str, Product]
    orders: dict[str, Order]

    def state(self) -> dict[str, dict[str, Row]]:
        """table -> key -> row, as `data/state.json` stores it."""
        return {
            "users": {key: user.model_dump(mode="json") for key, user in self.users.items()},
            "products": {key: product.model_dump(mode="json") for key, product in self.products.items()},
            "orders": {key: order.model_dump(mode="json") for key, order in self.orders.items()},
            SEQUENCES_TABLE: {},
        }


def random_address(rng: Random) -> Address:
    city, state, prefix = rng.choice(CITIES)
    unit = rng.choice(
        ["", "", f"Apt {rng.randint(1, 40)}", f"Suite {rng.randint(100, 999)}", f"Unit {rng.randint(1, 12)}"]
    )
    return Address(
        address1=f"{rng.randint(10, 9999)} {rng.choice(STREETS)}",
        address2=unit,
        city=city,
        state=state,
        country="USA",
        zip=f"{prefix}{rng.randint(0, 99):02d}",
    )


def _products(rng: Random, ids: UniqueDigits) -> dict[str, Product]:
    products: dict[str, Product] = {}
    for name, (base, options) in CATALOGUE.items():
        combos = list(itertools.product(*options.values()))
        count = min(len(combos), rng.randint(6, 14))
        variants: dict[str, Variant] = {}
        for combo in rng.sample(combos, count):
            item_id = ids.digits(10)
            variants[item_id] = Variant(
                item_id=item_id,
                options=dict(zip(options, combo, strict=True)),
                price=money(base * rng.uniform(0.8, 1.35)),
                available=rng.random() < 0.72,
            )
        product_id = ids.digits(10)
        products[product_id] = Product(product_id=product_id, name=name, variants=variants)
    return products


def _users(rng: Random, ids: UniqueDigits) -> dict[str, User]:
    users: dict[str, User] = {}
    seen_identity: set[tuple[str, str, str]] = set()
    emails: set[str] = set()
    while len(users) < N_USERS:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        address = random_address(rng)
        identity = (first, last, address.zip)
        email = f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@{rng.choice(EMAIL_DOMAINS)}"
        if identity in seen_identity or email in emails:
            continue
        seen_identity.add(identity)
        emails.add(email)
        methods: dict[str, CreditCard | PayPal | GiftCard] = {}
        for kind in rng.sample(["credit_card", "credit_card", "paypal", "gift_card"], rng.randint(1, 3)):
            method_id = f"{kind}_{ids.digits(7)}"
            if kind == "credit_card":
                methods[method_id] = CreditCard(
                    id=method_id, brand=rng.choice(CARD_BRANDS), last_four=f"{rng.randint(0, 9999):04d}"
                )
            elif kind == "paypal":
                methods[method_id] = PayPal(id=method_id)
            else:
                methods[method_id] = GiftCard(id=method_id, balance=money(rng.uniform(0, 300)))
        user_id = f"{first.lower()}_{last.lower()}_{ids.digits(4)}"
        users[user_id] = User(
            user_id=user_id,
            name=Name(first_name=first, last_name=last),
            address=address,
            email=email,
            payment_methods=methods,
            orders=[],
        )
    return users


def _order(rng: Random, ids: UniqueDigits, user: User, products: list[Product]) -> Order:
    lines = []
    for product in rng.sample(products, rng.choice([1, 1, 2, 2, 2, 3, 3, 4, 5])):
        variant = rng.choice(list(product.variants.values()))
        lines.append(
            OrderItem(
                name=product.name,
                product_id=product.product_id,
                item_id=variant.item_id,
                price=variant.price,
                options=dict(variant.options),
            )
        )
    status: OrderStatus = rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()))[0]
    method_id = rng.choice(list(user.payment_methods))
    total = money(sum(line.price for line in lines))
    order = Order(
        order_id=f"#W{ids.digits(7)}",
        user_id=user.user_id,
        address=user.address.model_copy() if rng.random() < 0.85 else random_address(rng),
        items=lines,
        status=status,
        payment_history=[Payment(transaction_type="payment", amount=total, payment_method_id=method_id)],
    )
    if status in ("processed", "delivered", "return requested", "exchange requested"):
        order.fulfillments = [
            Fulfillment(tracking_id=[ids.digits(12)], item_ids=[line.item_id for line in lines])
        ]
    if status == "cancelled":
        order.cancel_reason = rng.choice(["no longer needed", "ordered by mistake"])
        order.payment_history.append(
            Payment(transaction_type="refund", amount=total, payment_method_id=method_id)
        )
    elif status == "return requested":
        chosen = rng.sample(lines, rng.randint(1, len(lines)))
        order.return_items = sorted(line.item_id for line in chosen)
        order.return_payment_method_id = method_id
    elif status == "exchange requested":
        line = rng.choice(lines)
        by_id = {product.product_id: product for product in products}
        others = [v for v in by_id[line.product_id].variants.values() if v.item_id != line.item_id]
        target = rng.choice(others)
        order.exchange_items = [line.item_id]
        order.exchange_new_items = [target.item_id]
        order.exchange_payment_method_id = method_id
        order.exchange_price_difference = money(target.price - line.price)
    return order


def build_world(rng: Random) -> World:
    ids = UniqueDigits(rng)
    products = _products(rng, ids)
    users = _users(rng, ids)
    catalogue = list(products.values())
    orders: dict[str, Order] = {}
    for user in users.values():
        for _ in range(rng.choice([1, 1, 2, 2, 2, 3, 3, 4])):
            order = _order(rng, ids, user, catalogue)
            orders[order.order_id] = order
            user.orders.append(order.order_id)
    return World(users=users, products=products, orders=orders)
