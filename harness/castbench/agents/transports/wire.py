"""What crosses the pipe between castbench and an agent's worker process: JSON, built from the
same typed shapes the agent sees in process (pydantic models and the view dataclasses).

A briefing crosses once per trial; a view crosses as the events the worker has not seen yet
(the conversation only grows, and a critique round adds events after the shared prefix), so a
step costs what it adds, not the whole conversation again.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from castbench.agents.conversation import Action, Event, Verdict
from castbench.agents.views import Briefing, UserBriefing
from castbench.domain import Observation, UserScenario

__all__ = [
    "ACTION",
    "EVENTS",
    "VERDICT",
    "decode",
    "encode",
    "observation_from_wire",
    "observation_to_wire",
    "briefing_from_wire",
    "briefing_to_wire",
]

EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
ACTION: TypeAdapter[Action] = TypeAdapter(Action)
VERDICT: TypeAdapter[Verdict] = TypeAdapter(Verdict)


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def decode(data: bytes) -> dict[str, Any]:
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    return message


def briefing_to_wire(briefing: Briefing | UserBriefing) -> dict[str, Any]:
    """A public briefing as JSON. A privileged one never crosses: privileged agents run in
    castbench's own process."""
    if isinstance(briefing, UserBriefing):
        return {
            "kind": "user",
            "domain": briefing.domain,
            "scenario": briefing.scenario.model_dump(mode="json"),
            "seed": briefing.seed,
            "user_tools": list(briefing.user_tools),
            "perform": briefing.perform is not None,
            "traits": briefing.traits,
        }
    if type(briefing) is not Briefing:
        raise TypeError(f"a {type(briefing).__name__} does not leave castbench's process")
    return {
        "kind": "agent",
        "domain": briefing.domain,
        "policy": briefing.policy,
        "tools": list(briefing.tools),
        "write_tools": sorted(briefing.write_tools),
        "seed": briefing.seed,
        "trial_index": briefing.trial_index,
    }


def briefing_from_wire(data: dict[str, Any], perform: Any = None) -> Briefing | UserBriefing:
    """The briefing again, in the worker; `perform` runs a user-side tool back in castbench."""
    if data["kind"] == "user":
        return UserBriefing(
            domain=data["domain"],
            scenario=UserScenario.model_validate(data["scenario"]),
            seed=data["seed"],
            user_tools=tuple(data["user_tools"]),
            perform=perform if data["perform"] else None,
            traits=data["traits"],
        )
    return Briefing(
        domain=data["domain"],
        policy=data["policy"],
        tools=tuple(data["tools"]),
        write_tools=frozenset(data["write_tools"]),
        seed=data["seed"],
        trial_index=data["trial_index"],
    )


def observation_to_wire(observation: Observation) -> dict[str, Any]:
    return {
        "content": observation.content,
        "error": observation.error,
        "ends_conversation": observation.ends_conversation,
    }


def observation_from_wire(data: dict[str, Any]) -> Observation:
    return Observation(data["content"], bool(data["error"]), bool(data["ends_conversation"]))
