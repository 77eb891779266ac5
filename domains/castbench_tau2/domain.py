"""A τ² domain as a castbench `Domain`: state, policy, tools and tasks from the installed package
(or another tau2-bench data directory, `castbench_tau2.source`).

Differences from castbench's generated domains, each for parity with τ²:

- the expected state is τ²'s gold environment: the gold actions replayed in order from the
  pristine state, an action that raises passing silently (τ² logs it and goes on);
- the policy a model reads is τ²'s `policy.md` verbatim, nothing added;
- a `no_change` task is earned (castbench grading; `--grading tau` keeps τ²'s rule) as castbench's
  τ packs earn theirs (`castbench._authoring.claims.published_earned_spec`): the gold's successful
  look-ups, any identity look-up standing for another, no amount or id of the records they lead
  to but do not read (false claims), and an asked-for amount given as the answer, not amid the
  amounts of its kind in the other records read (rivals);
- tasks τ²'s reward cannot be reproduced on, or whose gold is broken, are left out of their
  split and form `<split>-broken`, each with its reason (`Tau2Domain.findings`): a gold write τ²'s
  own tool answers with an error (unless a later write of the same tool succeeds: a scripted
  fallback), a gold that writes but changes nothing, and a reward basis castbench does not grade
  on these packs (`ENV_ASSERTION`, `ACTION`; `NL_ASSERTION`, which needs a judge model, is
  reported "not judged", never passed).

The version is `N-0`: N is the data version (the package release, or a digest of another data
directory) followed by this adapter's generation, so runs on different data never compare.
"""

from __future__ import annotations

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
    published_earned_spec,
    state_diff,
)
from castbench_tau2.source import PACKAGE, Tau2Source, load_source
from castbench_tau2.tasks import convert_task, gold_calls
from castbench_tau2.toolkit import tau2_toolkit

__all__ = ["ADAPTER_GENERATION", "BROKEN_SUFFIX", "GRADED_BASES", "Tau2Domain", "tau2_domain"]

ADAPTER_GENERATION = 2
"""Goes up when a change of this adapter changes scores (2: `no_change` tasks are earned)."""
BROKEN_SUFFIX = "-broken"
_NO_FACT = frozenset({"think", "calculate", "transfer_to_human_agents"})
"""τ² tools that establish no fact of the domain (a transfer ends the conversation)."""
GRADED_BASES = frozenset({"DB", "COMMUNICATE"})
"""τ²'s reward bases castbench reproduces on these packs."""
TAU2_LIMITS = {"max_steps": 100, "max_messages": 200, "max_tool_errors": 10}
"""τ²'s own limits, a run's default on these packs: `tau2 run`'s `--max-steps` 200 (every message
counts, the user's opening included: 100 agent actions at most) and `--max-errors` 10 (tool
answers with an error; τ² ends the simulation as `max_steps` / `too_many_errors` and grades it 0).
`max_steps` here (agent actions) is never the one reached first."""


