"""A run's summary cells made as its trials are stored, rather than after the last one.

After the last model answer, `castbench eval` read every trial of the run back from the store
(JSON parsed and validated: 0.4 s for 1,024 trials) and judged each for the attribution shares
(`castbench._results.attribution.shares.judge_trial`, most of `summarize_run`'s time), while the user
waited (`bench/whole_command_latency.py`). `StreamedSummary` hears each record as the engine's
writer stores it (`run_eval(on_stored=...)`): it keeps the record as stored and judges it then,
while the run still waits on its model server (and, at the first, loads what the summary
loads on first use). At the end `summarize_run` reads those records, in
the store's order, with their judgements made: the same function over the same records, so the
summary is the one reading the store back gives (`tests/core/report/test_streamed_summary.py`).

It stands in for the read-back only where it holds every trial the store has for the run (a new
run that this process alone played: not a resume with trials stored before, nor a shared run
other workers add to), and at most `STREAM_MOST` trials, beyond which keeping every record in
memory costs more than reading them back; otherwise `records` is None and the caller reads.
"""

from __future__ import annotations

import threading
from contextlib import suppress

from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.attribution.shares import TrialJudgement, judge_trial
from castbench._results.report.summary import RunSummary, summarize_run

__all__ = ["STREAM_MOST", "StreamedSummary", "TrialKey", "trial_key"]

STREAM_MOST = 2_000
"""Trials kept in memory at most (about 50 KB each); a larger run's summary reads its trials back,
one at a time, with the judgements made here (kept for every trial: a few hundred bytes each)."""

TrialKey = tuple[str, str, int]
"""(domain, task id, trial index): a trial of one run."""


def trial_key(record: TrialRecord) -> TrialKey:
    return (record.domain, record.task_id, record.trial_index)


class StreamedSummary:
    def __init__(self, most: int = STREAM_MOST) -> None:
        self.config: RunConfig | None = None
        """The run's config, once known (for the warm-up)."""
        self._records: list[TrialRecord] = []
        self._judged: dict[TrialKey, TrialJudgement] = {}
        self._most = most
        self._overflowed = False
        self._seen = 0
        self._lock = threading.Lock()

    def add(self, record: TrialRecord) -> None:
        """One record as stored (called from the engine's committing thread). A record the rules
        cannot judge is left for `summarize_run` to judge, and fail on, as it would have: a
        summary's error must not stop the run's commits."""
        with self._lock:
            self._seen += 1
            first = self._seen == 1
            if not self._overflowed:
                if len(self._records) >= self._most:
                    self._overflowed = True
                    self._records.clear()
                else:
                    self._records.append(record)
        if first:
            self._warm_up(record)
        try:
            judgement = judge_trial(record)
        except Exception:  # noqa: BLE001 - judged again, and raised, by summarize_run
            return
        with self._lock:
            self._judged[trial_key(record)] = judgement

    @property
    def judged(self) -> dict[TrialKey, TrialJudgement]:
        """The judgements made so far, by trial (`summarize_run`'s `judged`)."""
        with self._lock:
            return dict(self._judged)

    def _warm_up(self, record: TrialRecord) -> None:
        """Summarise the first record alone, while the run still waits on its model: what
        `summarize_run` loads or builds on first use then happens off the user's wait (numpy and
        its random generators for the bootstrap intervals, imported only when asked to keep
        start-up short; the summary models' validators): 0.3-0.5 s after the last trial before.
        The figures are thrown away."""
        if self.config is None:
            return
        with suppress(Exception):  # summarize_run raises it again, at the end, where it belongs
            summarize_run("warm-up", self.config, [record])

    def records(self, store: ResultsStore, run_id: str) -> list[TrialRecord] | None:
        """Every trial the store holds for `run_id`, in the store's order, when this holds them
        all; None when the caller must read them back."""
        with self._lock:
            if self._overflowed:
                return None
            records = list(self._records)
        if store.trials_version(run_id)[0] != len(records):
            return None
        keys = {(r.domain, r.task_id, r.trial_index) for r in records}
        if len(keys) != len(records):
            return None
        return sorted(records, key=lambda r: (r.domain, r.task_id, r.trial_index))

    def summarize(
        self, records: list[TrialRecord], run_id: str, config: RunConfig, run_status: str | None
    ) -> RunSummary:
        """`summarize_run` over `records` (from `records`) with the judgements made as they came."""
        return summarize_run(run_id, config, records, run_status, judged=self.judged)
