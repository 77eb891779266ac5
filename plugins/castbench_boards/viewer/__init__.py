"""The trajectory viewer: one HTML page per run, self-contained or with its trials in files beside it."""

from castbench_boards.viewer.page import PAGE_LIMIT, render_run_files, render_run_page, write_run_page
from castbench_boards.viewer.serve import page_server

__all__ = ["PAGE_LIMIT", "page_server", "render_run_files", "render_run_page", "write_run_page"]
