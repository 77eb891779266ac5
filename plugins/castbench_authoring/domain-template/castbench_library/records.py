"""The library's tables: one pydantic model per table, keyed by one of its fields."""

from __future__ import annotations

from typing import ClassVar

from castbench.domain import Record


class Member(Record):
    table: ClassVar[str] = "members"
    key_field: ClassVar[str] = "member_id"
    member_id: str
    name: str
    email: str
    fines_due: float = 0.0


class Book(Record):
    table: ClassVar[str] = "books"
    key_field: ClassVar[str] = "book_id"
    book_id: str
    title: str
    author: str
    copies_available: int


class Loan(Record):
    table: ClassVar[str] = "loans"
    key_field: ClassVar[str] = "loan_id"
    loan_id: str
    member_id: str
    book_id: str
    due: str  # the ISO date the book is due back
    returned: bool = False
