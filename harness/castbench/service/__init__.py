"""Deprecated: agents outside castbench (MCP, agent services, OpenEnv) moved to the bridges
satellite, `castbench_bridges` (docs/architecture.md). Each module here warns and gives the moved
one, until castbench 0.2.0 (`castbench.deprecation.REMOVAL`)."""
