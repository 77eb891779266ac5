"""Simulator faults: what a simulated user did that its scenario does not allow.

Read from the transcript and the privileged scenario (the harness's side, never shown to an
agent). The opening is the scenario's own request and is never a fault. Rules:

- `leaked_goal`: the user stated a fact it keeps until asked (its value) before any agent message
  asked for it (none of the fact's keywords: mild, decisive only where nothing else explains a
  stalled trial), or recited a run of its private brief (ten words of `scenario.instructions`
  found in neither the request nor a fact's statement: decisive);
- `contradicted_facts`: the user stated a fact with another value than the scenario's (the
  statement's own wording, another value after it) and never said the right one after; or said
  no to a change its scenario accepts (`confirm`), put to it with every value of a ground-truth
  write;
- `ended_early`: the user stopped while the agent was waiting on it (its last message asked a
  question or gave an instruction, and was not a closing "anything else"), unprovoked: the
  agent had not repeated itself (a message it sent before, or a question about a fact the user
  had already stated);
- `never_ended`: the trial ran out of steps after the agent had closed twice ("anything else");
- `broke_persona`: the user spoke as the agent or as a model ("how can I help you", "as an AI").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from castbench._base.conversation import AgentTurn, Event, ReplyAction, UserTurn
from castbench._base.dialogue import asks_anything_else, asks_confirmation, is_negative
from castbench._domain.task import Task
from castbench._grading.outputs import missing_outputs
from castbench._records.trial import TrialRecord
from castbench._results.attribution.model import UserFault

__all__ = ["Turn", "transcript", "user_faults"]

Turn = tuple[int | None, Event]
"""An event of the trial with the step it belongs to (None: the opening)."""

_PERSONA = re.compile(
    r"\b(how (can|may) i (help|assist) you|as an ai\b|i am an ai\b|i'm an ai\b|language model)"
)
_WORDS = re.compile(r"[\w@.#'-]+")
_SPAN = 10


def transcript(record: TrialRecord) -> list[Turn]:
    """The trial's events as stored: the opening, then each executed step's action and what
    answered it."""
    turns: list[Turn] = [(None, UserTurn(text=record.opening))]
    for step in record.steps:
        if step.action is not None:
            turns.append((step.index, AgentTurn(action=step.action, call_id=f"call_{step.index}")))
        if step.observation is not None:
            turns.append((step.index, step.observation))
    return turns


def _agent_text(event: Event) -> str | None:
    if isinstance(event, AgentTurn) and isinstance(event.action, ReplyAction):
        return event.action.text
    return None


@lru_cache(maxsize=8192)
def _spans(text: str) -> frozenset[tuple[str, ...]]:
    """Cached, like `_states`: a run's trials of one task repeat the same user turns."""
    words = [w.lower().strip(".'") for w in _WORDS.findall(text)]
    return frozenset(tuple(words[i : i + _SPAN]) for i in range(len(words) - _SPAN + 1))


def _mentions(lowered: str, keywords: Sequence[str]) -> bool:
    """Whether an agent's message (lowercased) names one of a fact's keywords."""
    return any(keyword.lower() in lowered for keyword in keywords)


@lru_cache(maxsize=16384)
def _states(text: str, value: str) -> bool:
    """Whether `text` says `value`, as a required output is found. Cached: every rule asks it of
    every user turn for every fact, and a run's trials of one task repeat the same turns."""
    return not missing_outputs([value], [text])


_BRIEFS: dict[tuple[str, str], frozenset[tuple[str, ...]]] = {}


def _brief(task: Task) -> frozenset[tuple[str, ...]]:
    """The runs of words only the user's private brief holds (worked out once per task)."""
    key = (task.id, task.scenario.instructions)
    if key not in _BRIEFS:
        scenario = task.scenario
        brief = _spans(scenario.instructions) - _spans(scenario.request)
        for fact in scenario.facts:
            brief -= _spans(fact.statement)
        _BRIEFS[key] = frozenset(brief)
    return _BRIEFS[key]


def _leaks(task: Task, turns: Sequence[Turn]) -> list[UserFault]:
    scenario = task.scenario
    brief = _brief(task)
    faults: list[UserFault] = []
    asked: set[str] = set()
    for step, event in turns[1:]:
        text = _agent_text(event)
        if text is not None:
            lowered = text.lower()
            asked |= {f.name for f in scenario.facts if _mentions(lowered, f.keywords)}
        if not isinstance(event, UserTurn):
            continue
        told = [f.name for f in scenario.facts if f.name not in asked and _states(event.text, f.value)]
        if told:
            faults.append(
                UserFault(step=step, cause="leaked_goal", detail=f"stated {told} unasked", decisive=False)
            )
        elif brief and _spans(event.text) & brief:
            faults.append(
                UserFault(step=step, cause="leaked_goal", detail="recited its brief", decisive=True)
            )
    return faults


