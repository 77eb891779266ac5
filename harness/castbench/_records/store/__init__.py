"""The results store (SQLite or Postgres, through the DB-API): runs, trials and their full records."""

from castbench._records.store.store import (
    DEFAULT_DB,
    HEARTBEAT_S,
    ResultsStore,
    StoreError,
    TrialKey,
    last_written,
)

__all__ = ["DEFAULT_DB", "HEARTBEAT_S", "ResultsStore", "StoreError", "TrialKey", "last_written"]
