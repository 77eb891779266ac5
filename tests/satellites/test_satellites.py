"""The optional products stand beside the core as packages of their own (docs/architecture.md,
"The core and its satellites"): castbench_ray (the Ray executor), castbench_bridges (MCP, agent
services, A2A, OpenEnv, Inspect logs) and castbench_boards (boards and the run viewer), found
through entry points.
The core names none of them (the import contract), and each old module path still imports for one
release, warning where its code went."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import grimp
import pytest

from tests.cli.import_probe import RUN_COMMAND, loaded, probe

ROOT = Path(__file__).resolve().parents[2]
SATELLITES = (
    "castbench_ray",
    "castbench_bridges",
    "castbench_boards",
    "castbench_authoring",
    "castbench_analyses",
)

# each old module path and the module it now gives
MOVED = {
    "castbench.runner.executors.ray": "castbench_ray.executor",
    **{
        f"castbench.service.{name}": f"castbench_bridges.{name}"
        for name in ("a2a_policy", "agent_http", "agent_session", "mcp_host", "mcp_http", "mcp_trial")
    },
    "castbench.service.openenv_server": "castbench_bridges.openenv_server",
    "castbench.publish.inspect_log": "castbench_bridges.inspect_log",
    "castbench.cli.mcp_cmd": "castbench_bridges.mcp_cmd",
    **{
        f"castbench.publish.{name}": f"castbench_boards.{name}"
        for name in ("build", "curve", "profile", "render", "rerun", "rows")
    },
    **{
        f"castbench.viewer.{name}": f"castbench_boards.viewer.{name}" for name in ("page", "payload", "serve")
    },
    "castbench.cli.leaderboard_cmd": "castbench_boards.leaderboard_cmd",
    "castbench.cli.view_cmd": "castbench_boards.view_cmd",
    "castbench.runner.counterfactual": "castbench_analyses.counterfactual",
    "castbench.report.counterfactual": "castbench_analyses.counterfactual_report",
    "castbench.metrics.counterfactual": "castbench_analyses.counterfactual_metrics",
    "castbench.records.branches": "castbench_analyses.branches",
    "castbench.metrics.profile": "castbench_analyses.profile_metrics",
    "castbench.report.profile": "castbench_analyses.profile_report",
    "castbench.cli.profile_cmd": "castbench_analyses.profile_cmd",
    "castbench.cli.counterfactual_cmd": "castbench_analyses.counterfactual_cmd",
    "castbench.authoring.validate": "castbench_authoring.validate",
    "castbench.runner.oracle_check": "castbench_authoring.oracle_check",
    "castbench.runner.parity": "castbench_authoring.parity",
    "castbench.attribution.why": "castbench_analyses.why",
    "castbench.attribution.judge": "castbench_analyses.why_judge",
    "castbench.frames": "castbench_analyses.frames",
}
# old packages whose names warn when read (`castbench.viewer.render_run_page`)
OLD_PACKAGES = {"castbench.viewer": "castbench_boards.viewer"}
# the public names of `castbench` read from a satellite (public since 0.1.0: docs/api.md)
PUBLIC_FROM_SATELLITES = {
    "build_board": "castbench_boards.build",
    "render_run_page": "castbench_boards.viewer.page",
    "new_domain": "castbench_authoring.template",
    "generate_private": "castbench_authoring.private",
    "validate_domain": "castbench_authoring.oracle_check",
    "profile": "castbench_analyses.profile_run",
    "profile_runs": "castbench_analyses.profile_run",
    "trials_df": "castbench_analyses.frames",
    "steps_df": "castbench_analyses.frames",
    "verdicts_df": "castbench_analyses.frames",
}
# `castbench.domain`'s names read from a satellite (a pack's generator declares its tasks with them)
DOMAIN_FROM_SATELLITES = {
    "Generator": "castbench_authoring.generation",
    "mention": "castbench_authoring.generation",
    "published_earned_spec": "castbench_authoring.claims",
    "validate_task": "castbench_authoring.validate",
    "Trajectory": "castbench_authoring.parity",
}

# what each satellite registers, by entry-point group and name
ENTRY_POINTS = [
    ("castbench.executors", "ray", "castbench_ray:RayExecutor"),
    ("castbench.commands", "mcp", "castbench_bridges.mcp_cmd:mcp_app"),
    ("castbench.drivers", "service", "castbench_bridges.agent_http:drive_service"),
    ("castbench.transports", "a2a", "castbench_bridges.a2a_policy:a2a_spec"),
    ("castbench.formats", "inspect", "castbench_bridges.inspect_log:INSPECT"),
    ("castbench.commands", "leaderboard", "castbench_boards.leaderboard_cmd:leaderboard_app"),
    ("castbench.commands", "view", "castbench_boards.view_cmd:view"),
    ("castbench.commands", "domains.new", "castbench_authoring.commands:new_domain_command"),
    ("castbench.commands", "domains.validate", "castbench_authoring.commands:validate_domains_command"),
    ("castbench.commands", "runs.why", "castbench_analyses.why_cmd:why_command"),
    ("castbench.commands", "tasks.generate", "castbench_authoring.commands:generate_tasks_command"),
    ("castbench.commands", "profile", "castbench_analyses.profile_cmd:profile_command"),
    (
        "castbench.commands",
        "counterfactuals",
        "castbench_analyses.counterfactual_cmd:counterfactuals_command",
    ),
    ("castbench.analyses", "counterfactuals", "castbench_analyses.counterfactual_cmd:show_counterfactuals"),
]
# the satellites' commands and the start of their help (`castbench --help` lists them as before)
COMMANDS = {
    "mcp": "Domain tools over MCP.",
    "leaderboard": "Leaderboards built from exported runs.",
    "view": "Tasks with their trials as pass/fail marks;",
    "profile": "A reliability profile: runs the clean and perturbed evaluations",
    "counterfactuals": "Branch a critic run's trials at every verdict",
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_warns_and_gives_the_moved_module(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(
        DeprecationWarning,
        match=re.escape(old) + r" is deprecated and will be removed in castbench 0\.2\.0: "
        rf"import from {re.escape(new.split('.')[0])}",
    ) as caught:
        __import__(old)  # as an import statement does (`import_module` would be the warning's place)
    assert sys.modules[old] is importlib.import_module(new)
    assert caught[0].filename == __file__  # it points at the code that imported the old path


def test_the_core_imports_no_satellite() -> None:
    """Beside the contract (`lint-imports`): in grimp's graph of the core, no module but a
    deprecation shim imports a satellite, and the public module only what it reads from one."""
    graph = grimp.build_graph("castbench", *SATELLITES, include_external_packages=False, cache_dir=None)
    found = {
        f"{module} -> {imported}"
        for module in graph.find_descendants("castbench") | {"castbench"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] in SATELLITES and module not in {*MOVED, *OLD_PACKAGES}
    }
    facade = {f"castbench -> {home}" for home in PUBLIC_FROM_SATELLITES.values()} | {
        f"castbench.domain -> {home}" for home in DOMAIN_FROM_SATELLITES.values()
    }
    assert found == facade, sorted(found ^ facade)


@pytest.mark.parametrize(("name", "home"), sorted(PUBLIC_FROM_SATELLITES.items()))
def test_a_public_name_from_a_satellite_is_the_satellites_object(name: str, home: str) -> None:
    import castbench
    import castbench_boards

    assert getattr(castbench, name) is getattr(importlib.import_module(home), name)
    if home.startswith("castbench_boards."):
        assert getattr(castbench, name) is getattr(castbench_boards, name)


@pytest.mark.parametrize(("name", "home"), sorted(DOMAIN_FROM_SATELLITES.items()))
def test_a_domain_name_from_a_satellite_is_the_satellites_object(name: str, home: str) -> None:
    import castbench.domain

    assert getattr(castbench.domain, name) is getattr(importlib.import_module(home), name)


def test_a_subcommand_entry_point_joins_its_group_and_is_no_command_of_its_own() -> None:
    """`domains.new` and `tasks.generate` (castbench_authoring) are subcommands of the core's
    groups, listed by their help; `castbench --help` lists no `domains.new`."""
    from tests.support import invoke

    top = invoke("--help")
    assert "domains.new" not in top.output and "tasks.generate" not in top.output
    assert "Copy the domain template" in invoke("domains", "--help").output
    assert "Draw a private test split" in invoke("tasks", "--help").output


@pytest.mark.parametrize("name", ["PAGE_LIMIT", "page_server", "render_run_files", "render_run_page"])
def test_a_name_read_from_the_old_viewer_package_warns_and_is_the_moved_one(name: str) -> None:
    import castbench.viewer
    import castbench_boards.viewer

    with pytest.warns(
        DeprecationWarning,
        match=rf"castbench\.viewer\.{name} is deprecated and will be removed in castbench 0\.2\.0: "
        r"import from castbench_boards\.viewer instead",
    ) as caught:
        old = getattr(castbench.viewer, name)
    assert old is getattr(castbench_boards.viewer, name)
    assert caught[0].filename == __file__


def test_every_satellite_is_in_the_static_checks() -> None:
    """ruff's first-party packages, mypy's packages, the import contract's roots and its rule
    that the core names none of them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    linter = config["importlinter"]
    forbidding = next(c for c in linter["contracts"] if c["name"].startswith("the core names no"))
    for name in SATELLITES:
        assert name in config["ruff"]["lint"]["isort"]["known-first-party"]
        assert name in config["mypy"]["packages"]
        assert name in linter["root_packages"]
        assert name in forbidding["forbidden_modules"]
        assert (ROOT / "plugins" / name / "__init__.py").is_file()


