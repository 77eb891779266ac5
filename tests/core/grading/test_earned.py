"""A refusal or a "no change" passes only when earned: the ground truth's look-ups made (or an
equivalent), the reason told, and a declined change put to the user first. Doing nothing, which
leaves such a state right by construction, no longer passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._base.conversation import (
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._grading import grade_trial
from castbench._grading.earned import check_earned, matches
from castbench.domain import Domain, EarnedSpec, Lookup, Mention, ToolCall
from tests.core.toy import build_toy_domain, toy_task

_BY_EMAIL = ToolCall(name="find_user", arguments={"email": "Ann@Example.com"})
_BY_NAME = ToolCall(name="find_user_by_name", arguments={"name": "Ann Lee", "zip": "12345"})
_ORDER = ToolCall(name="get_order", arguments={"order_id": "#W1", "quantity": 2})
SPEC = EarnedSpec(
    lookups=[Lookup(any_of=[_BY_EMAIL, _BY_NAME]), Lookup(any_of=[_ORDER])],
    reasons=[Mention(any_of=["processed", "not pending"])],
)


def _call(n: int, name: str, arguments: dict, error: bool = False) -> list[Event]:
    action = ToolCallAction(name=name, arguments=arguments)
    return [
        AgentTurn(action=action, call_id=f"c{n}"),
        ToolResultTurn(call_id=f"c{n}", name=name, content="x", error=error),
    ]


def _say(text: str, answer: str = "Okay.") -> list[Event]:
    return [AgentTurn(action=ReplyAction(text=text)), UserTurn(text=answer)]


def test_matching_ignores_case_spacing_number_form_and_unlisted_arguments() -> None:
    assert matches(_BY_EMAIL, "find_user", {"email": "  ann@example.COM "})
    assert matches(_ORDER, "get_order", {"order_id": "#w1", "quantity": 2.0})
    assert matches(ToolCall(name="transfer", arguments={}), "transfer", {"summary": "anything"})
    assert not matches(_ORDER, "get_order", {"order_id": "#W2", "quantity": 2})
    assert not matches(_ORDER, "get_order", {"order_id": "#W1"})
    assert not matches(_ORDER, "get_orders", {"order_id": "#W1", "quantity": 2})


def test_an_equivalent_look_up_and_any_wording_of_the_reason_earn_it() -> None:
    events = [
        *_call(1, "find_user_by_name", {"name": "ann lee", "zip": "12345"}),
        *_call(2, "get_order", {"order_id": "#W1", "quantity": 2}),
        *_say("Sorry, that order is NOT pending any more."),
    ]
    check = check_earned(SPEC, events)
    assert check.ok and check.problems() == []


def test_doing_nothing_lacks_every_look_up_and_the_reason() -> None:
    check = check_earned(SPEC, _say("I'm sorry, I can't help with that request."))
    assert not check.ok
    assert check.missing_lookups == [_BY_EMAIL.canonical(), _ORDER.canonical()]
    assert check.missing_reasons == ["processed"]
    assert check.problems()[0] == f"look-up not made: {_BY_EMAIL.canonical()}"


def test_a_call_that_failed_establishes_nothing() -> None:
    events = [
        *_call(1, "find_user", {"email": "ann@example.com"}),
        *_call(2, "get_order", {"order_id": "#W1", "quantity": 2}, error=True),
        *_say("It is processed, sorry."),
    ]
    assert check_earned(SPEC, events).missing_lookups == [_ORDER.canonical()]


def test_an_offer_is_one_question_that_names_the_whole_change() -> None:
    spec = EarnedSpec(
        lookups=[Lookup(any_of=[_ORDER])], offer=[Mention(any_of=["#W1"]), Mention(any_of=["cancel"])]
    )
    looked = _call(1, "get_order", {"order_id": "#W1", "quantity": 2})
    asked = [*looked, *_say("Shall I cancel order #W1? Please answer yes or no.", "No, I changed my mind.")]
    assert check_earned(spec, asked).ok
    told = [*looked, *_say("I will cancel order #W1.")]  # not put to the user
    elsewhere = [*looked, *_say("I will cancel order #W1."), *_say("Is there anything else?")]
    for events in (told, elsewhere):
        check = check_earned(spec, events)
        assert check.missing_offer == ["#W1", "cancel"]
        assert check.problems() == [
            "change not offered before the decline (a question naming '#W1', 'cancel')"
        ]
    # the details in one message and the go-ahead question in the next is an offer too
    split = [*looked, *_say("I can cancel order #W1 for you."), *_say("Shall I proceed?")]
    assert check_earned(spec, split).ok


def _order(ident: str, status: str, *items: str) -> str:
    listed = ", ".join(f'{{"item_id": "{n}{ident[-1]}", "name": "{name}"}}' for n, name in enumerate(items))
    return f'{{"order_id": "{ident}", "status": "{status}", "items": [{listed}]}}'


def _read(n: int, content: str) -> list[Event]:
    action = ToolCallAction(name="get_order", arguments={"order_id": "x"})
    return [
        AgentTurn(action=action, call_id=f"r{n}"),
        ToolResultTurn(call_id=f"r{n}", name="get_order", content=content),
    ]


def test_an_offer_names_its_record_by_any_description_unique_among_those_seen() -> None:
    """Issue 55: "your order with the Wireless Earbuds" offers the change to #W1 when no other
    order the agent saw holds Wireless Earbuds; a description that fits another order too, or
    that names a rival, offers nothing in particular. A request for the go-ahead that is not
    written as a question ("Please confirm (yes/no) ...") puts the change to the user too."""
    spec = EarnedSpec(offer=[Mention(any_of=["#W1"]), Mention(any_of=["cancel"])], offer_rivals=["#W2"])
    seen = [
        *_read(1, _order("#W1", "pending", "Wireless Earbuds", "Desk Lamp")),
        *_read(2, _order("#W2", "pending", "Desk Lamp")),
    ]
    no = "No, I changed my mind."
    for question in (
        "Shall I cancel your order with the Wireless Earbuds?",
        "I can cancel your pending order with the Wireless Earbuds and the Desk Lamp.\n"
        "Please confirm (yes/no) if you'd like me to proceed.",
    ):
        assert check_earned(spec, [*seen, *_say(question, no)]).ok, question
    for question in (
        "Shall I cancel your order with the Desk Lamp?",  # both orders hold one
        "Shall I cancel your order with the Wireless Earbuds or the one with just the Desk Lamp, #W2?",
        "I can cancel your order with the Wireless Earbuds.",  # never put to the user
    ):
        assert check_earned(spec, [*seen, *_say(question, no)]).missing_offer == ["#W1", "cancel"], question
    # another record's id is no description of this one by the kind word they share
    rx = EarnedSpec(offer=[Mention(any_of=["RX-1"]), Mention(any_of=["refill"])], offer_rivals=["RX-2"])
    prescriptions = _read(
        3,
        '{"prescriptions": [{"prescription_id": "RX-1", "medication": "omeprazole", "refills_left": 1},'
        ' {"prescription_id": "RX-2", "medication": "atorvastatin", "refills_left": 0}]}',
    )
    asked = [*prescriptions, *_say("Shall I request a refill of RX-1? Please answer yes or no.", no)]
    assert check_earned(rx, asked).ok


@pytest.fixture
def refusal(tmp_path: Path) -> Domain:
    read = {"name": "get_counter", "arguments": {"name": "x"}}
    earned = {"lookups": [{"any_of": [read]}], "reasons": [{"any_of": ["counter"]}]}
    return build_toy_domain(tmp_path, [toy_task("r-1", [read], outcome="refuse", earned=earned)])


def test_grading_fails_an_unearned_refusal_and_passes_an_earned_one(refusal: Domain) -> None:
    task = refusal.tasks("test")[0]
    final, expected = refusal.fresh_database(), refusal.replay(task)
    signals = {"ended_cleanly": True, "made_write": False, "saw_tool_error": False}
    blanket = _say("I'm sorry, I can't help with that request.")
    unearned = grade_trial(task, final, expected, ["I'm sorry."], conversation=blanket, **signals)
    assert unearned.reward == 0.0 and unearned.state_ok and unearned.outputs_ok
    assert not unearned.earned_ok and unearned.failure_category == "unearned_outcome"
    assert unearned.unearned == [
        'look-up not made: get_counter({"name":"x"})',
        "reason not stated: 'counter'",
    ]
    earned_events = [*_call(1, "get_counter", {"name": "x"}), *_say("Sorry: that counter is locked.")]
    earned = grade_trial(
        task, final, expected, ["Sorry: that counter is locked."], conversation=earned_events, **signals
    )
    assert earned.reward == 1.0 and earned.earned_ok and earned.failure_category is None


def test_a_reason_said_only_inside_a_condition_is_not_stated() -> None:
    """ "Only possible before it is processed, or unless it is delivered" claims nothing about the
    order: a spray of every reason in conditions states none (and a condition reaches to its
    clause's end: "once the order has been processed" is a condition too)."""
    looked_up = [
        *_call(1, "find_user", {"email": "ann@example.com"}),
        *_call(2, "get_order", _ORDER.arguments),
    ]
    for sprayed in (
        "Sorry, this is only possible before it is processed, or unless it is delivered.",
        "Sorry, returns are only possible once an order has been processed.",  # says: not processed
        "Sorry, it is only possible if it is processed, or before it is delivered, or once it is paid.",
    ):
        assert check_earned(SPEC, [*looked_up, *_say(sprayed)]).missing_reasons == ["processed"], sprayed
    stated = "Sorry, I can't cancel it: your order has already been processed, so it can't be changed."
    assert check_earned(SPEC, [*looked_up, *_say(stated)]).ok


def test_one_rule_given_as_the_reason_states_what_it_implies() -> None:
    """Issue 55: a refusal that gives the one rule that applies ("returns are only possible once
    an order has been delivered") says the order is not delivered; "cancelling is only possible
    until the order has been processed" and "it can't be cancelled once it has been processed"
    say it is processed. What a rule implies is a claim too: a rule that implies a false claim
    makes it, and two rules hedge between reasons and state none."""
    looked_up = [
        *_call(1, "find_user", {"email": "ann@example.com"}),
        *_call(2, "get_order", _ORDER.arguments),
    ]
    undelivered = EarnedSpec(
        reasons=[Mention(any_of=["processed", "not delivered", "not been delivered"])],
        false_claims=[Mention(any_of=["delivered"])],
    )
    for rule in (
        "I'm sorry, but returns are only possible once an order has been delivered.",
        "Sorry, it can't be returned until it has been delivered.",
    ):
        assert check_earned(undelivered, [*looked_up, *_say(rule)]).ok, rule
    for rule in (
        "Sorry, cancelling is only possible until the order has been processed.",
        "Unfortunately it can't be cancelled once it has been processed.",
    ):
        assert check_earned(SPEC, [*looked_up, *_say(rule)]).ok, rule
    wrong = "Sorry, a return is only possible before an order is delivered."  # implies: delivered
    check = check_earned(undelivered, [*looked_up, *_say(wrong)])
    assert check.missing_reasons == ["processed"] and check.false_claims == ["delivered"]
    hedged = "Sorry, returns are only possible once it is delivered, or until it is processed."
    assert check_earned(undelivered, [*looked_up, *_say(hedged)]).missing_reasons == ["processed"]


def test_a_remark_about_another_record_named_by_what_it_holds_is_true() -> None:
    """Issue 55: "your Wireless Earbuds order is processed" is said of the one order holding
    Wireless Earbuds, not of the order the refusal is about; said of the order the refusal is
    about, or of an item two orders hold, it is still a claim about no one record."""
    spec = EarnedSpec(reasons=[Mention(any_of=["pending"])], false_claims=[Mention(any_of=["processed"])])
    seen = [
        *_read(1, _order("#W1", "pending", "Desk Lamp", "Office Chair")),
        *_read(2, _order("#W2", "processed", "Wireless Earbuds", "Desk Lamp")),
    ]
    refusal = "Sorry, I can't return anything from order #W1: it is still pending."
    for remark in (
        "Your Wireless Earbuds order is processed.",
        "By the way, the order with the Wireless Earbuds is processed.",
    ):
        assert check_earned(spec, [*seen, *_say(f"{refusal} {remark}")]).ok, remark
    for remark in (
        "Your Office Chair order is processed.",  # that is #W1, which is pending
        "Your Desk Lamp order is processed.",  # which one? both hold a Desk Lamp
        "Your Wireless Earbuds are processed.",  # no kind of record named
    ):
        check = check_earned(spec, [*seen, *_say(f"{refusal} {remark}")])
        assert check.false_claims == ["processed"], remark
