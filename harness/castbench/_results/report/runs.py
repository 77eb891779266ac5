"""The stored runs as `castbench runs list` lists them (`--json`: these rows as they are), for
Python callers as well: `run_listing(ResultsStore(db, read_only=True))`."""

from __future__ import annotations

import json
from typing import Any

from castbench._records.config import RunConfig, read_config
from castbench._records.provenance import provenance
from castbench._records.store import ResultsStore

__all__ = ["run_listing", "run_status"]


def run_status(store: ResultsStore, run_id: str, stored: str, config: RunConfig) -> str:
    """The status `runs list` gives: a run stored `complete` with planned trials
    unscored (an imported incomplete run) is `incomplete`."""
    if stored == "complete" and config.planned_tasks:
        planned = sum(len(ids) for ids in config.planned_tasks.values()) * config.trials
        if len(store.scored_keys(run_id)) < planned:
            return "incomplete"
    return stored


def run_listing(store: ResultsStore) -> list[dict[str, Any]]:
    """One row per stored run, oldest first: its id, when, status, agents, trials and provenance."""
    rows = []
    for row in store.runs():
        try:
            config = read_config(row.config_json, f"run {row.id}")
            recorded = provenance(config, json.loads(row.meta_json))
        except ValueError as exc:  # one damaged row: the others still list
            rows.append(_damaged(row, exc))
            continue
        rows.append(
            {
                "id": row.id,
                "created": row.created.isoformat(timespec="seconds"),
                "status": run_status(store, row.id, row.status, config),
                "domains": list(config.domains),
                "policy": config.policy,
                "critic": config.critic,
                "user": config.user,
                "trials_per_task": config.trials,
                "seed": config.seed,
                "trials_stored": store.count_trials(row.id),
                "trial_isolation": recorded.trial_isolation,
                "provenance": recorded.model_dump(mode="json"),
            }
        )
    return rows


def _damaged(row: Any, exc: ValueError) -> dict[str, Any]:
    """The listing of a run whose stored config or meta cannot be read: its id and what is wrong."""
    return {
        "id": row.id,
        "created": row.created.isoformat(timespec="seconds"),
        "status": "damaged",
        "problem": str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        "domains": [],
        "policy": "?",
        "critic": "?",
        "user": "?",
        "trials_per_task": 0,
        "seed": 0,
        "trials_stored": 0,
        "trial_isolation": "",
        "provenance": {},
    }
