"""Agents outside castbench: domain tools over MCP, agents behind an HTTP endpoint, trainers
over OpenEnv.

Needs the `service` extra (`pip install 'castbench[service]'`: `mcp`, `openenv-core`). Every
trial served here is an `Episode` (`castbench.runner.episode`), so its records, labels and
grade are those of an in-process run.
"""
