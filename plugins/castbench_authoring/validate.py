"""`castbench domains validate`: replay every task's ground truth and fail loudly on a broken one.

Checks per task: every action names an existing tool with arguments that validate; the replay
raises no error; a `change` task changes state and a `no_change`/`refuse` task does not; and
unless the task is marked `ordered`, replaying its write actions in reverse order gives the same
final state (a task whose outcome depends on an order it does not fix is ambiguous). Each device
step's instruction, as the oracle says it, must set off that step in the scripted user and no
other step of the task. A `refuse` or `no_change` task says how it is earned (`Task.earned`): every
required look-up is one of its ground-truth calls or an equivalent that runs, a refusal names its
reason, and a reason is something the agent can know (its ground-truth tools show it, or the policy
document says it); a declined change names what its offer mentions. The gold's own replies must pass
the over-claiming rule (`castbench._grading.earned`): no reason wording, required output or value its
tools show is one of the task's false claims, the outputs stated together name none of their
rivals, and the declined change as the oracle offers it names no offer rival. Per domain: every
list of record ids in the seed state (`bill_ids: [...]`, `orders: [...]`) must be read as the
name field its records have (`castbench._domain.leaves.listed_argument`), or the false claims
derived from the records it lists (`castbench_authoring.claims`) silently miss them.

A private split (`castbench tasks generate`, the castbench_authoring satellite) is checked here too
(`domains validate --tasks-file`): each task as a generated one (`check_generated_task`), and none
the copy of a public task (`duplicates`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from castbench._agents.scripted.plan import describe_call
from castbench._base.dialogue import confirmation_request, device_instruction
from castbench._domain.domain import Domain, ExpectedStateError
from castbench._domain.leaves import is_name_key, listed_argument
from castbench._domain.private import PrivateSplit
from castbench._domain.task import Task, TaskFileError, ToolCall
from castbench._domain.tools import Tool, ToolError
from castbench._grading.earned import claimed, matches, offers
from castbench._grading.outputs import missing_outputs
from castbench._grading.state_diff import state_diff

__all__ = [
    "ValidationReport",
    "check_generated_task",
    "duplicates",
    "ground_truth",
    "private_problems",
    "shown_values",
    "task_truth",
    "validate_domain",
    "validate_task",
]


@dataclass
class ValidationReport:
    domain: str
    version: str
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    """Tasks the domain itself leaves out of scores as broken (a published task set's), with why:
    reported, not failed."""
    refused: list[str] = field(default_factory=list)
    """Tasks of a published set (`Domain.requires_earned` False) that refusing everything passes
    (`castbench.validate_domain`): reported, not failed, since the set grades them
    as published. In a domain castbench's rules author, each is a problem instead."""

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_task(domain: Domain, task: Task) -> list[str]:
    problems = []
    where = f"{domain.name} task {task.id}"
    for position, call in enumerate([*task.actions, *task.declined_actions]):
        try:
            domain.toolkit_for(call.actor).validate(call.name, call.arguments)
        except ToolError as exc:
            problems.append(f"{where}: action {position}: {exc}")
    if problems:
        return problems
    try:
        final = domain.replay(task)
    except ExpectedStateError as exc:
        return [str(exc)]
    changed = bool(state_diff(final, domain.fresh_database()))
    if task.outcome == "change" and not changed:
        problems.append(f"{where}: outcome is 'change' but replaying its actions changes nothing")
    if task.outcome != "change" and changed:
        problems.append(f"{where}: outcome is '{task.outcome}' but replaying its actions changes the state")
    writes = [call for call in task.actions if domain.toolkit_for(call.actor).is_write(call.name)]
    if len(writes) > 1 and not task.ordered:
        reads = [call for call in task.actions if not domain.toolkit_for(call.actor).is_write(call.name)]
        reordered = task.model_copy(update={"actions": reads + writes[::-1]})
        try:
            other = domain.replay(reordered)
        except ExpectedStateError as exc:
            problems.append(f"{where}: writes fail in another order ({exc}); mark the task 'ordered'")
        else:
            if state_diff(other, final):
                problems.append(f"{where}: outcome depends on the order of its writes; mark it 'ordered'")
    if task.declined_actions and task.scenario.confirm:
        problems.append(f"{where}: has declined_actions but scenario.confirm is true")
    device_calls = [step.call for step in task.scenario.device_steps]
    for call in task.actions:
        if call.actor == "user" and call not in device_calls:
            problems.append(f"{where}: user action {call.name} has no device step the user could be told")
    for output in task.required_outputs:
        if not output.strip():
            problems.append(f"{where}: empty required output")
    problems.extend(_device_step_overlaps(task, where))
    problems.extend(_earned_problems(domain, task, where))
    return problems


def _earned_problems(domain: Domain, task: Task, where: str) -> list[str]:
    """The task's `earned` spec against its outcome, its ground truth and what the agent can know."""
    spec = task.earned
    if spec is None:
        if task.outcome != "change" and domain.requires_earned:
            return [f"{where}: outcome is '{task.outcome}' but the task has no 'earned' spec"]
        return []
    if task.outcome == "change":
        return [f"{where}: field 'earned': a 'change' task is graded on its state; drop the spec"]
    problems = []
    toolkit = domain.toolkit
    truth = [call for call in task.actions if call.actor == "agent"]
    if not spec.lookups:
        problems.append(f"{where}: field 'earned.lookups': names no look-up, so doing nothing would pass")
    for position, lookup in enumerate(spec.lookups):
        name = f"{where}: field 'earned.lookups[{position}]'"
        if not any(matches(alt, call.name, call.arguments) for alt in lookup.any_of for call in truth):
            problems.append(f"{name}: none of its calls is in the ground truth")
        for alt in lookup.any_of:
            if alt.name not in toolkit or toolkit.is_write(alt.name):
                problems.append(f"{name}: '{alt.name}' is not a read tool of the agent")
                continue
            unknown = set(alt.arguments) - set(toolkit[alt.name].arguments_model.model_fields)
            if unknown:
                problems.append(f"{name}: {alt.name} has no argument {', '.join(sorted(unknown))}")
            elif set(alt.arguments) >= _required(toolkit[alt.name]):
                result = toolkit.call(domain.fresh_database(), alt.name, alt.arguments)
                if result.error:
                    problems.append(f"{name}: equivalent call {alt.canonical()} fails: {result.content}")
    if task.outcome == "refuse" and not spec.reasons:
        problems.append(f"{where}: field 'earned.reasons': a refusal must name its reason")
    if task.declined_actions and not spec.offer:
        problems.append(f"{where}: field 'earned.offer': a declined change must say what its offer names")
    if spec.reasons:
        problems.extend(_unknowable_reasons(domain, task, where))
    problems.extend(_gold_over_claims(domain, task, where))
    return problems


def _gold_over_claims(domain: Domain, task: Task, where: str) -> list[str]:
    """What in the gold's own replies the over-claiming rule would fail: a false claim among the
    reasons' wordings, the required outputs or the values the ground truth's tools show (an honest
    agent repeats them), an output beside its rivals, an offer naming an offer rival."""
    assert task.earned is not None
    spec = task.earned
    db = domain.fresh_database()
    shown = shown_values(
        domain.toolkit_for(call.actor).call(db, call.name, call.arguments).content for call in task.actions
    )
    said = {
        **{f"reason wording {w!r}": [w] for reason in spec.reasons for w in reason.any_of},
        "the required outputs": ["; ".join(task.required_outputs)] if task.required_outputs else [],
        "what its tools show": shown,
    }
    problems = [
        f"{where}: field 'earned.false_claims': {claim!r} is said by {what}"
        for what, replies in said.items()
        for claim in claimed(spec, replies)
    ]
    together = "; ".join(task.required_outputs)
    wordings = {w for reason in spec.reasons for w in reason.any_of} | set(task.required_outputs)
    problems.extend(
        f"{where}: field 'earned.rivals': {rival.output!r} is no reason or required output of the task"
        for rival in spec.rivals
        if rival.output not in wordings
    )
    problems.extend(
        f"{where}: field 'earned.rivals': the required outputs, stated together, name a rival of "
        f"{rival.output!r}"
        for rival in spec.rivals
        if rival.output in task.required_outputs
        and len(missing_outputs(rival.others, [together])) < len(rival.others)
    )
    problems.extend(
        f"{where}: field 'earned.offer_rivals': the offer of {call.name} names a rival"
        for call in task.declined_actions
        if spec.offer and not offers(spec, confirmation_request(describe_call(call)))
    )
    return problems


def shown_values(contents: Iterable[str]) -> list[str]:
    """What tool results show as values: each string and number of a JSON result (not its keys,
    so `"controlled": false` shows no "controlled"; `basic_economy` also as `basic economy`), a
    plain-text result whole."""
    shown: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            shown.extend(dict.fromkeys([value, value.replace("_", " ")]))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            shown.append(str(value))

    for content in contents:
        try:
            walk(json.loads(content))
        except json.JSONDecodeError:
            shown.append(content)
    return shown


def _required(tool: Tool) -> set[str]:
    return {key for key, field_ in tool.arguments_model.model_fields.items() if field_.is_required()}


def _unknowable_reasons(domain: Domain, task: Task, where: str) -> list[str]:
    """Reasons no wording of which the ground truth's tools show or the policy document says."""
    assert task.earned is not None
    db = domain.fresh_database()
    shown = [
        domain.toolkit_for(call.actor).call(db, call.name, call.arguments).content for call in task.actions
    ]
    known = [*shown, domain.policy]
    return [
        f"{where}: field 'earned.reasons[{position}]': none of {reason.any_of} is shown by its tools "
        "or said in the policy"
        for position, reason in enumerate(task.earned.reasons)
        if all(missing_outputs([wording], known) for wording in reason.any_of)
    ]


def _device_step_overlaps(task: Task, where: str) -> list[str]:
    """Device steps whose oracle instruction would set off the wrong steps in the scripted user.

    The scripted user performs every step whose keywords all appear in the agent's message, so an
    instruction that also holds another step's keywords makes the user do that step early (or
    twice), and one that lacks its own keywords is never acted on.
    """
    problems = []
    steps = task.scenario.device_steps
    for position, step in enumerate(steps):
        said = device_instruction(step.instruction).lower()
        triggered = [n for n, other in enumerate(steps) if all(k.lower() in said for k in other.keywords)]
        name = f"device step {position} ({step.call.name})"
        if position not in triggered:
            problems.append(f"{where}: {name}: its instruction lacks its own keywords {step.keywords}")
        for other in triggered:
            if other != position:
                problems.append(
                    f"{where}: {name}: its instruction also sets off device step {other} "
                    f"({steps[other].call.name}, keywords {steps[other].keywords})"
                )
    return problems


def _synonym_problems(domain: Domain) -> list[str]:
    """Each reason synonym of the domain (`DomainRules.reason_synonyms`) must widen a reason its
    tasks name, and must not be a wording of another reason: a synonym that says another reason
    would let a false reason pass for the true one."""
    synonyms = domain.rules.reason_synonyms
    if not synonyms:
        return []
    reasons = [
        mention.any_of
        for task in domain.tasks()
        if task.earned is not None
        for mention in task.earned.reasons
    ]
    named = {wording for wordings in reasons for wording in wordings}
    problems = []
    for wording, others in synonyms.items():
        where = f"{domain.name}: reason synonym {wording!r}"
        if wording not in named:
            problems.append(f"{where}: no task names this reason")
        for other in others:
            clash = next((w for w in reasons if other in w and wording not in w), None)
            if clash is not None:
                problems.append(f"{where}: {other!r} is a wording of another reason ({clash[0]!r})")
    return problems


def _rows(table: Any) -> list[dict[str, Any]]:
    if isinstance(table, dict):
        return [row for row in table.values() if isinstance(row, dict)]
    if isinstance(table, list):
        return [row for row in table if isinstance(row, dict)]
    return []


def _listed_id_problems(state: Any) -> list[str]:
    """Each list of record ids in `state` (a table's field whose items all name records of one
    other table) whose derived look-up argument (`listed_argument`: `bill_ids` -> `bill_id`) is no
    field of the records it lists: the claims derivation would follow a name no record has
    (`bill_id_id`), and the other records it lists would never become claims."""
    if not isinstance(state, dict):
        return []
    tables = {name: rows for name, table in state.items() if (rows := _rows(table))}
    named: dict[str, set[str]] = {}
    """A record name -> the tables whose records it names."""
    for name, rows in tables.items():
        for row in rows:
            for key, value in row.items():
                if is_name_key(key) and isinstance(value, str):
                    named.setdefault(value, set()).add(name)
    problems: dict[str, None] = {}
    for name, rows in tables.items():
        for row in rows:
            for key, value in row.items():
                if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
                    continue
                targets = set.intersection(*(named.get(item, set()) for item in value)) - {name}
                argument = listed_argument(key)
                for target in sorted(targets):
                    if not any(row.get(argument) in value for row in tables[target]):
                        problems[
                            f"{name}.{key} lists {target} records, but the claims derivation reads it as "
                            f"{argument!r}, which no {target} record has"
                        ] = None
    return list(problems)


def validate_domain(domain: Domain) -> ValidationReport:
    """Every check of this module on every task of `domain` and on its data (what `castbench
    domains validate` runs before playing the refusal floor: `castbench.validate_domain`)."""
    report = ValidationReport(domain.name, domain.version)
    try:
        _ = domain.pristine
        splits = domain.splits
        if not splits:
            report.problems.append(f"{domain.name}: no task files under {domain.root / 'tasks'}")
        for split in splits:
            tasks = domain.tasks(split)
            report.counts[split] = len(tasks)
            for task in tasks:
                report.problems.extend(validate_task(domain, task))
            for task_id, reasons in domain.excluded_tasks(split).items():
                report.excluded.append(f"{domain.name} task {task_id}: {'; '.join(reasons)}")
        report.problems.extend(_synonym_problems(domain))
        report.problems.extend(f"{domain.name}: {p}" for p in _listed_id_problems(domain.pristine))
    except (TaskFileError, ValueError) as exc:
        report.problems.append(str(exc))
    return report


def check_generated_task(domain: Domain, task: Task) -> list[str]:
    """Problems of a freshly generated task, each naming it; `domain` holds the generated state.

    `validate_task` (ground truth replays, change iff the outcome says so, unordered writes
    commute, declined and device steps consistent) plus two things a generator can promise about
    its own tasks: a declined action would have succeeded (else declining it tests nothing), and
    every required output appears in what the ground truth's tools said (else no agent can know it).
    """
    problems = validate_task(domain, task)
    if problems:
        return problems
    where = f"{domain.name} task {task.id}"
    if task.declined_actions:
        try:
            domain.replay(task.model_copy(update={"actions": [*task.actions, *task.declined_actions]}))
        except ExpectedStateError as exc:
            problems.append(f"{where}: a declined action would fail anyway ({exc})")
    if task.required_outputs:
        db = domain.fresh_database()
        said = " ".join(
            domain.toolkit_for(call.actor).call(db, call.name, call.arguments).content
            for call in task.actions
        )
        problems.extend(
            f"{where}: required output {output!r} is never shown by its tools"
            for output in task.required_outputs
            if output not in said
        )
    return problems


def ground_truth(
    actions: Iterable[ToolCall], declined: Iterable[ToolCall], outputs: Iterable[str], outcome: str
) -> str:
    """A task's ground truth (its calls, declined calls, outputs and outcome) as one string."""
    calls = [[call.model_dump(mode="json") for call in group] for group in (actions, declined)]
    return json.dumps([*calls, list(outputs), outcome], sort_keys=True)


def task_truth(task: Task) -> str:
    return ground_truth(task.actions, task.declined_actions, task.required_outputs, task.outcome)


def duplicates(domain: Domain, tasks: Sequence[Task]) -> list[str]:
    """Tasks whose ground truth is a public task's, each naming that task."""
    public = {task_truth(task): task.id for split in ("test", "train") for task in domain.tasks(split)}
    return [
        f"{domain.name} task {task.id}: duplicates public task {public[task_truth(task)]}"
        for task in tasks
        if task_truth(task) in public
    ]


def private_problems(domain: Domain, split: PrivateSplit) -> list[str]:
    """What is wrong with a private split of `domain`: its domain or version differ, a task fails
    the generator's checks (every gold replays, changes the state iff its outcome says so, ...),
    or duplicates a public task. The oracle's score is checked by `domains validate`."""
    if split.domain != domain.name:
        return [f"the split is of domain {split.domain}, not {domain.name}"]
    problems: list[str] = []
    if split.domain_version != domain.version:
        problems.append(
            f"the split was drawn on {domain.name} {split.domain_version}; installed: {domain.version}"
        )
    for task in split.tasks:
        problems.extend(check_generated_task(domain, task))
    return problems + duplicates(domain, split.tasks)
