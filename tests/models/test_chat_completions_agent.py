"""`--policy http://HOST:PORT/v1/chat/completions?model=NAME`: an agent gateway that speaks the
OpenAI chat-completions shape with tools. castbench executes the tool calls in its answers; the
run is the run of `openai/NAME` at that server, trial for trial."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import unique_openings
from tests.support import sqlite_url


def test_a_chat_completions_url_is_evaluated_like_its_model_string(
    retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    server = fault_server()  # the 'policy' model there replays the oracle with tool calls
    tasks = [task.id for task in unique_openings(retail.tasks("test"))[:2]]
    common = {"domains": "retail", "tasks": tasks, "trials": 2, "seed": 4}
    gateway, model = sqlite_url(tmp_path / "gateway.db"), sqlite_url(tmp_path / "model.db")
    through_url = evaluate(db=gateway, policy=f"{server.base_url}/chat/completions?model=policy", **common)
    as_model = evaluate(db=model, policy=f"openai/policy?api_base={server.base_url}", **common)
    assert through_url.summary.overall.pass_hat == as_model.summary.overall.pass_hat == {1: 1.0, 2: 1.0}
    records = ResultsStore(gateway).trials(through_url.outcome.run_id)
    assert all(any(step.action and step.action.kind == "tool_call" for step in r.steps) for r in records)
