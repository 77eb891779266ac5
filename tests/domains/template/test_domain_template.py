"""The domain template (castbench/_authoring/domain-template, package data): a working domain in
under 250 lines that a pack author copies. It validates, the oracle scores 1.000 on every task
plain and strict, the reference floors are computed on it (and none of them passes a task: the
look-up task names its rival value, so saying every value seen does not answer it), and it
imports only what a pack author imports."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from castbench._run.api import evaluate
from castbench.domain import Domain, registry
from tests.conftest import REPO_ROOT
from tests.support import invoke, sqlite_url

EXAMPLE = REPO_ROOT / "harness" / "castbench" / "_authoring" / "domain-template"
LINE_BUDGET = 250


def template_files(root: Path) -> list[Path]:
    """The files of a pack as its author writes them (no build or install output)."""
    skipped = {"__pycache__", "build", "dist"}
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and not skipped & set(path.parts)
        and not any(part.endswith(".egg-info") for part in path.parts)
    )


@pytest.fixture
def library(monkeypatch: pytest.MonkeyPatch) -> Domain:
    """The template's domain, importable from the checkout (installed or not) and registered for
    this test only, as `pip install -e` of the template would make it available."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    domain = importlib.import_module("castbench_library").domain
    monkeypatch.setitem(registry._registered, domain.name, domain)
    return domain


def test_the_template_is_under_250_lines_and_has_every_part_of_a_pack() -> None:
    files = template_files(EXAMPLE)
    names = {path.relative_to(EXAMPLE).as_posix() for path in files}
    assert {
        "pyproject.toml",
        "castbench_library/__init__.py",
        "castbench_library/policy.md",
        "castbench_library/data/state.json",
        "castbench_library/tasks/test.json",
    } <= names
    lines = sum(len(path.read_text().splitlines()) for path in files)
    assert lines < LINE_BUDGET, f"the template is {lines} lines"


def test_its_pyproject_registers_the_domain_under_the_entry_point_group(library: Domain) -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
    (name, target), *others = project["project"]["entry-points"][registry.ENTRY_POINT_GROUP].items()
    assert (name, others) == ("library", [])
    module, attribute = target.split(":")
    assert getattr(importlib.import_module(module), attribute) is library
    data = project["tool"]["setuptools"]["package-data"]["castbench_library"]
    assert set(data) == {"policy.md", "data/*.json", "tasks/*.json"}  # installed beside the code


def test_it_imports_only_the_public_domain_api() -> None:
    imported = set()
    for path in (EXAMPLE / "castbench_library").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("castbench"):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("castbench")}
    assert imported == {"castbench.domain"}


def test_its_tasks_cover_a_change_a_look_up_and_refusals(library: Domain) -> None:
    tasks = library.tasks("test")
    outcomes = [task.outcome for task in tasks]
    assert outcomes.count("change") == 2 and outcomes.count("refuse") == 2
    (lookup,) = [task for task in tasks if task.outcome == "no_change"]
    assert lookup.required_outputs == ["2026-06-10"]
    assert sum(tool.writes for tool in library.toolkit) == 2 and len(library.toolkit) == 5


def test_domains_validate_passes(library: Domain) -> None:
    result = invoke("domains", "validate", "--domain", "library")
    assert result.exit_code == 0, result.output
    assert "library 1-0: test 5 tasks valid" in result.output


def test_eval_oracle_scores_one_and_the_floors_are_computed(library: Domain, tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "library.db")
    shown = invoke("eval", "--domain", "library", "--policy", "oracle", "--trials", "2", "--db", url)
    assert shown.exit_code == 0, shown.output
    row = next(line.split() for line in shown.output.splitlines() if line.strip().startswith("library"))
    assert row[:3] == ["library", "5", "1.000"] and row[-1] == "0.000", shown.output  # tasks, pass^1, floor

    summary = evaluate(domains="library", policy="oracle", trials=2, db=url).summary  # that run, read back
    report = summary.domains["library"]
    assert report.strict is not None
    assert {task: (c.n, c.successes) for task, c in report.per_task.items()} == {
        task.id: (2, 2) for task in library.tasks("test")
    }
    assert report.pass_hat == report.strict.pass_hat == {1: 1.0, 2: 1.0}
    assert summary.floors is not None
    assert summary.floors.domains["library"] == {
        floor: {1: 0.0, 2: 0.0} for floor in ("refuse", "lookup-refuse", "lookup-spray")
    }


def test_pip_installs_it_and_the_commands_find_it_by_its_entry_point(
    tmp_path: Path, repo_env: dict[str, str]
) -> None:
    """As its author installs it: pip builds the pack from its own pyproject (offline: no
    dependencies, the environment's setuptools), and a fresh `castbench` process finds the
    domain through the entry point alone, its data and tasks installed beside the code."""
    pytest.importorskip("setuptools")
    source, site = tmp_path / "src", tmp_path / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-compile"]
    built = subprocess.run(
        [*pip, "--target", str(site), str(source)], capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr
    shutil.rmtree(source)  # what runs is the installed copy
    env = {**repo_env, "PYTHONPATH": f"{site}:{REPO_ROOT}"}
    castbench = [sys.executable, "-c", "from castbench._cli.app import main; main()"]
    validated = subprocess.run(
        [*castbench, "domains", "validate", "--domain", "library"], capture_output=True, text=True, env=env
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "library 1-0: test 5 tasks valid" in validated.stdout
    url = sqlite_url(tmp_path / "installed.db")
    ran = subprocess.run(
        [*castbench, "eval", "--domain", "library", "--policy", "oracle", "--trials", "1", "--db", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    row = next(line.split() for line in ran.stdout.splitlines() if line.strip().startswith("library"))
    assert row[:3] == ["library", "5", "1.000"] and row[-1] == "0.000", ran.stdout
