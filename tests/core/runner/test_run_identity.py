"""A run resumes only when everything that can change its results is unchanged: options (task
lists normalised), the agent's code, the domain's task and data files, castbench's version.
Otherwise a new run starts and says what changed. `latest` is the run most recently written."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._run.api import build_config, evaluate
from tests.core.toy import add_call, build_toy_domain, register_toy, toy_task

AGENT = '''
from castbench._agents.scripted.oracle import OraclePolicy


class Policy(OraclePolicy):
    """A team's agent: the oracle, {version}."""
'''


def _forget_team_agent() -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] == "teamagent"]:
        del sys.modules[name]


@pytest.fixture
def team_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An import-path agent in its own package, `teamagent.policy:Policy` (fresh in every test)."""
    package = tmp_path / "agents" / "teamagent"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "policy.py").write_text(AGENT.format(version="version 1"))
    monkeypatch.syspath_prepend(str(tmp_path / "agents"))
    _forget_team_agent()
    yield package
    _forget_team_agent()


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tasks = [toy_task("toy-1", [add_call("x", 1)]), toy_task("toy-2", [add_call("y", 2)])]
    register_toy(monkeypatch, build_toy_domain(tmp_path / "toy", tasks))
    return tmp_path / "toy"


def _eval(db: str, **options: object):  # type: ignore[no-untyped-def]
    return evaluate(db=db, domains="toy", trials=2, **{"policy": "oracle", **options}).outcome  # type: ignore[arg-type]


def test_editing_the_agents_code_starts_a_new_run(toy: Path, team_agent: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = _eval(db, policy="teamagent.policy:Policy")
    assert first.ran == 4 and not first.resumed
    again = _eval(db, policy="teamagent.policy:Policy")
    assert again.resumed and again.ran == 0 and again.run_id == first.run_id
    (team_agent / "policy.py").write_text(AGENT.format(version="version 2, bug fixed"))
    fixed = _eval(db, policy="teamagent.policy:Policy")
    assert not fixed.resumed and fixed.ran == 4 and fixed.run_id != first.run_id
    assert fixed.superseded == first.run_id and fixed.changes == ("the policy's code",)


def test_a_sibling_module_of_the_agent_counts_too(toy: Path, team_agent: Path) -> None:
    before = build_config(domains="toy", policy="teamagent.policy:Policy")[0]
    (team_agent / "prompts.py").write_text("SYSTEM = 'be careful'\n")
    after = build_config(domains="toy", policy="teamagent.policy:Policy")[0]
    assert before.options_hash() == after.options_hash() and before.config_hash() != after.config_hash()


def test_editing_a_task_file_starts_a_new_run(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = _eval(db)
    tasks = [toy_task("toy-1", [add_call("x", 5)]), toy_task("toy-2", [add_call("y", 2)])]
    register_toy(monkeypatch, build_toy_domain(toy, tasks))
    edited = _eval(db)
    assert not edited.resumed and edited.ran == 4
    assert edited.superseded == first.run_id and edited.changes == ("domain toy's task or data files",)


def test_task_lists_are_normalised(toy: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = _eval(db, tasks=["toy-2", "toy-1"])
    same = _eval(db, tasks=["toy-1", "toy-2", "toy-1"])
    assert same.resumed and same.run_id == first.run_id and same.ran == 0


def test_builtin_parameters_are_part_of_the_identity(toy: Path) -> None:
    low = build_config(domains="toy", policy="scripted:noisy?p=0.1")[0]
    high = build_config(domains="toy", policy="scripted:noisy?p=0.2")[0]
    assert low.fingerprint.agents["policy"] != high.fingerprint.agents["policy"]
    assert low.fingerprint.castbench and low.fingerprint.domains["toy"] == high.fingerprint.domains["toy"]


def test_latest_is_the_run_most_recently_written(toy: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    older = _eval(db, seed=1)
    newer = _eval(db, seed=2)
    store = ResultsStore(db)
    assert store.run("latest").id == newer.run_id
    resumed = _eval(db, seed=1)
    assert resumed.resumed and store.run("latest").id == older.run_id


def test_the_eval_command_says_what_changed(toy: Path, team_agent: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["eval", "--domain", "toy", "--policy", "teamagent.policy:Policy", "--trials", "1", "--db", db]
    cli = CliRunner()
    assert cli.invoke(app, args).exit_code == 0
    (team_agent / "policy.py").write_text(AGENT.format(version="version 2"))
    changed = cli.invoke(app, args, env={"COLUMNS": "200"})
    said = " ".join(changed.output.split())
    assert changed.exit_code == 0 and "not resuming r-" in said and "the policy's code changed" in said
    assert "2 trials run, 0 reused" in said


def test_a_data_file_of_the_agents_package_counts(toy: Path, team_agent: Path, tmp_path: Path) -> None:
    """A prompt the agent reads from its package (`greeting.txt`) decides results like its code."""
    (team_agent / "greeting.txt").write_text("Hello!")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = _eval(db, policy="teamagent.policy:Policy")
    (team_agent / "greeting.txt").write_text("Hello, how can I help?")
    changed = _eval(db, policy="teamagent.policy:Policy")
    assert not changed.resumed and changed.superseded == first.run_id
    assert changed.changes == ("the policy's code",)


def test_a_results_store_kept_in_the_agents_package_is_no_part_of_it(toy: Path, team_agent: Path) -> None:
    """Results kept beside the agent's code (the store, its sidecars and run lock, another store)
    grow with every run; counted as the agent's files, no run would ever resume. (A sandboxed
    worker refuses such a package outright, `castbench._agents.sandbox.AgentPackageError`; the
    identity is the same wherever the agent runs, so this runs it in castbench's process.)"""
    import sqlite3

    sqlite3.connect(team_agent / "older.sqlite").execute("create table t (x)")
    db = f"sqlite:///{team_agent / 'runs.db'}"
    agent = {"policy": "teamagent.policy:Policy", "in_process": True}
    first = _eval(db, **agent)
    assert sorted(path.name for path in team_agent.iterdir() if "runs" in path.name)  # the store is there
    again = _eval(db, **agent)
    assert again.resumed and again.run_id == first.run_id and again.ran == 0
    (team_agent / "policy.py").write_text(AGENT.format(version="version 2"))
    assert not _eval(db, **agent).resumed  # its code still counts


def test_a_sibling_top_level_module_it_imports_counts(toy: Path, team_agent: Path) -> None:
    """`teamagent/policy.py` imports `teamhelpers`, a module beside the package (not in it); a
    module beside it that nothing imports does not count."""
    home = team_agent.parent
    (home / "teamhelpers.py").write_text("import json\nTONE = 'calm'\n")
    (home / "unrelated.py").write_text("X = 1\n")
    (team_agent / "policy.py").write_text("import teamhelpers\n" + AGENT.format(version="v1"))

    def digest() -> str:
        return build_config(domains="toy", policy="teamagent.policy:Policy")[0].config_hash()

    before = digest()
    (home / "unrelated.py").write_text("X = 2\n")
    assert digest() == before
    (home / "teamhelpers.py").write_text("import json\nTONE = 'curt'\n")
    assert digest() != before


def test_eval_says_what_the_identity_cannot_see(toy: Path, team_agent: Path, tmp_path: Path) -> None:
    """An agent importing modules by name at run time: eval cannot tell whether they changed."""
    (team_agent / "policy.py").write_text(
        "import importlib\n" + AGENT.format(version="v1") + "    tone = importlib.import_module('json')\n"
    )
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["eval", "--domain", "toy", "--policy", "teamagent.policy:Policy", "--trials", "1", "--db", db]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    said = " ".join(result.output.split())
    assert result.exit_code == 0, said
    assert "policy.py imports modules by name at run time" in said and "--fresh" in said


def test_a_syntax_error_in_the_agent_is_one_line_naming_file_and_line(
    toy: Path, team_agent: Path, tmp_path: Path
) -> None:
    (team_agent / "helpers.py").write_text("x = 1\ndef broken(:\n    pass\n")
    (team_agent / "policy.py").write_text("from teamagent import helpers\n" + AGENT.format(version="v1"))
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["eval", "--domain", "toy", "--policy", "teamagent.policy:Policy", "--trials", "1", "--db", db]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert f"syntax error in {team_agent / 'helpers.py'}:2: invalid syntax" in errors[0]
    assert "Traceback" not in result.output and "exited" not in result.output