@pytest.mark.parametrize(("group", "name", "target"), ENTRY_POINTS)
def test_each_satellite_comes_in_through_an_entry_point(group: str, name: str, target: str) -> None:
    (point,) = entry_points(group=group, name=name)
    assert point.value.split(" [")[0] == target
    assert target.split(".")[0].split(":")[0] in SATELLITES


def test_the_ray_executor_comes_from_its_entry_point() -> None:
    import castbench_ray

    (point,) = entry_points(group="castbench.executors", name="ray")
    assert point.load() is castbench_ray.RayExecutor
    assert point.extras == ["ray"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_satellites_command_is_listed_with_its_help(name: str, repo_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_COMMAND, json.dumps(["--help"])],
        env=repo_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    listed = [line for line in done.stdout.splitlines() if f" {name} " in line]
    assert listed and COMMANDS[name] in listed[0], done.stdout


def _satellite_commands() -> list[list[str]]:
    import click

    from castbench._cli.app import plugin_commands

    loaded = plugin_commands().loaded
    found: list[list[str]] = []
    for name in sorted(COMMANDS):
        found.append([name])
        command = loaded[name]
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in command.commands]
    return found


@pytest.mark.parametrize("command", _satellite_commands(), ids=" ".join)
def test_a_satellites_command_help_imports_no_heavy_package(
    command: list[str], repo_env: dict[str, str], tmp_path: Path
) -> None:
    """As castbench's own commands (tests/cli/test_cli_lazy.py): help loads no store, numpy,
    jinja2 or model client."""
    result = probe(RUN_COMMAND, [*command, "--help"], repo_env, str(tmp_path))
    assert "Usage" in result.stdout, result.stdout[-1000:] + result.stderr[-1000:]
    assert loaded(result) == []


