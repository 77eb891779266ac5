"""castbench's public API (docs/api.md): `castbench`, `castbench.agents`, `castbench.domain` and
`castbench.formats`, each with an explicit `__all__`; every other module is private
(`castbench._run`, `castbench._trial`, ...), and the old paths of 0.1.0 warn until 0.2.0.

The surface is pinned here: removing or renaming a public name fails until the name moves behind a
deprecation shim, and a new name fails until it is listed below (on purpose: an addition is a
promise). The packs, the CAST plugin, the examples and the docs' code import the public modules
only, and an agent written against a path that moved still runs, told where the names went.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import grimp
import pytest

import castbench
import castbench.agents
import castbench.domain
from castbench._records.trial import TrialRecord

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ("castbench", "castbench.agents", "castbench.domain", "castbench.formats")

SURFACE: dict[str, list[str]] = {
    "castbench": [
        "CastbenchGroup", "CriticRecord", "Environment", "EvalOptions", "EvalResult", "ResultsStore",
        "__version__", "critic_intervals", "critic_metrics", "critic_report", "evaluate", "fail",
        "steps_df", "trials_df", "verdicts_df",
        # the Python function of each command (docs/commands.md), and what they take and raise
        "ArchiveError", "Check", "GateError", "SourceError", "StoreError", "attribute", "build_board",
        "builtin_agents", "comparison", "export_run", "gate", "generate_private", "import_run", "load_board",
        "new_domain", "plan_checks", "profile", "profile_runs", "read_export", "render_run_page",
        "run_listing", "set_pack_option", "summarize_run", "validate_domain", "verify", "write_export",
    ],
    "castbench.agents": [
        "AGENT_STOP", "Action", "AgentSpec", "AgentSpecError", "AgentTurn", "Briefing", "BuiltinAgent",
        "Completion", "Critic", "CriticView", "CritiqueTurn", "Event", "LLMUser", "MalformedAction",
        "ModelClient", "ModelSettings", "Policy", "PolicyView", "ReplyAction", "ServerDown",
        "ToolCallAction", "ToolResultTurn", "TrialKey", "Usage", "UserBriefing", "UserReply",
        "UserSimulator", "UserToolCall", "UserTurn", "Verdict", "action_json", "call_findings",
        "canonical_action", "configure_model_agent", "critic_messages", "critic_system_prompt",
        "describe_action", "find_json_object", "policy_messages", "public_briefing", "resolve",
        "tool_manual", "transcript", "verdict_from_text",
    ],
    "castbench.formats": ["ArchiveError", "ExportedRun", "RunFormat"],
    "castbench.domain": [
        "ActionLabel", "AgentSet", "Database", "DerivedRules", "DeviceStep", "Domain",
        "DomainDataError", "DomainRules", "DraftBase", "EarnedSpec", "EndReason", "ExpectedStateError",
        "Fact", "Facts", "Families", "Generator", "GradingSpec", "IDENTITY_PREFIX",
        "Limits", "Lookup", "Mention", "Observation", "ObservedCall", "ObservedFacts", "PackOption",
        "PackOptionError", "PackOptions", "Proposal",
        "Record", "RecordNotFound", "Rival", "Row", "RuleFinding", "RunConfig",
        "SEQUENCES_TABLE", "Snapshot", "Split", "StepRecord", "Task", "TaskChecks", "TaskFileError",
        "TimeLimits", "Tool", "ToolCall", "ToolCrash", "ToolError", "Toolkit", "Trajectory", "TrialRecord",
        "TrialRuntime", "TrialSpec",
        "TrueFacts", "UniqueDigits", "UnknownDomainError", "UserScenario", "Verification",
        "available_domains", "calculate", "confirm_answer", "customer_pools", "first_person",
        "identity_call", "identity_facts", "kept", "load_domain", "mention", "published_earned_spec",
        "read_tool", "register_domain", "resolve_domains", "run_trial", "schema_arguments_model",
        "spoken_list", "state_diff", "task_from_draft", "transfer_to_human_agents", "trial_seed",
        "validate_task", "write_tool",
    ],
}  # fmt: skip

# the packages that may import castbench's public modules only
PACKS = ("castbench_airline", "castbench_retail", "castbench_tau", "castbench_tau2", "castbench_telecom",
         "castbench_telehealth", "castbench_cast")  # fmt: skip


def facade(name: str) -> ModuleType:
    return importlib.import_module(name)


def public_imports(module: ModuleType) -> list[tuple[str, str]]:
    """(name, module it is imported from) for each import statement of castbench's in `module`'s
    source, at the top or under `if TYPE_CHECKING:`, castbench's own helpers left out."""
    tree = ast.parse(Path(module.__file__ or "").read_text())
    statements = [
        node
        for top in tree.body
        for node in ([top] if not isinstance(top, ast.If) else top.body)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    ]
    return [
        (alias.asname or alias.name, node.module or "")
        for node in statements
        if (node.module or "").startswith("castbench") and node.module != "castbench"
        for alias in node.names
    ]


