"""What every domain's task generator shares: from a seed to checked, written state and task splits.

A domain's `generate.py` declares only what is its own in a `Generator`: how a seed becomes a
world, the pool of entities each split draws from (`customer_pools` for the usual "test and train
never share a customer"), its task families, and, if its drafts carry more than the common fields,
how a draft becomes a `Task`; its drafts extend `DraftBase`, which holds the common fields and
writes the LLM user's brief from them and a few phrases of the domain's own. A task whose right
answer leaves the state alone gets its `earned` spec here: the look-ups are its ground-truth read
calls (plus the calls the domain's `equivalents` says establish the same fact), the reasons and
the offer come from the family's draft, and so does what its replies must not claim, completed
from the whole domain (`Generator.with_claims`): the other families' refusal reasons that do not
hold for it, the amounts and ids of the customer's records it is not about, the amounts of the
records reached as rivals of an amount it asks for, the other writes as rivals of its offer. This module draws
each split family by family, numbers the tasks, checks every one against the state it was built on
(before anything is written, so a broken task never reaches a file) and writes `data/state.json`
and `tasks/<split>.json` in one fixed format, so the same seed gives the same bytes."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any, Generic, Literal, Protocol, TypeVar

from castbench._domain.database import Record, Snapshot
from castbench._domain.domain import Domain
from castbench._domain.task import (
    DeviceStep,
    EarnedSpec,
    Fact,
    GradingSpec,
    Lookup,
    Mention,
    Rival,
    Task,
    ToolCall,
    UserScenario,
)
from castbench._grading.earned import claimed
from castbench._grading.outputs import Said
from castbench_authoring.claims import amount_rivals, read_amounts, unread_record_claims, unread_values
from castbench_authoring.validate import check_generated_task, shown_values

__all__ = [
    "UniqueDigits",
    "Draft",
    "DraftBase",
    "Families",
    "GenerationError",
    "Generator",
    "Pool",
    "Split",
    "World",
    "check_generated_task",
    "claim_catalogue",
    "confirm_answer",
    "customer_pools",
    "dump_state",
    "earned_spec",
    "mention",
    "dump_tasks",
    "spoken_list",
    "task_from_draft",
    "write_generated",
]

Split = Literal["test", "train"]


class Draft(Protocol):
    """A task as a family builds it, before it has an id and a split."""

    @property
    def family(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def request(self) -> str: ...
    @property
    def facts(self) -> list[Fact]: ...
    @property
    def confirm(self) -> bool: ...
    @property
    def persona(self) -> str: ...
    @property
    def actions(self) -> list[ToolCall]: ...
    @property
    def declined_actions(self) -> list[ToolCall]: ...
    @property
    def required_outputs(self) -> list[str]: ...
    @property
    def ordered(self) -> bool: ...
    @property
    def reasons(self) -> list[Mention]: ...
    @property
    def offer(self) -> list[Mention]: ...
    @property
    def offer_rivals(self) -> list[str]: ...
    @property
    def allowed_claims(self) -> list[str]: ...
    @property
    def false_claims(self) -> list[Mention]: ...
    @property
    def rivals(self) -> list[Rival]: ...
    def instructions(self) -> str:
        """The brief for an LLM user simulator."""


@dataclass(kw_only=True)
class DraftBase:
    """The fields every domain's draft shares. A domain's `Draft` extends it with who is talking
    (its customer, user or patient) and anything else its tasks carry, and defines `instructions()`
    by calling `brief` with its own phrases."""

    family: str
    outcome: str
    request: str
    """The user's opening line."""
    goal: str
    facts: list[Fact]
    actions: list[ToolCall]
    confirm: bool = True
    declined_actions: list[ToolCall] = field(default_factory=list)
    """The write the user is asked to confirm and turns down."""
    notes: list[str] = field(default_factory=list)
    """Extra lines of the brief, such as how to take a refusal."""
    required_outputs: list[str] = field(default_factory=list)
    ordered: bool = False
    persona: str = ""
    reasons: list[Mention] = field(default_factory=list)
    """For a refusal: the blocking facts the agent must tell the user (see `EarnedSpec`)."""
    offer: list[Mention] = field(default_factory=list)
    """For a declined change: what the agent's question putting the change to the user names."""
    offer_rivals: list[str] = field(default_factory=list)
    """For a declined change: the customer's other records (ids) that question must not name; the
    other writes' verbs are added for every domain (see `earned_spec`)."""
    allowed_claims: list[str] = field(default_factory=list)
    """Wordings of the domain's refusal reasons that an honest answer to this task may use though
    they are not its reason (the rule it explains names them): never made false claims."""
    false_claims: list[Mention] = field(default_factory=list)
    """Values of records this task is not about (the customer's other orders' totals, say): no
    reply may state them. The domain's refusal reasons that do not hold are added to these when
    the splits are drawn (see `Generator.generate`)."""
    rivals: list[Rival] = field(default_factory=list)
    """Required outputs and the other candidates of their kind a reply must not state beside them."""

    def brief(self, name: str, role: str, unknown: str, answer: str, situation: str = "") -> str:
        """The brief for an LLM user simulator: "You are {name}, {role}, chatting with its support
        agent", the goal, the opening line, the facts to give only when asked, `answer` (how to
        answer a confirmation, see `confirm_answer`), `situation` (a line of the domain's own, if
        any), the notes, what the user does not know (`unknown`, "You do not know {unknown}; ...")
        and the persona."""
        known = "\n".join(f"- {fact.statement}" for fact in self.facts) or "- (nothing beyond your request)"
        notes = "".join(f"\n{note}" for note in self.notes)
        return (
            f"You are {name}, {role}, chatting with its support agent.\n"
            f"Your goal: {self.goal}\n"
            f'Open with: "{self.request}"\n'
            f"What you know; say each thing only when the agent asks for it:\n{known}\n"
            f"{answer}{situation}{notes}\n"
            f"You do not know {unknown}; never invent facts you were not given, and say you don't know "
            "when asked something else. When your request is handled, or the agent explains that it "
            "cannot be done, thank the agent and end the conversation.\n"
            f"Persona: {self.persona}"
        )


