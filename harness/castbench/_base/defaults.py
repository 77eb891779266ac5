"""Defaults that command-line options show: here, away from the modules that use them, so that
`castbench eval --help` can print them without importing the store, numpy or the engine."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "DEFAULT_DB",
    "DEFAULT_LEASE_S",
    "DEFAULT_MAX_TRIALS",
    "EXPORT_SUFFIX",
    "GRADING_MODES",
    "GradingMode",
]

DEFAULT_DB = "sqlite:///results/castbench.db"

EXPORT_SUFFIX = ".castbench.json.gz"
"""An exported run's file suffix (`castbench._records.store.export`), which
`castbench export --help` shows."""

DEFAULT_LEASE_S = 60.0
"""How long a silent worker keeps its trials before others take them over."""

DEFAULT_MAX_TRIALS = 64
"""The most trials per task `add_trials` tops a run up to unless told otherwise."""

GradingMode = Literal["castbench", "tau"]
"""How required outputs are matched (`castbench._grading.outputs`): here so that a run's options and
its stored config can name the choice without importing the grader."""
GRADING_MODES: tuple[GradingMode, ...] = ("castbench", "tau")
