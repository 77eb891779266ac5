"""A τ environment as a castbench `Domain`: state, wiki, tools and tasks from the installed package.

Differences from castbench's generated domains, each for parity with τ:

- the expected state is τ's: the gold actions replayed in order from the pristine state, errors
  and unknown tools passing silently, transfer tools skipped (τ's `calculate_reward`);
- the policy a model reads is τ's wiki verbatim, and nothing is added to it;
- a `no_change` task is earned (castbench grading; `--grading tau` keeps τ's rule) by making the
  gold's successful look-ups, any identity look-up standing for another, without stating what
  the records those look-ups lead to but do not read say (their amounts and ids: false claims,
  see `castbench._authoring.claims`), and an amount τ asks for not amid their amounts (see
  `earned_spec`);
- tasks whose gold is broken (a tool τ does not have, a write τ's tool answers with an error, a
  replay that changes nothing although the gold writes, a write outside the schema that τ accepts
  and stores: see `castbench_tau.gold` for the classes and why each is excluded) are left out of
  their split and form the split `<split>-broken`, so they are excluded from scores by default
  and can be run on their own.

The version is `N-X` with N = the package's release in digits plus this adapter's generation
(tau-trait 0.1.1, adapter 1 -> `10101`), so runs on different releases never compare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from castbench.domain import (
    IDENTITY_PREFIX,
    Database,
    DerivedRules,
    Domain,
    EarnedSpec,
    Fact,
    Snapshot,
    Task,
    TaskFileError,
    ToolCall,
    identity_call,
    identity_facts,
    kept,
    published_earned_spec,
)
from castbench_tau.gold import GoldFinding, gold_findings
from castbench_tau.source import PACKAGE, TauSource, load_source
from castbench_tau.tasks import convert_task
from castbench_tau.toolkit import tau_toolkit

__all__ = ["ADAPTER_GENERATION", "BROKEN_SUFFIX", "TauDomain", "tau_domain", "tau_version"]

ADAPTER_GENERATION = 3
"""Goes up when a change of this adapter changes scores."""
BROKEN_SUFFIX = "-broken"
_NO_FACT = frozenset({"think", "calculate"})
"""τ tools that read nothing from the domain."""


def tau_version(release: str) -> str:
    parts = [int(part) for part in (release.split(".") + ["0", "0"])[:3]]
    return f"{parts[0]}{parts[1]:02d}{parts[2]:02d}{ADAPTER_GENERATION:02d}".lstrip("0") + "-0"


@dataclass(eq=False)
class TauDomain(Domain):
    source: TauSource | None = field(default=None, repr=False)

    @property
    def _source(self) -> TauSource:
        assert self.source is not None
        return self.source

    @cached_property
    def policy(self) -> str:
        return self._source.wiki

    @cached_property
    def pristine(self) -> Snapshot:
        return self._source.load_data()

    @property
    def splits(self) -> list[str]:
        return self._source.splits

    def replay(self, task: Task, db: Database | None = None) -> Database:
        """τ's gold replay: every action in order, whatever it answers; transfers skipped."""
        db = db if db is not None else self.fresh_database()
        for call in task.actions:
            if call.name not in self._source.terminate_tools:
                self.toolkit.call(db, call.name, call.arguments)
        return db

    def gold_findings(self, task: Task) -> list[GoldFinding]:
        """Why the task's gold cannot be used, by class (empty: it can): see `castbench_tau.gold`."""
        return gold_findings(self, task, self._source.terminate_tools)

    def earned_spec(self, task: Task) -> EarnedSpec | None:
        """How a `no_change` task is earned (`castbench._authoring.claims.published_earned_spec`):
        the gold's successful look-ups (not `think`, `calculate` or a transfer), no value of the
        records they lead to but do not read, the asked-for amount given as the answer."""
        return published_earned_spec(
            self.toolkit, self.fresh_database(), task, _NO_FACT | frozenset(self._source.terminate_tools)
        )

    def _identity_facts(self, raw: Any) -> list[Fact]:
        """What the task's customer says when asked who they are (`castbench._domain.identity`)."""
        finders = [
            (tool.name, tuple(tool.schema["function"]["parameters"].get("required", [])))
            for tool in self.toolkit
            if tool.name.startswith(IDENTITY_PREFIX)
        ]
        record = next((rows[raw.user_id] for rows in self.pristine.values() if raw.user_id in rows), None)
        actions = [ToolCall(name=action.name, arguments=dict(action.kwargs)) for action in raw.actions]
        call = identity_call(
            raw.user_id,
            raw.instruction,
            actions,
            finders,
            record,
            lambda call: self.toolkit.call(self.fresh_database(), call.name, call.arguments),
        )
        return identity_facts(call)

    def _converted(self) -> dict[str, list[Task]]:
        converted = {
            split: [
                convert_task(raw, self.name, split, index, self.toolkit, self._identity_facts(raw))
                for index, raw in enumerate(tasks)
            ]
            for split, tasks in self._source.raw_tasks.items()
        }
        return {
            split: [task.model_copy(update={"earned": self.earned_spec(task)}) for task in tasks]
            for split, tasks in converted.items()
        }

    def _derive(self) -> str:
        """Every split's converted tasks and the broken ones' findings, as JSON (what `_derived`
        keeps): the conversion replays each gold and classifies it, seconds of CPU per pack."""
        self._all_tasks = self._converted()
        found: dict[str, list[str]] = {}
        for tasks in self._all_tasks.values():
            for task in tasks:
                findings = self.gold_findings(task)
                if findings:
                    found[task.id] = [str(finding) for finding in findings]
        tasks_json = {
            split: [task.model_dump(mode="json") for task in tasks]
            for split, tasks in self._all_tasks.items()
        }
        return json.dumps({"tasks": tasks_json, "broken": found})

    @cached_property
    def _derived(self) -> tuple[dict[str, list[Task]], dict[str, list[str]]]:
        """The converted tasks and the broken ones, derived once per release of τ's package and
        source of castbench and this pack, then read back (`castbench.domain.kept`)."""
        text = kept(self.name, [PACKAGE, self._source.version], self._derive, code=[Path(__file__).parent])
        derived = json.loads(text)
        if "_all_tasks" not in self.__dict__:
            self._all_tasks = {
                split: [Task.model_validate(task) for task in tasks]
                for split, tasks in derived["tasks"].items()
            }
        return self._all_tasks, derived["broken"]

    @property
    def broken(self) -> dict[str, list[str]]:
        """Task id -> why its gold is broken, over every split: one `<class>: <what happened>`
        line per finding (`castbench_tau.gold`)."""
        return self._derived[1]

    def tasks(self, split: str | None = None) -> list[Task]:
        if split is None:
            return [task for name in self.splits for task in self.tasks(name)]
        base, broken = split.removesuffix(BROKEN_SUFFIX), split.endswith(BROKEN_SUFFIX)
        if base not in self._derived[0]:
            raise TaskFileError(
                f"domain {self.name} has no split '{split}' (splits: {', '.join(self.splits)}, "
                f"and <split>{BROKEN_SUFFIX} for the broken tasks)"
            )
        return [task for task in self._derived[0][base] if (task.id in self.broken) == broken]

    def locate(self, task_id: str) -> tuple[str, int]:
        """`tau-retail-test-7` -> (`test`, 7): the split and the index in τ's list."""
        split, _, index = task_id.removeprefix(f"{self.name}-").rpartition("-")
        if split not in self._derived[0] or not index.isdigit() or int(index) >= len(self._derived[0][split]):
            raise KeyError(f"domain {self.name} has no task '{task_id}'")
        return split, int(index)

    def task(self, task_id: str) -> Task:
        split, index = self.locate(task_id)
        return self._derived[0][split][index]

    def excluded_tasks(self, split: str) -> dict[str, list[str]]:
        return {task.id: self.broken[task.id] for task in self.tasks(split + BROKEN_SUFFIX)}


def tau_domain(name: str) -> TauDomain:
    """`tau-<name>` built from the installed package."""
    source = load_source(name)
    toolkit = tau_toolkit(source.tools, source.terminate_tools)
    domain = TauDomain(
        name=f"tau-{name}",
        version=tau_version(source.version),
        root=Path(__file__).parent,
        records=[],
        toolkit=toolkit,
        now=datetime(2024, 5, 15, 20, 0, tzinfo=UTC),  # τ airline's wiki: 2024-05-15 15:00 EST
        description=f"τ {name} from tau-trait {source.version}: its data, wiki, tools and tasks",
        verbatim_policy=True,
        requires_earned=False,
        source=source,
    )
    domain.rules = DerivedRules(toolkit, domain.pristine)
    return domain
