"""What castbench sends an agent service holds whatever the trial holds: a lone surrogate an agent
produced (echoed by a tool, quoted by a critic) crosses as its JSON escape. httpx's own JSON
encoding refused it, which ended the trial as castbench's `harness_error`."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import httpx

from castbench_bridges.agent_session import AgentSession


def test_a_lone_surrogate_reaches_the_service_as_its_escape() -> None:
    received: list[bytes] = []

    def service(request: httpx.Request) -> httpx.Response:
        received.append(request.content)
        return httpx.Response(200, json={"reply": "ok"})

    episode: Any = SimpleNamespace(deadline=lambda: (None, ""))
    spec: Any = SimpleNamespace(name="http://agent.test")
    session = AgentSession(episode, spec, httpx.Client(transport=httpx.MockTransport(service)))
    message = {"role": "critic", "content": "uses '#W\ud800', which nothing revealed", "n": float("nan")}
    assert session.say(message).text == "ok"
    (body,) = received
    assert body.isascii() and b"\\ud800" in body
    assert json.loads(body)["content"] == message["content"]
