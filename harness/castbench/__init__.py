"""castbench: a reliability benchmark harness for tool-calling agents (pass^k, critics).

`castbench.evaluate(...)` runs (or resumes) an evaluation, as `castbench eval` does, from the same
options (`castbench.options.EvalOptions`, or its fields as keywords: `evaluate(domains="retail",
trials=4)`); it is imported on first use, so that `import castbench.X` stays cheap for the parts
that do not run evaluations (the CLI's help, agent workers)."""

from typing import TYPE_CHECKING, Any

__all__ = ["__version__", "evaluate"]

if TYPE_CHECKING:
    from castbench.api import evaluate
    from castbench.version import __version__


def __getattr__(name: str) -> Any:
    # `__version__` is `castbench.version`'s, read on first use like the API: importing castbench
    # loads none of its modules (tests/core/test_package_entry.py)
    if name == "__version__":
        from castbench.version import __version__

        return __version__
    if name == "evaluate":
        from castbench.api import evaluate

        return evaluate
    raise AttributeError(f"module 'castbench' has no attribute {name!r}")
