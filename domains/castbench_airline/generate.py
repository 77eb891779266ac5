"""Rebuild the airline domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_airline.generate --seed 20260515 [--out DIR]

Every task's ground truth is replayed through the real tools before anything is written: a task
that errors, whose state change does not match its outcome, or whose unordered writes do not
commute stops the generator.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from random import Random
from typing import Any

from castbench.domain import Database, Task, ToolCall, Toolkit, UserScenario
from castbench.domain.database import Row
from castbench_airline.families import FAMILIES, Draft, Pool
from castbench_airline.timeline import NOW
from castbench_airline.tools import TOOLS
from castbench_airline.world import build_world

__all__ = ["DEFAULT_SEED", "generate", "main"]

DEFAULT_SEED = 20260515
TEST_POOL_USERS = 80
"""Test tasks draw from these customers, train tasks from the rest."""
MAX_ATTEMPTS = 300


def _task(draft: Draft, split: str, number: int) -> Task:
    return Task(
        id=f"airline-{split}-{number:04d}",
        split=split,  # type: ignore[arg-type]
        family=draft.family,
        outcome=draft.outcome,  # type: ignore[arg-type]
        scenario=UserScenario(
            request=draft.request,
            facts=draft.facts,
            confirm=draft.confirm,
            persona=draft.persona,
            instructions=draft.instructions(),
        ),
        actions=draft.actions,
        declined_actions=draft.declined_actions,
        required_outputs=draft.required_outputs,
        ordered=draft.ordered,
    )


def _drafts(pool: Pool, split: str) -> list[Draft]:
    drafts: list[Draft] = []
    for family, (build, test_count, train_count) in FAMILIES.items():
        wanted = test_count if split == "test" else train_count
        made = [draft for draft in drafts if draft.family == family]
        for _ in range(MAX_ATTEMPTS):
            if len(made) >= wanted:
                break
            draft = build(pool)
            if draft is not None and draft.family == family:
                made.append(draft)
                drafts.append(draft)
        if len(made) < wanted:
            raise RuntimeError(f"family {family}: only {len(made)} of {wanted} {split} tasks found entities")
    return drafts


def _split(pool: Pool, split: str) -> list[Task]:
    drafts = _drafts(pool, split)
    pool.rng.shuffle(drafts)
    return [_task(draft, split, number) for number, draft in enumerate(drafts, start=1)]


def _replay(
    toolkit: Toolkit, snapshot: dict[str, dict[str, Row]], calls: list[ToolCall], task: Task
) -> Database:
    db = Database(snapshot, NOW)
    for call in calls:
        observation = toolkit.call(db, call.name, call.arguments)
        if observation.error:
            raise RuntimeError(f"task {task.id} ({task.family}): {call.name} failed: {observation.content}")
    return db


def check(tasks: list[Task], snapshot: dict[str, dict[str, Row]]) -> None:
    """Ground truth replays; state changes iff the outcome is a change; declined writes would
    succeed; unordered writes commute."""
    toolkit = Toolkit(TOOLS)
    for task in tasks:
        db = _replay(toolkit, snapshot, task.actions, task)
        if db.has_changes() != (task.outcome == "change"):
            raise RuntimeError(
                f"task {task.id} ({task.family}): outcome {task.outcome}, has_changes={db.has_changes()}"
            )
        if task.declined_actions:
            _replay(toolkit, snapshot, [*task.actions, *task.declined_actions], task)
        writes = [call for call in task.actions if toolkit.is_write(call.name)]
        if not task.ordered and len(writes) > 1:
            reads = [call for call in task.actions if not toolkit.is_write(call.name)]
            twin = _replay(toolkit, snapshot, reads + writes[::-1], task)
            if twin.materialize() != db.materialize():
                raise RuntimeError(f"task {task.id} ({task.family}): write order changes the final state")


def _dump_state(state: dict[str, dict[str, Row]]) -> str:
    """One row per line: small, and diffs of the seed data stay readable."""
    tables = []
    for table, rows in state.items():
        lines = [
            f"  {json.dumps(key)}: {json.dumps(row, separators=(',', ':'))}" for key, row in rows.items()
        ]
        body = "{\n" + ",\n".join(lines) + "\n }" if lines else "{}"
        tables.append(f" {json.dumps(table)}: {body}")
    return "{\n" + ",\n".join(tables) + "\n}\n"


def _dump_tasks(tasks: list[Task]) -> str:
    data: list[Any] = [task.model_dump(mode="json", exclude_defaults=True) for task in tasks]
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def generate(seed: int = DEFAULT_SEED, out: Path | None = None) -> dict[str, list[Task]]:
    """Build state and tasks for `seed`, check them, and write them under `out` (data/, tasks/)."""
    rng = Random(seed)
    world = build_world(rng)
    state = world.state()
    snapshot: dict[str, dict[str, Row]] = json.loads(json.dumps(state))
    users = sorted(world.users.values(), key=lambda user: user.user_id)
    rng.shuffle(users)
    splits = {
        "test": _split(Pool(world, users[:TEST_POOL_USERS], rng), "test"),
        "train": _split(Pool(world, users[TEST_POOL_USERS:], rng), "train"),
    }
    for tasks in splits.values():
        check(tasks, snapshot)
    if out is not None:
        (out / "data").mkdir(parents=True, exist_ok=True)
        (out / "tasks").mkdir(parents=True, exist_ok=True)
        (out / "data" / "state.json").write_text(_dump_state(state))
        for split, tasks in splits.items():
            (out / "tasks" / f"{split}.json").write_text(_dump_tasks(tasks))
    return splits


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent, help="package root by default")
    args = parser.parse_args(argv)
    splits = generate(args.seed, args.out)
    for split, tasks in splits.items():
        print(f"{split}: {len(tasks)} tasks -> {args.out / 'tasks' / f'{split}.json'}")


if __name__ == "__main__":
    main()
