"""τ²'s telecom with dual control, as the castbench pack `tau2-telecom`.

τ²'s telecom differs from retail and airline in four ways, each kept here as τ² has it:

- **two databases**: the agent's (`TelecomDB`: customers, lines, bills, plans) and the user's
  own phone (`TelecomUserDB`), which the *user* changes with tools of their own (toggling
  airplane mode, reseating the SIM). A trial's castbench `Database` holds both: the agent's
  lists as tables keyed by id (`lines`/`L1002`), the phone as the table `phone` (rows `device`
  and `surroundings`), each row τ²'s model dumped as JSON, so both are compared and graded;
- **they are synchronised** after every tool call that succeeds, by τ²'s own
  `TelecomEnvironment.sync_tools` (the line's status and roaming reach the phone, a payment made
  on the phone marks the bill paid), as τ²'s `Environment.get_response` does;
- **a per-task initial state**: each task first breaks the phone (`initial_state`:
  `initialization_data`, then `initialization_actions`), run by τ²'s own `Environment.set_state`
  (`Tau2TelecomDomain.initial_database`);
- **its reward**: the tasks are graded on `ENV_ASSERTION` (τ²'s assertion functions on the final
  state, after τ²'s final synchronisation) and some on `ACTION` (every gold action, user's or
  agent's, found among the trajectory's calls by τ²'s own `Action.compare_with_tool_call`); `DB`
  (both databases equal to the gold replay: the gold actions run in order from the initial state
  with no synchronisation between them, as τ²'s gold environment runs them) and `COMMUNICATE`
  are graded where a task's `reward_basis` names them (`Tau2TelecomDomain.task_checks`).

Every state is rebuilt into τ²'s own models and its own environment class per call (the two
databases are about 10 KB), so the tools, the synchronisation and the assertions are τ²'s code,
run unchanged. The scripted user performs the gold's user-side actions when the agent tells it
to (`telecom_device_steps`); it knows its name and phone number, from the task's own set-up.
(Not `telecom.py`: the package's attribute `telecom` is the pack itself.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal

from castbench.agents import AgentTurn, Event, ToolCallAction, UserTurn
from castbench.domain import (
    Database,
    DeviceStep,
    Fact,
    Observation,
    Snapshot,
    Task,
    TaskChecks,
    ToolCall,
    Toolkit,
    UserScenario,
    first_person,
)
from castbench_tau2.domain import BROKEN_SUFFIX, TAU2_LIMITS, Tau2Domain
from castbench_tau2.source import DATA_ENV, PACKAGE, Tau2Source, Tau2Unavailable, data_root, import_tau2
from castbench_tau2.source import package_version as _package_version
from castbench_tau2.tasks import gold_calls
from castbench_tau2.toolkit import Tau2Tool, tau2_tools

__all__ = [
    "TELECOM_GENERATION",
    "Tau2TelecomDomain",
    "TelecomToolkit",
    "convert_telecom_task",
    "environment_of",
    "store",
    "tau2_telecom_domain",
    "telecom_device_steps",
    "telecom_source",
    "trajectory_calls",
]

TELECOM_GENERATION = 1
"""Goes up when a change of this adapter changes telecom scores."""
TELECOM_BASES = frozenset({"DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE"})
"""τ²'s reward bases this pack grades (`NL_ASSERTION` needs a judge model: "not judged")."""
_FILES = (
    "db.toml",
    "user_db.toml",
    "tasks.json",
    "split_tasks.json",
    "main_policy.md",
    "tech_support_manual.md",
)
PHONE = "phone"
"""The table holding the user's database (`TelecomUserDB`): one row per part."""
_PHONE_PARTS = ("device", "surroundings")
Requestor = Literal["assistant", "user"]


def _telecom() -> Any:
    return import_tau2("tau2.domains.telecom.environment")


@cache
def _row_keys() -> dict[str, str]:
    """Agent table -> the field that keys its rows (each list of `TelecomDB` is keyed by its
    model's first field: `plan_id`, `customer_id`, `line_id`, `bill_id`, `device_id`); worked out
    once."""
    model = _telecom().TelecomDB
    return {
        name: next(iter(info.annotation.__args__[0].model_fields))
        for name, info in model.model_fields.items()
    }


