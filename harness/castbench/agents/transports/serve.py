"""The worker process: one role's import-path agent, a fresh instance per trial, and nothing of
castbench's tasks, sandboxes or ground truth.

Started by `castbench.agents.transports.worker` as `python -m castbench.agents.transports.serve FD
PID` with one end of a socket pair on FD and castbench's process id. It learns its role, the
agent's import path and its sandbox from the first message, enters the sandbox (the kernel's
wall: `castbench.agents.sandbox`), refuses imports of the installed domain packages (they hold the
tasks' ground truth), imports the agent and answers one request at a time.

The import guard stays behind the sandbox: where there is none (another OS, `CASTBENCH_SANDBOX=off`)
it is all that keeps a careless `import` of a domain package out, and behind it, it turns the
kernel's refusal (a `PermissionError` deep in the import system) into a plain `ImportError`. It
ignores Ctrl-C (castbench decides what an interruption does) and exits when castbench closes the
pipe or dies.
"""

from __future__ import annotations

import importlib.abc
import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from castbench.agents import sandbox
from castbench.agents.protocols import UserReply, output_problem
from castbench.agents.registry import AgentSpecError, import_target, protocol_problem
from castbench.agents.transports.wire import (
    ACTION,
    EVENTS,
    VERDICT,
    briefing_from_wire,
    decode,
    encode,
    observation_from_wire,
)
from castbench.agents.views import CriticView, PolicyView
from castbench.conversation import (
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    Usage,
    Verdict,
)
from castbench.domain import Observation, ToolCall
from castbench.errors import FatalInfrastructureError, InfrastructureError


class _RefuseDomains(importlib.abc.MetaPathFinder):
    """Keeps the domain packages (tasks, ground truth) and their data packages out of the agent's
    process: a convention the agent can undo, the sandbox being the wall."""

    def __init__(self, packages: list[str]) -> None:
        self.packages = frozenset(packages)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.packages:
            raise ImportError(
                f"'{fullname}' is a castbench domain (or domain data) package: an agent's worker "
                "may not import it"
            )


class _Host:
    """The agent of the current trial and what it has been shown so far."""

    def __init__(self, factory: Any, connection: Connection) -> None:
        self.factory = factory
        self.connection = connection
        self.agent: Any = None
        self.briefing: Any = None
        self.conversation: tuple[Event, ...] = ()

    def _perform(self, call: ToolCall) -> Observation:
        """A user-side tool runs on the trial's state, which stays in castbench: ask for it."""
        self.connection.send_bytes(encode({"perform": call.model_dump(mode="json")}))
        return observation_from_wire(decode(self.connection.recv_bytes())["observation"])

    def _conversation(self, message: dict[str, Any]) -> tuple[Event, ...]:
        added = tuple(EVENTS.validate_python(message["events"]))
        self.conversation = self.conversation[: message["keep"]] + added
        return self.conversation

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message["op"]
        if op == "open":
            self.conversation = ()
            self.briefing = briefing_from_wire(message["briefing"], self._perform)
            self.agent = self.factory(self.briefing, **message["params"])
            return {}
        if op == "close":
            usage = getattr(self.agent, "usage", None)
            self.agent = self.briefing = None
            return {"usage": usage.model_dump(mode="json") if isinstance(usage, Usage) else None}
        return {"result": self._call(message["method"], message)}

    def _call(self, method: str, message: dict[str, Any]) -> Any:
        if method == "propose":
            view = PolicyView(self.briefing, self._conversation(message))
            action = _checked("policy", self.agent.propose(view), _ACTIONS, "action")
            return ACTION.dump_python(action, mode="python")  # json escapes what it holds
        if method == "verify":
            proposal = ACTION.validate_python(message["proposal"])
            verdict = self.agent.verify(CriticView(self.briefing, self._conversation(message), proposal))
            return VERDICT.dump_python(_checked("critic", verdict, Verdict, "verdict"), mode="python")
        if method == "open":
            return _checked("user", self.agent.open(), str, "opening")
        reply = _checked("user", self.agent.reply(message["message"]), UserReply, "reply")
        return {"text": _checked("user", reply.text, str, "reply text"), "stop": reply.stop}


_ACTIONS = (ToolCallAction, ReplyAction, MalformedAction)


class _Unusable(Exception):
    """The agent answered, with something that cannot be used (said as the trial loop says it)."""


def _checked(role: str, value: Any, expected: type | tuple[type, ...], what: str) -> Any:
    problem = output_problem(role, value, expected, what)
    if problem is not None:
        raise _Unusable(problem)
    return value


def _failure(role: str, exc: BaseException) -> dict[str, Any]:
    """An exception of the agent's, as the message castbench turns into the trial's outcome."""
    if isinstance(exc, _Unusable):
        return {"error": str(exc), "kind": "agent"}
    kind = "agent"
    if isinstance(exc, FatalInfrastructureError):
        kind = "fatal"
    elif isinstance(exc, InfrastructureError):
        kind = "infra"
    return {"error": f"{role} raised {exc!r}\n{traceback.format_exc()}", "kind": kind}


def _load(hello: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    sys.path[:] = hello["sys_path"]
    sys.meta_path.insert(0, _RefuseDomains(hello["domain_packages"]))
    try:
        factory = import_target(hello["target"])
    except AgentSpecError as exc:
        return None, {"error": str(exc), "kind": "spec"}
    problem = protocol_problem(hello["role"], hello["target"], factory)
    if problem is not None:
        return None, {"error": problem, "kind": "spec"}
    try:
        needs = sandbox.declared_needs(factory, hello["target"])
    except ValueError as exc:
        return None, {"error": f"{hello['role']} {exc}", "kind": "spec"}
    return factory, {"privileged": bool(getattr(factory, "privileged", False)), "needs": needs.model_dump()}


def _enter_sandbox(hello: dict[str, Any]) -> dict[str, Any] | None:
    """Enter the sandbox the hello names, before any thread starts or agent code is imported;
    the answer to send back if that failed (the agent is then not run at all)."""
    if hello.get("sandbox") is None:
        return None
    try:
        sandbox.enter(sandbox.Plan.model_validate(hello["sandbox"]["plan"]), hello["sandbox"]["scratch"])
    except sandbox.SandboxError as exc:
        return {"error": f"{exc} (CASTBENCH_SANDBOX=off runs agents unsandboxed)", "kind": "fatal"}
    return None


def _exit_with_parent(parent: int, every_s: float = 1.0) -> None:
    """Exit once castbench's process `parent` is gone, even if the pipe stays open: a process
    that forked from castbench keeps a copy of castbench's end, so its EOF alone may never come."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = int(sys.argv[2]) if len(sys.argv) > 2 else os.getppid()
    connection = Connection(int(sys.argv[1]))
    while not connection.poll(1.0):  # no watching thread yet: the sandbox must come first
        if os.getppid() != parent:
            return
    hello = decode(connection.recv_bytes())
    refused = _enter_sandbox(hello)
    if refused is not None:
        connection.send_bytes(encode(refused))
        return
    _exit_with_parent(parent)  # a thread: only once the sandbox binds this process
    factory, answer = _load(hello)
    connection.send_bytes(encode(answer))
    if factory is None:
        return
    host = _Host(factory, connection)
    while True:
        try:
            message = decode(connection.recv_bytes())
        except (EOFError, OSError):
            return  # castbench closed the pipe or exited
        try:
            data = encode(host.handle(message))
        except Exception as exc:
            data = encode(_failure(hello["role"], exc))
        connection.send_bytes(data)


if __name__ == "__main__":
    main()
