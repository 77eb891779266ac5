"""What the sandbox tests share: whether the kernel offers the sandbox whatever the operator's
switch says, a server that greets whoever reaches it, and the first reply of a probing policy."""

from __future__ import annotations

import os
import socket
import threading

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction
from castbench._trial.rollout import AgentSet, run_trial
from castbench._trial.spec import TrialSpec
from castbench.agents import sandbox
from castbench.domain import load_domain

__all__ = ["PROBE", "Banner", "first_reply", "kernel_support"]

PROBE = '''
class Probe:
    """Tries `route` (with `arg`, by the module's own `attempt`) and replies GOT <what> or
    DENIED <why>."""

    def __init__(self, briefing, route="", arg=""):
        self.route, self.arg = route, str(arg)

    def propose(self, view):
        try:
            return ReplyAction(text=f"GOT {attempt(self.route, self.arg)!r}")
        except Exception as exc:
            return ReplyAction(text=f"DENIED {exc!r}")
'''
"""The probing policy of the hostile agents' modules (each defines `attempt` and imports `ReplyAction`)."""


def kernel_support() -> sandbox.SandboxSupport:
    """What the kernel offers, whatever the operator's switch says: with `CASTBENCH_SANDBOX=off`
    the sandbox tests run, and fail, showing what the sandbox stops."""
    switch = os.environ.pop(sandbox.SWITCH, None)
    try:
        return sandbox._probe_support()
    finally:
        if switch is not None:
            os.environ[sandbox.SWITCH] = switch


class Banner:
    """A listening socket outside the sandbox that greets whoever connects with `banner` (the
    thing an agent must not reach unless it declared it)."""

    def __init__(self, server: socket.socket, banner: bytes) -> None:
        self.server, self.banner = server, banner
        self.server.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self.banner)


def first_reply(policy: str, domain: str = "retail") -> str:
    """The first reply `policy` gives on the domain's first test task (a probe says there what it got)."""
    loaded = load_domain(domain)
    task = loaded.tasks("test")[0]
    agents = AgentSet(policy=resolve("policy", policy), user=resolve("user", "scripted"))
    record = run_trial(TrialSpec(loaded, task, 0, 1, agents, loaded.replay(task)))
    replies = [step.action.text for step in record.steps if isinstance(step.action, ReplyAction)]
    assert replies, record.error
    return replies[0]