def environment_of(db: Database) -> Any:
    """τ²'s `TelecomEnvironment` over the state `db` holds, built without its constructor's
    synchronisation (τ²'s gold replay runs none between actions; a trial's calls sync after)."""
    telecom = _telecom()
    agent = {table: [row for _, row in db.table_rows(table)] for table in _row_keys()}
    user = {part: db.row(PHONE, part) for part in _PHONE_PARTS}
    environment = telecom.TelecomEnvironment.__new__(telecom.TelecomEnvironment)
    environment.domain_name, environment.policy, environment.solo_mode = "telecom", "", False
    environment.tools = telecom.TelecomTools(telecom.TelecomDB.model_validate(agent))
    environment.user_tools = telecom.TelecomUserTools(telecom.TelecomUserDB.model_validate(user))
    return environment


def _dumps(environment: Any) -> Snapshot:
    """Both databases as castbench tables: the agent's lists keyed by id, the phone's parts."""
    agent = environment.tools.db.model_dump(mode="json")
    tables: dict[str, dict[str, Any]] = {
        table: {row[key]: row for row in agent[table]} for table, key in _row_keys().items()
    }
    user = environment.user_tools.db.model_dump(mode="json")
    tables[PHONE] = {part: user[part] for part in _PHONE_PARTS}
    return tables


def store(environment: Any, db: Database) -> None:
    """Write back the rows τ²'s environment changed (and removals)."""
    store_rows(_dumps(environment), db)


def store_rows(tables: Snapshot, db: Database) -> None:
    with db.transaction():
        for table, rows in tables.items():
            for key, row in rows.items():
                if row != db.row(table, key):
                    db.set_row(table, key, row)
            for key in [key for key, _ in db.table_rows(table) if key not in rows]:
                db.set_row(table, key, None)


class TelecomToolkit(Toolkit):
    """One side's tools (the agent's, or the user's on their phone), each call run as τ²'s
    `Environment.get_response` runs it: the tool, then `sync_tools` when it succeeded; the answer
    `to_json_str` of the result or `Error: <exception>`."""

    def __init__(self, tools: list[Tau2Tool], requestor: Requestor) -> None:
        super().__init__(tools)
        self.requestor = requestor
        self._to_json = import_tau2("tau2.environment.environment").Environment.to_json_str

    def call(self, db: Database, name: str, arguments: Mapping[str, Any] | str) -> Observation:
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return Observation(f"Error: arguments for {name} are not valid JSON ({exc})", error=True)
        if not isinstance(arguments, Mapping):
            return Observation(f"Error: arguments for {name} must be a JSON object", error=True)
        environment = environment_of(db)
        error = False
        try:
            result = environment.make_tool_call(name, requestor=self.requestor, **arguments)
            environment.sync_tools()
        except Exception as exc:  # τ²'s environment answers any exception this way
            result, error = f"Error: {exc}", True
        finally:
            store(environment, db)
        ends = name in self and self[name].ends_conversation
        return Observation(self._to_json(result), error=error, ends_conversation=ends)


def _policy(folder: Path) -> str:
    """τ²'s agent policy for telecom (`get_environment`, the `manual` tech-support policy)."""
    main = (folder / "main_policy.md").read_text()
    manual = (folder / "tech_support_manual.md").read_text()
    return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"


