"""The summary made as the trials are stored (`castbench._results.report.streamed`) is the summary made
after the fact from the store: the same figures, cell for cell, over the same run; the read-back
is skipped only when the stream holds every trial the store has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.streamed import StreamedSummary
from castbench._results.report.summary import RunSummary, summarize_run
from castbench._run.api import evaluate

OPTIONS: dict[str, Any] = {
    "domains": "retail",
    "trials": 3,
    "tasks": [f"retail-test-{index:04d}" for index in range(1, 9)],
    "policy": "scripted:noisy",  # fails some trials: attribution, near-misses, failure categories
}


def _after_the_fact(db: str, summary: RunSummary) -> RunSummary:
    store = ResultsStore(db)
    run_id = summary.run_id
    return summarize_run(run_id, store.config(run_id), store.trials(run_id), store.run(run_id).status)


def _cells(summary: RunSummary) -> dict[str, Any]:
    """Everything `summarize_run` derives (the floors and provenance are added after it)."""
    return summary.model_dump(mode="json", exclude={"floors", "provenance"})


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each read of a run's trials, as a list or one at a time (the summary's read-back)."""
    reads: list[str] = []
    trials, iter_trials = ResultsStore.trials, ResultsStore.iter_trials

    def counted(self: ResultsStore, run_id: str, domains: Any = None) -> list[TrialRecord]:
        reads.append(run_id)
        return trials(self, run_id, domains)

    def counted_one_by_one(self: ResultsStore, run_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(run_id)
        return iter_trials(self, run_id, *args, **kwargs)

    monkeypatch.setattr(ResultsStore, "trials", counted)
    monkeypatch.setattr(ResultsStore, "iter_trials", counted_one_by_one)
    return reads


@pytest.mark.parametrize("concurrency", [1, 8])
def test_streamed_cells_equal_the_summary_made_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    reads = _reads(monkeypatch)
    result = evaluate(db=db, concurrency=concurrency, **OPTIONS)
    assert reads == []  # no trial read back: the stream held them all
    overall = result.summary.overall
    assert 0 < overall.pass_hat[1] < 1 and overall.attribution is not None and overall.attribution.not_passed
    assert _cells(result.summary) == _cells(_after_the_fact(db, result.summary))


def test_a_resumed_run_reads_its_earlier_trials_back_and_gets_the_same_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    few = {**OPTIONS, "tasks": OPTIONS["tasks"][:4]}
    evaluate(db=db, **few)
    store = ResultsStore(db)
    run_id = store.runs()[-1].id
    store.db.execute(  # two trials lost: the resume runs them again
        "DELETE FROM trial WHERE id IN (SELECT id FROM trial WHERE run_id = :run ORDER BY id LIMIT 2)",
        {"run": run_id},
    )
    reads = _reads(monkeypatch)
    again = evaluate(db=db, **few)
    assert (again.outcome.resumed, again.outcome.ran) == (True, 2)
    assert reads == [run_id]  # the stream had 2 of 12: the summary read all 12 back
    assert _cells(again.summary) == _cells(_after_the_fact(db, again.summary))


def test_the_stream_gives_way_past_its_limit_and_to_trials_it_did_not_see(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    result = evaluate(db=db, **{**OPTIONS, "tasks": OPTIONS["tasks"][:2]})
    store = ResultsStore(db)
    records = store.trials(result.outcome.run_id)
    full, small, partial = StreamedSummary(), StreamedSummary(most=len(records) - 1), StreamedSummary()
    for record in records:
        full.add(record)
        small.add(record)
    for record in records[1:]:
        partial.add(record)
    kept = full.records(store, result.outcome.run_id)
    assert kept is not None and [r.model_dump() for r in kept] == [r.model_dump() for r in records]
    assert small.records(store, result.outcome.run_id) is None
    assert partial.records(store, result.outcome.run_id) is None
    config = RunConfig.model_validate(result.summary.config)
    streamed = full.summarize(kept, result.outcome.run_id, config, "complete")
    assert _cells(streamed) == _cells(summarize_run(result.outcome.run_id, config, records, "complete"))


def test_a_summary_keeps_no_record_so_its_memory_does_not_grow_with_the_run(tmp_path: Path) -> None:
    """#59: `summarize_run` reads its records once, one at a time: summarising ten times as many
    trials (fresh copies, as a store yields them) peaks at about the same memory."""
    import tracemalloc

    db = f"sqlite:///{tmp_path}/runs.db"
    result = evaluate(db=db, **OPTIONS)
    store = ResultsStore(db)
    records = store.trials(result.outcome.run_id)
    config = RunConfig.model_validate(result.summary.config)
    size = len(TrialRecord.model_validate(records[0].model_dump()).model_dump_json())

    def peak(copies: int) -> int:
        def fresh() -> Any:
            for _ in range(copies):
                for record in records:
                    yield record.model_copy(deep=True)

        tracemalloc.start()
        summarize_run(result.outcome.run_id, config, fresh(), "complete")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    small, large = peak(2), peak(20)
    held = 18 * len(records) * size  # what keeping the extra records would take, at least
    assert large - small < held / 10, (small, large, held)
