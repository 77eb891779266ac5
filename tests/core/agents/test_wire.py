"""Every field of what crosses to a worker process or an agent service survives the trip.

The samples set every field to a value other than its default, and the tests check that the
samples cover every field the in-process types have: a field added to a briefing, an event or
an observation and forgotten on the wire fails here (as `verbatim_policy` once was dropped, so a
τ-pack policy in a worker was prompted differently from the same policy in process).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import BaseModel, ValidationError

from castbench._agents.transports.wire import (
    ACTION,
    EVENTS,
    VERDICT,
    AgentBriefingWire,
    UserBriefingWire,
    briefing_from_wire,
    briefing_to_wire,
    decode,
    encode,
    observation_from_wire,
    observation_to_wire,
)
from castbench._agents.views import Briefing, PrivilegedBriefing, UserBriefing
from castbench._base.conversation import (
    AgentTurn,
    CritiqueTurn,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    Usage,
    UserToolCall,
    UserTurn,
    Verdict,
)
from castbench._domain.task import DeviceStep, Fact
from castbench.domain import Observation, ToolCall, UserScenario

USAGE = Usage(
    input_tokens=3, output_tokens=4, cost=0.5, latency_s=1.5, calls=2, retries=1, failed_calls=1, unusable=1
)


def _across(payload: dict) -> dict:
    """What the other side decodes: the bytes a pipe or HTTP body carries."""
    return decode(encode(payload))


def _briefing() -> Briefing:
    return Briefing(
        domain="tau-retail",
        policy="# Policy\nBe kind.",
        tools=({"type": "function", "function": {"name": "get_order", "parameters": {}}},),
        write_tools=frozenset({"cancel_order", "refund"}),
        seed=2**62 + 7,
        trial_index=5,
        verbatim_policy=True,
    )


def _scenario() -> UserScenario:
    return UserScenario(
        request="Cancel my order, please.",
        facts=[Fact(name="email", value="a@b.c", keywords=["email"], statement="It is a@b.c.")],
        confirm=False,
        persona="terse",
        device_steps=[
            DeviceStep(
                instruction="restart your phone",
                keywords=["restart"],
                call=ToolCall(name="reboot", arguments={"hard": True}),
            )
        ],
        instructions="You are a customer who wants to cancel.",
    )


def _user_briefing(perform: object) -> UserBriefing:
    return UserBriefing(
        domain="telecom",
        scenario=_scenario(),
        seed=11,
        user_tools=({"type": "function", "function": {"name": "reboot"}},),
        perform=perform,  # type: ignore[arg-type]
        traits={"impatience": "high"},
    )


def _non_default_fields(value: object) -> set[str]:
    """The dataclass fields of `value` that differ from their defaults."""
    out = set()
    for item in dataclasses.fields(value):  # type: ignore[arg-type]
        default = item.default if item.default is not dataclasses.MISSING else dataclasses.MISSING
        if item.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = item.default_factory()  # type: ignore[misc]
        if getattr(value, item.name) != default:
            out.add(item.name)
    return out


def test_policy_briefing_round_trips_every_field() -> None:
    briefing = _briefing()
    assert _non_default_fields(briefing) == {item.name for item in dataclasses.fields(Briefing)}
    again = briefing_from_wire(_across(briefing_to_wire(briefing)))
    assert again == briefing
    assert set(AgentBriefingWire.model_fields) - {"kind"} == {
        item.name for item in dataclasses.fields(Briefing)
    }


def test_user_briefing_round_trips_every_field() -> None:
    def perform(call: ToolCall) -> Observation:
        return Observation("ok")

    briefing = _user_briefing(perform)
    assert _non_default_fields(briefing) == {item.name for item in dataclasses.fields(UserBriefing)}
    again = briefing_from_wire(_across(briefing_to_wire(briefing)), perform)
    assert again == briefing
    assert set(UserBriefingWire.model_fields) - {"kind"} == {
        item.name for item in dataclasses.fields(UserBriefing)
    }
    # no user-side tools: the worker gets no way to ask for one
    without = dataclasses.replace(briefing, perform=None)
    assert briefing_from_wire(_across(briefing_to_wire(without)), perform).perform is None


def test_privileged_briefing_never_crosses() -> None:
    from castbench._domain.task import Task  # noqa: F401  (the type the privileged briefing carries)

    fields = {item.name: getattr(_briefing(), item.name) for item in dataclasses.fields(Briefing)}
    privileged = PrivilegedBriefing(**fields, task=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="does not leave"):
        briefing_to_wire(privileged)


def test_observation_round_trips_every_field() -> None:
    observation = Observation("a 😀 result \ud800 (a lone surrogate)", error=True, ends_conversation=True)
    assert _non_default_fields(observation) == {item.name for item in dataclasses.fields(Observation)}
    assert observation_from_wire(_across(observation_to_wire(observation))) == observation


def _all_fields_set(model: BaseModel) -> None:
    """Every field of `model` (and of the models it holds) differs from its default."""
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if name in ("kind", "role"):  # the discriminators: one value per type
            continue
        assert value != info.get_default(call_default_factory=True), (
            f"{type(model).__name__}.{name} left default"
        )
        if isinstance(value, BaseModel):
            _all_fields_set(value)


def test_every_event_and_action_round_trips_every_field() -> None:
    verdict = Verdict(
        verdict="invalid",
        failure_type="wrong_tool",
        explanation="not that tool",
        suggested_fix="use get_order",
        parse_error="trailing text",
        usage=USAGE,
    )
    call = ToolCallAction(
        name="get_order", arguments={"id": "#W1", "n": [1, 2.5]}, text="checking", usage=USAGE, thinking="hm"
    )
    events = [
        UserTurn(
            text="hello",
            tool_calls=(
                UserToolCall(name="toggle_airplane_mode", arguments={"on": True}, content="ok", error=True),
            ),
        ),
        AgentTurn(action=call, call_id="c1"),
        ToolResultTurn(call_id="c1", name="get_order", content='{"status": "pending"}', error=True),
        AgentTurn(
            action=ReplyAction(text="Done.", usage=USAGE, confidence=0.75, end=True, thinking="so"),
            call_id="c2",
        ),
        AgentTurn(action=MalformedAction(raw="{oops", reason="not JSON", usage=USAGE), call_id="c3"),
        CritiqueTurn(
            verdict=verdict,
            proposal=ToolCallAction(name="x", arguments="raw text", text="t", usage=USAGE, thinking="t"),
        ),
    ]
    kinds = {type(event) for event in events} | {
        type(event.action) for event in events if isinstance(event, AgentTurn)
    }
    assert kinds >= {
        UserTurn,
        AgentTurn,
        ToolResultTurn,
        CritiqueTurn,
        ToolCallAction,
        ReplyAction,
        MalformedAction,
    }
    for event in events:
        _all_fields_set(event)
    wire = json.loads(json.dumps(EVENTS.dump_python(events, mode="json")))
    assert EVENTS.validate_python(wire) == events
    assert ACTION.validate_python(_across({"a": ACTION.dump_python(call, mode="json")})["a"]) == call
    assert VERDICT.validate_python(_across({"v": VERDICT.dump_python(verdict, mode="json")})["v"]) == verdict


@pytest.mark.parametrize(
    "message",
    [
        {"kind": "agent", "domain": "retail"},  # fields missing
        {"kind": "robot", "domain": "retail"},  # no such briefing
        {
            **AgentBriefingWire(
                domain="d", policy="p", tools=[], write_tools=[], seed=1, trial_index=0
            ).model_dump(),
            "task": {"gold": []},
        },  # nothing beyond the public fields is accepted
    ],
)
def test_a_message_that_is_not_a_briefing_is_refused(message: dict) -> None:
    with pytest.raises(ValidationError):
        briefing_from_wire(message)
