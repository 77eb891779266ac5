"""Rebuild the airline domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_airline.generate --seed 20260515 [--out DIR]

Only the airline parts are declared here; `castbench._authoring.generation` draws the splits (up to
300 tries per family), replays every task's ground truth through the real tools and stops on a
broken one (an error, a state change that does not match its outcome, unordered writes that do
not commute) before anything is written. Test tasks draw from 80 customers, train from the rest.
"""

from __future__ import annotations

from castbench.domain import Generator, customer_pools
from castbench_airline import domain
from castbench_airline.families import FAMILIES, Pool
from castbench_airline.world import build_world

__all__ = ["DEFAULT_SEED", "GENERATOR", "generate", "main"]

_POOLS = customer_pools(lambda world: world.users.values(), 80, Pool)
GENERATOR = Generator(domain, 20260515, build_world, FAMILIES, _POOLS, max_attempts=300)
DEFAULT_SEED, generate, main = GENERATOR.default_seed, GENERATOR.generate, GENERATOR.main

if __name__ == "__main__":
    main()