def homes(module: ModuleType) -> dict[str, str]:
    """Each public name of `module` and the module it is read from."""
    return dict(public_imports(module))


@pytest.mark.parametrize("name", PUBLIC)
def test_the_public_surface_is_the_pinned_one(name: str) -> None:
    exported = facade(name).__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ names a name twice"
    pinned = set(SURFACE[name])
    removed, added = sorted(pinned - set(exported)), sorted(set(exported) - pinned)
    assert not removed, f"{name} no longer exports {removed}: keep them behind a deprecation shim"
    assert not added, f"{name} exports {added} not pinned here: list them in SURFACE (and docs/api.md)"


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves_to_the_object_its_module_defines(name: str) -> None:
    module = facade(name)
    where = homes(module)
    assert set(where) == set(module.__all__)
    for public in module.__all__:
        assert getattr(module, public) is getattr(importlib.import_module(where[public]), public), public
        assert public in dir(module)
    with pytest.raises(AttributeError, match="has no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_is_written_once_as_the_import_that_gives_it(name: str) -> None:
    """No table, no stub: one import statement names each public name, which type checkers and the
    import contract read as they read any import (`castbench._public`)."""
    module = facade(name)
    written = [public for public, _ in public_imports(module)]
    assert sorted(written) == sorted(module.__all__)
    assert len(written) == len(set(written))
    assert not Path(module.__file__ or "").with_suffix(".pyi").exists()
    tree = ast.parse(Path(module.__file__ or "").read_text())
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
    tabled = sorted(set(module.__all__) & strings)
    assert not tabled, f"{name}: {tabled} written again in a table"
    assert not hasattr(module, "_HOME") and not hasattr(module, "_HOMES")


def test_every_module_but_the_public_ones_is_private() -> None:
    """A newcomer (and a pack author) tells internal from public by the name: each module of the
    core outside the public ones has a `_`-prefixed part."""
    graph = grimp.build_graph("castbench", include_external_packages=False, cache_dir=None)
    exposed = sorted(
        module
        for module in graph.modules
        if module not in PUBLIC and not any(part.startswith("_") for part in module.split(".")[1:])
    )
    assert len(graph.modules) > 150  # the whole core, not a stray copy
    assert exposed == []


def test_no_module_of_the_core_imports_a_public_one() -> None:
    """The public modules sit on top of the layers: the core imports from private modules only, so
    the contract sees every edge of the real graph."""
    graph = grimp.build_graph("castbench", include_external_packages=False, cache_dir=None)
    found = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        if module not in PUBLIC
        for imported in graph.find_modules_directly_imported_by(module)
        if imported in PUBLIC
    )
    assert found == []


def layers_above(layer: str) -> set[str]:
    """castbench's subpackages and modules in the layers above `layer` (pyproject's contract)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    names = [layer.strip() for layer in layers]
    return {part.strip() for group in names[: names.index(layer)] for part in group.split("|")}


def loaded_by(statement: str, repo_env: dict[str, str]) -> list[str]:
    probe = f"{statement}; import sys; print(sorted(m for m in sys.modules if m.startswith('castbench')))"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=repo_env, capture_output=True, text=True, check=True
    )
    return list(ast.literal_eval(done.stdout.strip()))


def test_the_agents_api_imports_none_of_castbench(repo_env: dict[str, str]) -> None:
    """Every agent worker imports `castbench.agents`: its names load when first read."""
    assert loaded_by("import castbench.agents", repo_env) == [
        "castbench",
        "castbench._legacy",
        "castbench._public",
        "castbench.agents",
    ]


def test_the_domain_api_loads_nothing_above_its_layer(repo_env: dict[str, str]) -> None:
    """Importing `castbench.domain` loads what it did before: its grading, task generation, run and
    record names load when a pack first reads them."""
    above = layers_above("_domain")
    loaded = loaded_by("import castbench.domain", repo_env)
    assert "castbench._domain.task" in loaded
    assert [
        m for m in loaded if m.count(".") and m.split(".")[1] in above - {"domain", "_legacy", "_public"}
    ] == []


def test_packs_and_the_plugin_import_no_internal_module() -> None:
    graph = grimp.build_graph("castbench", *PACKS, include_external_packages=False, cache_dir=None)
    internal = {
        f"{module} -> {imported}"
        for pack in PACKS
        for module in graph.find_descendants(pack) | {pack}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] == "castbench" and imported not in PUBLIC
    }
    assert "castbench_tau2.importer" in graph.modules  # the graph holds the packs
    assert not internal, sorted(internal)


CASTBENCH_IMPORT = re.compile(r"^\s*(?:from\s+(castbench[\w.]*)\s+import|import\s+(castbench[\w.]*))", re.M)


def imported_modules(text: str) -> set[str]:
    return {from_ or plain for from_, plain in CASTBENCH_IMPORT.findall(text)}


def test_examples_and_the_docs_code_import_the_public_modules_only() -> None:
    """What a reader copies: the examples' code, and the Python blocks of README and docs/."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "examples").rglob("*.py")):
        found[str(path.relative_to(ROOT))] = imported_modules(path.read_text())
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        found[str(page.relative_to(ROOT))] = imported_modules("\n".join(blocks))
    assert sum(len(modules) for modules in found.values()) > 5  # the scan reads imports
    internal = {
        place: sorted(modules - set(PUBLIC)) for place, modules in found.items() if modules - set(PUBLIC)
    }
    assert not internal


