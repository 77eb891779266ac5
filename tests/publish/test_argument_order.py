"""A stored trajectory is what the agent saw: tool arguments keep the order the agent gave them in
the store, in an exported run and on the viewer's page (exports sorted every key, so the oracle's
`modify_pending_order_address(order_id, address1, ...)` came back alphabetised)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, read_export, write_export
from castbench._run.api import evaluate
from castbench_boards.viewer.payload import decode_trials, encode_trials
from tests.support import sqlite_url

TASK = "retail-test-0004"
"""Its oracle calls modify_pending_order_address with keys that are not in sorted order."""


def _argument_orders(trials: list[dict[str, Any]]) -> list[list[str]]:
    return [
        list(step["action"]["arguments"])
        for trial in trials
        for step in trial["steps"]
        if step["action"]["kind"] == "tool_call" and isinstance(step["action"]["arguments"], dict)
    ]


def test_exports_and_the_viewer_keep_the_agents_argument_order(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    run_id = evaluate(db=db, domains="retail", policy="oracle", tasks=[TASK], trials=1).outcome.run_id
    store = ResultsStore(db)
    stored = _argument_orders([json.loads(record.model_dump_json()) for record in store.trials(run_id)])
    assert any(keys != sorted(keys) for keys in stored)  # the case this test is about

    path = tmp_path / "run.castbench.json.gz"
    write_export(export_run(store, run_id), path)
    exported = json.loads(gzip.decompress(path.read_bytes()))
    bodies = [exported["bodies"][trial["body"]] for trial in exported["trials"]]  # stored once each
    assert _argument_orders(bodies) == stored
    assert _argument_orders([json.loads(t.model_dump_json()) for t in read_export(path).trials]) == stored

    page = decode_trials(encode_trials(store.trials(run_id)))
    shown = [
        list(step["action"]["arguments"])
        for trial in page
        for step in trial.get("steps", [])
        if isinstance(step.get("action"), dict) and isinstance(step["action"].get("arguments"), dict)
    ]
    assert shown == stored
