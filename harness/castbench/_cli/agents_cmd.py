"""`castbench policies list`, `castbench critics list`, `castbench users list`: what is built in
and the parameters each takes (`name?param=value&...`)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._agents.registry import Role, builtin_agents

console = Console()

_MORE = {
    "policy": "Also: a litellm model string (openai/gpt-4o-mini, hosted_vllm/...) or module:Class.",
    "critic": "Also: none, a litellm model string, or module:Class.",
    "user": "Also: a litellm model string, or module:Class.",
}


_PLURAL = {"policy": "policies", "critic": "critics", "user": "users"}


def _lister(role: Role) -> typer.Typer:
    app = typer.Typer(help=f"Built-in {_PLURAL[role]}.", no_args_is_help=True)

    @app.command("list")
    def list_agents() -> None:
        table = Table(title=f"built-in {_PLURAL[role]}", title_justify="left")
        for column in ("name", "privileged", "parameters", "what it is"):
            table.add_column(column)
        for agent in builtin_agents(role):
            params = ""
            if agent.params is not None:
                params = "\n".join(
                    f"{name}={field.default} — {field.description}"
                    for name, field in agent.params.model_fields.items()
                )
            cells = (agent.name, "yes" if agent.privileged else "no", params or "–", agent.summary)
            table.add_row(*map(escape, cells))
        console.print(table)
        console.print(_MORE[role])

    return app


policies_app = _lister("policy")
critics_app = _lister("critic")
users_app = _lister("user")
