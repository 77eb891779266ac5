"""The model path at scale: the per-server limit follows `--concurrency`, OpenAI-compatible servers
are called through the lean async client (no litellm), and a smaller limit set by hand is noted."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from castbench._run.api import build_config
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import InFlight, unique_openings
from tests.support import invoke, sqlite_url


def test_the_default_limit_is_the_runs_concurrency_and_is_not_recorded() -> None:
    config, agents = build_config(
        domains="retail", policy="openai/x?api_base=http://127.0.0.1:9/v1", concurrency=64
    )
    assert agents.policy.params["max_concurrency"] == 64
    assert "max_concurrency" not in config.extra["models"]["policy"]
    same, _ = build_config(domains="retail", policy="openai/x?api_base=http://127.0.0.1:9/v1", concurrency=2)
    assert same.config_hash() == config.config_hash()


def test_a_smaller_limit_set_by_hand_is_kept_and_noted(caplog: pytest.LogCaptureFixture) -> None:
    spec = "openai/x?api_base=http://127.0.0.1:9/v1&max_concurrency=4"
    with caplog.at_level(logging.WARNING, logger="castbench._agents.models"):
        _, agents = build_config(domains="retail", policy=spec, concurrency=32)
    assert agents.policy.params["max_concurrency"] == 4
    assert "policy model openai/x: max_concurrency=4 holds its calls in flight below --concurrency 32" in (
        caplog.text
    )


def test_calls_in_flight_follow_concurrency(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    """24 trials at once, one 1-second call each: all 24 calls are in flight together (the old
    fixed per-server limit of 16 held them to 16)."""
    responder = InFlight(delay_s=1.0)
    server = fault_server(responder)
    tasks = ",".join(task.id for task in unique_openings(retail.tasks("test"))[:3])
    argv = ["eval", "--domain", "retail", "--tasks", tasks, "--trials", "8", "--max-steps", "1"]
    argv += ["--concurrency", "24", "--policy", f"openai/p?api_base={server.base_url}"]
    result = invoke(*argv, "--db", sqlite_url(tmp_path / "r.db"))
    assert result.exit_code == 0, result.output
    assert server.requests == 24
    assert responder.peak > 16


def test_an_openai_compatible_run_never_imports_litellm(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path, repo_env: dict[str, str]
) -> None:
    server = fault_server(lambda body: {"content": "One moment, please."})
    task = unique_openings(retail.tasks("test"))[0].id
    probe = (
        "import sys\nfrom castbench._cli.app import main\n"
        f"sys.argv = ['castbench', 'eval', '--domain', 'retail', '--tasks', '{task}', '--trials', '2',"
        f" '--max-steps', '2', '--policy', 'hosted_vllm/p', '--api-base', '{server.base_url}',"
        f" '--db', 'sqlite:///{tmp_path / 'r.db'}']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('LITELLM=' + str('litellm' in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=repo_env, timeout=300
    )
    assert "LITELLM=False" in result.stdout, result.stdout + result.stderr
    assert server.requests >= 2
    assert json.dumps(server.bodies[0]["model"]) == '"p"'  # the provider prefix stays with castbench
