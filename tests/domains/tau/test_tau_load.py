"""The packs come from the installed package at run time: its splits, tasks, wiki, schemas and
version, and nothing of τ's data copied into castbench."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from castbench._domain.domain import Domain
from castbench.domain import available_domains, load_domain, resolve_domains
from castbench_tau.domain import BROKEN_SUFFIX, TauDomain, tau_version
from castbench_tau.source import import_tau

PACKAGE_DIR = Path(__file__).resolve().parents[3] / "domains" / "castbench_tau"


def test_registered_under_the_entry_point_but_not_in_all() -> None:
    names = available_domains()
    assert {"tau-retail", "tau-airline", "tau-telecom", "tau-telehealth"} <= set(names)
    assert not [d.name for d in resolve_domains("all") if d.name.startswith("tau-")]
    assert [d.name for d in resolve_domains("tau-telecom,retail")] == ["tau-telecom", "retail"]


def test_splits_and_tasks_are_the_packages(pack: TauDomain) -> None:
    source = pack.source
    assert source is not None
    assert pack.splits == sorted(source.raw_tasks)
    for split, raw in source.raw_tasks.items():
        kept, broken = pack.tasks(split), pack.tasks(split + BROKEN_SUFFIX)
        assert len(kept) + len(broken) == len(raw)
        for task in kept + broken:
            assert pack.locate(task.id)[0] == split and pack.task(task.id) == task
            original = raw[pack.locate(task.id)[1]]
            assert task.scenario.instructions == original.instruction.strip()
            assert [(c.name, c.arguments) for c in task.actions] == [
                (a.name, a.kwargs) for a in original.actions
            ]
            assert task.required_outputs == original.outputs


def test_counts_of_the_published_sets(packs: dict[str, TauDomain]) -> None:
    def total(name: str, split: str) -> int:
        domain = packs[name]
        return len(domain.tasks(split)) + len(domain.tasks(split + BROKEN_SUFFIX))

    assert (total("tau-retail", "test"), total("tau-retail", "train"), total("tau-retail", "dev")) == (
        120,
        500,
        20,
    )
    assert (total("tau-retail", "original"), total("tau-airline", "original")) == (115, 50)
    assert total("tau-airline", "test") == 60 and total("tau-telehealth", "test") == 12


def test_what_a_model_sees_is_what_tau_shows(pack: TauDomain) -> None:
    source = pack.source
    assert source is not None
    assert pack.policy == source.wiki and pack.verbatim_policy
    assert pack.toolkit.schemas == [tool.get_info() for tool in source.tools]


def test_version_records_the_package_release(pack: TauDomain) -> None:
    assert tau_version("0.1.1") == "10103-0"
    assert pack.version == tau_version(version("tau-trait"))
    assert tau_version("0.2.0") != tau_version("0.1.1")  # another release: not comparable
    assert version("tau-trait") in pack.description


def test_nothing_of_tau_is_copied_into_castbench() -> None:
    files = {
        path.suffix for path in PACKAGE_DIR.rglob("*") if path.is_file() and "__pycache__" not in path.parts
    }
    assert files <= {".py", ".md"}
    tau_root = Path(import_tau("tau_trait").__file__).parent
    tau_texts = {p.read_text() for p in tau_root.rglob("*.md")} | {
        p.read_text() for p in tau_root.rglob("tools/*.py")
    }
    ours = [p.read_text() for p in PACKAGE_DIR.rglob("*.py")]
    assert not any(text in mine for text in tau_texts for mine in ours if len(text) > 200)


def test_unknown_split_is_a_clear_error() -> None:
    domain = load_domain("tau-telecom")
    with pytest.raises(ValueError, match="has no split 'nope'.*dev, test, train"):
        domain.tasks("nope")


def test_a_domain_of_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from castbench.domain import registry

    class Missing:
        name, value, extras = "tau-ghost", "castbench_tau_ghost:retail [tau]", ["tau"]

        def load(self) -> Domain:
            raise ImportError("No module named 'castbench_tau_ghost'")

    monkeypatch.setattr(registry, "entry_points", lambda group: [Missing()])
    registry._load_entry_point.cache_clear()
    with pytest.raises(KeyError, match=r"pip install 'castbench\[tau\]'"):
        registry.load_domain("tau-ghost")
    assert registry.available_domains(include_extras=False) == []
    registry._load_entry_point.cache_clear()


_LOAD = """
import json, sys
from castbench.domain import load_domain
domain = load_domain("tau-airline")
splits = ("test", "test-broken")
tasks = {split: [task.model_dump(mode="json") for task in domain.tasks(split)] for split in splits}
print(json.dumps({"litellm": "litellm" in sys.modules, "tasks": tasks, "broken": domain.broken}))
"""


def test_a_pack_derives_its_tasks_once_and_later_starts_without_tau_s_model_imports(tmp_path: Path) -> None:
    """#59: the converted tasks and the broken ones are kept per release and source; a later
    start reads them back (the same tasks) without importing τ's package whole (litellm)."""
    env = {**os.environ, "CASTBENCH_STATE_DIR": str(tmp_path / "state")}
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True,
                                  check=True, timeout=600).stdout)
        for _ in range(2)
    ]  # fmt: skip
    assert runs[0]["litellm"] and not runs[1]["litellm"]
    assert runs[0]["tasks"] == runs[1]["tasks"] and runs[0]["broken"] == runs[1]["broken"]
    assert runs[1]["tasks"]["test-broken"]  # the classification came back too
    assert len(list((tmp_path / "state" / "kept").iterdir())) == 2  # tasks, terminate tools


def test_kept_is_keyed_by_versions_and_recomputes_what_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from castbench.domain import kept

    monkeypatch.setenv("CASTBENCH_STATE_DIR", str(tmp_path))
    calls: list[str] = []

    def compute(value: str) -> Callable[[], str]:
        return lambda: calls.append(value) or value  # type: ignore[func-returns-value]

    assert kept("x", ["1"], compute("a")) == "a"
    assert kept("x", ["1"], compute("b")) == "a"  # kept
    assert kept("x", ["2"], compute("c")) == "c"  # another data version: another key
    assert kept("x", ["1"], compute("d"), code=[tmp_path]) == "d"  # other code: another key
    (stored,) = [p for p in (tmp_path / "kept").iterdir() if p.read_text().endswith("\na")]
    stored.write_text(stored.read_text()[:-1] + "z")  # edited: computed again and rewritten
    assert kept("x", ["1"], compute("e")) == "e" and stored.read_text().endswith("\ne")
    stored.write_bytes(b"\xff\xfe")  # not text at all
    assert kept("x", ["1"], compute("f")) == "f"
    assert calls == ["a", "c", "d", "e", "f"]
