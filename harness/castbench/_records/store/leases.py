"""Claims with leases: how several `castbench eval` processes split one run in a shared store.

A worker claims a trial by writing a `claim` row that names it and a lease (the database's clock
plus `lease_s`). A heartbeat renews the leases of the trials it is running; when the trial is
stored, its claim is marked done. A worker that dies stops renewing, its leases run out and the
trials become claimable again, so the others run them. A trial whose scored record is stored is
never claimed again; one that ended in an error (an infrastructure failure after its retries) is
claimable again only by a worker that started after it ended: a later invocation retries it, as
a resumed run does, while the workers of this one do not loop on it.

All times are the database's, so workers on machines with different clocks agree. Postgres only
(`INSERT ... ON CONFLICT ... RETURNING`).
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime
from typing import NamedTuple

from castbench._records.store.database import POSTGRES, Database

__all__ = ["Leases", "TrialKey", "WorkerStatus", "workers"]

TrialKey = tuple[str, str, int]


_CLAIM = """
    INSERT INTO claim (run_id, domain, task_id, trial_index, worker_id, state, lease_until)
    VALUES (:run_id, :domain, :task_id, :trial_index, :worker, 'running',
            now() + make_interval(secs => :lease_s))
    ON CONFLICT (run_id, domain, task_id, trial_index) DO UPDATE
       SET worker_id = EXCLUDED.worker_id, state = 'running',
           lease_until = EXCLUDED.lease_until, finished_at = NULL
     WHERE ((claim.state = 'running' AND claim.lease_until < now())
            OR (claim.state = 'done' AND claim.finished_at < :since))
       AND NOT EXISTS (
           SELECT 1 FROM trial t
            WHERE t.run_id = claim.run_id AND t.domain = claim.domain AND t.task_id = claim.task_id
              AND t.trial_index = claim.trial_index AND t.status = 'scored')
    RETURNING worker_id
    """
_RENEW = (
    "UPDATE claim SET lease_until = now() + make_interval(secs => :lease_s) "
    "WHERE worker_id = :worker AND state = 'running'"
)
_BEAT = "UPDATE worker SET heartbeat = now(), trials_done = :done WHERE id = :worker"
_FINISH = (
    "UPDATE claim SET state = 'done', finished_at = now() "
    "WHERE run_id = :run_id AND domain = :domain AND task_id = :task_id AND trial_index = :trial_index "
    "AND worker_id = :worker"
)
_SETTLED = """
    SELECT t.domain, t.task_id, t.trial_index FROM trial t
     WHERE t.run_id = :run_id AND t.status = 'scored'
    UNION
    SELECT c.domain, c.task_id, c.trial_index FROM claim c
     WHERE c.run_id = :run_id AND c.state = 'done' AND c.finished_at >= :since
    """
_WORKERS = """
    SELECT w.id, w.host, w.pid, w.started, w.trials_done, w.finished, w.lease_s,
           EXTRACT(EPOCH FROM now() - w.heartbeat) AS silent_s,
           (SELECT count(*) FROM claim c
             WHERE c.worker_id = w.id AND c.state = 'running' AND c.lease_until >= now()) AS running
      FROM worker w WHERE w.run_id = :run_id ORDER BY w.started
    """


class WorkerStatus(NamedTuple):
    id: str
    host: str
    pid: int
    started: datetime
    trials_done: int
    running: int
    state: str
    """`finished`, `live`, or `silent` (no heartbeat for longer than its leases: presumed dead)."""


class Leases:
    """One worker's side of the protocol, on one run (`db`: a Postgres store's)."""

    def __init__(self, db: Database, run_id: str, lease_s: float) -> None:
        self.db = db
        self.run_id = run_id
        self.lease_s = float(lease_s)
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.since = db.execute(
            "INSERT INTO worker (id, run_id, host, pid, started, heartbeat, trials_done, lease_s) "
            "VALUES (:worker, :run_id, :host, :pid, now(), now(), 0, :lease_s) RETURNING started",
            {
                "worker": self.worker,
                "run_id": run_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "lease_s": self.lease_s,
            },
        ).fetchone()[0]

    def _key(self, key: TrialKey) -> dict[str, object]:
        domain, task_id, trial_index = key
        return {"run_id": self.run_id, "domain": domain, "task_id": task_id, "trial_index": trial_index}

    def claim(self, key: TrialKey) -> bool:
        """Whether this worker now holds `key` (False: another holds it, or it is settled)."""
        values = {**self._key(key), "worker": self.worker, "lease_s": self.lease_s, "since": self.since}
        return self.db.one(_CLAIM, values) is not None

    def finish(self, key: TrialKey) -> None:
        self.db.execute(_FINISH, {**self._key(key), "worker": self.worker})

    def renew(self, trials_done: int) -> None:
        """Extend the leases of the trials this worker runs; record that it is alive."""
        with self.db.transaction() as execute:
            execute(_RENEW, {"worker": self.worker, "lease_s": self.lease_s})
            execute(_BEAT, {"worker": self.worker, "done": trials_done})

    def leave(self, trials_done: int) -> None:
        self.db.execute(
            "UPDATE worker SET finished = now(), heartbeat = now(), trials_done = :done WHERE id = :w",
            {"w": self.worker, "done": trials_done},
        )

    def settled(self) -> set[TrialKey]:
        """The run's trials that are scored, or done with an error since this worker started."""
        found = self.db.execute(_SETTLED, {"run_id": self.run_id, "since": self.since})
        return {(domain, task_id, int(index)) for domain, task_id, index in found}


def workers(db: Database, run_id: str) -> list[WorkerStatus]:
    """The workers that took part in a run, with their progress (for `castbench runs`)."""
    if db.dialect is not POSTGRES:
        return []
    return [
        WorkerStatus(
            worker,
            host,
            pid,
            started,
            trials_done,
            running,
            "finished" if finished is not None else ("live" if silent_s <= lease_s else "silent"),
        )
        for worker, host, pid, started, trials_done, finished, lease_s, silent_s, running in db.execute(
            _WORKERS, {"run_id": run_id}
        )
    ]