def test_the_contract_forbids_every_internal_module_to_the_packs() -> None:
    """`lint-imports` enforces the line between public and internal: its contract names every
    subpackage and module of castbench but the public ones, so a new module is internal too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["name"].startswith("packs and plugins import"))
    assert sorted(contract["source_modules"]) == sorted(PACKS)
    graph = grimp.build_graph("castbench", include_external_packages=False, cache_dir=None)
    children = graph.find_children("castbench")
    forbidden = set(contract["forbidden_modules"])
    assert forbidden == children - set(PUBLIC)


OLD_PATH_WARNING = (
    r"castbench\.agents\.conversation is deprecated and will be removed in castbench 0\.2\.0: "
    r"import from castbench\.agents instead"
)


def test_the_agent_conversation_shim_warns_and_gives_the_public_objects() -> None:
    sys.modules.pop("castbench.agents.conversation", None)
    with pytest.warns(DeprecationWarning, match=OLD_PATH_WARNING):
        old = importlib.import_module("castbench.agents.conversation")
    for name in old.__all__:
        assert getattr(old, name) is getattr(castbench.agents, name), name


def test_an_agent_on_the_old_path_runs_a_trial_with_a_warning(tmp_path: Path) -> None:
    """In castbench's process (`in_process`, where the warning can be caught), then in a worker
    of its own, as every import-path agent runs."""
    from castbench._run.api import evaluate

    agent = "tests.core.old_path_agents:OldPathPolicy"
    task = castbench.domain.load_domain("retail").tasks("test")[0].id
    options = {"domains": "retail", "policy": agent, "trials": 1, "tasks": [task]}
    for module in ("tests.core.old_path_agents", "castbench.agents.conversation"):
        sys.modules.pop(module, None)
    trials: list[TrialRecord] = []
    with pytest.warns(DeprecationWarning, match=OLD_PATH_WARNING):
        evaluate(**options, db=f"sqlite:///{tmp_path / 'in.db'}", in_process=True, on_trial=trials.append)  # type: ignore[arg-type]
    # the worker imports the agent: it reports the warning, which is raised again here, at the
    # agent's import line
    with pytest.warns(DeprecationWarning, match=OLD_PATH_WARNING) as caught:
        evaluate(**options, db=f"sqlite:///{tmp_path / 'worker.db'}", on_trial=trials.append)  # type: ignore[arg-type]
    assert [Path(w.filename).name for w in caught if "conversation" in str(w.message)] == [
        "old_path_agents.py"
    ]
    assert len(trials) == 2
    for trial in trials:
        assert trial.status == "scored" and trial.end_reason not in ("agent_error", "harness_error"), trial
        actions = [type(step.action).__name__ for step in trial.steps]
        assert actions[:2] == ["ToolCallAction", "ReplyAction"], actions


def test_the_old_agent_path_warns_on_the_console_once_per_run(
    tmp_path: Path, repo_env: dict[str, str]
) -> None:
    """Through the CLI, where Python hides a `DeprecationWarning` by default, with the agent in its
    worker (three trials: three imports of the agent, one line), and with `--in-process`."""
    task = castbench.domain.load_domain("retail").tasks("test")[0].id
    for extra, db in (([], "worker.db"), (["--in-process"], "in.db")):
        command = [
            str(Path(sys.executable).parent / "castbench"), "eval", "--domain", "retail", "--trials", "3",
            "--tasks", task, "--policy", "tests.core.old_path_agents:OldPathPolicy",
            "--db", f"sqlite:///{tmp_path / db}", *extra,
        ]  # fmt: skip
        done = subprocess.run(command, env=repo_env, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
        assert len(said) == 1, done.stderr
        assert re.search(OLD_PATH_WARNING, said[0]) and "old_path_agents.py:" in said[0], said


def test_the_api_page_names_every_public_name() -> None:
    """docs/api.md is where a reader looks a name up: each module's section lists each of its names."""
    page = (ROOT / "docs" / "api.md").read_text()
    for name in PUBLIC:
        section = page.split(f"## `{name}`\n", 1)[1].split("\n## ", 1)[0]
        listed = set(re.findall(r"`([A-Za-z_][\w]*)`", section))
        assert set(SURFACE[name]) <= listed, f"docs/api.md, {name}: {sorted(set(SURFACE[name]) - listed)}"


