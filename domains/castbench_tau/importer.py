"""`castbench import results.json` for a run made by τ-bench's own harness: the JSON list its
`run.py` writes (and its published `historical_trajectories/*.json` use), one entry per trial,
`{task_id, trial, reward, info, traj}`, re-played through castbench's sandbox and graded every way
castbench grades, beside the reward τ recorded.

- **Which pack.** `traj[0]` is the system message, τ's wiki verbatim: the `tau-*` pack whose wiki
  it is (a file of another policy is refused). Task `task_id` is the pack's split whose task at
  that index has the entry's `info.task` (user id and instruction): `original` first (τ-bench's
  first release: airline 50, retail 115 tasks), then the others.
- **Both sides replayed faithfully.** The policy replays the assistant's messages in order: a
  message with a tool call is that call (τ-bench executes the first call of a message and never
  shows the message's text to the user: the text is kept on the call as `ToolCallAction.text`),
  a message without one is a reply. The user replays its recorded messages in order; τ's stop
  token `###STOP###` is taken off the text and ends the conversation, as castbench's LLM users
  end it. A trajectory that ends on a user stop or a transfer is graded; one τ cut at its step
  limit (the last message a tool result of another tool) ends unfinished here too and scores 0.
- **Graded every way.** Each entry is played twice on a fresh sandbox: graded `--grading tau` (τ's
  reward rule: what is stored), and graded castbench's default way with the rules critic
  watching every call in one round whose verdict never changes what executes
  (`on_exhausted=execute`): its plain reward, its strict reward, the labeler's labels and the
  critic's verdicts on the recorded actions. `ReplayedTrial` holds both records and the recorded
  reward; `agreement` counts, per grading, the trials whose pass agrees with τ's.

The stored run (`read_tau_results`, the `castbench.formats` entry `tau`) is the `tau`-graded one,
marked submitted, its id `tau-` and a digest of the file; its meta keeps τ's recorded rewards
and each trial's outcome under every grading, which `castbench import` prints as a table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from castbench.agents import Action, AgentSpec, ReplyAction, ToolCallAction, UserReply, resolve
from castbench.domain import (
    AgentSet,
    Limits,
    RunConfig,
    TrialRecord,
    TrialSpec,
    Verification,
    load_domain,
    run_trial,
    trial_seed,
)
from castbench.formats import ArchiveError, ExportedRun, RunFormat
from castbench_tau.domain import TauDomain
from castbench_tau.source import DOMAINS, load_source

__all__ = [
    "GRADINGS",
    "TAU",
    "ReplayedTrial",
    "TauEntry",
    "agreement",
    "is_tau_results",
    "parse_tau_results",
    "read_tau_results",
    "replay_entries",
]

STOP = "###STOP###"
GRADINGS = ("tau", "plain", "strict", "labels", "critic")
"""Every way an imported trial is judged: τ's reward rule, castbench's default reward, its strict
reward, the labeler (no executed action labelled invalid) and the rules critic (no call flagged)."""


@dataclass(frozen=True)
class TauEntry:
    """One entry of a τ-bench results file, read and checked."""

    task_index: int
    trial: int
    reward: float
    task: dict[str, Any]
    traj: list[dict[str, Any]]
    ended_by: str
    """`user` (the user wrote the stop token), `transfer` (a terminate tool's result is last) or
    `limit` (τ cut the trajectory at its step limit)."""


@dataclass
class ReplayedTrial:
    """One entry replayed: the `tau`-graded record (stored) and the default-graded one with the
    rules critic's verdicts (`checked`), beside τ's recorded reward."""

    entry: TauEntry
    task_id: str
    tau: TrialRecord
    checked: TrialRecord
    passes: dict[str, bool] = field(default_factory=dict)

    @property
    def recorded_pass(self) -> bool:
        return self.entry.reward >= 1.0


class _Policy:
    def __init__(self, actions: list[Action]) -> None:
        self._actions = list(actions)

    def propose(self, view: Any) -> Action:
        return self._actions.pop(0) if self._actions else ReplyAction(text="")


class _User:
    def __init__(self, opening: str, replies: list[str]) -> None:
        self._opening, self._replies = opening, list(replies)

    def open(self) -> str:
        return self._opening

    def reply(self, message: str) -> UserReply:
        text = self._replies.pop(0) if self._replies else ""
        return UserReply(text.replace(STOP, "").strip(), stop=STOP in text)


def is_tau_results(path: Path) -> bool:
    """Does the file look like τ-bench's results (a JSON list)? Only its first character is read."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"[")


def _where(path: Path, index: int, entry: Any) -> str:
    if isinstance(entry, dict) and "task_id" in entry:
        return f"{path}: entry {index} (task {entry.get('task_id')}, trial {entry.get('trial')})"
    return f"{path}: entry {index}"


def _ended_by(traj: list[dict[str, Any]], terminate: Sequence[str]) -> str:
    last = traj[-1]
    if last.get("role") == "user" and STOP in (last.get("content") or ""):
        return "user"
    if last.get("role") == "tool" and last.get("name") in terminate:
        return "transfer"
    return "limit"


def _entry(path: Path, index: int, raw: Any, terminate: Sequence[str]) -> TauEntry:
    where = _where(path, index, raw)
    if not isinstance(raw, dict):
        raise ArchiveError(f"{where}: not an object {{task_id, trial, reward, info, traj}}")
    missing = [key for key in ("task_id", "reward", "info", "traj") if key not in raw]
    if missing:
        raise ArchiveError(
            f"{where}: no {', '.join(missing)} (τ-bench's entries have task_id, reward, info, traj)"
        )
    task = raw["info"].get("task") if isinstance(raw["info"], dict) else None
    if not isinstance(task, dict) or not isinstance(task.get("instruction"), str):
        raise ArchiveError(f"{where}: info.task with the task's user_id and instruction is missing")
    traj = raw["traj"]
    if not isinstance(traj, list) or len(traj) < 2 or not all(isinstance(m, dict) for m in traj):
        raise ArchiveError(f"{where}: traj is not a list of messages (system, user, ...)")
    if traj[0].get("role") != "system" or traj[1].get("role") != "user":
        raise ArchiveError(f"{where}: traj does not open with the system message and the user's")
    task_index, trial = raw["task_id"], raw.get("trial", 0)
    if not isinstance(task_index, int) or not isinstance(trial, int) or task_index < 0 or trial < 0:
        raise ArchiveError(f"{where}: task_id and trial must be non-negative integers")
    if not isinstance(raw["reward"], int | float):
        raise ArchiveError(f"{where}: reward is not a number")
    return TauEntry(task_index, trial, float(raw["reward"]), task, traj, _ended_by(traj, terminate))


@cache
def _wikis() -> dict[str, str]:
    return {name: load_source(name).wiki for name in DOMAINS}


def _pack(path: Path, system: str) -> str:
    """The `tau-*` pack whose wiki is the file's system message."""
    for name, wiki in _wikis().items():
        if system.strip() == wiki.strip():
            return name
    raise ArchiveError(
        f"{path}: its system message is not the wiki of any τ pack ({', '.join(DOMAINS)}): "
        "not a τ-bench run of the installed tau-trait's data"
    )


def parse_tau_results(path: Path) -> tuple[str, list[TauEntry]]:
    """The file's pack (`airline`, ...) and its entries, checked; `ArchiveError`, one line, else."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"{path}: not readable JSON ({str(exc).splitlines()[0]})") from exc
    if not isinstance(raw, list) or not raw:
        raise ArchiveError(
            f"{path}: not τ-bench results (a non-empty JSON list of {{task_id, trial, reward, info, traj}})"
        )
    first = raw[0]
    if not isinstance(first, dict) or not isinstance(first.get("traj"), list) or not first["traj"]:
        raise ArchiveError(
            f"{_where(path, 0, first)}: no traj (τ-bench's entries have task_id, reward, info, traj)"
        )
    system = first["traj"][0].get("content") if isinstance(first["traj"][0], dict) else None
    if not isinstance(system, str):
        raise ArchiveError(f"{_where(path, 0, first)}: traj does not open with the system message")
    pack = _pack(path, system)
    terminate = load_source(pack).terminate_tools
    entries = [_entry(path, index, item, terminate) for index, item in enumerate(raw)]
    seen: set[tuple[int, int]] = set()
    for index, entry in enumerate(entries):
        key = (entry.task_index, entry.trial)
        if key in seen:
            raise ArchiveError(f"{_where(path, index, raw[index])}: a second entry for this task and trial")
        seen.add(key)
        if entry.traj[0].get("content") != system:
            raise ArchiveError(
                f"{_where(path, index, raw[index])}: its system message is not the first entry's"
            )
    return pack, entries


def _arguments(text: Any) -> dict[str, Any] | str:
    if isinstance(text, dict):
        return text
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        return str(text)
    return parsed if isinstance(parsed, dict) else str(text)


def _turns(entry: TauEntry) -> tuple[str, list[Action], list[str]]:
    """The opening, the assistant's actions and the user's later messages, in order."""
    opening = str(entry.traj[1].get("content") or "")
    actions: list[Action] = []
    replies: list[str] = []
    for message in entry.traj[2:]:
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            text = message.get("content") or ""
            if calls:  # τ-bench executes the first call; the text is never shown to the user
                function = calls[0].get("function") or {}
                actions.append(
                    ToolCallAction(
                        name=str(function.get("name", "")),
                        arguments=_arguments(function.get("arguments", {})),
                        text=text,
                    )
                )
            else:
                actions.append(ReplyAction(text=text))
        elif role == "user":
            replies.append(str(message.get("content") or ""))
    return opening, actions, replies


def _same_task(task: Any, raw: dict[str, Any]) -> bool:
    """τ's task as the file states it (`info.task`) is the pack's: the same gold actions and
    outputs for the same user. The instruction's wording is not compared: τ-bench's releases
    reworded its first sentence ("You are X." / "Your user id is X.")."""
    actions = [
        (str(action.get("name")), action.get("kwargs", action.get("arguments")))
        for action in raw.get("actions", [])
        if isinstance(action, dict)
    ]
    return (
        [(call.name, call.arguments) for call in task.actions] == actions
        and list(task.required_outputs) == list(raw.get("outputs") or [])
        and str(raw.get("user_id", "")) in task.scenario.instructions
    )


def _task_id(domain: TauDomain, path: Path, entry: TauEntry) -> str:
    """The pack's task that is the entry's: the same index in the first split that has the same
    task there (`original` first)."""
    splits = ["original", *(split for split in domain.splits if split != "original")]
    for split in splits:
        task_id = f"{domain.name}-{split}-{entry.task_index}"
        try:
            task = domain.task(task_id)
        except KeyError:
            continue
        if _same_task(task, entry.task):
            return task_id
    raise ArchiveError(
        f"{path}: task {entry.task_index}, trial {entry.trial}: no split of {domain.name} has this "
        "task (its user, gold actions and outputs) at that index"
    )


def _play(
    domain: TauDomain, task_id: str, entry: TauEntry, expected: Any, grading: str, critic: AgentSpec | None
) -> TrialRecord:
    opening, actions, replies = _turns(entry)
    agents = AgentSet(
        policy=AgentSpec("policy", "tau-import", "tau-import", lambda briefing: _Policy(actions)),
        user=AgentSpec("user", "tau-import", "tau-import", lambda briefing: _User(opening, replies)),
        critic=critic,
    )
    graded = entry.ended_by != "limit"
    limits = Limits(max_steps=max(1, len(actions) + (1 if graded else 0)))
    spec = TrialSpec(
        domain,
        domain.task(task_id),
        entry.trial,
        trial_seed(0, domain.name, task_id, entry.trial),
        agents,
        expected,
        limits,
        _WATCH if critic is not None else Verification(),
        grading=grading,  # type: ignore[arg-type]
    )
    return run_trial(spec)


_WATCH = Verification(rounds=1, on_exhausted="execute", scope="tool_calls")
"""The critic watches every call once; what executes is the record's, whatever it says."""


def _passes(tau: TrialRecord, checked: TrialRecord) -> dict[str, bool]:
    executed = [proposal for step in checked.steps for proposal in step.proposals if step.action is not None]
    return {
        "tau": (tau.reward or 0.0) >= 1.0,
        "plain": (checked.reward or 0.0) >= 1.0,
        "strict": checked.grade is not None and (checked.grade.strict_reward or 0.0) >= 1.0,
        "labels": all(p.label is None or p.label.label != "invalid" for p in executed),
        "critic": all(p.verdict is None or p.verdict.verdict != "invalid" for p in executed),
    }


def replay_entries(
    path: Path, trials: Iterable[int] | None = None, *, checked: bool = True
) -> tuple[TauDomain, list[ReplayedTrial]]:
    """Every entry of the file (of `trials` only, when given) replayed and graded every way; with
    `checked=False` the default-graded replay with the critic is skipped (`checked` is then the
    `tau` record)."""
    pack, entries = parse_tau_results(path)
    domain = load_domain(f"tau-{pack}")
    assert isinstance(domain, TauDomain)
    wanted = None if trials is None else set(trials)
    critic = resolve("critic", "rules") if checked else None
    expected: dict[str, Any] = {}
    replayed: list[ReplayedTrial] = []
    for entry in entries:
        if wanted is not None and entry.trial not in wanted:
            continue
        task_id = _task_id(domain, path, entry)
        if task_id not in expected:
            expected[task_id] = domain.replay(domain.task(task_id))
        tau = _play(domain, task_id, entry, expected[task_id], "tau", None)
        other = _play(domain, task_id, entry, expected[task_id], "castbench", critic) if checked else tau
        replayed.append(ReplayedTrial(entry, task_id, tau, other, _passes(tau, other)))
    return domain, replayed


def agreement(replayed: Sequence[ReplayedTrial]) -> dict[str, dict[str, Any]]:
    """Per grading: how many trials agree with τ's recorded reward, how many castbench passes that
    τ failed (`extra`) and fails that τ passed (`missed`), each listed as `task#trial`."""
    table: dict[str, dict[str, Any]] = {}
    for grading in GRADINGS:
        extra = [
            f"{r.task_id}#{r.entry.trial}" for r in replayed if r.passes[grading] and not r.recorded_pass
        ]
        missed = [
            f"{r.task_id}#{r.entry.trial}" for r in replayed if r.recorded_pass and not r.passes[grading]
        ]
        table[grading] = {
            "agree": len(replayed) - len(extra) - len(missed),
            "disagree": len(extra) + len(missed),
            "passed_tau_failed": extra,
            "failed_tau_passed": missed,
        }
    return table


def read_tau_results(path: Path) -> ExportedRun:
    """The τ-bench results file as a castbench run, re-played and graded (see the module docstring)."""
    domain, replayed = replay_entries(path)
    trials = [item.tau for item in replayed]
    task_ids = sorted({item.task_id for item in replayed})
    split = task_ids[0].removeprefix(f"{domain.name}-").rpartition("-")[0] if task_ids else "original"
    config = RunConfig(
        domains={domain.name: domain.version},
        split=split,
        task_ids=task_ids,
        policy="tau-bench:import",
        user="tau-bench:import",
        trials=max(item.entry.trial for item in replayed) + 1,
        seed=0,
        grading="tau",
    )
    config = RunConfig.model_validate(config.model_dump(mode="json"))  # every field as written
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ExportedRun(
        run_id=f"tau-{digest[:12]}",
        created=datetime.now(UTC),
        status="complete",
        config_hash=config.config_hash(),
        config=config,
        meta={
            "imported_from": "tau-bench results",
            "data_version": domain.version,
            "recorded_rewards": {f"{r.task_id}#{r.entry.trial}": r.entry.reward for r in replayed},
            "gradings": {f"{r.task_id}#{r.entry.trial}": r.passes for r in replayed},
            "agreement": agreement(replayed),
        },
        trials=trials,
    )


def _write(exported: ExportedRun, target: Path) -> int:
    raise ArchiveError("τ-bench's results are read, not written: export with --format castbench or tau2")


TAU = RunFormat(".json", _write, read_tau_results, accepts=is_tau_results)
"""τ-bench's results JSON, read only: `castbench import FILE.json` (entry point `castbench.formats`)."""
