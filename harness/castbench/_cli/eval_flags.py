"""`castbench eval`'s options on the command line, built from their one declaration: the `Flag`
beside each field of `castbench._run.options.EvalOptions` (its flag, help, panel, variable). No command
declares them again: `eval` and `profile` take these flags, and adding a field with a `Flag` adds
the option to both.

A command is a typer function with its own options (`--output`, `--suite`); `with_eval_flags`
adds the fields' flags to the command typer builds from it (no signature is copied or rewritten),
`flag_values(ctx)` reads their values and `options_of` makes them `EvalOptions`, a bad value one
`error:` line naming its flag (the model's checks are the flags').
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import typer
from pydantic import ValidationError
from typer import _click as click  # typer's own copy of click, the one its commands use
from typer._click.globals import get_current_context

from castbench._cli.errors import fail
from castbench._run.options import CommandLineFlag, EvalOptions, OptionsError, command_line_flags

__all__ = ["eval_flags", "flag_named", "flag_values", "options_of", "parameter_name", "with_eval_flags"]

_GIVEN = "castbench.eval_flags"
"""Where a command's context keeps the values of its eval flags (`ctx.meta`)."""


def parameter_name(flag: CommandLineFlag) -> str:
    """The flag's parameter (`max_steps` for `--max-steps`): what `ctx.get_parameter_source` takes."""
    return flag.name.replace("-", "_")


def eval_flags(exclude: Iterable[str] = ()) -> list[CommandLineFlag]:
    """The flags, less the parameters in `exclude` (those a command sets itself)."""
    left_out = set(exclude)
    return [flag for flag in command_line_flags() if parameter_name(flag) not in left_out]


def _parameter(flag: CommandLineFlag, default: Any) -> click.Parameter:
    """The flag as typer would build it from a parameter `NAME: TYPE = typer.Option(...)`: the same
    help layout, default shown, variable named, `--x/--no-x` for a bool unless a switch."""
    declared = flag.flag
    decls = (
        [f"--{flag.name}", *([declared.short] if declared.short else [])]
        if declared.short or declared.switch
        else []
    )
    info = typer.Option(
        default, *decls, help=declared.help, rich_help_panel=declared.panel, envvar=declared.envvar
    )
    meta = typer.models.ParamMeta(name=parameter_name(flag), default=info, annotation=flag.type)
    # typer's own builder of a parameter (private, as its vendored click is: tests/cli hold the
    # help and parsing of every flag to what a typed signature gave)
    return typer.main._get_param(meta)


def with_eval_flags(
    function: Callable[..., Any], *, exclude: Iterable[str] = (), defaults: Mapping[str, Any] | None = None
) -> click.Command:
    """The command typer builds from `function` (its own options) with the eval flags added
    (`defaults` changes a flag's default, by parameter name). `function` reads their values with
    `flag_values(ctx)`, the options they set with `options_of`."""
    single = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode="rich")
    single.command()(function)
    command = typer.main.get_command(single)
    chosen = dict(defaults or {})
    flags = eval_flags(exclude)
    added = [_parameter(flag, chosen.get(parameter_name(flag), flag.default)) for flag in flags]
    names = {parameter_name(flag) for flag in flags}
    inner = command.callback
    assert inner is not None

    def callback(**values: Any) -> Any:
        get_current_context().meta[_GIVEN] = {name: values.pop(name) for name in names}
        return inner(**values)

    command.callback = callback
    command.params[:0] = added
    return command


def flag_values(ctx: typer.Context) -> dict[str, Any]:
    """The eval flags' values (by parameter name) the command was given, defaults included."""
    return dict(ctx.meta[_GIVEN])


def flag_named(where: tuple[str | int, ...]) -> str:
    """The flag that sets the field at `where` (`("selection", "trials")` -> `--trials`)."""
    for flag in command_line_flags():
        if tuple(where[: len(flag.path)]) == flag.path:
            return f"--{flag.name}"
    return ".".join(str(part) for part in where)


def options_of(values: Mapping[str, Any], exclude: Iterable[str] = ()) -> EvalOptions:
    """The options the flags' `values` (by parameter name) set; a bad value is one `error:` line
    naming its flag. A value left out (None) is the model's default: `--max-steps` unset keeps the
    packs' limits; each flag's `convert` makes the field's value of the one given."""
    fields: dict[str, Any] = {}
    for flag in eval_flags(exclude):
        value = values.get(parameter_name(flag))
        if value is None:
            continue
        if flag.flag.convert is not None:
            value = flag.flag.convert(value)
        *groups, name = flag.path
        place = fields
        for group in groups:
            place = place.setdefault(group, {})
        place[name] = value
    try:
        return EvalOptions.model_validate(fields)
    except ValidationError as exc:
        fail(OptionsError.of(exc).describe(flag_named))
