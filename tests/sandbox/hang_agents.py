"""A policy that hangs while `HANG56` is set (a trial going badly when castbench is killed), and
replies once otherwise. Named from the repository root (`tests.sandbox.hang_agents:Hanger`)."""

from __future__ import annotations

import os
import time

from castbench._base.conversation import ReplyAction
from castbench._base.dialogue import ANYTHING_ELSE


class Hanger:
    sandbox_env = ("HANG56",)

    def __init__(self, briefing: object) -> None:
        pass

    def propose(self, view: object) -> ReplyAction:
        if os.environ.get("HANG56"):
            time.sleep(600)
        return ReplyAction(text=f"Nothing to do. {ANYTHING_ELSE}")
