"""A trial's process dies with the process that forked it: the kernel clears the parent-death
signal when the effective user id changes (prctl(2)), so `become_trial_user` arms it again.
Without that, a trial whose template died (castbench killed, a worker torn down while an agent
looped at import) ran on as an orphan, at full CPU, until its CPU limit."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

import pytest

from castbench.agents import confine

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"), reason="a trial user id needs root on Linux"
)
_libc = ctypes.CDLL(None, use_errno=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_trial_user_keeps_its_parent_death_signal_and_dies_with_its_parent() -> None:
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:  # the template's stand-in: forks the trial, then dies without ending it
        os.close(read)
        trial = os.fork()
        if trial == 0:
            _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG, as the trial's process does
            confine.become_trial_user(os.getpid())
            armed = ctypes.c_int(0)
            _libc.prctl(2, ctypes.byref(armed), 0, 0, 0)  # PR_GET_PDEATHSIG
            os.write(write, f"{os.getpid()} {os.geteuid()} {armed.value}\n".encode())
            while True:  # an agent that loops, as at import
                pass
        time.sleep(0.5)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answers:
        pid, uid, armed = (int(part) for part in answers.readline().split())
    os.waitpid(middle, 0)
    try:
        assert uid == confine.UID_BASE + pid  # it did change user
        assert armed == signal.SIGKILL  # and the signal is armed again
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the trial's process outlived its parent"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