def test_mcp_without_the_service_extra_names_the_pip_command(
    repo_env: dict[str, str], tmp_path: Path
) -> None:
    """One `error:` line naming the pip command, with the extra's package made unimportable."""
    hide = "import sys\nsys.modules['mcp'] = None\n"
    args = ["mcp", "serve", "--domain", "retail", "--task", "retail-test-0001"]
    result = probe(hide + RUN_COMMAND, args, repo_env, str(tmp_path))
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(
        "error: castbench mcp needs the service extra (pip install 'castbench[service]')"
    )


def test_executor_ray_without_ray_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from castbench._run import executors

    monkeypatch.setattr(executors, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"^--executor ray needs Ray: pip install 'castbench\[ray\]'$"):
        executors.make_executor("ray")


def test_an_executor_without_its_satellite_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from castbench._run import executors

    monkeypatch.setattr(executors, "entry_points", lambda **selection: [])
    with pytest.raises(ValueError, match=r"executor is not installed: pip install 'castbench\[ray\]'$"):
        executors._installed("ray")


HIDE_JINJA2 = "import sys\nsys.modules['jinja2'] = None\n"
"""jinja2 made unimportable in the probe's interpreter: as where the `boards` extra is missing."""


@pytest.mark.parametrize(
    "args",
    [["leaderboard", "build", "tiny"], ["view", "latest"]],
    ids=["leaderboard", "view"],
)
def test_a_boards_command_without_its_extra_names_the_pip_command(
    args: list[str], repo_env: dict[str, str], tmp_path: Path
) -> None:
    result = probe(HIDE_JINJA2 + RUN_COMMAND, args, repo_env, str(tmp_path))
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: 'castbench {args[0]}' cannot be loaded"), errors
    assert errors[0].endswith("pip install 'castbench[boards]')"), errors


def test_the_boards_public_names_without_their_extra_name_the_pip_command(
    repo_env: dict[str, str], tmp_path: Path
) -> None:
    code = (
        HIDE_JINJA2
        + "import castbench\ntry:\n    castbench.build_board\nexcept ImportError as exc:\n    print(exc)\n"
    )
    result = probe(code, [], repo_env, str(tmp_path))
    assert "pip install 'castbench[boards]'" in result.stdout, result.stdout + result.stderr


def test_the_satellites_templates_are_package_data() -> None:
    """The boards' and the viewer's templates go into the wheel: each matches a package-data
    pattern of its package (pyproject's `[tool.setuptools.package-data]`, `"*"` for every one)."""
    from fnmatch import fnmatch

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    templates = sorted((ROOT / "plugins").glob("castbench_*/**/templates/*.j2"))
    assert {path.name for path in templates} >= {"board.html.j2", "viewer.html.j2"}
    for path in templates:
        package = path.parent.parent  # the package folder holding templates/
        assert (package / "__init__.py").is_file(), path
        relative = str(path.relative_to(package))
        assert any(fnmatch(relative, pattern) for pattern in patterns), relative
