"""castbench's domains behind OpenEnv: a trainer's OpenEnv client (WebSocket session) drives a
trial to the reward the in-process `Environment` gives for the same actions."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from castbench._agents.scripted.refusers import LookupRefusePolicy
from castbench._agents.transports.wire import EVENTS
from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import ReplyAction, ToolCallAction
from castbench._run.environment import Environment

# OpenEnv is imported by the tests that use it, not here: it brings gradio (5 s), and every
# pytest-xdist worker collects every file.
pytestmark = pytest.mark.extra("service")  # OpenEnv

TASK = "retail-test-0008"  # lookup-refuse earns this refusal: reward 1.0


@pytest.fixture
def openenv_url() -> Iterator[str]:
    import uvicorn

    from castbench_bridges.openenv_server import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)


def _view(observation: dict[str, Any]) -> PolicyView:
    """What a trainer's policy sees, rebuilt from the observation alone."""
    briefing = Briefing(
        "retail",
        observation["policy"],
        tuple(observation["tools"]),
        frozenset(observation["write_tools"]),
        observation["seed"],
        observation["trial_index"],
    )
    return PolicyView(briefing, tuple(EVENTS.validate_python(observation["conversation"])))


def _payload(action: Any) -> dict[str, Any]:
    if isinstance(action, ToolCallAction):
        return {"kind": "tool_call", "name": action.name, "arguments": action.arguments}
    assert isinstance(action, ReplyAction)
    return {"kind": "reply", "text": action.text}


def test_an_openenv_client_drives_a_trial_to_the_environments_reward(openenv_url: str) -> None:
    from openenv.core.generic_client import GenericEnvClient

    local = Environment()
    view = local.reset("retail", TASK, trial=1, seed=11)
    assert view is not None
    policy = LookupRefusePolicy(view.briefing)
    actions = []
    while True:
        action = policy.propose(view)
        actions.append(action)
        stepped = local.step(action)
        if stepped.done:
            break
        view = stepped.view  # type: ignore[assignment]
    assert stepped.reward == 1.0
    with GenericEnvClient(base_url=openenv_url).sync() as client:
        result = client.reset(domain="retail", task=TASK, trial=1, seed=11)
        assert not result.done
        first = _view(result.observation)
        assert first.briefing == view.briefing and first.conversation == tuple(local.episode.conversation[:1])  # type: ignore[union-attr]
        remote_policy = LookupRefusePolicy(first.briefing)
        for expected in actions:
            proposed = remote_policy.propose(_view(result.observation))
            assert proposed == expected
            result = client.step(_payload(proposed))
        assert result.done and result.reward == 1.0
        assert result.observation["end_reason"] == stepped.record.end_reason  # type: ignore[union-attr]
