"""#59: `castbench export --format inspect` writes a `.eval` log one sample at a time, as Inspect's
recorder lays it out: Inspect's own `read_eval_log` reads back what it reads from Inspect's own
writer given the log held whole (but for the ids Inspect draws at random), and ten times the
trials hold no sample and no entry of the zip's directory (spooled to a temporary file)."""

from __future__ import annotations

import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, stream_run
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench_bridges.inspect_log import inspect_log, write_inspect_log
from tests.core.store.test_streamed_writers import grown

OPTIONS: dict[str, Any] = {
    "domains": "retail",
    "trials": 2,
    "tasks": [f"retail-test-{index:04d}" for index in range(1, 6)],
    "policy": "scripted:noisy",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    db = f"sqlite:///{tmp_path_factory.mktemp('inspect-streamed')}/runs.db"
    return db, evaluate(db=db, **OPTIONS).outcome.run_id


def _without_random_ids(value: Any) -> Any:
    """The log as JSON without the ids Inspect draws for each log, message and sample."""
    if isinstance(value, dict):
        return {k: _without_random_ids(v) for k, v in value.items() if k not in ("id", "eval_id", "uuid")}
    if isinstance(value, list):
        return [_without_random_ids(item) for item in value]
    return value


def test_a_streamed_eval_log_reads_back_as_the_log_held_whole(base: tuple[str, str], tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    db, run_id = base
    store = ResultsStore(db, read_only=True)
    target = tmp_path / "run.eval"
    write_inspect_log(stream_run(store, run_id), target)
    read = read_eval_log(str(target))
    whole = tmp_path / "whole.eval"  # Inspect's own writer, over the log held whole
    write_eval_log(inspect_log(export_run(store, run_id)), str(whole))
    held = read_eval_log(str(whole))
    assert read.samples is not None and len(read.samples) == 10
    exclude = {"location", "etag"}
    assert _without_random_ids(read.model_dump(mode="json", exclude=exclude)) == _without_random_ids(
        held.model_dump(mode="json", exclude=exclude)
    )
    assert not list(tmp_path.glob(".*.part"))
    with zipfile.ZipFile(target) as archive:  # Inspect's compression, every member whole
        assert archive.testzip() is None and len(archive.namelist()) == 10 + 3
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_ZSTANDARD}  # type: ignore[attr-defined]


def test_an_eval_log_of_ten_times_the_trials_holds_no_sample(
    base: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, run_id = base
    iter_trials = ResultsStore.iter_trials

    def small_batches(self: ResultsStore, run: str, *args: Any, **kwargs: Any) -> Any:
        return iter_trials(self, run, *args, **{**kwargs, "batch": 8})

    monkeypatch.setattr(ResultsStore, "iter_trials", small_batches)
    small, large = grown(db, run_id, 2), grown(db, run_id, 20)
    store = ResultsStore(db, read_only=True)

    def peak(run: str) -> int:
        tracemalloc.start()
        try:
            write_inspect_log(stream_run(store, run), tmp_path / f"{run}.eval")
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    write_inspect_log(stream_run(store, small), tmp_path / "warm.eval")  # imports, caches
    low, high = peak(small), peak(large)
    record = store.trials(run_id)[0]
    size = len(TrialRecord.model_validate(record.model_dump()).model_dump_json())
    held = (store.count_trials(large) - store.count_trials(small)) * size
    # no sample, record or directory entry stays: the zip's directory waits in a temporary file
    # (it was a `ZipInfo` per sample, ~0.55 KB), the summaries are copied 64 KiB at a time (the
    # growth left, ~80 KB here); holding the samples took several times the records
    assert high - low < held / 12, (low, high, held)


def test_a_streamed_json_log_is_the_text_inspect_writes_of_the_log_held_whole(
    base: tuple[str, str], tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    db, run_id = base
    store = ResultsStore(db, read_only=True)
    target = tmp_path / "run.json"
    write_inspect_log(stream_run(store, run_id), target)
    whole = tmp_path / "whole.json"  # Inspect's own writer, over the log held whole
    log = inspect_log(export_run(store, run_id))
    write_eval_log(log, str(whole))
    # the same text but for the ids Inspect draws at random: made equal, then compared as bytes
    streamed = read_eval_log(str(target))
    assert streamed.samples is not None and len(streamed.samples) == 10
    order = [(sample.epoch, str(sample.id)) for sample in streamed.samples]
    assert order == sorted(order)  # Inspect's order: by epoch, then id
    ids = _random_ids(whole.read_bytes())
    assert ids and len(ids) == len(_random_ids(target.read_bytes()))
    assert _ids_blanked(target.read_bytes()) == _ids_blanked(whole.read_bytes())
    assert not list(tmp_path.glob(".*.part"))


def _random_ids(text: bytes) -> list[bytes]:
    import re

    return re.findall(rb'"(?:id|eval_id|uuid)": "[^"]*"', text)


def _ids_blanked(text: bytes) -> bytes:
    import re

    return re.sub(rb'"(id|eval_id|uuid)": "[^"]*"', rb'"\1": ""', text)
