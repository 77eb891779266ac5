"""What crosses the pipe between castbench and an agent's worker process (and an agent service's
session): JSON validated by pydantic models on both sides, built from the same typed shapes the
agent sees in process (the view dataclasses, the conversation's pydantic events).

The wire models mirror the view dataclasses field by field; `tests/core/agents/test_wire.py`
round-trips every field, so a field added to a briefing and forgotten here fails a test instead
of silently prompting an agent in a worker differently from the same agent in process.

A briefing crosses once per trial; a view crosses as the events the worker has not seen yet
(the conversation only grows, and a critique round adds events after the shared prefix), so a
step costs what it adds, not the whole conversation again.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from castbench._agents.views import Briefing, UserBriefing
from castbench._base.conversation import Action, Event, Usage, Verdict
from castbench._domain.task import UserScenario
from castbench._domain.tools import Observation

__all__ = [
    "ACTION",
    "EVENTS",
    "VERDICT",
    "AgentBriefingWire",
    "BriefingWire",
    "ObservationWire",
    "UserBriefingWire",
    "briefing_from_wire",
    "briefing_to_wire",
    "decode",
    "encode",
    "from_agent",
    "observation_from_wire",
    "observation_to_wire",
]

EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
ACTION: TypeAdapter[Action] = TypeAdapter(Action)
VERDICT: TypeAdapter[Verdict] = TypeAdapter(Verdict)


def _counted(usage: Usage) -> Usage:
    """An agent's own account of its usage, as castbench keeps it: its counts (never below
    zero), never its cost (castbench prices only the calls it makes: `castbench._agents.models.costs`)."""
    counts = ("input_tokens", "output_tokens", "calls", "retries", "failed_calls", "unusable")
    update: dict[str, Any] = {name: max(0, getattr(usage, name)) for name in counts}
    update["latency_s"] = max(0.0, usage.latency_s) if usage.latency_s == usage.latency_s else 0.0
    return usage.model_copy(update={**update, "cost": None})


_T = TypeVar("_T")


def from_agent(value: _T) -> _T:
    """An action, verdict or usage that came from an agent's own code (a worker, a service), with
    the usage it reports reduced to what castbench takes from an agent (`_counted`)."""
    if isinstance(value, Usage):
        return _counted(value)  # type: ignore[return-value]
    usage = getattr(value, "usage", None)
    if isinstance(value, BaseModel) and isinstance(usage, Usage):
        return value.model_copy(update={"usage": _counted(usage)})  # type: ignore[return-value]
    return value


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentBriefingWire(_Wire):
    """A policy's or deployed critic's `Briefing`: the domain's public face and the trial's seed."""

    kind: Literal["agent"] = "agent"
    domain: str
    policy: str
    tools: list[dict[str, Any]]
    write_tools: list[str]
    """Sorted, so the same briefing is the same bytes."""
    seed: int
    trial_index: int
    verbatim_policy: bool = False


class UserBriefingWire(_Wire):
    """A simulated user's `UserBriefing`; its user-side tools run back in castbench (`perform`
    says whether there are any to ask for)."""

    kind: Literal["user"] = "user"
    domain: str
    scenario: UserScenario
    seed: int
    user_tools: list[dict[str, Any]] = []
    perform: bool = False
    traits: dict[str, str] | None = None


BriefingWire = Annotated[AgentBriefingWire | UserBriefingWire, Field(discriminator="kind")]
_BRIEFING: TypeAdapter[AgentBriefingWire | UserBriefingWire] = TypeAdapter(BriefingWire)


class ObservationWire(_Wire):
    """A user-side tool's result, sent back to the worker that asked for it."""

    content: str
    error: bool = False
    ends_conversation: bool = False


def encode(message: dict[str, Any]) -> bytes:
    """Python's json, ASCII: what an agent produced crosses exactly (a lone surrogate, in a key
    too, as its escape, NaN as a token), so actions and events are dumped in Pydantic's python
    mode, never its JSON mode, which refuses or replaces such values (`castbench._base.lossless`)."""
    return json.dumps(message, separators=(",", ":")).encode()


def decode(data: bytes) -> dict[str, Any]:
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    return message


def briefing_to_wire(briefing: Briefing | UserBriefing) -> dict[str, Any]:
    """A public briefing as JSON. A privileged one never crosses: privileged agents run in
    castbench's own process."""
    wire: AgentBriefingWire | UserBriefingWire
    if isinstance(briefing, UserBriefing):
        wire = UserBriefingWire(
            domain=briefing.domain,
            scenario=briefing.scenario,
            seed=briefing.seed,
            user_tools=list(briefing.user_tools),
            perform=briefing.perform is not None,
            traits=briefing.traits,
        )
    elif type(briefing) is Briefing:
        wire = AgentBriefingWire(
            domain=briefing.domain,
            policy=briefing.policy,
            tools=list(briefing.tools),
            write_tools=sorted(briefing.write_tools),
            seed=briefing.seed,
            trial_index=briefing.trial_index,
            verbatim_policy=briefing.verbatim_policy,
        )
    else:
        raise TypeError(f"a {type(briefing).__name__} does not leave castbench's process")
    return wire.model_dump(mode="json")


def briefing_from_wire(data: dict[str, Any], perform: Any = None) -> Briefing | UserBriefing:
    """The briefing again, in the worker; `perform` runs a user-side tool back in castbench.
    Raises `pydantic.ValidationError` on a message that is not a briefing."""
    wire = _BRIEFING.validate_python(data)
    if isinstance(wire, UserBriefingWire):
        return UserBriefing(
            domain=wire.domain,
            scenario=wire.scenario,
            seed=wire.seed,
            user_tools=tuple(wire.user_tools),
            perform=perform if wire.perform else None,
            traits=wire.traits,
        )
    return Briefing(
        domain=wire.domain,
        policy=wire.policy,
        tools=tuple(wire.tools),
        write_tools=frozenset(wire.write_tools),
        seed=wire.seed,
        trial_index=wire.trial_index,
        verbatim_policy=wire.verbatim_policy,
    )


def observation_to_wire(observation: Observation) -> dict[str, Any]:
    return ObservationWire(
        content=observation.content, error=observation.error, ends_conversation=observation.ends_conversation
    ).model_dump(mode="json")


def observation_from_wire(data: dict[str, Any]) -> Observation:
    wire = ObservationWire.model_validate(data)
    return Observation(wire.content, wire.error, wire.ends_conversation)
