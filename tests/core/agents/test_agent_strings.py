"""Every way in accepts the same agent strings: `castbench eval` (through `castbench._run.api`), the
step-wise `Environment` and `castbench mcp serve` (the Environment behind MCP) resolve an agent
string in one place (`castbench._agents.models.resolve`). A model string accepted by `eval` used to
stop `mcp serve` with "no model backend is available"."""

from __future__ import annotations

import pytest

from castbench._agents.registry import AgentSpecError
from castbench._run.api import build_config
from castbench._run.environment import Environment
from tests.support import invoke

MODEL = "openai/gpt-4o-mini?api_base=http://127.0.0.1:9&temperature=0"
TASK = ("--domain", "retail", "--task", "retail-test-0001")

ACCEPTED = [
    ("user", "scripted"),
    ("user", MODEL),
    ("critic", "rules"),
    ("critic", "oracle"),
    ("critic", MODEL),
]
REJECTED = [
    ("user", "no-such-user"),
    ("critic", "no-such-critic"),
    ("user", "openai/gpt-4o-mini?temperature=hot"),
]


def _options(role: str, spec: str) -> dict[str, str]:
    return {"user": spec} if role == "user" else {"critic": spec}


@pytest.mark.extra("service")  # `castbench mcp serve`
@pytest.mark.parametrize(("role", "spec"), ACCEPTED)
def test_an_agent_string_eval_accepts_every_entry_point_accepts(role: str, spec: str) -> None:
    config, agents = build_config(domains="retail", policy="oracle", trials=1, **_options(role, spec))
    assert getattr(config, role) == spec
    env = Environment(**_options(role, spec))
    built = env.agents.user if role == "user" else env.agents.critic
    assert built is not None and built == getattr(agents, role)
    served = invoke("mcp", "serve", *TASK, f"--{role}", spec)
    assert served.exit_code == 0, served.output
    assert "trial ended" in served.output


@pytest.mark.parametrize(("role", "spec"), REJECTED)
def test_an_agent_string_eval_refuses_every_entry_point_refuses_in_one_line(role: str, spec: str) -> None:
    with pytest.raises(AgentSpecError):
        build_config(domains="retail", policy="oracle", trials=1, **_options(role, spec))
    with pytest.raises(AgentSpecError):
        Environment(**_options(role, spec))
    for command in (("eval", "--domain", "retail", "--trials", "1"), ("mcp", "serve", *TASK)):
        result = (
            invoke(*command, f"--{role}", spec, "--db", "sqlite://")
            if command[0] == "eval"
            else invoke(*command, f"--{role}", spec)
        )
        assert result.exit_code == 2, result.output
        assert result.output.count("error:") == 1 and "Traceback" not in result.output, result.output
