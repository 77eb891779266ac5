"""Options shared by several commands, declared once: `--db`, `--domain` and `--split` as the
eval options declare them (`castbench._run.options`), and `--pack-option`, a pack's own options;
and the subcommands satellites add to castbench's groups (`add_plugin_commands`)."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Annotated

import typer

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.errors import fail
from castbench._run.options import DB_FLAG, TaskSelection, field_flag

__all__ = [
    "DEFAULT_DB_URL",
    "DbOption",
    "add_plugin_commands",
    "DomainOption",
    "PackOptionFlag",
    "SplitOption",
    "Tau2DataOption",
]

DbOption = Annotated[str, typer.Option("--db", envvar=DB_FLAG.envvar, help=DB_FLAG.help)]
_DOMAIN = field_flag(TaskSelection, "domains")
DomainOption = Annotated[
    str, typer.Option(f"--{_DOMAIN.name}", *filter(None, [_DOMAIN.short]), help=_DOMAIN.help)
]
SplitOption = Annotated[str, typer.Option("--split", help=field_flag(TaskSelection, "split").help)]


def _set_pack_options(values: list[str] | None) -> list[str] | None:
    """Set before any pack loads (the options are applied as the command line is parsed), so this
    process, its worker processes and a local Ray cluster all see them (a remote Ray cluster's
    nodes need the packs' variables set themselves)."""
    from castbench._domain.pack_options import PackOptionError, set_pack_options

    try:
        set_pack_options(values or ())
    except PackOptionError as exc:
        fail(f"--pack-option {exc}")
    return values


PackOptionFlag = Annotated[
    list[str] | None,
    typer.Option(
        "--pack-option",
        "-O",
        callback=_set_pack_options,
        help="PACK.OPTION=VALUE: an option of a domain pack, e.g. tau2.data=DIR (the τ² packs' "
        "tau2-bench data directory, docs/tau.md); repeat it for several. Unknown ones are refused.",
    ),
]


_TAU2_DATA_ENV = "CASTBENCH_TAU2_DATA"
"""The variable of the τ² packs' `tau2.data` (`castbench_tau2.source.DATA_ENV`), read by the
deprecated flag as before: a directory it names is checked and resolved before any pack loads."""


def _tau2_data(ctx: typer.Context, value: str | None) -> str | None:
    """`--tau2-data DIR`, deprecated: `--pack-option tau2.data=DIR`, said on stderr when given."""
    if value is None:
        return None
    source = ctx.get_parameter_source("tau2_data")
    given = source is None or source.name != "ENVIRONMENT"  # by name: typer's click is its own
    if given:
        typer.echo(
            "warning: --tau2-data is deprecated and will be removed; use --pack-option tau2.data=DIR",
            err=True,
        )
    from castbench._domain.pack_options import PackOptionError, set_pack_option

    try:
        set_pack_option("tau2.data", value)
    except PackOptionError as exc:
        fail(f"{'--tau2-data' if given else _TAU2_DATA_ENV}: {exc}")
    return value


Tau2DataOption = Annotated[
    str | None,
    typer.Option(
        "--tau2-data",
        envvar=_TAU2_DATA_ENV,
        callback=_tau2_data,
        hidden=True,
        help="Deprecated: --pack-option tau2.data=DIR.",
    ),
]

DEFAULT_DB_URL = DEFAULT_DB


def add_plugin_commands(groups: dict[str, typer.Typer]) -> None:
    """The subcommands installed satellites add to these groups: `castbench.commands` entry points
    named `GROUP.NAME` (`domains.new`, `runs.why`); a built-in subcommand's name is never taken."""
    for point in entry_points(group="castbench.commands"):
        group, _, name = point.name.partition(".")
        if name and group in groups:
            taken = {command.name for command in groups[group].registered_commands}
            if name not in taken:
                groups[group].command(name)(point.load())