@lru_cache(maxsize=16384)
def _stated_value(fact_statement: str, value: str, text: str) -> str | None:
    """The value the user gave in the statement's own wording ("My email is ..."), if any
    (cached, like `_states`)."""
    if value not in fact_statement:
        return None
    prefix = fact_statement.split(value, 1)[0].strip()
    if len(prefix) < 4 or prefix.lower() not in text.lower():
        return None
    after = text.lower().split(prefix.lower(), 1)[1].strip()
    if after.startswith(value.lower()):
        return value.lower().rstrip(".")
    found = _WORDS.search(after)
    return found.group(0).rstrip(".") if found else None


def _contradictions(task: Task, turns: Sequence[Turn]) -> list[UserFault]:
    scenario = task.scenario
    faults: list[UserFault] = []
    users = [(step, event) for step, event in turns[1:] if isinstance(event, UserTurn)]
    for fact in scenario.facts:
        wrong = None
        for step, turn in users:
            said = _stated_value(fact.statement, fact.value, turn.text)
            if said is not None and said != fact.value.lower().rstrip("."):
                wrong = wrong or (step, said)
            elif _states(turn.text, fact.value):
                wrong = None  # corrected (a confused user's second statement)
        if wrong is not None:
            faults.append(
                UserFault(
                    step=wrong[0],
                    cause="contradicted_facts",
                    detail=f"said {fact.name} is {wrong[1]!r}, not {fact.value!r}",
                    decisive=True,
                )
            )
    if scenario.confirm:
        writes = [c for c in task.actions if c.actor == "agent"]
        previous: str | None = None
        for step, event in turns[1:]:
            text = _agent_text(event)
            if text is not None:
                previous = text
            elif (
                isinstance(event, UserTurn)
                and previous
                and asks_confirmation(previous)
                and is_negative(event.text)
            ):
                values = [[v for v in map(str, call.arguments.values()) if v.strip()] for call in writes]
                if any(v and not missing_outputs(v, [previous]) for v in values):
                    faults.append(
                        UserFault(
                            step=step,
                            cause="contradicted_facts",
                            detail="declined a change its scenario accepts",
                            decisive=True,
                        )
                    )
                    break
    return faults


def _repeats(agent_text: str, earlier: Sequence[str], task: Task | None, stated: str) -> bool:
    """The agent's message repeats one it sent, or asks again for a fact the user stated (a
    request to confirm names those facts without asking for them)."""
    norm = " ".join(agent_text.lower().split())
    if any(norm == " ".join(e.lower().split()) for e in earlier):
        return True
    if task is None or asks_confirmation(agent_text):
        return False
    lowered = agent_text.lower()
    return any(_mentions(lowered, f.keywords) and _states(stated, f.value) for f in task.scenario.facts)


def _early_end(record: TrialRecord, task: Task | None, turns: Sequence[Turn]) -> UserFault | None:
    if record.passed or record.end_reason != "user_stop" or not record.steps:
        return None
    last = record.steps[-1]
    message = _agent_text(AgentTurn(action=last.action)) if last.action is not None else None
    if message is None or asks_anything_else(message):
        return None
    waiting = "?" in message or asks_confirmation(message) or "please" in message.lower()
    if not waiting:
        return None
    earlier = [t for _, e in turns[:-2] if (t := _agent_text(e)) is not None]
    stated = " ".join(e.text for _, e in turns[:-1] if isinstance(e, UserTurn))
    if _repeats(message, earlier, task, stated):
        return None
    return UserFault(
        step=last.index, cause="ended_early", detail="left while the agent waited on it", decisive=True
    )


def _never_ended(record: TrialRecord, turns: Sequence[Turn]) -> UserFault | None:
    if record.end_reason != "max_steps":
        return None
    closings = [step for step, e in turns if (t := _agent_text(e)) is not None and asks_anything_else(t)]
    if len(closings) < 2:
        return None
    return UserFault(
        step=closings[1], cause="never_ended", detail="kept going after the agent closed twice", decisive=True
    )


def _persona(turns: Sequence[Turn]) -> UserFault | None:
    for step, event in turns[1:]:
        if isinstance(event, UserTurn) and _PERSONA.search(event.text.lower()):
            return UserFault(step=step, cause="broke_persona", detail="spoke as the agent", decisive=False)
    return None


def user_faults(record: TrialRecord, task: Task | None) -> list[UserFault]:
    """Every simulator fault of a trial, in step order. Without the task (a domain not
    installed) only the rules that need no scenario apply."""
    turns = transcript(record)
    faults: list[UserFault] = []
    if task is not None:
        faults += _leaks(task, turns) + _contradictions(task, turns)
    faults += [
        f for f in (_early_end(record, task, turns), _never_ended(record, turns), _persona(turns)) if f
    ]
    return sorted(faults, key=lambda f: -1 if f.step is None else f.step)
