"""Rebuild the retail domain's seed state and task splits from one seed, byte-identically.

    python -m castbench_retail.generate --seed 20261129 [--out DIR]

Only the retail parts are declared here; `castbench._authoring.generation` draws the splits, replays
every task's ground truth through the real tools and stops on a broken one before anything is
written. Test tasks draw from 150 customers, train tasks from the rest.
"""

from __future__ import annotations

from castbench.domain import Generator, customer_pools
from castbench_retail import domain
from castbench_retail.families import FAMILIES, Pool, equivalents
from castbench_retail.world import build_world

__all__ = ["DEFAULT_SEED", "GENERATOR", "generate", "main"]

_POOLS = customer_pools(lambda world: world.users.values(), 150, Pool)
GENERATOR = Generator(domain, 20261129, build_world, FAMILIES, _POOLS, equivalents=equivalents)
DEFAULT_SEED, generate, main = GENERATOR.default_seed, GENERATOR.generate, GENERATOR.main

if __name__ == "__main__":
    main()
