"""The frozen clock and the dates the schedule covers."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

__all__ = ["DATES", "NOW", "TODAY", "departure_time", "later", "pretty_date"]

NOW = datetime(2026, 5, 15, 15, 0, tzinfo=UTC)
TODAY = NOW.date().isoformat()
FIRST_DATE = date(2026, 5, 8)
DATES = [(FIRST_DATE + timedelta(days=offset)).isoformat() for offset in range(21)]
"""2026-05-08 .. 2026-05-28: a week of history, today, two weeks ahead."""


def departure_time(day: str, hhmm: str) -> datetime:
    hours, minutes = hhmm.split(":")
    return datetime.fromisoformat(day).replace(hour=int(hours), minute=int(minutes), tzinfo=UTC)


def later(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def pretty_date(day: str) -> str:
    """'2026-05-20' -> 'May 20'."""
    value = date.fromisoformat(day)
    return f"{value:%B} {value.day}"
