"""The `castbench` command line: a thin layer over `castbench.api` and the store."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map fetch at import

import typer  # noqa: E402

from castbench.cli import agents_cmd, domains_cmd, eval_cmd, runs_cmd, serve_cmd  # noqa: E402

app = typer.Typer(
    name="castbench",
    help="Reliability benchmark harness for tool-calling agents: pass^k, critics, state-diff grading.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.command("eval")(eval_cmd.eval_command)
app.add_typer(domains_cmd.domains_app, name="domains")
app.add_typer(domains_cmd.tasks_app, name="tasks")
app.add_typer(runs_cmd.runs_app, name="runs")
app.add_typer(agents_cmd.policies_app, name="policies")
app.add_typer(agents_cmd.critics_app, name="critics")
app.add_typer(agents_cmd.users_app, name="users")
app.command("serve")(serve_cmd.serve_command)


def main() -> None:
    app()
