"""castbench's own agents are registered by an explicit call, not as a side effect of an import:
`castbench._agents.builtin` lists them, the registry registers them on first need, and the two
modules import one way only (a static import the contracts see, no `import_module`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

from castbench._agents.builtin import shipped_agents
from castbench.agents import registry


def test_importing_the_list_registers_nothing(repo_env: dict[str, str]) -> None:
    code = (
        "import castbench._agents.builtin, castbench._agents.registry as r\n"
        "print(sum(len(agents) for agents in r._BUILTINS.values()))\n"
        "print(len(r.builtin_agents('policy')) > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=repo_env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "True"]


def test_the_registry_holds_every_shipped_agent_once() -> None:
    shipped = shipped_agents()
    assert len({(agent.role, agent.name) for agent in shipped}) == len(shipped)
    for agent in shipped:
        assert registry.is_builtin(agent.role, agent.name)
        assert registry._BUILTINS[agent.role][agent.name] == agent


def test_the_registry_imports_the_list_and_not_the_other_way() -> None:
    graph = grimp.build_graph("castbench", include_external_packages=False, cache_dir=None)
    assert graph.direct_import_exists(
        importer="castbench._agents.registry", imported="castbench._agents.builtin"
    )
    # no way back but through a public module's names read on first use (a facade's edges:
    # tests/core/test_import_cycles.py finds any cycle without them)
    for module in ("castbench._agents.builtin", *graph.find_descendants("castbench._agents.scripted")):
        assert not graph.direct_import_exists(importer=module, imported="castbench._agents.registry"), module
    assert "import_module" not in Path(registry.__file__ or "").read_text()
