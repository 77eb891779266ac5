"""Start-up: commands import only what they need (`castbench/_cli/app.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._cli.app import COMMANDS, load_command
from tests.cli.import_probe import RUN_COMMAND, loaded, probe
from tests.support import sqlite_url


def _loaded(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    return set(loaded(probe(RUN_COMMAND, args, env, str(cwd))))


@pytest.mark.parametrize("args", [["--help"], ["eval", "--help"]], ids=["castbench", "eval"])
def test_help_imports_no_heavy_package(args: list[str], repo_env: dict[str, str], tmp_path: Path) -> None:
    """Help shows option defaults (the database URL, the lease) without loading the store, numpy or
    the engine they belong to."""
    assert _loaded(args, repo_env, tmp_path) == set()


def test_eval_help_imports_no_domain_grading_or_engine(repo_env: dict[str, str], tmp_path: Path) -> None:
    """Not heavy packages, but castbench's own modules a run needs (about 0.15 s of imports)."""
    run_modules = ("castbench._run.api", "castbench.domain", "castbench._grading", "castbench._run.executors")
    result = probe(RUN_COMMAND, ["eval", "--help"], repo_env, str(tmp_path), modules=run_modules)
    assert "--grading" in result.stdout
    assert loaded(result) == []


def test_oracle_eval_loads_the_store_and_nothing_else_heavy(repo_env: dict[str, str], tmp_path: Path) -> None:
    """No model client, templates, Ray or Postgres driver; not numpy either: a summary whose tasks
    all agree needs no resampling (`castbench._records.metrics.intervals`)."""
    args = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", "1"]
    args += ["--tasks", "retail-test-0001", "--db", sqlite_url(tmp_path / "r.db")]
    assert _loaded(args, repo_env, tmp_path) == {"sqlalchemy", "sqlmodel"}  # it did run and store


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_help_is_the_start_of_the_commands_own(name: str) -> None:
    entry = COMMANDS[name]
    real = " ".join((load_command(name, entry).help or "").split())
    assert real.startswith(entry.help.removesuffix(" ...")), (name, real)


def _every_command() -> list[list[str]]:
    """Each command, and each subcommand of a group (`runs show`, `leaderboard build`, ...)."""
    import click

    found: list[list[str]] = []
    for name, entry in COMMANDS.items():
        found.append([name])
        command = load_command(name, entry)
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in command.commands]
    return found


@pytest.mark.parametrize("command", _every_command(), ids=" ".join)
def test_every_command_help_imports_no_heavy_package(
    command: list[str], repo_env: dict[str, str], tmp_path: Path
) -> None:
    """#59: a command's help loads neither the store (sqlalchemy, sqlmodel), numpy, jinja2 nor a
    model client: each command imports what it runs on when it runs."""
    result = probe(RUN_COMMAND, [*command, "--help"], repo_env, str(tmp_path))
    assert "Usage" in result.stdout, result.stdout[-1000:] + result.stderr[-1000:]
    assert loaded(result) == []
