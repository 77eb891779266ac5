"""`castbench domains new NAME`: a copy of the template under a new name that validates as it is,
is solved by the oracle, and names nothing of the template's where a name must be unique."""

from __future__ import annotations

import importlib
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from castbench._authoring.template import template_folder
from castbench._run.api import evaluate
from castbench.domain import Domain, registry
from tests.conftest import REPO_ROOT
from tests.domains.template.test_domain_template import template_files
from tests.support import invoke, sqlite_url


def _register(monkeypatch: pytest.MonkeyPatch, root: Path, package: str) -> Domain:
    """The new pack, importable and registered for this test, as `pip install -e ROOT` makes it."""
    monkeypatch.syspath_prepend(str(root))
    domain = importlib.import_module(package).domain
    monkeypatch.setitem(registry._registered, domain.name, domain)
    return domain


def test_the_template_is_package_data_declared_in_pyproject() -> None:
    """Found through `importlib.resources` where castbench is installed, and every file of it is
    declared as package data, so the wheel holds the whole template."""
    folder = template_folder()
    assert folder == REPO_ROOT / "harness" / "castbench" / "_authoring" / "domain-template"
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = declared["package-data"]["castbench._authoring"]
    package = folder.parent
    shipped = {path for pattern in patterns for path in package.glob(pattern)}
    assert shipped == set(template_files(folder)), sorted(set(template_files(folder)) ^ shipped)


def test_domains_new_works_from_an_installed_wheel(tmp_path: Path) -> None:
    """castbench built as a wheel and run from it alone (not this checkout): `domains new` copies
    the template the wheel holds, and the new pack imports as its domain."""
    wheels, site, work = tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w"]
    subprocess.run([*build, str(wheels), str(REPO_ROOT)], check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("castbench-*-py3-none-any.whl")
    zipfile.ZipFile(wheel).extractall(site)
    work.mkdir()
    # no site processing: this checkout's editable install is not on the path; the dependencies
    # come from the environment's site-packages, as pip would install them
    code = (
        "import sys; from castbench._authoring.template import template_folder; print(template_folder())\n"
        "from castbench._cli.app import main; sys.argv = ['castbench', 'domains', 'new', 'shop']; main()"
    )
    env = {"PYTHONPATH": f"{site}:{sysconfig.get_paths()['purelib']}", "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=work
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith(str(site))
    assert "domain shop: package castbench_shop" in done.stdout
    probe = (
        "import castbench_shop; print(castbench_shop.domain.name, len(castbench_shop.domain.tasks('test')))"
    )
    env["PYTHONPATH"] = f"{work / 'castbench_shop'}:{env['PYTHONPATH']}"
    shown = subprocess.run(
        [sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True, timeout=300, cwd=work
    )
    assert shown.stdout.split() == ["shop", "5"], shown.stdout + shown.stderr


def test_a_new_domain_validates_and_the_oracle_solves_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    made = invoke("domains", "new", "book-swap")
    assert made.exit_code == 0, made.output
    root = tmp_path / "castbench_book_swap"
    assert f"pip install -e {root.name}" in made.output
    assert not list(root.rglob("*castbench_library*"))
    assert not any("library-0" in path.read_text() for path in template_files(root))
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["name"] == "castbench-book-swap"
    assert project["project"]["entry-points"][registry.ENTRY_POINT_GROUP] == {
        "book-swap": "castbench_book_swap:domain"
    }

    domain = _register(monkeypatch, root, "castbench_book_swap")
    assert domain.name == "book-swap"
    assert [task.id for task in domain.tasks("test")] == [f"book-swap-{n:04d}" for n in range(1, 6)]
    validated = invoke("domains", "validate", "--domain", "book-swap")
    assert validated.exit_code == 0, validated.output
    assert "book-swap 1-0: test 5 tasks valid" in validated.output
    url = sqlite_url(tmp_path / "r.db")
    summary = evaluate(domains="book-swap", policy="oracle", trials=1, db=url).summary
    assert summary.domains["book-swap"].pass_hat == {1: 1.0}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["retail"], "domain name 'retail': an installed domain has it already"),
        (["Shop"], "domain name 'Shop': use lower-case letters and digits"),
        (["shop", "--out", "occupied"], "occupied: exists and is not an empty folder"),
        (["shop", "--template", "nowhere"], "no domain template at nowhere"),
    ],
)
def test_what_cannot_be_made_is_one_error_line(
    arguments: list[str], says: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "notes.txt").write_text("mine")
    result = invoke("domains", "new", *arguments)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {says}"), result.output
    assert (tmp_path / "occupied" / "notes.txt").read_text() == "mine"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["occupied"]  # nothing written
