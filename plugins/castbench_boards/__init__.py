"""castbench's boards and run viewer, a satellite of the core (the `boards` extra: jinja2).

- `castbench leaderboard build BOARD` (`castbench_boards.leaderboard_cmd`): a board folder from
  the exported runs its file lists, each run verified, ranked and rendered (`build_board`);
- `castbench view RUN` (`castbench_boards.view_cmd`): one HTML page of a run's trajectories
  (`castbench_boards.viewer`: `render_run_page`, `write_run_page`).

castbench's core names none of this: the commands come in through the `castbench.commands` entry
point, and `castbench.build_board` and `castbench.render_run_page` (the public API) are read from
here on first use. What a board is (its file, `castbench.load_board`, which `eval --suite` reads)
and `verify` stay in the core. Importing this package loads nothing heavy; without jinja2 it
raises an `ImportError` naming the pip command, which the CLI shows as one `error:` line.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if find_spec("jinja2") is None:
    raise ImportError("castbench's boards and run viewer need jinja2: pip install 'castbench[boards]'")

if TYPE_CHECKING:
    from castbench_boards.build import build_board
    from castbench_boards.viewer.page import render_run_page, write_run_page

__all__ = ["build_board", "render_run_page", "write_run_page"]


def __getattr__(name: str) -> Any:
    """Each name loads its module on first use: the CLI lists the commands without jinja2."""
    if name == "build_board":
        from castbench_boards import build

        return build.build_board
    if name in ("render_run_page", "write_run_page"):
        from castbench_boards.viewer import page

        return getattr(page, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