@pytest.mark.parametrize(
    ("name", "public", "home"),
    [
        ("castbench", "evaluate", "castbench._run.api"),
        ("castbench.agents", "ModelClient", "castbench._agents.models.client"),
        ("castbench.domain", "run_trial", "castbench._trial.rollout"),
    ],
)
def test_a_name_patched_where_it_is_defined_is_seen_through_the_public_module(
    name: str, public: str, home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public module keeps no copy of what it reads: a test that patches a name in its own module
    (as tests/cast patches `castbench._run.api.evaluate`) reaches code that imports it publicly, and
    the patch undone leaves the real object there again."""
    module, defining = facade(name), importlib.import_module(home)
    real = getattr(module, public)
    sentinel = object()
    monkeypatch.setattr(defining, public, sentinel)
    assert getattr(module, public) is sentinel
    monkeypatch.undo()
    assert getattr(module, public) is real


@pytest.mark.parametrize("name", ["ArchiveError", "ExportedRun", "RunFormat"])
def test_a_run_format_name_read_from_the_domain_api_warns_and_is_the_same_object(name: str) -> None:
    """Run formats moved to `castbench.formats`: the old place still gives them until 0.2.0."""
    import castbench.formats

    with pytest.warns(
        DeprecationWarning,
        match=rf"castbench\.domain\.{name} is deprecated and will be removed in castbench 0\.2\.0: "
        r"import from castbench\.formats instead",
    ) as caught:
        old = getattr(castbench.domain, name)
    assert old is getattr(castbench.formats, name)
    assert caught[0].filename == __file__  # it points at the code that read the old name
    assert name not in castbench.domain.__all__


@pytest.mark.parametrize("name", ["ServeError", "ServeOptions", "vllm_command", "wait_until_ready"])
def test_a_vllm_helper_read_from_the_agents_api_warns_and_is_the_plugins(name: str) -> None:
    """vLLM serving moved to the CAST plugin: the old place still gives it until 0.2.0."""
    import castbench_cast.vllm

    with pytest.warns(
        DeprecationWarning,
        match=rf"castbench\.agents\.{name} is deprecated and will be removed in castbench 0\.2\.0: "
        r"import from castbench_cast\.vllm instead",
    ):
        old = getattr(castbench.agents, name)
    assert old is getattr(castbench_cast.vllm, name)
    assert name not in castbench.agents.__all__


PLUGIN_LOADING = {
    "castbench._agents.spec": "an agent named by its import path (`--policy mypkg.agents:MyPolicy`)",
    "castbench._domain.pack_options": "the modules a pack's `castbench.domains` entry points name",
    "castbench._legacy": "castbench 0.1.0's module paths, each the module at its new place (until 0.2.0)",
    "castbench._public": "a public name's import statement, run when the name is first read",
    "castbench._agents.transports.serve": "castbench.agents, the public module above the core that every "
    "agent imports, loaded once by the worker template for the trial processes it forks",
}


def test_no_module_of_the_core_imports_by_name_outside_plugin_loading() -> None:
    """`importlib.import_module` hides an edge from the import contract: the core calls it only
    where what it imports is named at run time (an agent, a pack), listed above with why."""
    calling = set()
    for path in sorted((ROOT / "harness" / "castbench").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "harness").with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__"):
                    calling.add(module)
    assert calling == set(PLUGIN_LOADING), sorted(calling ^ set(PLUGIN_LOADING))
