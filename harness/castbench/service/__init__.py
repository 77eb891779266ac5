"""Agents outside castbench: domain tools over MCP, agents behind an HTTP endpoint.

Needs the `service` extra (`pip install 'castbench[service]'`): the `mcp` package. Every
trial served here is an `Episode` (`castbench.runner.episode`), so its records, labels and
grade are those of an in-process run.
"""
