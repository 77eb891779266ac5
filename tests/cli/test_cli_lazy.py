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


def test_oracle_eval_loads_nothing_heavy(repo_env: dict[str, str], tmp_path: Path) -> None:
    """No model client, templates, Ray or Postgres driver; not numpy either: a summary whose tasks
    all agree needs no resampling (`castbench._records.metrics.intervals`); not SQLAlchemy or SQLModel:
    a new SQLite store is made and written with `sqlite3` (#59)."""
    args = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", "1"]
    args += ["--tasks", "retail-test-0001", "--db", sqlite_url(tmp_path / "r.db")]
    result = probe(RUN_COMMAND, args, repo_env, str(tmp_path))
    assert "(1 trials run, 0 reused)" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
    assert loaded(result) == []


def _run_twice(db: str, repo_env: dict[str, str], tmp_path: Path) -> list[str]:
    """An oracle eval's arguments, after storing two complete runs of it (the second `--fresh`)."""
    args = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", "2"]
    args += ["--tasks", "retail-test-0001,retail-test-0002", "--db", db]
    for extra in ([], ["--fresh"]):
        result = probe(RUN_COMMAND, [*args, *extra], repo_env, str(tmp_path))
        assert "(4 trials run, 0 reused)" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
    return args


def test_reading_commands_and_a_resume_load_no_heavy_package(
    repo_env: dict[str, str], tmp_path: Path
) -> None:
    """#59: a resume of a complete run, `runs` and `gate` read a SQLite store with the standard
    library: no SQLAlchemy or SQLModel (0.3-0.5 s of CPU at import), numpy, pandas or model client.
    Each command is checked to have done its work, so an empty `LOADED` is not a crash."""
    db = sqlite_url(tmp_path / "r.db")
    args = _run_twice(db, repo_env, tmp_path)
    resume = probe(RUN_COMMAND, args, repo_env, str(tmp_path))
    assert "(0 trials run, 4 reused)" in resume.stdout, resume.stdout[-2000:] + resume.stderr[-2000:]
    assert loaded(resume) == []
    listed = probe(RUN_COMMAND, ["runs", "list", "--db", db], repo_env, str(tmp_path))
    runs = sorted(line.split()[0] for line in listed.stdout.splitlines() if line.startswith("r-"))
    assert len(runs) == 2, listed.stdout[-2000:] + listed.stderr[-2000:]
    assert loaded(listed) == []
    own = (
        "castbench._grading",
        "castbench._results.report.summary",
        "castbench._run.engine",
        "castbench._run.api",
    )
    listed_again = probe(RUN_COMMAND, ["runs", "list", "--db", db], repo_env, str(tmp_path), modules=own)
    assert loaded(listed_again) == []  # a listing reads rows: no record, grade or summary (#59)
    shown = probe(RUN_COMMAND, ["runs", "show", runs[0], "--db", db], repo_env, str(tmp_path))
    assert "pass^1" in shown.stdout, shown.stdout[-2000:] + shown.stderr[-2000:]
    assert loaded(shown) == []
    unneeded = (  # #59: a complete run has no trial to run
        "castbench._run.engine",
        "castbench._run.executors",
        "castbench._run.work",
        "castbench._trial.episode",
        "castbench._agents.sandbox",  # the Landlock/seccomp machinery: workers only
        "castbench._agents.transports.worker",
        "price_parser",  # the graders' and the rules critic's parsers, on their first text
        "dateutil",
    )
    resumed = probe(RUN_COMMAND, args, repo_env, str(tmp_path), modules=unneeded)
    assert "(0 trials run, 4 reused)" in resumed.stdout, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert "pass^1" in resumed.stdout
    assert loaded(resumed) == []
    gate = ["gate", "--baseline", runs[0], "--candidate", runs[1], "--metric", "pass^1", "--max-drop", "0.1"]
    gated = probe(RUN_COMMAND, [*gate, "--db", db], repo_env, str(tmp_path))
    assert "PASS" in gated.stdout, gated.stdout[-2000:] + gated.stderr[-2000:]
    assert set(loaded(gated)) <= {"numpy"}  # the paired bootstrap resamples with numpy


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


def test_an_incomplete_run_resumed_runs_what_is_left(repo_env: dict[str, str], tmp_path: Path) -> None:
    """The engine still resumes a run with trials left: the fast path is for complete runs only."""
    db = sqlite_url(tmp_path / "r.db")
    args = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", "1"]
    args += ["--tasks", "retail-test-0001,retail-test-0002", "--db", db]
    first = probe(RUN_COMMAND, [*args, "--max-cost", "0"], repo_env, str(tmp_path))
    assert "(0 trials run, 0 reused)" in first.stdout, first.stdout[-2000:] + first.stderr[-2000:]
    rest = probe(RUN_COMMAND, args, repo_env, str(tmp_path), modules=("castbench._run.engine",))
    assert "(2 trials run, 0 reused)" in rest.stdout, rest.stdout[-2000:] + rest.stderr[-2000:]
    assert loaded(rest) == ["castbench._run.engine"]


def test_run_metadata_asks_git_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """#59: one `git status` gives the commit and whether the checkout has changes."""
    import subprocess

    from castbench._run import api

    calls: list[list[str]] = []
    real = subprocess.run

    def counted(command: list[str], *args: object, **kwargs: object) -> object:
        calls.append(command)
        return real(command, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(api.subprocess, "run", counted)
    monkeypatch.chdir(tmp_path)
    assert api.run_metadata()["git_commit"] is None  # not a checkout
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    real(["git", "init", "-q"], check=True)
    assert api.run_metadata()["git_commit"] is None  # no commit yet
    (tmp_path / "f").write_text("x")
    real(["git", "add", "f"], check=True)
    real(["git", "commit", "-q", "-m", "m"], check=True)
    head = real(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    calls.clear()
    assert api.run_metadata()["git_commit"] == head
    assert len(calls) == 1
    (tmp_path / "f").write_text("y")
    assert api.run_metadata()["git_commit"] == head + "-dirty"
