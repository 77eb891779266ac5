"""Agents that misbehave on purpose, loaded by import path as a team's own would be. They live
in the tests, never in the package."""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any

from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.views import Briefing, PolicyView, PrivilegedBriefing
from castbench._base.conversation import Action, ReplyAction, UserTurn
from castbench._base.dialogue import ANYTHING_ELSE
from castbench.domain import Task

__all__ = ["CrashingPolicy", "PeekingPolicy", "PidPolicy", "SleepyPolicy", "WorkerScriptedUser"]


def _on_the_stack(request: str) -> Task | None:
    """A `Task` held by the local variables of any frame of any thread (the trial loop, waiting
    for this agent, holds this trial's)."""
    for frame in sys._current_frames().values():
        while frame is not None:
            for value in list(frame.f_locals.values()):
                task = getattr(value, "task", value)
                if isinstance(task, Task) and task.scenario.request == request:
                    return task
            frame = frame.f_back  # type: ignore[assignment]
    return None


def _on_the_heap(request: str) -> Task | None:
    """The task of a live trial object on the heap (other `Task` copies may be stale)."""
    for obj in gc.get_objects():
        try:
            task = getattr(obj, "task", None) if hasattr(obj, "db") else None
        except Exception:  # some objects answer attribute look-ups strangely
            continue
        if isinstance(task, Task) and task.scenario.request == request:
            return task
    return None


def _in_the_domain_package(request: str, domain: str) -> Task | None:
    try:
        from castbench.domain import load_domain

        tasks = load_domain(domain).tasks("test")
    except Exception:  # refused or absent: nothing to read
        return None
    return next((task for task in tasks if task.scenario.request == request), None)


class PeekingPolicy:
    """Looks for this trial's ground truth where in-process code can reach it (up the call
    stack, on the heap, in the domain package, as `where` says) and, if it finds it, replays it
    as the oracle does; otherwise closes the conversation at once, having done nothing."""

    def __init__(self, briefing: Briefing, where: str = "stack") -> None:
        self.briefing = briefing
        self.where = where
        self.oracle: OraclePolicy | None = None
        self.looked = False

    def _look(self, request: str) -> Task | None:
        if self.where == "stack":
            return _on_the_stack(request)
        if self.where == "heap":
            return _on_the_heap(request)
        return _in_the_domain_package(request, self.briefing.domain)

    def propose(self, view: PolicyView) -> Action:
        if not self.looked:
            self.looked = True
            opening = view.conversation[0]
            task = self._look(opening.text) if isinstance(opening, UserTurn) else None
            if task is not None:
                b = self.briefing
                stolen = PrivilegedBriefing(
                    b.domain, b.policy, b.tools, b.write_tools, b.seed, b.trial_index, task=task
                )
                self.oracle = OraclePolicy(stolen)
        if self.oracle is not None:
            return self.oracle.propose(view)
        return ReplyAction(text=ANYTHING_ELSE)


class SleepyPolicy:
    """Takes `seconds` to think about each step; with `announce`, says its process id on stderr
    (castbench's own: its sandbox lets it write nowhere but its scratch folder)."""

    def __init__(self, briefing: Briefing, seconds: float = 60.0, announce: bool = False) -> None:
        self.seconds = seconds
        if announce:
            print(f"sleepy worker pid {_machine_pid()}", file=sys.stderr, flush=True)

    def propose(self, view: PolicyView) -> Action:
        time.sleep(self.seconds)
        return ReplyAction(text=ANYTHING_ELSE)


class CrashingPolicy:
    """Takes its whole process down (a segfault in a native library looks the same)."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        os._exit(3)


def _machine_pid() -> int:
    """This process's PID as the machine names it (a trial is PID 1 of a namespace of its own)."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


class PidPolicy:
    """Says which process it runs in and how many steps this instance has seen, then closes."""

    def __init__(self, briefing: Briefing) -> None:
        self.steps = 0

    def propose(self, view: PolicyView) -> Action:
        self.steps += 1
        return ReplyAction(text=f"pid {_machine_pid()} step {self.steps}. {ANYTHING_ELSE}")


class WorkerScriptedUser(ScriptedUser):
    """The scripted user, loaded by import path so that it runs in a worker: its device steps
    (user-side tools) must reach the trial's state across the pipe."""

    def __init__(self, briefing: Any, **params: Any) -> None:
        super().__init__(briefing, **params)
