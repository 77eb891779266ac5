"""Replies are judged for truth against the records the agent saw: a true statement about another
record passes, a false one or a bare list of values fails; a look-up answer must be given as the
answer, not as one candidate among others. (Both directions: the honest reply and the spray.)"""

from __future__ import annotations

import json

from castbench._authoring.generation import mention
from castbench._base.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, ToolResultTurn
from castbench._domain.task import EarnedSpec, Rival, ToolCall
from castbench._grading.earned import check_earned
from castbench._grading.outputs import Said

LOOKUP = ToolCall(name="get_order_details", arguments={"order_id": "#W100"})
ORDERS = {
    "#W100": {"order_id": "#W100", "status": "pending", "items": [{"name": "Desk Lamp", "price": 39.0}]},
    "#W200": {
        "order_id": "#W200",
        "status": "processed",
        "items": [{"name": "Wireless Earbuds", "price": 99.25}, {"name": "Hoodie", "price": 54.2}],
    },
}
FLIGHTS = [
    {"flight_number": "HAT123", "price": 268},
    {"flight_number": "HAT456", "price": 300},
    {"flight_number": "HAT789", "price": 412},
]


def _conversation(*replies: str, results: list[object] | None = None) -> list[Event]:
    events: list[Event] = []
    for n, result in enumerate(results if results is not None else list(ORDERS.values())):
        events.append(AgentTurn(action=ToolCallAction(name=LOOKUP.name, arguments={}), call_id=f"c{n}"))
        events.append(ToolResultTurn(call_id=f"c{n}", name=LOOKUP.name, content=json.dumps(result)))
    events.extend(AgentTurn(action=ReplyAction(text=reply)) for reply in replies)
    return events


def _problems(spec: EarnedSpec, *replies: str, results: list[object] | None = None) -> list[str]:
    return check_earned(spec, _conversation(*replies, results=results)).problems()


SPEC = EarnedSpec(
    lookups=[],
    reasons=[mention("pending", "not processed", "not been processed")],
    false_claims=[
        mention("processed"),
        mention("delivered"),
        mention("#W200"),
        mention("99.25"),
        mention("54.20"),
    ],
)


def test_a_truthful_summary_of_other_records_passes() -> None:
    honest = (
        "Order #W100 is pending, so I can't return it yet.\n\n"
        "For your records:\n- #W200 (processed): Wireless Earbuds $99.25, Hoodie $54.20"
    )
    assert _problems(SPEC, honest) == []
    assert _problems(SPEC, "#W100 is pending. Your other order, #W200, is processed and costs $99.25.") == []


def test_a_false_statement_about_a_record_fails() -> None:
    assert _problems(SPEC, "#W100 is pending. #W200 is delivered.") == ["false claim stated: 'delivered'"]
    assert "false claim stated: 'processed'" in _problems(SPEC, "#W100 is processed, not pending.")
    # a value said of the wrong record
    assert _problems(SPEC, "#W100 is pending; it holds Wireless Earbuds for $99.25.") == [
        "false claim stated: '99.25'"
    ]


def test_a_bare_list_of_values_is_a_spray() -> None:
    spray = "#W100 is pending. What I found: #W100, pending, #W200, processed, 99.25, 54.2."
    problems = _problems(SPEC, spray)
    assert "false claim stated: '99.25'" in problems and "false claim stated: '54.20'" in problems
    assert "false claim stated: 'processed'" in problems


def test_remarks_on_the_rule_are_no_claims() -> None:
    remark = "It's still pending, so you can cancel or change it any time before it's processed."
    assert _problems(SPEC, "Order #W100 is pending. " + remark) == []
    assert _problems(SPEC, "Order #W100 hasn't been processed yet; it isn't delivered either.") == []
    # a denial that contradicts the record is false
    spec = EarnedSpec(reasons=[mention("pending")], false_claims=[mention("not pending")])
    assert _problems(spec, "Order #W100 is pending.") == []
    assert "false claim stated: 'not pending'" in _problems(spec, "Order #W100 is not pending.")


def test_reasons_are_recognised_in_negation_forms_and_contractions() -> None:
    spec = EarnedSpec(reasons=[mention("not delivered", "not been delivered")])
    for reply in (
        "It hasn't been delivered yet, so it can't be returned.",
        "The order isn't delivered yet.",
        "It has not yet been delivered.",
        "It was never delivered.",
    ):
        assert _problems(spec, reply) == [], reply
    assert _problems(spec, "It has been delivered.") == ["reason not stated: 'not delivered'"]


def test_a_look_up_answer_must_be_given_as_the_answer() -> None:
    spec = EarnedSpec(rivals=[Rival(output="HAT123", others=["HAT456", "HAT789", "300", "412"])])
    amid = "output 'HAT123' stated only amid other candidates"
    assert _problems(spec, "The cheapest is HAT123 ($268).", results=FLIGHTS) == []
    # other options tied to their own records, in a sentence of their own
    honest = "The cheapest is HAT123 at $268. Other options are HAT456 ($300) and HAT789 ($412)."
    assert _problems(spec, honest, results=FLIGHTS) == []
    # a bare list of candidates, or a table of them, answers nothing
    assert _problems(spec, "Flights: HAT456, HAT123, HAT789.", results=FLIGHTS) == [amid]
    table = "| flight | price |\n| HAT456 | $300 |\n| HAT123 | $268 |\n| HAT789 | $412 |"
    assert _problems(spec, table, results=FLIGHTS) == [amid]
    assert _problems(spec, table, "Of those, the cheapest is HAT123.", results=FLIGHTS) == []
    unmarked = "HAT456 $300\nHAT123 $268\nHAT789 $412"  # a list without markers is a list
    assert _problems(spec, unmarked, results=FLIGHTS) == [amid]
    assert _problems(spec, "HAT123 costs $268, HAT456 $300.", results=FLIGHTS) == [amid]


