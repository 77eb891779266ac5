"""No two modules of castbench (or of a pack) import each other, directly or around a loop.

import-linter's contracts (pyproject's `[tool.importlinter]`) keep the layers and keep each
package's children acyclic, but a cycle can still run through a package's own `__init__` (the
`castbench` package re-exports the API on first use, so a module reading `castbench.__version__`
closed one) or between modules of packages that no contract pairs. A function-level import hides a
cycle from Python's import order, never from this test: grimp's graph holds every import statement,
wherever it is (inside functions and `TYPE_CHECKING` blocks included).
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def root_packages() -> list[str]:
    """The packages the import contract covers: castbench and every pack shipped with it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["root_packages"])


def module_cycles(imports: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each a set of modules that
    all reach each other through imports), sorted; Tarjan's algorithm, iterative (no recursion
    limit on a deep import chain)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(imports[start])))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def import_graph(packages: list[str]) -> tuple[grimp.ImportGraph, dict[str, set[str]]]:
    graph = grimp.build_graph(*packages, include_external_packages=False, cache_dir=None)
    return graph, {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """One loop of the component, each import with its line: what to move to break it."""
    first = cycle[0]
    back = next(m for m in sorted(graph.find_modules_that_directly_import(first)) if m in cycle)
    chain = graph.find_shortest_chain(importer=first, imported=back) or (first, back)
    steps = []
    for importer, imported in zip([*chain], [*chain[1:], first], strict=True):
        lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
        steps.append(f"{importer} -> {imported} (line {', '.join(map(str, lines))})")
    return f"{len(cycle)} modules in a cycle: " + "; ".join(steps)


def test_no_module_imports_another_that_imports_it_back() -> None:
    """A cycle between castbench's modules (or a pack's) fails here, whatever hides it: every
    edge counts, the public modules' too (their names loaded on first use are import statements
    under `if TYPE_CHECKING:`, and nothing of the core imports a public module)."""
    graph, imports = import_graph(root_packages())
    assert "castbench._results.report.kept" in imports  # the graph is castbench's, not an empty one
    assert "castbench._trial.rollout" in imports["castbench.domain"]  # `run_trial`: every edge is seen
    assert "castbench._domain.task" in imports["castbench.domain"]  # imported with the package
    cycles = module_cycles(imports)
    assert not cycles, "\n".join(describe(graph, cycle) for cycle in cycles)


def test_no_module_of_castbench_imports_the_package_itself() -> None:
    """`castbench/__init__.py` imports the API (lazily, for `castbench.evaluate`): a module below
    the API reading the package would close a cycle the day the API imports it. Its version and
    folder are read from `castbench._base.version`."""
    graph, _ = import_graph(["castbench"])
    assert graph.find_modules_that_directly_import("castbench") == set()


@pytest.fixture
def cyclic_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package whose two modules import each other, one of them only inside a function."""
    package = tmp_path / "cyclepkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "alpha.py").write_text("from cyclepkg.sub import beta\n\nVALUE = beta.NAME\n")
    (package / "sub" / "beta.py").write_text(
        'NAME = "beta"\n\n\ndef late():\n    from cyclepkg import alpha\n\n    return alpha.VALUE\n'
    )
    (package / "gamma.py").write_text("from cyclepkg import alpha\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cyclepkg", raising=False)
    return "cyclepkg"


def test_a_cycle_behind_a_function_level_import_is_found(cyclic_package: str) -> None:
    graph, imports = import_graph([cyclic_package])
    assert module_cycles(imports) == [["cyclepkg.alpha", "cyclepkg.sub.beta"]]
    said = describe(graph, ["cyclepkg.alpha", "cyclepkg.sub.beta"])
    assert "cyclepkg.alpha -> cyclepkg.sub.beta (line 1)" in said
    assert "cyclepkg.sub.beta -> cyclepkg.alpha (line 5)" in said


def test_an_acyclic_graph_has_no_cycles() -> None:
    chain = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}
    assert module_cycles(chain) == []
    assert module_cycles({**chain, "c": {"d"}}) == [["a", "b", "c", "d"]]
