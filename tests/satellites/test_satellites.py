"""The optional products stand beside the core as packages of their own (docs/architecture.md,
"The core and its satellites"): castbench_ray (the Ray executor), found through entry points.
The core names none of them (the import contract), and each old module path still imports for one
release, warning where its code went."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
SATELLITES = ("castbench_ray",)

# each old module path and the module it now gives
MOVED = {
    "castbench.runner.executors.ray": "castbench_ray.executor",
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
    deprecation shim imports a satellite."""
    graph = grimp.build_graph("castbench", *SATELLITES, include_external_packages=False, cache_dir=None)
    found = {
        f"{module} -> {imported}"
        for module in graph.find_descendants("castbench") | {"castbench"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] in SATELLITES and module not in MOVED
    }
    assert not found, sorted(found)


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


def test_the_ray_executor_comes_from_its_entry_point() -> None:
    import castbench_ray

    (point,) = entry_points(group="castbench.executors", name="ray")
    assert point.load() is castbench_ray.RayExecutor
    assert point.extras == ["ray"]


def test_executor_ray_without_ray_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from castbench.runner import executors

    monkeypatch.setattr(executors, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"^--executor ray needs Ray: pip install 'castbench\[ray\]'$"):
        executors.make_executor("ray")


def test_an_executor_without_its_satellite_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from castbench.runner import executors

    monkeypatch.setattr(executors, "entry_points", lambda **selection: [])
    with pytest.raises(ValueError, match=r"executor is not installed: pip install 'castbench\[ray\]'$"):
        executors._installed("ray")
