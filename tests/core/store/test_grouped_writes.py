"""`ResultsStore.add_trials`, the grouped commit's write: each trial by `add_trial`'s rules (a
scored copy is never stored twice, an errored try is replaced with its attempts counted), and
one digest write per batch that `verify` reads as it read one line per trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._base import places
from castbench._records.store import ResultsStore
from castbench._records.store.digests import _file
from castbench._run.api import evaluate


def test_a_batch_stores_each_trial_once_and_keeps_every_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(places.STATE_ENV, str(tmp_path / "state"))
    db = f"sqlite:///{tmp_path}/runs.db"
    result = evaluate(db=db, domains="retail", trials=10, policy="oracle", tasks=["retail-test-0001"])
    store = ResultsStore(db)
    run_id = result.outcome.run_id
    records = store.trials(run_id)
    errored = records[0].model_copy(
        update={"status": "error", "reward": None, "end_reason": "harness_error", "attempts": 2}
    )
    copy_id, _ = store.open_run(store.config(run_id), {}, fresh=True)
    first = store.add_trials(copy_id, [errored, *records[1:]])
    assert first[0] == errored and first[1:] == records[1:]
    again = store.add_trials(copy_id, records)  # the scored retry replaces the errored try only
    assert again[1:] == [None] * (len(records) - 1)
    assert again[0] is not None and again[0].attempts == records[0].attempts + 2
    assert [r.model_dump() for r in store.trials(copy_id)] == [
        again[0].model_dump(),
        *(r.model_dump() for r in records[1:]),
    ]
    check = store.check_digests(copy_id)
    assert (check.changed, check.unknown) == ([], 0)
    lines = _file(db).read_text().splitlines()  # whole lines: the run's 10, the copy's 10, the retry
    assert len(lines) == 2 * len(records) + 1 and all(line.endswith("}") for line in lines)
