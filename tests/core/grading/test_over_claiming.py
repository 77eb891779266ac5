"""Replies are graded for what they claim: per kind of claim, a reply that also asserts what is
false for the task fails the earned check, and the precise reply passes."""

from __future__ import annotations

from castbench._authoring.generation import mention
from castbench._base.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, ToolResultTurn
from castbench._domain.task import EarnedSpec, Lookup, Rival, ToolCall
from castbench._grading.earned import check_earned

LOOKUP = ToolCall(name="get_order_details", arguments={"order_id": "#W100"})


def _conversation(*replies: str) -> list[Event]:
    events: list[Event] = [
        AgentTurn(action=ToolCallAction(name=LOOKUP.name, arguments=dict(LOOKUP.arguments)), call_id="c1"),
        ToolResultTurn(
            call_id="c1", name=LOOKUP.name, content='{"order_id": "#W100", "status": "delivered"}'
        ),
    ]
    events.extend(AgentTurn(action=ReplyAction(text=reply)) for reply in replies)
    return events


def _spec(**fields: object) -> EarnedSpec:
    return EarnedSpec(lookups=[Lookup(any_of=[LOOKUP])], **fields)  # type: ignore[arg-type]


def _problems(spec: EarnedSpec, *replies: str) -> list[str]:
    return check_earned(spec, _conversation(*replies)).problems()


def test_a_reason_amid_false_reasons_fails_and_the_reason_alone_passes() -> None:
    spec = _spec(
        reasons=[mention("same product", "different kind of product")],
        false_claims=[mention("not delivered"), mention("processed"), mention("overdue")],
    )
    precise = "Sorry, an exchange must be for the same product; you could return it instead."
    assert _problems(spec, precise) == []
    spray = "Sorry: the item must be the same product, the order is not delivered, or it is processed."
    problems = _problems(spec, spray)
    assert problems == ["false claim stated: 'not delivered'", "false claim stated: 'processed'"]


def test_a_negated_false_claim_is_no_claim() -> None:
    spec = _spec(reasons=[mention("same product")], false_claims=[mention("processed")])
    assert _problems(spec, "It is not processed yet, but exchanges need the same product.") == []


def test_a_false_status_fails_whichever_reply_states_it() -> None:
    spec = _spec(reasons=[mention("delivered")], false_claims=[mention("cancelled")])
    assert _problems(spec, "Order #W100 is delivered, so it cannot be cancelled.") == []
    problems = _problems(spec, "Order #W100 is delivered.", "Your other order is cancelled.")
    assert problems == ["false claim stated: 'cancelled'"]


def test_an_amount_from_another_record_fails_in_any_notation() -> None:
    spec = _spec(false_claims=[mention("54.20")])
    assert _problems(spec, "The items of #W100 come to $182.00 (100.00 + 82.00).") == []
    assert _problems(spec, "Totals I saw: $182.00, $54.2.") == ["false claim stated: '54.20'"]


def test_an_id_among_its_rivals_is_not_an_answer_but_a_separate_precise_reply_is() -> None:
    spec = _spec(rivals=[Rival(output="HAT123", others=["HAT456", "HAT789"])])
    assert _problems(spec, "The cheapest is HAT123.") == []
    listed = "Flights: HAT456, HAT123, HAT789."
    assert _problems(spec, listed) == ["output 'HAT123' stated only amid other candidates"]
    assert _problems(spec, listed, "Of those, the cheapest is HAT123.") == []


def test_an_offer_of_everything_is_no_offer() -> None:
    spec = _spec(offer=[mention("#W100"), mention("cancel")], offer_rivals=["return", "exchange", "#W200"])
    assert _problems(spec, "Would you like me to cancel order #W100?") == []
    missing = "change not offered before the decline (a question naming '#W100', 'cancel')"
    assert _problems(spec, "Would you like me to cancel, return or exchange order #W100?") == [missing]
    assert _problems(spec, "Would you like me to cancel #W100 or #W200?") == [missing]


def test_the_earned_spec_keeps_the_new_fields_through_a_task_file() -> None:
    spec = _spec(
        false_claims=[mention("54.20")],
        rivals=[Rival(output="HAT123", others=["HAT456"])],
        offer_rivals=["return"],
    )
    assert EarnedSpec.model_validate_json(spec.model_dump_json()) == spec
