"""`--pack-option tau2.data=DIR` (and `--tau2-data DIR`, its deprecated alias): the τ² packs built
from another tau2-bench data directory, as a user runs them (`castbench eval`, `runs show`,
`domains list` in their own processes, as the option sets the packs' environment): another digest
in the pack's version and in every row, another run, the directory recorded in the run's config;
the package's own data and τ²'s limits otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from castbench._records.config import Limits
from castbench._records.store import ResultsStore
from castbench_tau2.domain import TAU2_LIMITS
from castbench_tau2.source import DATA_ENV, data_root

TASK = "5"  # in τ²'s retail test split
CASTBENCH = str(Path(sys.executable).parent / "castbench")


@pytest.fixture(scope="module")
def other_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's retail data with one task changed (its customer's request reworded)."""
    root = tmp_path_factory.mktemp("tau2-data")
    shutil.copytree(data_root() / "domains" / "retail", root / "domains" / "retail")
    tasks_file = root / "domains" / "retail" / "tasks.json"
    tasks = json.loads(tasks_file.read_text())
    task = next(task for task in tasks if task["id"] == TASK)
    task["user_scenario"]["instructions"]["reason_for_call"] += " You are in a hurry."
    tasks_file.write_text(json.dumps(tasks))
    return root


def _castbench(env: dict[str, str], *args: str) -> str:
    return _run(env, *args).stdout


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CASTBENCH, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


_EVAL = (
    *("eval", "--domain", "tau2-retail", "--split", "test", "--tasks", f"tau2-retail-{TASK}"),
    *("--trials", "1", "--policy", "oracle"),
)


def _eval(env: dict[str, str], db: Path, *extra: str) -> str:
    return _castbench(env, *_EVAL, "--db", str(db), *extra)


@pytest.mark.slow
def test_another_data_directory_is_another_pack_version_and_run(
    other_data: Path, tmp_path: Path, repo_env: dict[str, str]
) -> None:
    db = tmp_path / "runs.db"
    env = {key: value for key, value in repo_env.items() if key != DATA_ENV}
    _eval(env, db)
    _eval(env, db, "--pack-option", f"tau2.data={other_data}")
    # the variable the option sets works as well, and --max-steps replaces τ²'s limits
    shown = _eval({**env, DATA_ENV: str(other_data)}, db, "--max-steps", "30")
    assert "passed" in shown or "pass^1" in shown
    store = ResultsStore(f"sqlite:///{db}")
    runs = [store.config(row.id) for row in store.runs()]
    ids = [row.id for row in store.runs()]
    assert len(set(ids)) == 3
    package, other, capped = runs
    assert package.domains["tau2-retail"].startswith("2603")
    assert other.domains["tau2-retail"] != package.domains["tau2-retail"]
    assert not other.domains["tau2-retail"].startswith("2603")
    origin = other.extra["data"]["tau2-retail"]
    assert origin.startswith(f"{other_data.resolve()} sha256:")
    assert "data" not in package.extra
    assert package.limits == other.limits == Limits.model_validate(TAU2_LIMITS)
    assert capped.limits == Limits(max_steps=30)
    assert capped.domains == other.domains and capped.extra["data"] == other.extra["data"]
    for row, config in zip(store.runs(), runs, strict=True):
        (trial,) = store.trials(row.id)
        assert trial.domain_version == config.domains["tau2-retail"]
        assert trial.reward == 1.0
    shown = _castbench(env, "runs", "show", ids[1], "--db", str(db))
    assert f"tau2-retail data: {origin}" in shown
    assert "limits: 100 agent actions, 200 messages (τ²'s count), 10 tool errors" in shown
    listed = _castbench(env, "domains", "list", "--tau2-data", str(other_data))
    assert other.domains["tau2-retail"] in listed


def test_the_option_refuses_a_directory_without_the_layout(tmp_path: Path, repo_env: dict[str, str]) -> None:
    env = {key: value for key, value in repo_env.items() if key != DATA_ENV}
    done = subprocess.run(
        [CASTBENCH, "tasks", "list", "--domain", "tau2-airline"] + ["--tau2-data", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        env={**env, "CASTBENCH_TRACEBACK": ""},
        timeout=300,
    )
    assert done.returncode == 2
    assert f"error: --tau2-data: tau2.data: {tmp_path / 'missing'} is not a directory" in done.stderr
    assert "warning: --tau2-data is deprecated" in done.stderr
    assert os.environ.get(DATA_ENV) is None  # the test process is untouched
    # the variable is checked as the flag was (no warning: it is not deprecated)
    done = subprocess.run(
        [CASTBENCH, "tasks", "list", "--domain", "tau2-airline"],
        capture_output=True,
        text=True,
        env={**env, "CASTBENCH_TRACEBACK": "", DATA_ENV: str(tmp_path / "missing")},
        timeout=300,
    )
    assert done.returncode == 2
    assert f"error: {DATA_ENV}: tau2.data: {tmp_path / 'missing'} is not a directory" in done.stderr
    assert "deprecated" not in done.stderr


@pytest.mark.slow
def test_the_deprecated_flag_warns_and_is_the_same_run(
    other_data: Path, tmp_path: Path, repo_env: dict[str, str]
) -> None:
    """`--tau2-data DIR` still works for a release: it says what to use instead, on stderr, and
    its run is the pack option's run (the same id, resumed: the same identity and data origin)."""
    db = tmp_path / "runs.db"
    env = {key: value for key, value in repo_env.items() if key != DATA_ENV}
    old = _run(env, *_EVAL, "--db", str(db), "--tau2-data", str(other_data))
    assert (
        "warning: --tau2-data is deprecated and will be removed; use --pack-option tau2.data=DIR"
        in old.stderr
    )
    new = _run(env, *_EVAL, "--db", str(db), "--pack-option", f"tau2.data={other_data}")
    assert "deprecated" not in new.stderr and "(0 trials run, 1 reused)" in new.stdout, new.stdout
    (row,) = ResultsStore(f"sqlite:///{db}").runs()
    assert (
        ResultsStore(f"sqlite:///{db}")
        .config(row.id)
        .extra["data"]["tau2-retail"]
        .startswith(f"{other_data.resolve()} sha256:")
    )
