"""The results database schema (sqlmodel). One row per run, one row per trial; a trial row holds
its whole typed record as JSON, so every figure can be recomputed from the store alone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["RunRow", "TrialRow"]


class RunRow(SQLModel, table=True):
    __tablename__ = "run"

    id: str = Field(primary_key=True)
    created: datetime
    config_hash: str = Field(index=True)
    config_json: str
    meta_json: str
    """Package versions, git commit, platform: context that does not change scores."""
    status: str = "running"


class TrialRow(SQLModel, table=True):
    __tablename__ = "trial"
    __table_args__ = (UniqueConstraint("run_id", "domain", "task_id", "trial_index"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", index=True)
    domain: str
    task_id: str
    trial_index: int
    seed: int
    status: str
    reward: float | None
    end_reason: str
    n_steps: int
    record_json: str
