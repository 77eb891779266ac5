"""The library's tools: typed functions of the trial's `Database`, their docstring the agent's manual
and their signature the JSON schema. A broken precondition raises `ToolError`: the call changes nothing."""

from __future__ import annotations

from datetime import date, timedelta

from castbench.domain import Database, ToolError, read_tool, write_tool

from .records import Book, Loan, Member

LOAN_DAYS, FINE_PER_DAY, MAX_LOANS = 14, 0.25, 3


@read_tool(authenticates=True)
def find_member(db: Database, email: str) -> Member:
    """Find a library member by their email address: this identifies the member.

    Args:
        email: The member's email address.
    """
    found = db.find(Member, email=email.strip().lower())
    if not found:
        raise ToolError(f"no member with email {email}")
    return found[0]


@read_tool(public=True)
def search_books(db: Database, query: str) -> list[Book]:
    """Search the catalogue by words of a title or an author's name.

    Args:
        query: Words of the title or the author's name.
    """
    words = query.lower().split()
    return [book for book in db.scan(Book) if all(w in f"{book.title} {book.author}".lower() for w in words)]


@read_tool
def get_loans(db: Database, member_id: str) -> list[Loan]:
    """A member's loans that are not returned yet, with their due dates.

    Args:
        member_id: The member's id, such as 'M-001'.
    """
    db.get(Member, member_id)
    return [loan for loan in db.find(Loan, member_id=member_id) if not loan.returned]


@write_tool
def borrow_book(db: Database, member_id: str, book_id: str) -> Loan:
    """Lend a book to a member for 14 days.

    Args:
        member_id: The member's id.
        book_id: The book's id, such as 'B-001'.
    """
    member, book = db.get(Member, member_id), db.get(Book, book_id)
    if member.fines_due > 0:
        raise ToolError(f"member {member_id} has unpaid fines of {member.fines_due:.2f}")
    if book.copies_available < 1:
        raise ToolError(f"{book.title} has no copies available")
    if len(get_loans(db, member_id=member_id)) >= MAX_LOANS:
        raise ToolError(f"member {member_id} already has {MAX_LOANS} books on loan")
    book.copies_available -= 1
    due = (db.now.date() + timedelta(days=LOAN_DAYS)).isoformat()
    loan = Loan(loan_id=db.new_id("loan"), member_id=member_id, book_id=book_id, due=due)
    db.put(book)
    db.insert(loan)
    return loan


@write_tool
def return_book(db: Database, loan_id: str) -> str:
    """Take a borrowed book back; a late return adds a fine of 0.25 per day to the member's account.

    Args:
        loan_id: The loan's id, such as 'L-0001'.
    """
    loan = db.get(Loan, loan_id)
    if loan.returned:
        raise ToolError(f"loan {loan_id} was already returned")
    late_days = max(0, (db.now.date() - date.fromisoformat(loan.due)).days)
    member, book = db.get(Member, loan.member_id), db.get(Book, loan.book_id)
    member.fines_due = round(member.fines_due + late_days * FINE_PER_DAY, 2)
    loan.returned, book.copies_available = True, book.copies_available + 1
    for record in (loan, member, book):
        db.put(record)
    return f"returned {loan_id}; late fine {late_days * FINE_PER_DAY:.2f}; fines due {member.fines_due:.2f}"


TOOLS = [find_member, search_books, get_loans, borrow_book, return_book]
