"""Per-trial seeds that depend only on (run seed, domain, task id, trial index): never on the
order trials run in, the concurrency, or which trials a resumed run still had to do."""

from __future__ import annotations

import hashlib

__all__ = ["trial_seed"]


def trial_seed(run_seed: int, domain: str, task_id: str, trial_index: int) -> int:
    digest = hashlib.sha256(f"{run_seed}|{domain}|{task_id}|{trial_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