@dataclass(eq=False)
class Tau2Domain(Domain):
    source: Tau2Source | None = field(default=None, repr=False)

    @property
    def _source(self) -> Tau2Source:
        assert self.source is not None
        return self.source

    @property
    def data_version(self) -> str:
        return self._source.data_version

    @property
    def data_origin(self) -> str | None:
        """The data directory and a digest of its files when it is not the package's own."""
        return None if self.data_version.startswith(PACKAGE) else self.data_version

    @cached_property
    def policy(self) -> str:
        return self._source.policy

    @cached_property
    def pristine(self) -> Snapshot:
        db = self._source.load_db()
        return {
            name: {key: row.model_dump(mode="json") for key, row in getattr(db, name).items()}
            for name in type(db).model_fields
        }

    @property
    def splits(self) -> list[str]:
        return sorted(self._source.splits)

    def replay(self, task: Task, db: Database | None = None) -> Database:
        """τ²'s gold environment: every gold action in order, whatever it answers."""
        db = db if db is not None else self.fresh_database()
        for call in task.actions:
            self.toolkit.call(db, call.name, call.arguments)
        return db

    def findings(self, task: Task, raw: Any) -> list[str]:
        """Why τ²'s reward cannot be reproduced on the task, one line each (empty: it can)."""
        found: list[str] = []
        criteria = raw.evaluation_criteria
        bases = [str(getattr(basis, "value", basis)) for basis in (criteria.reward_basis if criteria else [])]
        for basis in bases:
            if basis == "NL_ASSERTION":
                found.append("not judged: its reward needs NL_ASSERTION, which needs a judge model")
            elif basis not in GRADED_BASES:
                found.append(f"not graded: castbench's τ² adapter does not grade the reward basis {basis}")
        db = self.fresh_database()
        failed: list[tuple[int, ToolCall, str]] = []
        succeeded: set[str] = set()
        for position, call in enumerate(task.actions):
            observation = self.toolkit.call(db, call.name, call.arguments)
            if not self.toolkit.is_write(call.name) if call.name in self.toolkit else False:
                continue
            if observation.error:
                failed.append((position, call, observation.content))
            else:
                succeeded.add(call.name)
        for position, call, content in failed:
            if call.name not in succeeded:
                found.append(f"fails in τ²: action {position} {call.name} answers {content!r}")
        writes = any(call.name in self.toolkit and self.toolkit.is_write(call.name) for call in task.actions)
        if writes and not state_diff(db, self.fresh_database()):
            found.append("changes nothing: replaying its gold writes changes nothing")
        return found

    def earned_spec(self, task: Task) -> EarnedSpec | None:
        """How a `no_change` task is earned under castbench grading: see the module docstring."""
        return published_earned_spec(self.toolkit, self.fresh_database(), task, _NO_FACT)

    def _identity_facts(self, raw: Any) -> list[Fact]:
        """What the task's customer says when asked who they are (`castbench._domain.identity`):
        the customer is whom the gold's first successful identity look-up finds, else the first
        `user_id` the gold names, else the owner of the first record it names (`_owner`)."""
        actions = gold_calls(raw)
        run = lambda call: self.toolkit.call(self.fresh_database(), call.name, call.arguments)  # noqa: E731
        user_id = next(
            (
                observation.content
                for call in actions
                if call.name.startswith(IDENTITY_PREFIX) and not (observation := run(call)).error
            ),
            None,
        ) or next((str(call.arguments["user_id"]) for call in actions if "user_id" in call.arguments), None)
        user_id = user_id or self._owner(actions)
        if user_id is None:
            return []
        finders = [
            (tool.name, tuple(tool.schema["function"]["parameters"].get("required", [])))
            for tool in self.toolkit
            if tool.name.startswith(IDENTITY_PREFIX)
        ]
        if not finders:  # airline: the customer gives their user id, whatever the gold reads
            return identity_facts(ToolCall(name="get_user_details", arguments={"user_id": user_id}))
        record = self.pristine.get("users", {}).get(user_id)
        instruction = str(raw.user_scenario)
        return identity_facts(identity_call(user_id, instruction, actions, finders, record, run))

    def _owner(self, actions: list[ToolCall]) -> str | None:
        """The customer who owns a record the gold names (an order's `user_id`), for golds that
        look nobody up and name no user (retail 100-113 start with an order id)."""
        for call in actions:
            for value in call.arguments.values():
                for rows in self.pristine.values():
                    row = rows.get(value) if isinstance(value, str) else None
                    if isinstance(row, dict) and isinstance(row.get("user_id"), str):
                        return str(row["user_id"])
        return None

    @cached_property
    def _converted(self) -> tuple[dict[str, Task], dict[str, list[str]]]:
        tasks: dict[str, Task] = {}
        broken: dict[str, list[str]] = {}
        for raw in self._source.raw_tasks:
            task = convert_task(raw, self.name, "base", self.toolkit, self._identity_facts(raw))
            task = task.model_copy(update={"earned": self.earned_spec(task)})
            tasks[raw.id] = task
            found = self.findings(task, raw)
            if found:
                broken[task.id] = found
        return tasks, broken

    @property
    def broken(self) -> dict[str, list[str]]:
        """Task id -> why it is left out of scores, over every split."""
        return self._converted[1]

    def tasks(self, split: str | None = None) -> list[Task]:
        if split is None:
            return (
                self.tasks("base")
                if "base" in self._source.splits
                else [task for name in self.splits for task in self.tasks(name)]
            )
        base, broken = split.removesuffix(BROKEN_SUFFIX), split.endswith(BROKEN_SUFFIX)
        if base not in self._source.splits:
            raise TaskFileError(
                f"domain {self.name} has no split '{split}' (splits: {', '.join(self.splits)}, "
                f"and <split>{BROKEN_SUFFIX} for the broken tasks)"
            )
        by_id = self._converted[0]
        chosen = [by_id[raw_id] for raw_id in self._source.splits[base] if raw_id in by_id]
        return [
            task.model_copy(update={"split": split}) for task in chosen if (task.id in self.broken) == broken
        ]

    def task(self, task_id: str) -> Task:
        raw_id = task_id.removeprefix(f"{self.name}-")
        if not task_id.startswith(f"{self.name}-") or raw_id not in self._converted[0]:
            raise KeyError(f"domain {self.name} has no task '{task_id}'")
        return self._converted[0][raw_id]

    def raw_task(self, task_id: str) -> Any:
        """τ²'s own `Task` object for a castbench task id (for τ²'s evaluator and exports)."""
        raw_id = task_id.removeprefix(f"{self.name}-")
        return next(raw for raw in self._source.raw_tasks if raw.id == raw_id)

    def excluded_tasks(self, split: str) -> dict[str, list[str]]:
        return {task.id: self.broken[task.id] for task in self.tasks(split + BROKEN_SUFFIX)}


def tau2_domain(name: str) -> Tau2Domain:
    """`tau2-<name>` built from the installed package and the data directory in force."""
    source = load_source(name, ADAPTER_GENERATION)
    toolkit = tau2_toolkit(source.toolkit_class, source.db_class)
    domain = Tau2Domain(
        name=f"tau2-{name}",
        version=f"{source.comparability}-0",
        root=Path(__file__).parent,
        records=[],
        toolkit=toolkit,
        now=datetime(2024, 5, 15, 20, 0, tzinfo=UTC),  # τ² airline's policy: 2024-05-15 15:00 EST
        description=f"τ² {name} ({source.data_version}): its data, policy, tools and tasks",
        verbatim_policy=True,
        requires_earned=False,
        default_limits=dict(TAU2_LIMITS),
        source=source,
    )
    domain.rules = DerivedRules(toolkit, domain.pristine)
    return domain
