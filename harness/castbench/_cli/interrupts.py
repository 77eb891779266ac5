"""Ctrl-C on the command line: the first one stops the run (KeyboardInterrupt, handled where the
command winds down: "interrupted: ... re-run to resume"); a second one exits at once with one line
and status 130, never a traceback. A second Ctrl-C that came before the wind-down took over
landed in whatever ran then (an object's `__del__`) and printed "Exception ignored in ...
KeyboardInterrupt" with a traceback."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["one_interrupt"]

_AGAIN = b"interrupted again: exiting now (the trials stored so far are kept; re-run to resume)\n"


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os.write(2, _AGAIN)
    os._exit(130)


def _first(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGINT, _exit_now)  # before anything else can run: the next one exits
    raise KeyboardInterrupt


@contextmanager
def one_interrupt() -> Iterator[None]:
    """Within: the first Ctrl-C raises KeyboardInterrupt, any later one exits at once (130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
