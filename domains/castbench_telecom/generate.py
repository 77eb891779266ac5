"""Rebuild the telecom domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_telecom.generate --seed 20260515 [--out DIR]

Only the telecom parts are declared here; `castbench._authoring.generation` draws the splits, replays
every task's ground truth (agent and customer actions alike) through the real tools and stops on
a broken one before anything is written. Test tasks draw from 100 customers, train from the rest.
"""

from __future__ import annotations

from castbench.domain import Generator, Split, Task, customer_pools, task_from_draft
from castbench_telecom import domain
from castbench_telecom.families import FAMILIES
from castbench_telecom.scenario import Draft, Pool, equivalents
from castbench_telecom.world import build_world

__all__ = ["DEFAULT_SEED", "GENERATOR", "generate", "main"]


def _task(draft: Draft, task_id: str, split: Split) -> Task:
    """Telecom drafts also carry the customer's device steps and how the state is compared."""
    return task_from_draft(draft, task_id, split, device_steps=draft.customer_steps(), grading=draft.grading)


_POOLS = customer_pools(lambda world: world.customers.values(), 100, Pool)
GENERATOR = Generator(domain, 20260515, build_world, FAMILIES, _POOLS, to_task=_task, equivalents=equivalents)
DEFAULT_SEED, generate, main = GENERATOR.default_seed, GENERATOR.generate, GENERATOR.main

if __name__ == "__main__":
    main()
