"""castbench: a reliability benchmark harness for tool-calling agents (pass^k, critics)."""

__version__ = "0.1.0"
