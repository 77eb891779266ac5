"""#59: `castbench export` and `castbench view` read a run one trial at a time and write as they
read: the same bytes as writing the run held whole, and a peak memory that does not grow with
the run (ten times the trials peak at about the same memory)."""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.store.export import (
    GzipStream,
    StoredTrials,
    export_run,
    read_export,
    stream_run,
    write_export,
)
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench_boards.viewer import render_run_page, write_run_page
from castbench_boards.viewer.payload import decode_trials

OPTIONS: dict[str, Any] = {
    "domains": "retail",
    "trials": 2,
    "tasks": [f"retail-test-{index:04d}" for index in range(1, 6)],
    "policy": "scripted:noisy",  # passes and fails: several bodies, failure categories
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(db, run id) of a small stored run."""
    db = f"sqlite:///{tmp_path_factory.mktemp('streamed')}/runs.db"
    result = evaluate(db=db, **OPTIONS)
    return db, result.outcome.run_id


def grown(db: str, run_id: str, copies: int) -> str:
    """A run of `copies` times the base run's trials per task (each copy's trials renumbered and
    reseeded, as a store holds the trials of a longer run), stored through the store's writer."""
    store = ResultsStore(db)
    config = store.config(run_id)
    records = store.trials(run_id)
    bigger = config.model_copy(update={"trials": config.trials * copies})
    new_id, _ = store.open_run(bigger, {"grown_from": run_id})
    if store.count_trials(new_id) == 0:
        store.add_trials(
            new_id,
            [
                record.model_copy(
                    update={
                        "trial_index": copy * config.trials + record.trial_index,
                        "seed": record.seed + 7919 * copy,
                    }
                )
                for copy in range(copies)
                for record in records
            ],
        )
        store.set_status(new_id, "complete")
    return new_id


def test_an_export_written_as_it_reads_is_the_export_of_the_run_held_whole(
    base: tuple[str, str], tmp_path: Path
) -> None:
    db, run_id = base
    store = ResultsStore(db, read_only=True)
    run_id = grown(db, run_id, 3)
    streamed, held = tmp_path / "streamed.castbench.json.gz", tmp_path / "held.castbench.json.gz"
    exported = stream_run(store, run_id)
    assert isinstance(exported.trials, StoredTrials)
    assert len(exported.trials) == 30
    size = write_export(exported, streamed)
    write_export(export_run(store, run_id), held)
    assert streamed.read_bytes() == held.read_bytes()
    packed = streamed.read_bytes()
    assert size == len(packed)
    # the bytes one `gzip.compress` of the whole text gives: the stream's compressor is the same
    assert gzip.compress(gzip.decompress(packed), compresslevel=9, mtime=0) == packed
    back = read_export(streamed)

    def key(t: TrialRecord) -> tuple[Any, ...]:  # durations are kept to the microsecond
        return (t.task_id, t.trial_index, t.seed, t.reward, t.opening, len(t.steps))

    assert [key(t) for t in back.trials] == [key(t) for t in store.trials(run_id)]
    assert not list(tmp_path.glob(".*.part"))


def test_the_gzip_stream_is_gzip_compress_however_the_text_comes() -> None:
    text = "".join(json.dumps({"n": i, "s": "x" * (i % 97)}) for i in range(20_000))
    out = io.BytesIO()
    packer = GzipStream(out)
    step = 1
    at = 0
    while at < len(text):  # pieces of 1 to 4,096 characters
        packer.write(text[at : at + step])
        at += step
        step = step * 3 % 4_096 + 1
    assert packer.close() == len(out.getvalue())
    assert out.getvalue() == gzip.compress(text.encode(), compresslevel=9, mtime=0)


def test_a_failed_read_leaves_no_export(base: tuple[str, str], tmp_path: Path) -> None:
    db, run_id = base
    exported = stream_run(ResultsStore(db, read_only=True), run_id)

    def broken() -> Any:
        yield from list(exported.trials)[:3]
        raise RuntimeError("the store went away")

    target = tmp_path / "run.castbench.json.gz"
    with pytest.raises(RuntimeError):
        write_export(exported.model_copy(update={"trials": broken()}), target)
    assert list(tmp_path.iterdir()) == []


def test_a_page_written_as_it_reads_is_the_page_of_the_run_held_whole(base: tuple[str, str]) -> None:
    db, run_id = base
    store = ResultsStore(db, read_only=True)
    run_id = grown(db, run_id, 3)
    config = store.config(run_id)
    out = io.StringIO()
    written = write_run_page(out, run_id, config, store.iter_trials(run_id))
    held = render_run_page(run_id, config, list(reversed(store.trials(run_id))))
    assert out.getvalue() == held
    assert written == len(held)
    data = held.split('id="trials-data">', 1)[1].split("<", 1)[0]
    payloads = decode_trials(data)
    assert [(p["task_id"], p["trial_index"]) for p in payloads] == [
        (t.task_id, t.trial_index) for t in store.trials(run_id)
    ]
    assert held.count('class="mark ') == 30


def _peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _record_size(store: ResultsStore, run_id: str) -> int:
    record = store.trials(run_id)[0]
    return len(TrialRecord.model_validate(record.model_dump()).model_dump_json())


@pytest.mark.parametrize("what", ["export", "view"])
def test_writing_ten_times_the_trials_peaks_at_about_the_same_memory(
    base: tuple[str, str], tmp_path: Path, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store reads rows a batch at a time (256); batches of 8 here, so that both runs are
    many batches and what grows is what the writer keeps."""
    db, run_id = base
    iter_trials = ResultsStore.iter_trials
    monkeypatch.setattr(
        ResultsStore,
        "iter_trials",
        lambda self, run, *a, **k: iter_trials(self, run, *a, **{**k, "batch": 8}),
    )
    small, large = grown(db, run_id, 2), grown(db, run_id, 20)
    store = ResultsStore(db, read_only=True)

    def write(run: str) -> Callable[[], object]:
        if what == "export":
            return lambda: write_export(stream_run(store, run), tmp_path / f"{run}.castbench.json.gz")
        config: RunConfig = store.config(run)

        def page() -> None:
            with (tmp_path / f"{run}.html").open("w", encoding="utf-8") as out:
                write_run_page(out, run, config, store.iter_trials(run))

        return page

    write(small)()  # warm: imports, templates, caches
    low, high = _peak(write(small)), _peak(write(large))
    extra = store.count_trials(large) - store.count_trials(small)
    held = extra * _record_size(store, run_id)  # what holding the extra records takes, at least
    assert high - low < held / 10, (low, high, held)
