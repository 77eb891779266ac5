"""Deprecated: the run viewer moved to the boards satellite, `castbench_boards.viewer`
(docs/architecture.md). Its names and modules here warn and give the moved ones, until castbench
0.2.0 (`castbench.deprecation.REMOVAL`)."""

from __future__ import annotations

from typing import Any

_MOVED = ("PAGE_LIMIT", "page_server", "render_run_files", "render_run_page", "write_run_page")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import castbench_boards.viewer
    from castbench.deprecation import moved

    moved(f"castbench.viewer.{name}", "castbench_boards.viewer")
    return getattr(castbench_boards.viewer, name)