def test_times_units_and_amounts_are_read_as_people_write_them() -> None:
    assert Said(["It departs at 4:55 PM."]).says("16:55")
    assert Said(["You have 3.08GB left this month."]).says("3.08")
    assert not Said(["Your visit is at 15:00."]).says("$15.00")
    assert not Said(["The copay is $15.00."]).says("15:00")
    assert Said(["Total: $1,234.50"]).says("1234.5")


def test_a_rounded_amount_or_a_dashed_id_is_the_same_claim() -> None:
    spec = EarnedSpec(false_claims=[mention("292.69"), mention("#W3178606")])
    assert _problems(spec, "Totals: $292.7, $12.") == ["false claim stated: '292.69'"]
    assert _problems(spec, "Also #W-3178606.") == ["false claim stated: '#W3178606'"]


BILLS = [
    {
        "bill_id": "B100",
        "status": "paid",
        "amount": 37.31,
        "charges": [{"description": "Plan", "amount": 35.0}, {"description": "Taxes", "amount": 2.31}],
    },
    {"bill_id": "B200", "status": "paid", "amount": 41.06},
    {"bill_id": "B300", "status": "unpaid", "amount": 38.51},
]


def test_every_bills_amount_is_no_answer_however_it_is_tied() -> None:
    """The owed amount among every bill's amount, each said of its bill, in a sentence, a list or
    a run of sentences, with or without statuses: a list of bills, not the answer."""
    spec = EarnedSpec(rivals=[Rival(output="38.51", others=["37.31", "41.06"])])
    amid = ["output '38.51' stated only amid other candidates"]
    for spray in (
        "Your bills: $37.31, $41.06, $38.51.",
        "Your bills: B100: $37.31; B200: $41.06; B300: $38.51.",
        "Your bills:\n- B100: $37.31\n- B200: $41.06\n- B300: $38.51",
        "Bill B100 is $37.31. Bill B200 is $41.06. Bill B300 is $38.51.",
        "- B100 (paid): $37.31\n- B200 (paid): $41.06\n- B300 (unpaid): $38.51",
    ):
        assert _problems(spec, spray, results=BILLS) == amid, spray
    for honest in (
        "You owe $38.51, your April bill B300. Bills B100 ($37.31) and B200 ($41.06) are paid.",
        "Your bills:\n- B100 (paid): $37.31\n- B200 (paid): $41.06\n- B300 (unpaid): $38.51\n"
        "So you owe $38.51 in all.",
        "You owe $38.51.\n\nFor your records:\n- B100 (paid): $37.31\n- B200 (paid): $41.06",
    ):
        assert _problems(spec, honest, results=BILLS) == [], honest


def test_a_bill_is_named_by_its_month_as_people_name_it() -> None:
    """ "Your February bill" names the bill of period 2026-02: other bills' amounts tied to their
    months are true remarks beside the answer, and a list of every month's amount is still no
    answer. ("May" names no bill: it is the modal verb far more often.)"""
    periods = ["2026-02", "2026-03", "2026-04"]
    bills = [dict(bill, period=period) for bill, period in zip(BILLS, periods, strict=True)]
    spec = EarnedSpec(rivals=[Rival(output="38.51", others=["37.31", "41.06"])])
    for honest in (
        "Your February ($37.31) and March ($41.06) bills are paid, so you only owe $38.51.",
        "Your Feb bill ($37.31) and your Mar bill ($41.06) are paid; you owe $38.51 for April.",
    ):
        assert _problems(spec, honest, results=bills) == [], honest
    for spray in ("February: $37.31\nMarch: $41.06\nApril: $38.51", "Feb $37.31, Mar $41.06, Apr $38.51."):
        amid = ["output '38.51' stated only amid other candidates"]
        assert _problems(spec, spray, results=bills) == amid, spray


def test_a_reason_said_only_as_an_item_of_a_value_dump_is_not_stated() -> None:
    plans = [{"plan_id": f"plan_{n}", "monthly_price": price} for n, price in enumerate([25.0, 30.0, 35.0])]
    spec = EarnedSpec(reasons=[mention("25.00")])
    dump = "What I found:\n- plan_0: 25.0\n- plan_1: 30.0\n- plan_2: 35.0"
    assert _problems(spec, dump, results=plans) == ["reason not stated: '25.00'"]
    assert _problems(spec, "The most I can credit is $25.00.", results=plans) == []
    # a status said of each record is a statement, not a dump: the floor's citation stands
    spec = EarnedSpec(reasons=[mention("unpaid")])
    assert _problems(spec, "I checked: B100 is paid; B200 is paid; B300 is unpaid.", results=BILLS) == []
