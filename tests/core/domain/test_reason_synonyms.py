"""A domain's reason synonyms (from its vocabulary) widen its tasks' reasons and false claims as
they load, and `domains validate` refuses a synonym that names no reason or says another one."""

from __future__ import annotations

from dataclasses import replace

from castbench.domain import load_domain
from castbench_authoring.validate import validate_domain


def test_a_synonym_states_the_reason_and_makes_the_false_claim() -> None:
    telecom = load_domain("telecom")
    overdue = [
        t for t in telecom.tasks("test") if t.earned and any("overdue" in r.any_of for r in t.earned.reasons)
    ]
    assert overdue and all(
        "past due" in r.any_of
        for t in overdue
        for r in t.earned.reasons
        if "overdue" in r.any_of  # type: ignore[union-attr]
    )
    elsewhere = [
        t
        for t in telecom.tasks("test")
        if t.earned and any("overdue" in c.any_of for c in t.earned.false_claims)
    ]
    assert elsewhere and all(
        "past due" in c.any_of
        for t in elsewhere
        for c in t.earned.false_claims
        if "overdue" in c.any_of  # type: ignore[union-attr]
    )


def test_validate_refuses_a_synonym_that_says_another_reason() -> None:
    airline = load_domain("airline")
    rules = type(airline.rules)(airline.toolkit)
    rules.reason_synonyms = {"departed": ("basic economy",), "no such reason": ("whatever",)}
    broken = replace(airline, rules=rules)
    problems = [p for p in validate_domain(broken).problems if "reason synonym" in p]
    assert problems == [
        "airline: reason synonym 'departed': 'basic economy' is a wording of another reason"
        " ('basic economy')",
        "airline: reason synonym 'no such reason': no task names this reason",
    ]