@cache
def telecom_source(generation: int) -> Tau2Source:
    """Telecom's data from the data directory in force (`castbench_tau2.source.data_root`)."""
    import hashlib
    import os

    release = _package_version()
    root = data_root()
    folder = root / "domains" / "telecom"
    missing = [name for name in _FILES if not (folder / name).is_file()]
    if missing:
        raise Tau2Unavailable(
            f"error: τ² data directory {root}: domains/telecom/ lacks {', '.join(missing)} "
            f"(expected tau2-bench's data/tau2 layout; set by {DATA_ENV} or --pack-option tau2.data)"
        )
    if os.environ.get(DATA_ENV) is None:
        digits = "".join(f"{int(part):02d}" for part in (release.split(".") + ["0"])[:2])
        data_version, number = f"{PACKAGE} {release}", int(f"{digits}{generation:02d}")
    else:
        digest = hashlib.sha256()
        for name in _FILES:
            digest.update(name.encode() + (folder / name).read_bytes())
        hexdigest = digest.hexdigest()
        data_version = f"{root} sha256:{hexdigest[:12]}"
        number = int(f"9{int(hexdigest[:8], 16)}{generation:02d}")
    telecom = _telecom()
    task_model = import_tau2("tau2.data_model.tasks").Task
    raw = json.loads((folder / "tasks.json").read_text())
    splits = json.loads((folder / "split_tasks.json").read_text())
    return Tau2Source(
        domain="telecom",
        root=folder,
        data_version=data_version,
        comparability=number,
        policy=_policy(folder),
        db_class=telecom.TelecomDB,
        toolkit_class=telecom.TelecomTools,
        raw_tasks=tuple(task_model.model_validate(task) for task in raw),
        splits={name: tuple(ids) for name, ids in splits.items()},
    )


def telecom_device_steps(actions: Sequence[ToolCall]) -> list[DeviceStep]:
    """What the scripted user does on their phone when told to: each distinct user-side gold
    action, triggered by its tool's name in backquotes and its arguments (`name=value`), which
    no other step's instruction holds (`toggle_data` is not `toggle_data_saver_mode`)."""
    steps: list[DeviceStep] = []
    for call in actions:
        if call.actor != "user" or any(step.call == call for step in steps):
            continue
        arguments = [f"{key}={value}" for key, value in call.arguments.items()]
        instruction = f"use `{call.name}`" + (f" with {', '.join(arguments)}" if arguments else "") + "."
        keywords = [f"`{call.name}`", *(argument.lower() for argument in arguments)]
        steps.append(DeviceStep(instruction=instruction, keywords=keywords, call=call))
    return steps


def _who(raw: Any) -> tuple[str | None, str | None]:
    """The customer's name and phone number, as the task's set-up gives them to the phone."""
    actions = (raw.initial_state.initialization_actions if raw.initial_state else None) or []
    for action in actions:
        if action.func_name == "set_user_info":
            return action.arguments.get("name"), action.arguments.get("phone_number")
    return None, None


def _facts(raw: Any) -> list[Fact]:
    name, phone = _who(raw)
    facts = []
    if phone:
        facts.append(
            Fact(
                name="phone_number",
                value=phone,
                keywords=["phone number"],
                statement=f"My phone number is {phone}.",
            )
        )
    if name:
        facts.append(
            Fact(name="name", value=name, keywords=["your name", "full name"], statement=f"I am {name}.")
        )
    return facts


def convert_telecom_task(raw: Any, domain: str, toolkits: Mapping[str, Toolkit]) -> Task:
    actions = gold_calls(raw)
    writes = sorted(
        {
            call.name
            for call in actions
            if call.name in toolkits[call.actor] and toolkits[call.actor].is_write(call.name)
        }
    )
    scenario = raw.user_scenario
    reason = getattr(scenario.instructions, "reason_for_call", None) or str(scenario.instructions)
    criteria = raw.evaluation_criteria
    return Task(
        id=f"{domain}-{raw.id}",
        split="base",
        family="+".join(writes) if writes else "read_only",
        outcome="change" if writes else "no_change",
        scenario=UserScenario(
            request=first_person(reason),
            facts=_facts(raw),
            device_steps=telecom_device_steps(actions),
            instructions=str(scenario),
        ),
        actions=actions,
        required_outputs=list((criteria.communicate_info if criteria is not None else None) or []),
        ordered=True,
    )


def _bases(raw: Any) -> list[str]:
    criteria = raw.evaluation_criteria
    return [str(getattr(basis, "value", basis)) for basis in (criteria.reward_basis if criteria else [])]


