"""User-simulator fidelity for a model user: two runs that differ only in the user's model (here
two loopback servers, one faithful, one that recites its brief instead of answering), the share
of trials with a simulator fault in each, and `compare` showing it side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from castbench._base.dialogue import asks_confirmation
from castbench.domain import load_domain
from tests.models.fault_server import FaultServer
from tests.models.responder import ScriptedResponder, unique_openings
from tests.support import invoke, sqlite_url


def test_a_model_user_reciting_its_brief_is_blamed_and_counted(tmp_path: Path) -> None:
    domain = load_domain("retail")
    tasks = [t for t in unique_openings(domain.tasks("test")) if t.outcome == "change"][:4]
    faithful = ScriptedResponder(domain, tasks)

    def leaky(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == "user" and asks_confirmation(body["messages"][-1]["content"]):
            return {"content": "Let me tell you what I was told. " + body["messages"][0]["content"][:600]}
        return faithful(body)

    outputs = {}
    for name, responder in (("faithful", faithful), ("leaky", leaky)):
        with FaultServer(responder) as server:
            output = tmp_path / f"{name}.json"
            result = invoke(
                "eval", "--domain", "retail", "--policy", "oracle", "--user", "openai/user",
                "--api-base", server.base_url, "--tasks", ",".join(t.id for t in tasks), "--trials", "1",
                "--db", sqlite_url(tmp_path / f"{name}.db"), "--output", str(output),
            )  # fmt: skip
            assert result.exit_code == 0, result.output
        outputs[name] = output
    good = json.loads(outputs["faithful"].read_text())["overall"]["attribution"]
    bad = json.loads(outputs["leaky"].read_text())["overall"]["attribution"]
    assert good["simulator_fault_trials"] == 0 and good["not_passed"] == 0
    assert bad["not_passed"] == len(tasks) and bad["by_party"] == {"user": len(tasks)}
    assert bad["by_cause"] == {"leaked_goal": len(tasks)} and bad["simulator_fault_share"] == 1.0
    compared = invoke("compare", str(outputs["faithful"]), str(outputs["leaky"]), "--force")
    assert compared.exit_code == 0, compared.output
    line = next(row for row in compared.output.splitlines() if "trials with a simulator fault" in row)
    assert "0.000" in line and "1.000" in line
