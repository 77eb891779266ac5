"""Drawing and checking private splits (`castbench tasks generate`, `domains validate --tasks-file`).

A private split is drawn by the domain's own generator (`castbench_authoring.generation`) from the
same world as the public splits (the state under data/ is the world of the generator's default
seed, so the split runs on the domain as installed) and from the test split's customer pool, in
the test split's family mix scaled to the count asked for (largest remainders), with the
generator's stream re-seeded from the private seed once the world and pools are built. Its
refusal wordings are catalogued over the public splits too, so what a reply must not claim is
worked out as for a public task. A draft whose ground truth is a public task's (the same calls,
declined calls, outputs and outcome) is drawn again: no private task duplicates a public one.
Every task is checked as a generated public one is before the file is written; a split's file is
checked by the core (`domains validate --tasks-file`, `castbench_authoring.validate.private_problems`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from random import Random
from typing import Any

from castbench._domain.private import PrivateSplit, digest_tasks, split_name
from castbench.domain import Domain
from castbench_authoring.generation import GenerationError, Generator, dump_state
from castbench_authoring.validate import duplicates, ground_truth, private_problems, task_truth

__all__ = [
    "domain_generator",
    "duplicates",
    "family_mix",
    "generate_private",
    "private_problems",
    "write_private",
]


def domain_generator(domain: Domain) -> Generator[Any, Any, Any]:
    """The generator of a castbench domain (its package's `generate.GENERATOR`); a published task
    pack has none: `GenerationError`."""
    package = type(domain).__module__.split(".")[0] if type(domain) is not Domain else domain.root.name
    try:
        module = importlib.import_module(f"{package}.generate")
    except ModuleNotFoundError:
        module = None
    generator = getattr(module, "GENERATOR", None)
    if not isinstance(generator, Generator):
        raise GenerationError(
            f"domain {domain.name} has no task generator (its tasks are published, not generated)"
        )
    return generator


def family_mix(test_counts: Mapping[str, int], count: int) -> dict[str, int]:
    """`count` tasks shared among the families as the test split shares its own (largest
    remainders, ties to the earlier family)."""
    if count < 1:
        raise ValueError(f"a private split needs at least one task, got {count}")
    total = sum(test_counts.values())
    exact = {family: count * share / total for family, share in test_counts.items()}
    mix = {family: int(value) for family, value in exact.items()}
    left = count - sum(mix.values())
    for family in sorted(exact, key=lambda name: -(exact[name] - mix[name]))[:left]:
        mix[family] += 1
    return mix


def generate_private(domain: Domain, seed: int, count: int) -> PrivateSplit:
    """A fresh, checked private split of `count` tasks of `domain` from `seed`."""
    generator = domain_generator(domain)
    rng = Random(generator.default_seed)
    world = generator.build_world(rng)
    state = world.state()
    if dump_state(state) != (domain.root / "data" / "state.json").read_text():
        raise GenerationError(
            f"domain {domain.name}: data/state.json is not its generator's world (seed "
            f"{generator.default_seed}): regenerate the domain first"
        )
    pools = generator.pools(world, rng)
    rng.seed(f"castbench-private:{domain.name}:{seed}")  # the pools draw from this stream
    public = [task for split in ("test", "train") for task in domain.tasks(split)]
    seen = {task_truth(task) for task in public}
    mix = family_mix({family: test for family, (_, test, _) in generator.families.items()}, count)

    def public_copy(draft: Any) -> bool:
        truth = ground_truth(draft.actions, draft.declined_actions, draft.required_outputs, draft.outcome)
        if truth in seen:
            return True
        seen.add(truth)  # nor twice within the split
        return False

    drawn = generator.draw_split(pools["test"], "test", world, counts=mix, skip=public_copy)
    tasks = generator.with_claims(state, {"test": drawn}, others=public)["test"]
    generator.check(state, {"test": tasks})
    digest = digest_tasks(tasks)
    name = split_name(digest)
    named = [
        task.model_copy(update={"id": f"{domain.name}-{name}-{number:04d}", "split": name})
        for number, task in enumerate(tasks, start=1)
    ]
    return PrivateSplit(
        domain=domain.name, domain_version=domain.version, digest=digest, families=mix, tasks=named
    )


def write_private(split: PrivateSplit, out: Path) -> None:
    """The split as one JSON file (tasks without their defaults, as task files are written)."""
    document = split.model_dump(mode="json", exclude={"tasks"})
    document["tasks"] = [task.model_dump(mode="json", exclude_defaults=True) for task in split.tasks]
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
