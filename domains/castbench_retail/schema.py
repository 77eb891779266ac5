"""The retail store's records: customers, the catalogue and orders.

Money is a float rounded to 2 decimals everywhere (`money()`); tools never store an unrounded sum.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from castbench.domain import Record

__all__ = [
    "Address",
    "CreditCard",
    "Fulfillment",
    "GiftCard",
    "Name",
    "Order",
    "OrderItem",
    "OrderStatus",
    "Payment",
    "PaymentMethod",
    "PayPal",
    "Product",
    "User",
    "Variant",
    "money",
]

OrderStatus = Literal[
    "pending", "processed", "delivered", "cancelled", "return requested", "exchange requested"
]


def money(amount: float) -> float:
    """An amount rounded to cents (the one rounding rule of the domain)."""
    return round(amount + 0.0, 2)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Name(_Part):
    first_name: str
    last_name: str


class Address(_Part):
    address1: str
    address2: str
    city: str
    state: str
    country: str
    zip: str


class CreditCard(_Part):
    source: Literal["credit_card"] = "credit_card"
    id: str
    brand: str
    last_four: str


class PayPal(_Part):
    source: Literal["paypal"] = "paypal"
    id: str


class GiftCard(_Part):
    source: Literal["gift_card"] = "gift_card"
    id: str
    balance: float


PaymentMethod = Annotated[CreditCard | PayPal | GiftCard, Field(discriminator="source")]


class User(Record):
    table: ClassVar[str] = "users"
    key_field: ClassVar[str] = "user_id"

    user_id: str
    name: Name
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod]
    """Keyed by payment method id."""
    orders: list[str]


class Variant(_Part):
    item_id: str
    options: dict[str, str]
    price: float
    available: bool


class Product(Record):
    table: ClassVar[str] = "products"
    key_field: ClassVar[str] = "product_id"

    product_id: str
    name: str
    """The product type, e.g. 'Desk Lamp'."""
    variants: dict[str, Variant]
    """Keyed by item id."""


class OrderItem(_Part):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(_Part):
    tracking_id: list[str]
    item_ids: list[str]


class Payment(_Part):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(Record):
    table: ClassVar[str] = "orders"
    key_field: ClassVar[str] = "order_id"

    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: OrderStatus
    fulfillments: list[Fulfillment] = Field(default_factory=list)
    payment_history: list[Payment]
    items_modified: bool = False
    """Items of a pending order can be modified once; this records that it happened."""
    cancel_reason: str | None = None
    return_items: list[str] = Field(default_factory=list)
    return_payment_method_id: str | None = None
    exchange_items: list[str] = Field(default_factory=list)
    exchange_new_items: list[str] = Field(default_factory=list)
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
