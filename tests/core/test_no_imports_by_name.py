"""The core imports its own modules by import statements, so that the import contract
(pyproject's `[tool.importlinter]`) checks the real graph (issue 58). Importing by name is kept to
what is named from outside castbench: an agent's `module:Class`, an installed pack's modules (its
options, its task generator)."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness" / "castbench"

# module -> why it imports by name (each names code from outside castbench's own package)
ALLOWED = {
    "agents/spec.py": "an agent given as `module:attribute`",
    "authoring/private.py": "an installed pack's `generate` module",
    "domain/pack_options.py": "installed packs' modules, from their entry points",
}


def _imports_by_name(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def test_no_core_module_imports_castbench_code_by_name() -> None:
    found = {
        str(path.relative_to(HARNESS)): lines
        for path in sorted(HARNESS.rglob("*.py"))
        if (lines := _imports_by_name(path))
    }
    assert set(found) <= set(ALLOWED), {k: v for k, v in found.items() if k not in ALLOWED}
    assert found, "the check finds nothing: it no longer looks where imports by name are"
