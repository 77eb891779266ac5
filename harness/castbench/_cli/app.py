"""The `castbench` command line: a thin layer over `castbench._run.api` and the store.

Commands are imported only when used: `castbench --help` lists them from the table below without
importing any of them, and `castbench eval` loads what eval needs (the store, the runner, the
metrics), not the viewer, the leaderboard builder or litellm. `tests/cli/test_cli_lazy.py` checks
that the table's one-line help matches each command's own.

Installed plugins add commands through the `castbench.commands` entry-point group (a `typer.Typer`
sub-app each, e.g. `cast = "castbench_cast.cli:app [train]"`). The group is read only when a name
is not one of castbench's own or when the commands are listed, so running a built-in command costs
nothing more. A plugin whose module raises `ImportError` (its extra is not installed) is not
listed, and naming it says which extra to install.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C while the command line loads (before any command runs): one line, status 130,
    never a traceback of whichever import it landed in."""
    os.write(2, b"interrupted: nothing was started\n")
    os._exit(130)


if (
    os.path.basename(sys.argv[0] if sys.argv else "") in ("castbench", "__main__.py")
    and signal.getsignal(signal.SIGINT) is signal.default_int_handler
):  # the console script's own process only: a library caller or a test runner keeps its own
    signal.signal(signal.SIGINT, _interrupted_at_start)


from importlib.metadata import entry_points  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any, NamedTuple, TextIO  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map fetch at import


import typer  # noqa: E402
from typer import _click as click  # noqa: E402  typer's own copy of click, the one its groups use
from typer.core import TyperCommand  # noqa: E402

from castbench._base.deprecation import show_on_console  # noqa: E402
from castbench._cli.errors import CastbenchGroup, fail  # noqa: E402

__all__ = ["COMMANDS", "PLUGIN_GROUP", "LazyCommand", "app", "main", "plugin_commands"]

PLUGIN_GROUP = "castbench.commands"


class CommandEntry(NamedTuple):
    target: str
    """`module:attribute`, a command function, a built command or a `typer.Typer` sub-app."""
    help: str
    """The start of its own help (`...` where cut), shown by `castbench --help`."""


COMMANDS: dict[str, CommandEntry] = {
    "eval": CommandEntry(
        "castbench._cli.eval_cmd:eval_command",
        "Run every selected task n times and report pass^k. Re-running resumes the same run.",
    ),
    "domains": CommandEntry("castbench._cli.domains_cmd:domains_app", "Installed domains."),
    "tasks": CommandEntry("castbench._cli.domains_cmd:tasks_app", "Tasks of the installed domains."),
    "runs": CommandEntry("castbench._cli.runs_cmd:runs_app", "Stored runs."),
    "policies": CommandEntry("castbench._cli.agents_cmd:policies_app", "Built-in policies."),
    "critics": CommandEntry("castbench._cli.agents_cmd:critics_app", "Built-in critics."),
    "users": CommandEntry("castbench._cli.agents_cmd:users_app", "Built-in users."),
    "compare": CommandEntry(
        "castbench._cli.compare_cmd:compare_command",
        "Difference in pass^k per domain on the tasks both runs scored (candidate − baseline), ...",
    ),
    "gate": CommandEntry(
        "castbench._cli.gate_cmd:gate_command",
        "PASS, FAIL or UNDECIDED for each check, from the paired bootstrap interval of ...",
    ),
    "gate-plan": CommandEntry(
        "castbench._cli.gate_cmd:gate_plan_command",
        "How many tasks x trials a candidate run needs for each check to be decided, from the ...",
    ),
    "export": CommandEntry(
        "castbench._cli.export_cmd:export_command",
        "Write a run (config, meta and every trial record) as one compressed, portable file, or in ...",
    ),
    "import": CommandEntry(
        "castbench._cli.export_cmd:import_command",
        "Load an exported run into a database, after verifying it; importing it again adds nothing.",
    ),
    "verify": CommandEntry(
        "castbench._cli.export_cmd:verify_command",
        "Replay every stored trial's tool calls in a fresh sandbox, grade it again with the run's ...",
    ),
}


def load_command(name: str, entry: CommandEntry) -> click.Command:
    """Import the command's module and build its click command (the one `typer` would build)."""
    module, attribute = entry.target.split(":")
    return _as_command(name, getattr(_command_module(module), attribute))


def _command_module(module: str) -> ModuleType:
    """The command module `module` names, by a plain import statement (the import contract sees
    each edge; nothing is imported by name), loaded on first use only."""
    match module:
        case "castbench._cli.agents_cmd":
            import castbench._cli.agents_cmd  # noqa: F401
        case "castbench._cli.compare_cmd":
            import castbench._cli.compare_cmd  # noqa: F401
        case "castbench._cli.domains_cmd":
            import castbench._cli.domains_cmd  # noqa: F401
        case "castbench._cli.eval_cmd":
            import castbench._cli.eval_cmd  # noqa: F401
        case "castbench._cli.export_cmd":
            import castbench._cli.export_cmd  # noqa: F401
        case "castbench._cli.gate_cmd":
            import castbench._cli.gate_cmd  # noqa: F401
        case "castbench._cli.runs_cmd":
            import castbench._cli.runs_cmd  # noqa: F401
        case _:
            raise KeyError(f"no castbench command module {module!r}")
    return sys.modules[module]


