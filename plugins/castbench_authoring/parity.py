"""Parity with a published benchmark's own code: the same trajectory graded by its harness and by
castbench's. Shared by the τ packs (`castbench_tau.parity`) and the τ² packs (`castbench_tau2.parity`),
which each add the reference side (the benchmark's own env and grader).

A trajectory is what an agent did: tool calls and messages to the user, in order. The reference
side runs it through the benchmark's own env and grader with a stub user and no model;
castbench's side runs it through `run_trial` (a policy that replays it, a user that
answers "ok" and leaves when asked whether there is anything else) and grades the trial the
`tau` way. `perturbed` builds the trajectories that tell the two apart if anything differs: the
gold with one action dropped, an argument changed to another id of the same form that exists
in the data, a write added, two actions swapped, an output said or left out.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from castbench._agents.protocols import UserReply
from castbench._agents.registry import AgentSpec
from castbench._agents.views import PolicyView, UserBriefing
from castbench._base.conversation import Action, ReplyAction, ToolCallAction, ToolResultTurn
from castbench._base.dialogue import ANYTHING_ELSE, asks_anything_else
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task
from castbench._records.trial import TrialRecord
from castbench._trial.rollout import AgentSet, Limits, TrialSpec, run_trial

__all__ = [
    "Step",
    "Trajectory",
    "castbench_reward",
    "castbench_trial",
    "closing",
    "gold_trajectory",
    "id_pool",
    "perturbed",
    "tau_reward",
    "tool_outputs",
]


@dataclass(frozen=True)
class Step:
    kind: Literal["call", "say"]
    name: str = ""
    arguments: tuple[tuple[str, Any], ...] = ()
    text: str = ""

    @staticmethod
    def call(name: str, arguments: dict[str, Any]) -> Step:
        return Step("call", name, tuple(arguments.items()))

    @staticmethod
    def say(text: str) -> Step:
        return Step("say", text=text)

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.arguments)


Trajectory = tuple[Step, ...]


def closing(outputs: list[str]) -> Step:
    said = f"Here is the information you asked for: {'; '.join(outputs)}. " if outputs else ""
    return Step.say(said + ANYTHING_ELSE)


def gold_trajectory(task: Task) -> Trajectory:
    """The gold calls, then a closing message that says every required output."""
    return (*(Step.call(c.name, c.arguments) for c in task.actions), closing(task.required_outputs))


# -- castbench's side -----------------------------------------------------------------------
class _ReplayPolicy:
    def __init__(self, briefing: Any, trajectory: Trajectory) -> None:
        self._steps = list(trajectory)

    def propose(self, view: PolicyView) -> Action:
        if not self._steps:
            return ReplyAction(text=ANYTHING_ELSE)
        step = self._steps.pop(0)
        if step.kind == "call":
            return ToolCallAction(name=step.name, arguments=step.kwargs)
        return ReplyAction(text=step.text)


class _ReplayUser:
    def __init__(self, briefing: UserBriefing) -> None:
        self._request = briefing.scenario.request

    def open(self) -> str:
        return self._request

    def reply(self, message: str) -> UserReply:
        return UserReply("ok", stop=asks_anything_else(message))


def castbench_trial(
    domain: Domain, task: Task, trajectory: Trajectory, expected: Database, limits: Limits | None = None
) -> TrialRecord:
    """`limits`: by default none the trajectory can reach (a parity check of the ending under a
    benchmark's own limits passes them)."""
    agents = AgentSet(
        policy=AgentSpec("policy", "replay", "replay", lambda b: _ReplayPolicy(b, trajectory)),
        user=AgentSpec("user", "replay", "replay", _ReplayUser),
    )
    limits = limits or Limits(max_steps=len(trajectory) + 5)
    return run_trial(TrialSpec(domain, task, 0, 0, agents, expected, limits, grading="tau"))


def tool_outputs(record: TrialRecord) -> list[str]:
    """What the tools answered in a trial, in order."""
    return [
        step.observation.content
        for step in record.steps
        if isinstance(step.action, ToolCallAction) and isinstance(step.observation, ToolResultTurn)
    ]


def castbench_reward(domain: Domain, task: Task, trajectory: Trajectory, expected: Database) -> float:
    return tau_reward(domain, task, castbench_trial(domain, task, trajectory, expected))


def tau_reward(domain: Domain, task: Task, record: TrialRecord) -> float:
    """The trial's reward as the run recorded it (graded the `tau` way)."""
    if record.reward is None:
        raise RuntimeError(f"{domain.name} {task.id}: trial not graded: {record.error}")
    return record.reward


# -- perturbations --------------------------------------------------------------------------
_ID = re.compile(r"[A-Za-z#_]*\d[\w#-]*")


def _shape(value: str) -> str:
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", value)))


def id_pool(pristine: Any) -> dict[str, list[str]]:
    """Every id-like string of the data (keys and values), by form: `#W9999999`, `9999999999`..."""
    found: set[str] = set()
    stack = [pristine]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(key for key in node if isinstance(key, str) and _ID.fullmatch(key))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and len(node) < 40 and _ID.fullmatch(node):
            found.add(node)
    pool: dict[str, list[str]] = {}
    for value in sorted(found):
        pool.setdefault(_shape(value), []).append(value)
    return pool


def _change_argument(step: Step, pool: dict[str, list[str]], rng: random.Random) -> Step | None:
    choices: list[tuple[int, int | None]] = []
    for position, (_name, value) in enumerate(step.arguments):
        if isinstance(value, str) and len(pool.get(_shape(value), [])) > 1:
            choices.append((position, None))
        elif isinstance(value, list):
            choices += [
                (position, i)
                for i, v in enumerate(value)
                if isinstance(v, str) and len(pool.get(_shape(v), [])) > 1
            ]
    if not choices:
        return None
    position, item = rng.choice(choices)
    name, value = step.arguments[position]
    old = value if item is None else value[item]
    new = rng.choice([candidate for candidate in pool[_shape(old)] if candidate != old])
    value = new if item is None else [*value[:item], new, *value[item + 1 :]]
    arguments = list(step.arguments)
    arguments[position] = (name, value)
    return Step("call", step.name, tuple(arguments))


def _perturb(
    trajectory: Trajectory, task: Task, writes: list[Step], pool: dict[str, list[str]], rng: random.Random
) -> Trajectory | None:
    body, close = list(trajectory[:-1]), trajectory[-1]
    kind = rng.choice(["drop", "argument", "add_write", "reorder", "say", "omit"])
    if kind == "drop" and body:
        del body[rng.randrange(len(body))]
    elif kind == "argument" and body:
        position = rng.randrange(len(body))
        changed = _change_argument(body[position], pool, rng) if body[position].kind == "call" else None
        if changed is None:
            return None
        body[position] = changed
    elif kind == "add_write" and writes:
        body.insert(rng.randrange(len(body) + 1), rng.choice(writes))
    elif kind == "reorder" and len(body) > 1:
        position = rng.randrange(len(body) - 1)
        body[position], body[position + 1] = body[position + 1], body[position]
    elif kind == "say":
        said = [*task.required_outputs, *rng.sample(sorted(pool), min(2, len(pool)))]
        body.append(Step.say(f"To be clear: {', '.join(rng.sample(said, len(said)))}."))
    elif kind == "omit" and task.required_outputs:
        kept = [o for o in task.required_outputs if rng.random() < 0.5]
        close = closing(kept)
    else:
        return None
    return (*body, close)


def perturbed(
    domain: Domain, tasks: list[Task], count: int, seed: int = 0
) -> Iterator[tuple[Task, Trajectory]]:
    """`count` distinct perturbed trajectories, drawn round the tasks, one or two perturbations
    each (seeded)."""
    rng = random.Random(f"tau-parity:{domain.name}:{seed}")
    pool = id_pool(domain.pristine)
    writes = [
        Step.call(call.name, call.arguments)
        for task in tasks
        for call in task.actions
        if domain.toolkit.is_write(call.name)
    ]
    seen: set[str] = set()
    attempts = 0
    while len(seen) < count and attempts < count * 50:
        attempts += 1
        task = tasks[attempts % len(tasks)]
        trajectory: Trajectory | None = gold_trajectory(task)
        for _ in range(rng.choice([1, 1, 2])):
            trajectory = _perturb(trajectory, task, writes, pool, rng) if trajectory else None
        key = repr((task.id, trajectory))
        if trajectory is None or key in seen:
            continue
        seen.add(key)
        yield task, trajectory
