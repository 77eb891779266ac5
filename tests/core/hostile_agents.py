"""Agents that misbehave on purpose, named by import path the way a team names its own
(`--policy tests.core.hostile_agents:HostilePolicy?mode=init`). They live in the tests, never in
the package. Each is hostile on trial `on_trial` only (every trial with -1) and otherwise closes
the conversation at once, so one run holds both kinds of trial."""

from __future__ import annotations

import time
from typing import Any

from castbench._agents.protocols import UserReply
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.views import Briefing, CriticView, PolicyView, UserBriefing
from castbench._base.conversation import Action, ReplyAction, ToolCallAction, Verdict
from tests.core.fixtures_agents import TeamPolicy

__all__ = ["HostileCritic", "HostilePolicy", "HostileUser"]


class HostilePolicy(TeamPolicy):
    """`mode`: init (raises in `__init__`), hang_init, hang (in `propose`), slow (every step
    takes `seconds`), exit (calls `sys.exit`), surrogate / not_json (tool arguments that cannot
    be stored)."""

    def __init__(self, briefing: Briefing, mode: str, on_trial: int = 0, seconds: float = 3600) -> None:
        super().__init__(briefing)
        self.mode, self.seconds = mode, seconds
        self.hostile = on_trial in (-1, briefing.trial_index)
        if self.hostile and mode == "init":
            raise RuntimeError("the team's policy cannot start")
        if self.hostile and mode == "hang_init":
            time.sleep(seconds)

    def propose(self, view: PolicyView) -> Action:
        if not self.hostile:
            return super().propose(view)
        if self.mode in ("hang", "slow"):
            time.sleep(self.seconds)
            return ReplyAction(text="One moment please.")
        if self.mode == "surrogate":
            return ToolCallAction(name="get_order_details", arguments={"order_id": "#W\ud800"})
        if self.mode == "exit":
            raise SystemExit(3)
        if self.mode == "not_json":
            return ToolCallAction(name="get_order_details", arguments={"order_id": object()})
        return super().propose(view)


class HostileUser(ScriptedUser):
    """A custom simulated user that raises when it opens or when it replies (`mode`)."""

    def __init__(self, briefing: UserBriefing, mode: str) -> None:
        super().__init__(briefing)
        self.mode = mode

    def open(self) -> str:
        if self.mode == "open":
            raise RuntimeError("the team's user simulator broke")
        return super().open()

    def reply(self, message: str) -> UserReply:
        if self.mode == "reply":
            raise RuntimeError("the team's user simulator broke mid-way")
        return super().reply(message)


class HostileCritic:
    """Returns a string instead of a `Verdict`."""

    def __init__(self, briefing: Briefing, **params: Any) -> None:
        pass

    def verify(self, view: CriticView) -> Verdict:
        return "looks fine to me"  # type: ignore[return-value]
