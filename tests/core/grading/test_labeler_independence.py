"""The privileged labeler is the truth the critics are measured against, so it shares no decision
code with any deployed critic: every castbench module it reaches (transitively) that a critic also
imports must be one of the neutral ones both may read (the event types, the domain's schemas and
rule constants, the run defaults). `castbench._base.dialogue`, the phrasebook the scripted roles and the
rules critic use to read a yes, is not one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import castbench

ROOT = Path(castbench.__file__).parent
NEUTRAL = (
    "castbench._base.conversation",
    "castbench.domain",
    "castbench._domain",
    "castbench._base.defaults",
    "castbench._base.errors",
)
"""What both may read: the events, the domain's tools, rules and data, the defaults."""
LABELER = ("castbench._grading.labeler", "castbench._grading.confirmation")
ORACLE_CRITIC = "castbench._agents.critics.oracle"
"""The oracle critic is the labeler handed to the policy (its upper bound), not a critic graded."""
PUBLIC = ("castbench", "castbench.agents", "castbench.domain")


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    package = ROOT.joinpath(*parts, "__init__.py")
    module = ROOT.joinpath(*parts[:-1], f"{parts[-1]}.py") if parts else ROOT / "__init__.py"
    return package if package.exists() else module if module.exists() else None


def _imports(name: str) -> set[str]:
    """The castbench modules `name` imports, wherever the import statement stands (a public
    module's reads on first use aside: a name read through it comes from its home's import)."""
    path = _module_file(name)
    if path is None:
        return set()
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    if name in PUBLIC:  # what a public module reads on first use (`_module`) is no import of it
        tree.body = [node for node in tree.body if getattr(node, "name", "") != "_module"]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("castbench"):
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if _module_file(f"{node.module}.{alias.name}")
            )
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("castbench"))
    return {module for module in found if _module_file(module) is not None}


def _closure(roots: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imports(name) - seen)
    return seen


def _critic_modules() -> set[str]:
    folder = ROOT / "_agents" / "critics"
    return {f"castbench._agents.critics.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"} - {
        ORACLE_CRITIC
    }


def _neutral(module: str) -> bool:
    return any(module == n or module.startswith(f"{n}.") for n in NEUTRAL)


def _shared(roots: tuple[str, ...]) -> set[str]:
    critics = _critic_modules()
    assert critics, "no critic modules found"
    used_by_critics = set().union(*(_imports(critic) for critic in critics)) | critics
    return {module for module in _closure(roots) & used_by_critics if not _neutral(module)}


def test_the_labeler_reaches_no_module_a_critic_decides_with() -> None:
    assert not _shared(LABELER), f"the labeler shares decision code with a critic: {sorted(_shared(LABELER))}"
    labeler = _closure(LABELER)
    assert "castbench._base.dialogue" not in labeler
    assert not any(module.startswith(("castbench.agents", "castbench._agents")) for module in labeler)


def test_the_check_would_catch_a_shared_module() -> None:
    """The check itself: a labeler that imported the rules critic's checks would fail it."""
    assert "castbench._agents.critics.checks" in _shared((*LABELER, "castbench._agents.critics.checks"))


def _grading_reached(roots: tuple[str, ...]) -> set[str]:
    """The labeler's modules (and the scripted roles' phrasebook) that `roots` reach."""
    return {
        module
        for module in _closure(roots)
        if module.startswith("castbench._grading") or module == "castbench._base.dialogue"
    }


def test_no_critic_reaches_the_labeler_or_the_phrasebook() -> None:
    """The other direction: the rules critic (its checks and its own reading of a yes,
    `critics/consent.py`) decides with no code of the labeler's and not with `_base/dialogue.py`."""
    critics = tuple(sorted(_critic_modules()))
    assert "castbench._agents.critics.checks" in critics and "castbench._agents.critics.consent" in critics
    assert not _grading_reached(critics), f"a critic reaches {sorted(_grading_reached(critics))}"


def test_the_critic_check_would_catch_an_import_of_grading_code() -> None:
    assert "castbench._grading.confirmation" in _grading_reached(
        ("castbench._agents.critics.checks", "castbench._grading.confirmation")
    )
