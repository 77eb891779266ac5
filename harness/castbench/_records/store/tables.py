"""The results database schema (sqlmodel). One row per run, one row per trial; a trial row holds
its whole typed record as JSON, so every figure can be recomputed from the store alone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["CacheRow", "ClaimRow", "RunLease", "RunRow", "TrialRow", "WorkerRow"]


class RunRow(SQLModel, table=True):
    __tablename__ = "run"

    id: str = Field(primary_key=True)
    created: datetime
    config_hash: str = Field(index=True)
    config_json: str
    meta_json: str
    """Package versions, git commit, platform: context that does not change scores."""
    status: str = "running"
    updated: datetime | None = None
    """When the run was last written (opened, resumed, finished): what `latest` means."""


class TrialRow(SQLModel, table=True):
    __tablename__ = "trial"
    __table_args__ = (UniqueConstraint("run_id", "domain", "task_id", "trial_index"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", index=True)
    domain: str
    task_id: str
    trial_index: int
    seed: int = Field(sa_type=BigInteger)
    """Trial seeds are 63-bit (`castbench._trial.seeds`)."""
    status: str
    reward: float | None
    end_reason: str
    n_steps: int
    record_json: str


class WorkerRow(SQLModel, table=True):
    """One `castbench eval` process working on a run in a shared (Postgres) store."""

    __tablename__ = "worker"

    id: str = Field(primary_key=True)
    run_id: str = Field(foreign_key="run.id", index=True)
    host: str
    pid: int
    started: datetime = Field(sa_type=DateTime(timezone=True))
    heartbeat: datetime = Field(sa_type=DateTime(timezone=True))
    """The database's clock, renewed while the worker lives: a stale one is a dead worker."""
    finished: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    trials_done: int = 0
    lease_s: float = 60.0


class ClaimRow(SQLModel, table=True):
    """Which worker runs a trial, until when (its lease), and whether it is done."""

    __tablename__ = "claim"

    run_id: str = Field(foreign_key="run.id", primary_key=True)
    domain: str = Field(primary_key=True)
    task_id: str = Field(primary_key=True)
    trial_index: int = Field(primary_key=True)
    worker_id: str = Field(index=True)
    state: str
    """`running` (leased until `lease_until`) or `done`."""
    lease_until: datetime = Field(sa_type=DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


class RunLease(SQLModel, table=True):
    """Which process is running a run, and when it last said so. A `running` run whose lease is
    gone, stale, or held by a process that no longer exists reads as `interrupted`.

    A table of its own (not columns of `run`), so databases written before it gain it on open."""

    __tablename__ = "run_lease"

    run_id: str = Field(primary_key=True, foreign_key="run.id")
    host: str
    pid: int
    heartbeat: datetime = Field(sa_type=DateTime(timezone=True))


class CacheRow(SQLModel, table=True):
    """A figure derived from the store's inputs alone (the reference floors of a run's tasks),
    kept so that a re-run or a resume does not recompute it. The key is a digest of everything
    the figure depends on, castbench's and the domains' code included: a changed input is a new
    key, never a stale value. A table of its own, so databases written before it gain it on open."""

    __tablename__ = "cache"

    key: str = Field(primary_key=True)
    kind: str
    value_json: str
    created: datetime = Field(sa_type=DateTime(timezone=True))
