"""Rebuild the telehealth domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_telehealth.generate --seed 20260515 [--out DIR]

Every task's ground truth is replayed through the real tools before anything is written: a task
that errors, or whose state change does not match its outcome, stops the generator.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from random import Random
from typing import Any

from castbench.domain import Database, Task, ToolCall, Toolkit, UserScenario
from castbench.domain.database import Row
from castbench_telehealth import NOW
from castbench_telehealth.families import FAMILIES, Draft, Pool
from castbench_telehealth.schema import Patient
from castbench_telehealth.tools import TOOLS
from castbench_telehealth.world import build_world

__all__ = ["DEFAULT_SEED", "check", "generate", "main"]

DEFAULT_SEED = 20260515
TEST_POOL_ADULTS = 100
"""Test tasks draw from these adults (and the minors in their care), train tasks from the rest."""
MAX_ATTEMPTS = 300


def _task(draft: Draft, split: str, number: int) -> Task:
    return Task(
        id=f"telehealth-{split}-{number:04d}",
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


def _split(pool: Pool, split: str) -> list[Task]:
    drafts: list[Draft] = []
    for family, (build, test_count, train_count) in FAMILIES.items():
        wanted = test_count if split == "test" else train_count
        made = 0
        for _ in range(MAX_ATTEMPTS):
            if made == wanted:
                break
            draft = build(pool)
            if draft is not None:
                drafts.append(draft)
                made += 1
        if made < wanted:
            raise RuntimeError(f"family {family}: only {made} of {wanted} {split} tasks found entities")
    pool.rng.shuffle(drafts)
    return [_task(draft, split, number) for number, draft in enumerate(drafts, start=1)]


def _replay(
    toolkit: Toolkit, snapshot: dict[str, dict[str, Row]], calls: list[ToolCall], task: Task
) -> tuple[Database, str]:
    """The state after `calls`, and everything the tools said on the way."""
    db = Database(snapshot, NOW)
    said = []
    for call in calls:
        observation = toolkit.call(db, call.name, call.arguments)
        if observation.error:
            raise RuntimeError(f"task {task.id} ({task.family}): {call.name} failed: {observation.content}")
        said.append(observation.content)
    return db, " ".join(said)


def check(tasks: list[Task], snapshot: dict[str, dict[str, Row]]) -> None:
    """Every ground truth replays; state changes iff the outcome is a change; a declined write
    would have succeeded; required outputs appear in what the tools said."""
    toolkit = Toolkit(TOOLS)
    for task in tasks:
        db, said = _replay(toolkit, snapshot, task.actions, task)
        if db.has_changes() != (task.outcome == "change"):
            raise RuntimeError(
                f"task {task.id} ({task.family}): outcome {task.outcome} but has_changes={db.has_changes()}"
            )
        _replay(toolkit, snapshot, [*task.actions, *task.declined_actions], task)
        for output in task.required_outputs:
            if output not in said:
                raise RuntimeError(
                    f"task {task.id} ({task.family}): required output {output!r} is never shown"
                )


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
    adults = sorted((p for p in world.patients.values() if p.guardian_id is None), key=lambda p: p.patient_id)
    rng.shuffle(adults)

    def with_minors(group: list[Patient]) -> list[Patient]:
        ids = {p.patient_id for p in group}
        minors = sorted(
            (p for p in world.patients.values() if p.guardian_id in ids), key=lambda p: p.patient_id
        )
        return [*group, *minors]

    seed_db = Database(snapshot, NOW)
    splits = {
        "test": _split(Pool(world, with_minors(adults[:TEST_POOL_ADULTS]), seed_db, rng), "test"),
        "train": _split(Pool(world, with_minors(adults[TEST_POOL_ADULTS:]), seed_db, rng), "train"),
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent, help="package root by default")
    args = parser.parse_args(argv)
    splits = generate(args.seed, args.out)
    for split, tasks in splits.items():
        print(f"{split}: {len(tasks)} tasks -> {args.out / 'tasks' / f'{split}.json'}")


if __name__ == "__main__":
    main()
