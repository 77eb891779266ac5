"""castbench's bridges, a satellite of the core: agents and tools where they already are.

- domain tools over MCP (`castbench mcp serve`, `castbench_bridges.mcp_host`), agents behind an
  HTTP endpoint (`--policy http://...`, `castbench_bridges.agent_http`), trainers over OpenEnv
  (`castbench_bridges.openenv_server`): the `service` extra (`mcp`, `httpx`, `openenv-core`);
- A2A agents as policies (`--policy a2a+http://...`, `castbench_bridges.a2a_policy`) and runs
  exported as Inspect AI eval logs (`castbench export RUN --format inspect`,
  `castbench_bridges.inspect_log`): the `bridges` extra.

castbench's core names none of this: it comes in through the entry points the core reads
(`castbench.commands`, `castbench.drivers`, `castbench.transports`, `castbench.formats`). Every
trial served here is an `Episode` (`castbench._trial.episode`), so its records, labels and grade
are those of an in-process run.
"""
