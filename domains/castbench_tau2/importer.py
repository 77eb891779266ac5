"""`castbench import results.json` for a run made by τ²'s own harness: its `Results` file read with
τ²'s models, every simulation re-played through castbench's sandbox and re-graded, and stored as a
castbench run of the matching pack, comparable with castbench's runs on it.

Each simulation becomes a trial whose policy replays the simulation's assistant turns (every tool
call, every message, in order) and whose user replays its user turns; castbench executes the calls
on its own sandbox and grades the trial the `tau` way, as τ²'s evaluator does (the reward τ² stored
in the file is not trusted: it is kept in the run's meta beside castbench's). A simulation τ² did
not grade (it ended by `max_steps`, `too_many_errors`, an agent or user error) ends unfinished and
scores 0, as in τ², keeping τ²'s reason where castbench has the same one (`too_many_errors`,
`agent_error`; else `max_steps`). The run is a submitted run (`castbench import`
marks it so); its id is `tau2-` and a digest of the file.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from castbench.agents import Action, AgentSpec, ReplyAction, ToolCallAction, UserReply
from castbench.domain import (
    AgentSet,
    EndReason,
    Limits,
    RunConfig,
    TrialRecord,
    TrialSpec,
    load_domain,
    run_trial,
)
from castbench.formats import ArchiveError, ExportedRun, RunFormat
from castbench_tau2.domain import Tau2Domain
from castbench_tau2.results import write_tau2_results
from castbench_tau2.source import import_tau2

__all__ = ["TAU2", "read_tau2_results"]

_GRADED = frozenset({"user_stop", "agent_stop"})
_UNGRADED_ENDS: dict[str, EndReason] = {"too_many_errors": "too_many_errors", "agent_error": "agent_error"}
"""τ²'s endings castbench names alike; any other ungraded ending is `max_steps` (unfinished)."""


class _Policy:
    def __init__(self, actions: list[Action]) -> None:
        self._actions = list(actions)

    def propose(self, view: Any) -> Action:
        return self._actions.pop(0) if self._actions else ReplyAction(text="")


class _User:
    def __init__(self, opening: str, replies: list[str], graded: bool) -> None:
        self._opening, self._replies, self._graded = opening, list(replies), graded

    def open(self) -> str:
        return self._opening

    def reply(self, message: str) -> UserReply:
        text = self._replies.pop(0) if self._replies else ""
        return UserReply(text, stop=self._graded and not self._replies)


def _turns(simulation: Any) -> tuple[str, list[Action], list[str]]:
    """The simulation's opening, the assistant's actions and the user's later turns."""
    opening: str | None = None
    actions: list[Action] = []
    replies: list[str] = []
    for message in simulation.messages:
        role = getattr(message, "role", None)
        if role == "assistant":
            for call in message.tool_calls or []:
                actions.append(ToolCallAction(name=call.name, arguments=dict(call.arguments)))
            if message.content:
                actions.append(ReplyAction(text=message.content))
        elif role == "user" and message.content:
            if opening is None and not actions:
                opening = message.content
            else:
                replies.append(message.content)
    return opening or "", actions, replies


def _trial(domain: Tau2Domain, simulation: Any, index: int, expected: Any) -> TrialRecord:
    task = domain.task(f"{domain.name}-{simulation.task_id}")
    opening, actions, replies = _turns(simulation)
    reason = str(getattr(simulation.termination_reason, "value", simulation.termination_reason))
    graded = reason in _GRADED
    agents = AgentSet(
        policy=AgentSpec("policy", "tau2-import", "tau2-import", lambda briefing: _Policy(actions)),
        user=AgentSpec(
            "user", "tau2-import", "tau2-import", lambda briefing: _User(opening, replies, graded)
        ),
    )
    limits = Limits(max_steps=max(1, len(actions) + (1 if graded else 0)))
    seed = simulation.seed or 0
    record = run_trial(TrialSpec(domain, task, index, seed, agents, expected, limits, grading="tau"))
    if not graded and reason in _UNGRADED_ENDS and record.end_reason == "max_steps":
        record = record.model_copy(update={"end_reason": _UNGRADED_ENDS[reason]})
    return record


def read_tau2_results(path: Path) -> ExportedRun:
    """The τ² `Results` file as a castbench run, re-played and re-graded (see the module docstring)."""
    simulation = import_tau2("tau2.data_model.simulation")
    try:
        results = simulation.Results.load(path)
    except Exception as exc:  # τ²'s own validation error, whatever it is
        raise ArchiveError(f"{path}: not a τ² Results file τ²'s models accept: {exc}") from exc
    name = f"tau2-{results.info.environment_info.domain_name}"
    try:
        domain = load_domain(name)
    except KeyError as exc:
        raise ArchiveError(f"{path}: its domain {name} is not a castbench τ² pack") from exc
    assert isinstance(domain, Tau2Domain)
    expected: dict[str, Any] = {}
    trials: list[TrialRecord] = []
    seen: dict[str, int] = {}
    theirs: dict[str, float | None] = {}
    for run in results.simulations:
        task_id = f"{name}-{run.task_id}"
        try:
            task = domain.task(task_id)
        except KeyError as exc:
            raise ArchiveError(
                f"{path}: simulation {run.id}: {domain.name} has no task {run.task_id}"
            ) from exc
        if task_id not in expected:
            expected[task_id] = domain.replay(task)
        index = seen[task_id] = seen.get(task_id, -1) + 1
        trials.append(_trial(domain, run, index, expected[task_id]))
        theirs[f"{task_id}#{index}"] = run.reward_info.reward if run.reward_info is not None else None
    info = results.info
    config = RunConfig(
        domains={name: domain.version},
        split="base",
        task_ids=sorted(seen),
        policy=f"tau2:{info.agent_info.implementation}"
        + (f"?model={info.agent_info.llm}" if info.agent_info.llm else ""),
        user=f"tau2:{info.user_info.implementation}"
        + (f"?model={info.user_info.llm}" if info.user_info.llm else ""),
        trials=max(seen.values()) + 1 if seen else 1,
        seed=info.seed or 0,
        grading="tau",
    )
    config = RunConfig.model_validate(config.model_dump(mode="json"))  # every field as written
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ExportedRun(
        run_id=f"tau2-{digest[:12]}",
        created=datetime.now(UTC),
        status="complete",
        config_hash=config.config_hash(),
        config=config,
        meta={
            "imported_from": "tau2-bench Results",
            "data_version": domain.data_version,
            "tau2_rewards": theirs,
        },
        trials=trials,
    )


def _is_results(path: Path) -> bool:
    """A JSON object with τ²'s `info` near its start (τ-bench's results, also `.json`, are a list)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"info"' in head


TAU2 = RunFormat(".json", write_tau2_results, read_tau2_results, accepts=_is_results)
"""τ²-bench's Results JSON both ways: `castbench export --format tau2`, `castbench import FILE.json`
(entry point `castbench.formats`)."""
