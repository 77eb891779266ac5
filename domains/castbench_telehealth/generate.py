"""Rebuild the telehealth domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_telehealth.generate --seed 20260515 [--out DIR]

Only the telehealth parts are declared here; `castbench._authoring.generation` draws the splits,
replays every task's ground truth through the real tools and stops on a broken one before
anything is written.
"""

from __future__ import annotations

import json
from random import Random

from castbench.domain import Generator, Split, customer_pools
from castbench_telehealth import domain
from castbench_telehealth.families import FAMILIES, Pool, equivalents
from castbench_telehealth.schema import Patient
from castbench_telehealth.world import World, build_world

__all__ = ["DEFAULT_SEED", "GENERATOR", "generate", "main"]

TEST_POOL_ADULTS = 100
"""Test tasks draw from these adults (and the minors in their care), train tasks from the rest."""


def _adults(world: World) -> list[Patient]:
    return [patient for patient in world.patients.values() if patient.guardian_id is None]


def _pools(world: World, rng: Random) -> dict[Split, Pool]:
    """Builders also reason on the seed state itself, through one database over it."""
    seed_db = domain.with_state(json.loads(json.dumps(world.state()))).fresh_database()

    def with_minors(world: World, adults: list[Patient], rng: Random) -> Pool:
        ids = {adult.patient_id for adult in adults}
        minors = sorted((p for p in world.patients.values() if p.guardian_id in ids), key=lambda p: p.key)
        return Pool(world, [*adults, *minors], seed_db, rng)

    return customer_pools(_adults, TEST_POOL_ADULTS, with_minors)(world, rng)


GENERATOR = Generator(
    domain, 20260515, build_world, FAMILIES, _pools, max_attempts=300, equivalents=equivalents
)
DEFAULT_SEED, generate, main = GENERATOR.default_seed, GENERATOR.generate, GENERATOR.main

if __name__ == "__main__":
    main()
