"""The trajectory viewer: one self-contained HTML page per run."""

from castbench.viewer.page import render_run_page
from castbench.viewer.serve import page_server

__all__ = ["page_server", "render_run_page"]