def trajectory_calls(conversation: Sequence[Event]) -> list[tuple[Requestor, str, dict[str, Any]]]:
    """Every tool call of the trajectory, the agent's and the user's, in order (τ²'s messages)."""
    calls: list[tuple[Requestor, str, dict[str, Any]]] = []
    for event in conversation:
        if isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction):
            if isinstance(event.action.arguments, dict):
                calls.append(("assistant", event.action.name, dict(event.action.arguments)))
        elif isinstance(event, UserTurn):
            calls += [("user", call.name, dict(call.arguments)) for call in event.tool_calls]
    return calls


@dataclass(eq=False)
class Tau2TelecomDomain(Tau2Domain):
    """`tau2-telecom`: see the module docstring."""

    _initial: dict[str, Snapshot] = field(default_factory=dict, init=False, repr=False)
    _done: dict[str, Task] = field(default_factory=dict, init=False, repr=False)
    _broken: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def pristine(self) -> Snapshot:
        telecom = _telecom()
        root = self._source.root
        environment = telecom.TelecomEnvironment(
            domain_name="telecom",
            policy="",
            tools=telecom.TelecomTools(telecom.TelecomDB.load(str(root / "db.toml"))),
            user_tools=telecom.TelecomUserTools(telecom.TelecomUserDB.load(str(root / "user_db.toml"))),
        )
        return _dumps(environment)

    def initial_database(self, task: Task) -> Database:
        """The task's initial state, set up by τ²'s `Environment.set_state` (its data, then its
        actions, each followed by a synchronisation, then one more)."""
        layer = self._initial.get(task.id)
        if layer is None:
            raw = self.raw_task(task.id)
            environment = environment_of(self.fresh_database())
            initial = raw.initial_state
            environment.set_state(
                initialization_data=initial.initialization_data if initial else None,
                initialization_actions=initial.initialization_actions if initial else None,
                message_history=[],
            )
            layer = self._initial[task.id] = _dumps(environment)
        db = self.fresh_database()
        store_rows(layer, db)
        return db

    def replay(self, task: Task, db: Database | None = None) -> Database:
        """τ²'s gold environment: from the initial state, every gold action in order by its
        requestor, with no synchronisation between them, a failing one passing silently."""
        db = db if db is not None else self.initial_database(task)
        environment = environment_of(db)
        for call in task.actions:
            try:
                environment.make_tool_call(
                    call.name, requestor="user" if call.actor == "user" else "assistant", **call.arguments
                )
            except Exception:  # noqa: S112 - τ² logs a failing gold action and goes on
                continue
        store(environment, db)
        return db

    def task_checks(self, task: Task, final: Database, conversation: Sequence[Event]) -> TaskChecks:
        """τ²'s reward bases on the finished trial (the harness's state comparison waived: τ²
        compares the databases only where `DB` is a basis, after its final synchronisation)."""
        raw = self.raw_task(task.id)
        bases = set(_bases(raw))
        criteria = raw.evaluation_criteria
        failed: list[str] = []
        environment = environment_of(final)
        environment.sync_tools()
        if "DB" in bases:
            expected = environment_of(self.replay(task))
            for side, hash_of in (("agent", "get_db_hash"), ("user", "get_user_db_hash")):
                if getattr(environment, hash_of)() != getattr(expected, hash_of)():
                    failed.append(f"DB: the {side}'s database differs from the gold replay's")
        if "ENV_ASSERTION" in bases:
            for assertion in (criteria.env_assertions if criteria else None) or []:
                try:
                    met = environment.run_env_assertion(assertion, raise_assertion_error=False)
                except Exception as exc:  # noqa: BLE001 - τ² would raise; castbench fails the check
                    met, why = False, f" (it raised: {exc})"
                else:
                    why = ""
                if not met:
                    failed.append(
                        f"ENV_ASSERTION: {assertion.env_type} {assertion.func_name}"
                        f"({assertion.arguments}) is not {assertion.assert_value}{why}"
                    )
        if "ACTION" in bases:
            tool_call = import_tau2("tau2.data_model.message").ToolCall
            made = [
                tool_call(id="", name=name, arguments=arguments, requestor=requestor)
                for requestor, name, arguments in trajectory_calls(conversation)
            ]
            for action in (criteria.actions if criteria else None) or []:
                if not any(action.compare_with_tool_call(call) for call in made):
                    failed.append(f"ACTION: the gold action {action.name}({action.arguments}) was not made")
        return TaskChecks(state_graded=False, failed=failed)

    def findings(self, task: Task, raw: Any) -> list[str]:
        """Why τ²'s reward cannot be reproduced on the task (empty: it can): a basis not graded.
        Its gold is not run here (30 ms a task, 2,285 tasks in `full`, every `domains list`):
        `bench/tau2_telecom_parity.py` runs every gold of a split through castbench and τ²."""
        found: list[str] = []
        for basis in _bases(raw):
            if basis == "NL_ASSERTION":
                found.append("not judged: its reward needs NL_ASSERTION, which needs a judge model")
            elif basis not in TELECOM_BASES:
                found.append(f"not graded: castbench's τ² adapter does not grade the reward basis {basis}")
        return found

    @cached_property
    def _raw_by_id(self) -> dict[str, Any]:
        return {raw.id: raw for raw in self._source.raw_tasks}

    def raw_task(self, task_id: str) -> Any:
        return self._raw_by_id[task_id.removeprefix(f"{self.name}-")]

    @cached_property
    def _raw_order(self) -> dict[str, int]:
        return {raw.id: index for index, raw in enumerate(self._source.raw_tasks)}

    def _ensure(self, raw_ids: Sequence[str]) -> None:
        """Convert the tasks not converted yet (the `full` split has 2,285; about 1 ms each), in
        the pack's order. Found through the index: a summary looks its tasks up one at a time, and
        a scan of every raw task per look-up made 2,285 look-ups cost 17 s (issue 40)."""
        wanted = set(raw_ids) - self._done.keys()
        if wanted:
            order = self._raw_order
            found = sorted((raw_id for raw_id in wanted if raw_id in order), key=order.__getitem__)
            tasks, broken = self.converted_tasks([self._raw_by_id[raw_id] for raw_id in found])
            self._done.update(tasks)
            self._broken.update(broken)

    @property
    def _converted(self) -> tuple[dict[str, Task], dict[str, list[str]]]:  # type: ignore[override]
        return self._done, self._broken

    def tasks(self, split: str | None = None) -> list[Task]:
        base = (split or "base").removesuffix(BROKEN_SUFFIX)
        self._ensure(self._source.splits.get(base, ()))
        return super().tasks(split)

    def task(self, task_id: str) -> Task:
        self._ensure([task_id.removeprefix(f"{self.name}-")])
        return super().task(task_id)

    def converted_tasks(self, raws: Sequence[Any]) -> tuple[dict[str, Task], dict[str, list[str]]]:
        toolkits = {"agent": self.toolkit, "user": self.toolkit_for("user")}
        tasks: dict[str, Task] = {}
        broken: dict[str, list[str]] = {}
        for raw in raws:
            task = tasks[raw.id] = convert_telecom_task(raw, self.name, toolkits)
            found = self.findings(task, raw)
            if found:
                broken[task.id] = found
        return tasks, broken


def tau2_telecom_domain() -> Tau2TelecomDomain:
    """`tau2-telecom` from the installed package and the data directory in force."""
    source = telecom_source(TELECOM_GENERATION)
    telecom = _telecom()
    agent_tools = tau2_tools(telecom.TelecomTools(None))
    user_tools = tau2_tools(telecom.TelecomUserTools(None))
    return Tau2TelecomDomain(
        name="tau2-telecom",
        version=f"{source.comparability}-0",
        root=Path(__file__).parent,
        records=[],
        toolkit=TelecomToolkit(agent_tools, "assistant"),
        user_toolkit=TelecomToolkit(user_tools, "user"),
        now=datetime(2025, 2, 25, 12, 8, tzinfo=UTC),  # τ² telecom's clock (utils.get_now)
        description=f"τ² telecom ({source.data_version}): dual control, its data, policy, tools and tasks",
        verbatim_policy=True,
        requires_earned=False,
        default_limits=dict(TAU2_LIMITS),  # τ²'s; its count leaves out the user's own tool calls
        source=source,
    )