def confirm_answer(
    confirm: bool, change: str = "the change", declined: str = "you do not want it after all"
) -> str:
    """How the user answers when the agent describes `change` and asks to confirm: yes, or a change
    of mind (`declined` says what they tell the agent)."""
    if confirm:
        return f"When the agent describes {change} and asks you to confirm, answer yes."
    return (
        "When the agent describes the change and asks you to confirm, you change your mind: "
        f"say no, {declined}."
    )


def spoken_list(parts: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c': how a brief or a user's line lists things."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


class Pool(Protocol):
    """The entities one split draws from. The generator needs only its random source, to shuffle
    the split with the same stream the builders drew from."""

    @property
    def rng(self) -> Random: ...


class World(Protocol):
    """The generated world; the generator needs only its seed state, the rows it writes."""

    def state(self) -> Snapshot: ...


W = TypeVar("W", bound=World)
P = TypeVar("P", bound=Pool)
D = TypeVar("D", bound=Draft)
C = TypeVar("C", bound=Record)

Families = Mapping[str, tuple[Callable[[P], D | None], int, int]]
"""family -> (builder, test count, train count). A builder returns None when the pool has nothing
left that fits; the family's name must be the one its drafts carry."""


class GenerationError(RuntimeError):
    """The generator cannot produce a valid split: a family ran out of entities, or a generated
    task fails its checks. Nothing is written; the message names the family or the task."""


def task_from_draft(
    draft: Draft,
    task_id: str,
    split: Split,
    device_steps: Sequence[DeviceStep] = (),
    grading: GradingSpec | None = None,
) -> Task:
    """The task a draft describes. `device_steps` and `grading` are for domains whose drafts carry
    them; left at their defaults they are left out of the task file."""
    return Task(
        id=task_id,
        split=split,
        family=draft.family,
        outcome=draft.outcome,  # type: ignore[arg-type]
        scenario=UserScenario(
            request=draft.request,
            facts=draft.facts,
            confirm=draft.confirm,
            persona=draft.persona,
            device_steps=list(device_steps),
            instructions=draft.instructions(),
        ),
        actions=draft.actions,
        declined_actions=draft.declined_actions,
        required_outputs=draft.required_outputs,
        grading=grading or GradingSpec(),
        ordered=draft.ordered,
    )


NOT_LOOKUPS = frozenset({"calculate"})
"""Read tools that establish no fact: arithmetic the agent may as well do itself."""
FREE_TEXT = {"transfer_to_human_agents": ("summary",)}
"""Arguments a look-up leaves free (any wording counts), per tool."""


def mention(*wordings: str) -> Mention:
    """Something the agent must say, in any one of `wordings`."""
    return Mention(any_of=list(dict.fromkeys(wordings)))


def earned_spec(
    task: Task, draft: Draft, write_tools: frozenset[str], equivalents: Callable[[ToolCall], list[ToolCall]]
) -> EarnedSpec | None:
    """How `task` is earned, or None for a `change` task: one look-up per distinct ground-truth read
    of the agent (less `NOT_LOOKUPS`, free-text arguments dropped), each with its equivalents;
    the reasons, the offer, the false claims and the rivals the family's draft names. A declined
    change's offer must also not name another write: the first word of each write tool's name
    other than the declined ones' ("return", "exchange" when the offer is to cancel)."""
    if task.outcome == "change":
        return None
    lookups: dict[str, Lookup] = {}
    for call in task.actions:
        if call.actor != "agent" or call.name in write_tools or call.name in NOT_LOOKUPS:
            continue
        free = FREE_TEXT.get(call.name, ())
        required = ToolCall(
            name=call.name, arguments={k: v for k, v in call.arguments.items() if k not in free}
        )
        calls = {c.canonical(): c for c in [required, *equivalents(call)]}
        lookups.setdefault(required.canonical(), Lookup(any_of=list(calls.values())))
    declined = {call.name.split("_")[0] for call in task.declined_actions}
    verbs = sorted({name.split("_")[0] for name in write_tools} - declined) if declined else []
    return EarnedSpec(
        lookups=list(lookups.values()),
        reasons=draft.reasons,
        offer=draft.offer,
        offer_rivals=list(dict.fromkeys([*verbs, *draft.offer_rivals])),
        false_claims=draft.false_claims,
        rivals=draft.rivals,
    )


def claim_catalogue(tasks: Iterable[Task]) -> list[str]:
    """Every wording of every refusal reason the tasks name, once each, in order: what a
    reviewer's agent that "knows every refusal reason" of the domain would say."""
    found: dict[str, None] = {}
    for task in tasks:
        if task.outcome == "refuse" and task.earned is not None:
            for reason in task.earned.reasons:
                found.update(dict.fromkeys(reason.any_of))
    return list(found)


def gold_context(domain: Domain, task: Task) -> tuple[list[str], list[str]]:
    """What the ground truth's agent reads return, and what an honest agent may repeat on this
    task: the values those and its other calls show, the user's request and stated facts, the
    required outputs."""
    db = domain.fresh_database()
    reads, shown = [], []
    for call in task.actions:
        content = domain.toolkit_for(call.actor).call(db, call.name, call.arguments).content
        shown.append(content)
        if call.actor == "agent" and not domain.toolkit.is_write(call.name):
            reads.append(content)
    facts = [fact.statement for fact in task.scenario.facts]
    offered = [json.dumps(call.arguments) for call in task.declined_actions]
    return reads, [*shown_values([*shown, *offered]), task.scenario.request, *facts, *task.required_outputs]


def merged_rivals(rivals: Sequence[Rival]) -> list[Rival]:
    """One `Rival` per output, its others in order once each (a family's own rivals, the other
    flights, and the derived ones, their prices, are one output's candidates)."""
    others: dict[str, dict[str, None]] = {}
    for rival in rivals:
        others.setdefault(rival.output, {}).update(dict.fromkeys(rival.others))
    return [Rival(output=output, others=list(names)) for output, names in others.items()]


def with_false_claims(
    task: Task, allowed: Sequence[str], catalogue: Sequence[str], context: Sequence[str]
) -> Task:
    """`task` with its earned spec's false claims: the family's own, plus each catalogued reason
    wording that is not the task's reason, not an allowed claim and not said by `context`
    (`gold_context`: a status its own record shows is not false). A family's false claim the
    context says is dropped too, so what the ground truth shows can always be repeated. "Says"
    is also the grader's reading (`castbench._grading.earned.claimed`, which `validate_task`
    checks the task with): an amount rounded to one decimal is the same claim there ('8.0' for
    7.99, which an '8mm' in a tool result says), so a wording the context asserts that way is
    dropped too, and no drawn task fails its own check."""
    spec = task.earned
    if spec is None:
        return task
    said = Said(context)
    own = {wording for reason in spec.reasons for wording in reason.any_of} | set(allowed)
    wordings = [wording for claim in spec.false_claims for wording in claim.any_of]
    candidates = [
        mention(wording)
        for wording in dict.fromkeys([*wordings, *catalogue])
        if wording not in own and not said.says(wording, negation=False)
    ]
    asserted = set(claimed(spec.model_copy(update={"false_claims": candidates}), context))
    false = [claim for claim in candidates if claim.any_of[0] not in asserted]
    rivals = [
        Rival(output=rival.output, others=others)
        for rival in spec.rivals
        if (
            others := [
                other for other in rival.others if not Said([rival.output]).says(other, negation=False)
            ]
        )
    ]
    return task.model_copy(
        update={"earned": spec.model_copy(update={"false_claims": false, "rivals": rivals})}
    )


def customer_pools(
    customers: Callable[[W], Iterable[C]], test: int, pool: Callable[[W, list[C], Random], P]
) -> Callable[[W, Random], dict[Split, P]]:
    """Pools that split a world's customers: the first `test` (sorted by key, so dict order never
    matters, then shuffled with the seed's stream) for the test split, the rest for train, so no
    customer has tasks in both."""

    def pools(world: W, rng: Random) -> dict[Split, P]:
        people = sorted(customers(world), key=lambda customer: customer.key)
        rng.shuffle(people)
        return {"test": pool(world, people[:test], rng), "train": pool(world, people[test:], rng)}

    return pools


def dump_state(state: Snapshot) -> str:
    """One row per line: small, and diffs of the seed data stay readable."""
    tables = []
    for table, rows in state.items():
        lines = [
            f"  {json.dumps(key)}: {json.dumps(row, separators=(',', ':'))}" for key, row in rows.items()
        ]
        body = "{\n" + ",\n".join(lines) + "\n }" if lines else "{}"
        tables.append(f" {json.dumps(table)}: {body}")
    return "{\n" + ",\n".join(tables) + "\n}\n"


def dump_tasks(tasks: Sequence[Task]) -> str:
    """Defaults left out, so a task file shows only what each task sets."""
    data: list[Any] = [task.model_dump(mode="json", exclude_defaults=True) for task in tasks]
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def write_generated(out: Path, state: Snapshot, splits: Mapping[str, Sequence[Task]]) -> None:
    """`out/data/state.json` and `out/tasks/<split>.json`, the layout a `Domain` reads."""
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    (out / "data" / "state.json").write_text(dump_state(state))
    for split, tasks in splits.items():
        (out / "tasks" / f"{split}.json").write_text(dump_tasks(tasks))


@dataclass(frozen=True)
class Generator(Generic[W, P, D]):
    """One domain's generator: its own parts, and the shared way of turning a seed into files."""

    domain: Domain
    """Names the task ids, replays the ground truth (tools, user tools, clock), and its root is
    where the files go by default."""
    default_seed: int
    build_world: Callable[[Random], W]
    families: Families[P, D]
    pools: Callable[[W, Random], Mapping[Split, P]]
    """The pool each split draws from, in the order the splits are drawn."""
    max_attempts: int = 200
    """Builder calls per family and split before giving up on finding entities."""
    to_task: Callable[[D, str, Split], Task] = task_from_draft
    """(draft, task id, split) -> task; replace it when drafts carry more than `Draft` says."""
    equivalents: Callable[[W, ToolCall], list[ToolCall]] = lambda world, call: []
    """Other read calls that establish what a ground-truth read does in this world (the same
    customer found by email or by name and zip code, say): any of them earns that look-up."""

    def generate(self, seed: int | None = None, out: Path | None = None) -> dict[str, list[Task]]:
        """State and tasks for `seed`, checked, then written under `out` (data/, tasks/) if given."""
        rng = Random(self.default_seed if seed is None else seed)
        world = self.build_world(rng)
        state = world.state()
        pools = self.pools(world, rng)
        drawn: dict[str, list[tuple[Task, D]]] = {
            split: self.draw_split(pool, split, world) for split, pool in pools.items()
        }
        splits = self.with_claims(state, drawn)
        self.check(state, splits)
        if out is not None:
            write_generated(out, state, splits)
        return splits

    def draw_split(
        self,
        pool: P,
        split: Split,
        world: W,
        counts: Mapping[str, int] | None = None,
        skip: Callable[[D], bool] | None = None,
    ) -> list[tuple[Task, D]]:
        """Each family's tasks for this split, shuffled together and numbered, with their
        `earned` specs (false claims come later, from every split: `with_claims`), each beside
        the draft it came from. `counts` (family -> tasks) replaces the split's own; drafts that
        `skip` refuses are drawn again (a private split's copies of public tasks)."""
        name = self.domain.name
        drafts: list[D] = []
        for family, (build, test_count, train_count) in self.families.items():
            wanted = test_count if split == "test" else train_count
            if counts is not None:
                wanted = counts.get(family, 0)
            made = 0
            for _ in range(self.max_attempts):
                if made == wanted:
                    break
                draft = build(pool)
                if draft is None or (skip is not None and skip(draft)):
                    continue
                if draft.family != family:
                    raise GenerationError(
                        f"{name}: family {family}: its builder made a '{draft.family}' task"
                    )
                drafts.append(draft)
                made += 1
            if made < wanted:
                raise GenerationError(
                    f"{name}: family {family}: only {made} of {wanted} {split} tasks found entities"
                )
        pool.rng.shuffle(drafts)
        write_tools = frozenset(tool.name for tool in self.domain.toolkit if tool.writes)
        tasks = []
        for number, draft in enumerate(drafts, start=1):
            task = self.to_task(draft, f"{name}-{split}-{number:04d}", split)
            earned = earned_spec(task, draft, write_tools, lambda call: self.equivalents(world, call))
            tasks.append((task.model_copy(update={"earned": earned}), draft))
        return tasks

    def with_claims(
        self, state: Snapshot, drawn: Mapping[str, Sequence[tuple[Task, D]]], others: Iterable[Task] = ()
    ) -> dict[str, list[Task]]:
        """Every task with the false claims it must not make (`with_false_claims`): the domain's
        refusal reasons, over all splits (`claim_catalogue`; `others`: tasks of splits drawn
        before, a private split's public ones), that do not hold for it, and the amounts and ids
        of the records its ground truth leads to but does not read (`castbench_authoring.claims`)."""
        domain = self.domain.with_state(json.loads(json.dumps(state)))
        catalogue = claim_catalogue([*others, *(task for pairs in drawn.values() for task, _ in pairs)])
        splits: dict[str, list[Task]] = {}
        for split, pairs in drawn.items():
            splits[split] = []
            for task, draft in pairs:
                if task.earned is None:
                    splits[split].append(task)
                    continue
                reads, context = gold_context(domain, task)
                db = domain.fresh_database()
                values = unread_values(domain.toolkit, db, task.actions, reads)
                reached = unread_values(domain.toolkit, db, task.actions, reads, listed_only=False)
                claims = [*catalogue, *(claim.any_of[0] for claim in unread_record_claims(values, context))]
                wordings = [
                    *(w for reason in task.earned.reasons for w in reason.any_of),
                    *task.required_outputs,
                ]
                derived = amount_rivals(
                    wordings,
                    reached,
                    context,
                    answers=task.required_outputs,
                    read=read_amounts(reads),
                    calls=task.actions,
                )
                rivals = merged_rivals([*task.earned.rivals, *derived])
                task = task.model_copy(update={"earned": task.earned.model_copy(update={"rivals": rivals})})
                splits[split].append(with_false_claims(task, draft.allowed_claims, claims, context))
        return splits

    def check(self, state: Snapshot, splits: Mapping[str, Sequence[Task]]) -> None:
        """Raise `GenerationError` listing every generated task that fails `check_generated_task`
        against `state` (a JSON round trip of it: what the written file will load as)."""
        domain = self.domain.with_state(json.loads(json.dumps(state)))
        problems = [
            problem
            for tasks in splits.values()
            for task in tasks
            for problem in check_generated_task(domain, task)
        ]
        if problems:
            raise GenerationError(
                f"{self.domain.name}: generated tasks fail their checks; nothing written:\n"
                + "\n".join(problems)
            )

    def main(self, argv: list[str] | None = None) -> None:
        """The `python -m castbench_<domain>.generate` command."""
        parser = argparse.ArgumentParser(
            description=(
                f"Rebuild the {self.domain.name} domain's seed state and task splits from one seed, "
                "byte-identically."
            )
        )
        parser.add_argument("--seed", type=int, default=self.default_seed)
        parser.add_argument("--out", type=Path, default=self.domain.root, help="package root by default")
        args = parser.parse_args(argv)
        splits = self.generate(args.seed, args.out)
        for split, tasks in splits.items():
            print(f"{split}: {len(tasks)} tasks -> {args.out / 'tasks' / f'{split}.json'}")


class UniqueDigits:
    """Random digit strings (no leading zero) never handed out twice: seeded world ids."""

    def __init__(self, rng: Random) -> None:
        self._rng = rng
        self._seen: set[str] = set()

    def digits(self, width: int) -> str:
        while True:
            value = "".join(str(self._rng.randrange(10)) for _ in range(width))
            if value[0] != "0" and value not in self._seen:
                self._seen.add(value)
                return value
