"""Where a run to compare comes from: the results store, a summary JSON, or an exported run.

All three reduce to a `RunSummary`: its per-task counts are all a paired comparison needs, so a
CI job can gate against a summary.json committed next to the agent's code, with no database.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from castbench._records.migrations import RecordVersionError
from castbench._records.provenance import provenance
from castbench._records.store import ResultsStore, StoreError
from castbench._records.store.export import ArchiveError, is_export, read_export
from castbench._results.report.summary import RUN_SUMMARY, RunSummary, summarize_run

__all__ = ["SourceError", "describe", "load_summary"]


class SourceError(ValueError):
    """A run reference that names nothing usable; the message says which and why."""


def load_summary(ref: str, db: str) -> RunSummary:
    """`ref` is a summary JSON file, an exported run (`*.castbench.json.gz`), or a run id,
    unique id prefix or `latest` in the store at `db`; with the provenance it records (how its
    trials were kept independent among it)."""
    path = Path(ref)
    if is_export(path):
        try:
            exported = read_export(path)
        except ArchiveError as exc:
            raise SourceError(str(exc)) from exc
        summary = summarize_run(exported.run_id, exported.config, exported.trials, exported.status)
        return summary.model_copy(update={"provenance": provenance(exported.config, exported.meta)})
    if path.suffix == ".json":
        try:
            return RUN_SUMMARY.loads(RunSummary, path.read_text(), str(path))
        except OSError as exc:
            raise SourceError(f"cannot read summary {path}: {exc.strerror}") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise SourceError(
                f"{path} is not a castbench summary (written by `castbench eval --output`): "
                f"{where}: {first['msg']}"
            ) from exc
        except RecordVersionError as exc:
            raise SourceError(str(exc)) from exc
    try:
        store = ResultsStore(db, read_only=True)
        row = store.run(ref)
        config = store.config(row.id)
        summary = summarize_run(row.id, config, store.iter_trials(row.id), row.status)  # no list of its own
        return summary.model_copy(update={"provenance": provenance(config, json.loads(row.meta_json))})
    except (StoreError, ValueError) as exc:
        raise SourceError(str(exc)) from exc


def describe(summary: RunSummary) -> str:
    """`r-1a2b3c · policy X · critic Y`: enough to tell two runs apart at a glance."""
    config = summary.config
    parts = [summary.run_id, f"policy {config.policy}"]
    if config.critic != "none":
        parts.append(f"critic {config.critic}")
    return " · ".join(parts)
