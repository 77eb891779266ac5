"""The `castbench` command line: a thin layer over `castbench.api` and the store."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map fetch at import

import typer  # noqa: E402

from castbench.cli import (  # noqa: E402
    agents_cmd,
    compare_cmd,
    domains_cmd,
    eval_cmd,
    export_cmd,
    gate_cmd,
    leaderboard_cmd,
    runs_cmd,
    serve_cmd,
    view_cmd,
)
from castbench.cli.errors import CastbenchGroup  # noqa: E402

app = typer.Typer(
    name="castbench",
    help="Reliability benchmark harness for tool-calling agents: pass^k, critics, state-diff grading.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    cls=CastbenchGroup,
)
app.command("eval")(eval_cmd.eval_command)
app.add_typer(domains_cmd.domains_app, name="domains")
app.add_typer(domains_cmd.tasks_app, name="tasks")
app.add_typer(runs_cmd.runs_app, name="runs")
app.add_typer(agents_cmd.policies_app, name="policies")
app.add_typer(agents_cmd.critics_app, name="critics")
app.add_typer(agents_cmd.users_app, name="users")
app.command("compare")(compare_cmd.compare_command)
app.command("gate")(gate_cmd.gate_command)
app.add_typer(leaderboard_cmd.leaderboard_app, name="leaderboard")
app.command("view")(view_cmd.view_command)
app.command("export")(export_cmd.export_command)
app.command("import")(export_cmd.import_command)
app.command("serve")(serve_cmd.serve_command)


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


def main() -> None:
    sys.stdout = _PipeSafeStdout(sys.stdout)  # type: ignore[assignment]
    app()
