"""Topping up a stored run with more trials per task (`eval --add-trials N`).

A CI job whose gate cannot decide yet adds trials to the candidate instead of starting over:
trials n+1..n+N of every planned task run with their own fresh seeds (seeds derive from the
trial index), and pass^k is then estimated from all n+N. The run keeps its id; its stored config
says the new n, so everything derived from the store stays consistent.
"""

from __future__ import annotations

from castbench._records.config import RunConfig, read_config
from castbench._records.store import ResultsStore, last_written

__all__ = ["TopUpError", "top_up"]


class TopUpError(ValueError):
    """Nothing to top up, or the cap is already reached."""


def _same_but_trials(store: ResultsStore, config: RunConfig) -> list[tuple[str, RunConfig]]:
    family = config.hash_except_trials()
    found = []
    for row in sorted(store.runs(), key=last_written):
        try:
            stored = read_config(row.config_json, f"run {row.id}")
        except ValueError:  # unreadable, or from a newer castbench: not this run's family
            continue
        if stored.hash_except_trials() == family:
            found.append((row.id, stored))
    return found


def top_up(store: ResultsStore, config: RunConfig, add: int, cap: int) -> tuple[str, RunConfig, int]:
    """Give the latest stored run with `config`'s options (trials aside) `add` more trials per
    task, at most `cap` in all. Returns its id, its new config and its trials before."""
    if add < 1:
        raise TopUpError(f"--add-trials must be at least 1, got {add}")
    matches = _same_but_trials(store, config)
    if not matches:
        raise TopUpError(
            "no stored run with these options (code and data unchanged) to add trials to: "
            "run `castbench eval` without --add-trials first"
        )
    run_id, stored = matches[-1]
    if stored.trials >= cap:
        raise TopUpError(
            f"run {run_id} already has {stored.trials} trials per task (the cap, --max-trials {cap})"
        )
    topped = stored.model_copy(update={"trials": min(stored.trials + add, cap)})
    store.set_config(run_id, topped)
    return run_id, topped, stored.trials
