"""Defaults that command-line options show: here, away from the modules that use them, so that
`castbench eval --help` can print them without importing the store, numpy or the engine."""

from __future__ import annotations

__all__ = ["DEFAULT_DB", "DEFAULT_LEASE_S", "DEFAULT_MAX_TRIALS"]

DEFAULT_DB = "sqlite:///results/castbench.db"

DEFAULT_LEASE_S = 60.0
"""How long a silent worker keeps its trials before others take them over."""

DEFAULT_MAX_TRIALS = 64
"""The most trials per task `add_trials` tops a run up to unless told otherwise."""