def _as_command(name: str, target: Any) -> click.Command:
    if isinstance(target, typer.Typer):
        command: click.Command = typer.main.get_group(target)  # a group even with one command
    elif isinstance(target, click.Command):  # built already (eval's options from their declaration)
        command = target
    else:
        single = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode="rich")
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class LazyCommand(TyperCommand):
    """A command's name and one-line help until it runs: then its module is imported and the
    real command parses the arguments (`--help` included)."""

    def __init__(self, name: str, entry: CommandEntry) -> None:
        super().__init__(name, help=entry.help, short_help=entry.help)
        self.entry = entry
        self._real: click.Command | None = None

    @property
    def real(self) -> click.Command:
        if self._real is None:
            self._real = load_command(self.name or "", self.entry)
        return self._real

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        return self.real.make_context(info_name, args, parent=parent, **extra)


class PluginCommands(NamedTuple):
    loaded: dict[str, click.Command]
    missing: dict[str, str]
    """Name -> why it cannot be loaded (the extra to install)."""


def plugin_commands() -> PluginCommands:
    """The commands installed plugins register (castbench's own names cannot be taken)."""
    loaded: dict[str, click.Command] = {}
    missing: dict[str, str] = {}
    for point in entry_points(group=PLUGIN_GROUP):
        if point.name in COMMANDS or point.name in loaded or "." in point.name:
            continue  # `GROUP.NAME`: a subcommand of a built-in group, which adds it (`domains_cmd`)
        try:
            loaded[point.name] = _as_command(point.name, point.load())
        except ImportError as exc:
            extras = ",".join(point.extras)
            hint = f": pip install 'castbench[{extras}]'" if extras else ""
            missing[point.name] = f"'castbench {point.name}' cannot be loaded ({exc}){hint}"
    return PluginCommands(loaded, missing)


class LazyGroup(CastbenchGroup):
    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, entry in COMMANDS.items():
            self.commands.setdefault(name, LazyCommand(name, entry))
        self._plugins: PluginCommands | None = None

    def _load_plugins(self) -> PluginCommands:
        if self._plugins is None:
            self._plugins = plugin_commands()
            for name, command in self._plugins.loaded.items():
                self.commands.setdefault(name, command)
        return self._plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugins()
        return list(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            problem = self._load_plugins().missing.get(cmd_name)
            if problem is not None:
                fail(problem)
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    name="castbench",
    help="Reliability benchmark harness for tool-calling agents: pass^k, critics, state-diff grading.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    cls=LazyGroup,
)


@app.callback()
def _root() -> None:
    """Makes `app` a group even before any command is loaded."""


class _PipeSafeStdout:
    """stdout that goes quiet once its reader has left (`castbench ... | head`), as Unix tools do,
    instead of raising `BrokenPipeError` in the middle of a run or at exit."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def _leave(self) -> None:
        self._gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what the interpreter flushes at exit goes nowhere

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


PIPED_COLUMNS = 200
"""Width of tables and help when output goes to a pipe or file (a CI log): rich would otherwise
assume 80 columns and cut figures (`0.66–0.…`) exactly where a gate's log is read."""


def _wide_when_piped() -> None:
    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        os.environ["COLUMNS"] = str(PIPED_COLUMNS)


def _refuse_outside_code() -> None:
    """castbench's process never runs agent code (issue 56): refuse to start when code from
    outside castbench's installation could have run at its start-up (exit 5), unless the operator
    turned the sandbox off (the run is then recorded as unsandboxed)."""
    from castbench._agents.startup import EXIT_CODE, outside_code

    if os.environ.get("CASTBENCH_SANDBOX", "").strip().lower() in ("off", "0", "false", "no"):
        return
    found = outside_code()
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        sys.stderr.write(f"error: {found[0]}{more}; castbench did not start (docs/sandbox.md)\n")
        raise SystemExit(EXIT_CODE)


_PROCESS_OPTIONS = {"--agent-path": "CASTBENCH_AGENT_PATH", "--trial-limits": "CASTBENCH_TRIAL_LIMITS"}
"""Options of every command that runs agents, taken off the command line before it is parsed:
they set what castbench's workers read (`--agent-path DIR`, repeatable: where import-path agents
are found, by the workers only; `--trial-limits memory=4G,file=1G,processes=256,cpu=600`)."""


def _process_options(argv: list[str]) -> list[str]:
    """`argv` without `--agent-path DIR` and `--trial-limits SPEC` (either `--opt VALUE` or
    `--opt=VALUE`), their values put in the variables the workers read; one `error:` line (exit 2)
    for a folder that does not exist or limits that cannot be read."""
    from castbench._agents.confine import limits_from_env

    kept: list[str] = []
    paths: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, sep, value = arg.partition("=")
        if arg == "--":
            kept += argv[index:]
            break
        if name in _PROCESS_OPTIONS:
            if not sep:
                if index + 1 >= len(argv):
                    fail(f"{name} needs a value")
                index += 1
                value = argv[index]
            if name == "--agent-path":
                if not os.path.isdir(value):
                    fail(f"--agent-path {value!r}: not a folder")
                paths.append(os.path.abspath(value))
            else:
                os.environ[_PROCESS_OPTIONS[name]] = value
        else:
            kept.append(arg)
        index += 1
    if paths:
        given = [p for p in os.environ.get("CASTBENCH_AGENT_PATH", "").split(os.pathsep) if p]
        os.environ["CASTBENCH_AGENT_PATH"] = os.pathsep.join([*paths, *given])
    try:
        limits_from_env()
    except ValueError as exc:
        fail(str(exc))
    return kept


def main() -> None:
    _refuse_outside_code()
    show_on_console()  # a moved name an agent or script still uses: said once, with the new place
    try:
        sys.argv[1:] = _process_options(sys.argv[1:])
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    _wide_when_piped()
    sys.stdout = _PipeSafeStdout(sys.stdout)  # type: ignore[assignment]
    if signal.getsignal(signal.SIGINT) is _interrupted_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # typer turns it into exit 130
    app()
