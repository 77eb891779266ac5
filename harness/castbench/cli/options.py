"""Options shared by several commands, declared once."""

from __future__ import annotations

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

DEFAULT_DB_URL = DEFAULT_DB
