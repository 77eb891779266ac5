"""Do a domain's rules judge exactly as they did at an earlier revision?

Porting a domain's rules onto the shared facts (`castbench._domain.facts`) must change no
decision: this prints, per domain, how many labeler labels, rules-critic findings and domain rule
findings (what the agent saw, and the true state) it compared with those of `--before` (a git
revision; its `harness/` and `domains/` are run in a child process) and how many differ.

Two sources of proposals, both deterministic:
- every proposal of the stored trials of the domain in `--export` files (a board's results), each
  judged on the state and conversation it met;
- `--random` seeded random episodes per domain: real tool calls (arguments drawn from the ground
  truth's and the data's values, some mangled, some results replaced by injected faults) build a
  conversation, then random proposals are judged on it.

    .venv/bin/python bench/facts_parity.py --before f1e343d --domains airline telehealth \
        --export results/scripted-baselines/*.castbench.json.gz --random 600

(f1e343d: the revision before airline and telehealth were ported.) Measured on this machine,
0 labels or findings differing in each: with the scripted-baselines board's five noisy, noisy +
critic and oracle runs and 600 episodes, airline 22,355 proposals (18,400 stored, 3,955 random;
329 rule findings on what was seen, 1,177 on the true state) and telehealth 15,809 (11,893 +
3,916; 766 and 1,168); its three floor runs, airline 29,088 and telehealth 21,136 more; retail
22,442 and telecom 11,644 (whose facts changed underneath them; three runs, 400 episodes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from castbench._agents.critics.checks import call_findings, observed_calls
from castbench._base.conversation import (
    AgentTurn,
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._grading.labeler import label_action
from castbench._records.store.export import read_export
from castbench.domain import Database, Domain, ToolCall, load_domain

ROOT = Path(__file__).resolve().parent.parent
Case = list[Any]
"""[where, label, critic findings, visible rule findings, state rule findings]."""


def _findings(found: list[Any]) -> list[list[str]]:
    return [[finding.failure_type, finding.message] for finding in found]


def _judge(
    domain: Domain, task: Any, action: Any, db: Database, conversation: list[Event], where: str
) -> Case:
    label = label_action(domain, task, action, db, conversation)
    case: Case = [where, [label.label, label.failure_type, label.reason]]
    if isinstance(action, ToolCallAction):
        case.append(_findings(call_findings(domain, action, conversation)))
        if isinstance(action.arguments, dict) and action.name in domain.toolkit:
            call = ToolCall(name=action.name, arguments=dict(action.arguments))
            rules = domain.rules
            case.append(_findings(rules.visible_findings(call, observed_calls(conversation))))
            case.append(_findings(rules.state_findings(call, db)))
    return case


# -- stored trials ---------------------------------------------------------------------------
def stored_cases(domain: Domain, exports: list[Path]) -> Iterator[Case]:
    """Every proposal of the domain's stored trials, judged on what it met (the trial's steps
    executed again on a fresh state; an injected fault ran nothing)."""
    for path in exports:
        for record in read_export(path).trials:
            if record.domain != domain.name:
                continue
            task = domain.task(record.task_id)
            db = domain.fresh_database()
            conversation: list[Event] = [UserTurn(text=record.opening)]
            where = f"{path.name}:{record.task_id}:{record.trial_index}"
            for step in record.steps:
                for proposal in step.proposals:
                    yield _judge(domain, task, proposal.action, db, conversation, f"{where}:{step.index}")
                action, stored = step.action, step.observation
                call_id = f"call_{step.index}"
                if action is None:
                    rejected = step.proposals[-1].action if step.proposals else None
                    if rejected is not None and stored is not None:
                        conversation += [AgentTurn(action=rejected, call_id=call_id), stored]
                elif isinstance(action, ReplyAction):
                    conversation += [AgentTurn(action=action), stored or UserTurn(text="")]
                elif isinstance(action, MalformedAction):
                    if stored is not None:
                        conversation += [AgentTurn(action=action, call_id=call_id), stored]
                else:
                    if step.fault is None:
                        domain.toolkit.call(db, action.name, action.arguments)
                    if stored is not None:
                        conversation += [AgentTurn(action=action, call_id=call_id), stored]


# -- random episodes -------------------------------------------------------------------------
def _scalars(value: Any, key: str, pools: dict[str, list[Any]]) -> None:
    """Every value found under a field name, at any depth (a reservation's flights' dates)."""
    if isinstance(value, dict):
        for name, item in value.items():
            _scalars(item, name, pools)
    elif isinstance(value, list):
        for item in value:
            _scalars(item, key, pools)
        if key:
            pools.setdefault(key, []).append(value)
    elif key:
        pools.setdefault(key, []).append(value)


def _pools(domain: Domain) -> dict[str, list[Any]]:
    """Argument values by parameter name: the ground truths' (whole, as the tasks use them) and
    the data's (every field, at any depth)."""
    pools: dict[str, list[Any]] = {}
    for task in domain.tasks():
        for call in [*task.actions, *task.declined_actions]:
            for name, value in call.arguments.items():
                pools.setdefault(name, []).append(value)
    db = domain.fresh_database()
    for model in domain.records:
        for record in db.scan(model):
            _scalars(record.model_dump(mode="json"), "", pools)
    return {name: sorted(set(map(json.dumps, values))) for name, values in pools.items()}


def _mangle(value: Any, rng: random.Random) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value + rng.choice([-50, -1, 1, 30, 100])
    if isinstance(value, str):
        return rng.choice([value.upper(), value[:-1], value + "9", "", "2026-05-15"])
    if isinstance(value, list) and value:
        return rng.choice([value[:-1], value + value[:1], list(reversed(value))])
    return value


def _arguments(domain: Domain, name: str, pools: dict[str, list[str]], rng: random.Random) -> dict[str, Any]:
    parameters = domain.toolkit[name].schema["function"]["parameters"].get("properties", {})
    arguments: dict[str, Any] = {}
    for parameter, spec in parameters.items():
        if "enum" in spec and rng.random() < 0.7:
            arguments[parameter] = rng.choice(spec["enum"])
        elif parameter in pools:
            arguments[parameter] = json.loads(rng.choice(pools[parameter]))
        if parameter in arguments and rng.random() < 0.1:
            arguments[parameter] = _mangle(arguments[parameter], rng)
        if rng.random() < 0.03:
            arguments.pop(parameter, None)
    return arguments


_FAULTS = [("Error: the service timed out", True), ("", False), ('{"truncated": ', False), ("[]", False)]


def random_cases(domain: Domain, episodes: int, seed: int) -> Iterator[Case]:
    """`episodes` seeded random conversations of real tool calls, each followed by proposals; the
    pools are narrowed per episode so that what a proposal names was often looked up."""
    full = _pools(domain)
    tasks = domain.tasks("test")
    names = domain.toolkit.names
    for episode in range(episodes):
        rng = random.Random(f"{seed}:{domain.name}:{episode}")
        pools = {
            name: rng.sample(values, min(len(values), rng.choice([1, 2, 3]))) for name, values in full.items()
        }
        task = rng.choice(tasks)
        for call in task.actions:  # the task's own values too: its lookups are often made
            for name, value in call.arguments.items():
                pools.setdefault(name, []).append(json.dumps(value))
        db = domain.fresh_database()
        conversation: list[Event] = [UserTurn(text="Hi, I need help.")]
        for step in range(rng.randint(2, 14)):
            name = rng.choice(names)
            action = ToolCallAction(name=name, arguments=_arguments(domain, name, pools, rng))
            call_id = f"call_{step}"
            if rng.random() < 0.05:
                content, error = rng.choice(_FAULTS)
            else:
                observation = domain.toolkit.call(db, name, action.arguments)
                content, error = observation.content, observation.error
            if rng.random() < 0.15:
                conversation.append(UserTurn(text=rng.choice(["yes", "Yes, please go ahead.", "no", "ok"])))
            conversation += [
                AgentTurn(action=action, call_id=call_id),
                ToolResultTurn(call_id=call_id, name=name, content=content, error=error),
            ]
        for proposal in range(rng.randint(3, 10)):
            name = rng.choice(names)
            action = ToolCallAction(name=name, arguments=_arguments(domain, name, pools, rng))
            yield _judge(domain, task, action, db, conversation, f"random:{episode}:{proposal}")


def emit(domains: list[str], exports: list[Path], episodes: int, seed: int) -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}
    for name in domains:
        domain = load_domain(name)
        cases[name] = [*stored_cases(domain, exports), *random_cases(domain, episodes, seed)]
    return cases


def _before(revision: str, argv: list[str], tmp: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Start judging the same cases by `revision`'s harness and domains, in a child process (it
    runs beside this one); returns it and where it writes them."""
    archive = Path(tmp) / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision, "harness", "domains"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    env = {**os.environ, "PYTHONPATH": f"{tmp}/harness:{tmp}/domains"}
    cases = Path(tmp) / "cases.json"
    return subprocess.Popen([sys.executable, __file__, *argv, "--emit", str(cases)], env=env), cases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", help="git revision to compare with", default="HEAD")
    parser.add_argument("--domains", nargs="+", default=["airline", "telehealth"])
    parser.add_argument("--export", nargs="*", type=Path, default=[], help="stored runs (.castbench.json.gz)")
    parser.add_argument("--random", type=int, default=400, help="random episodes per domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    shared = ["--domains", *args.domains, "--random", str(args.random), "--seed", str(args.seed)]
    shared += ["--export", *map(str, args.export)] if args.export else []
    if args.emit is not None:
        args.emit.write_text(json.dumps(emit(args.domains, args.export, args.random, args.seed)))
        return
    with tempfile.TemporaryDirectory(prefix="facts-parity-") as tmp:
        child, cases = _before(args.before, shared, tmp)
        after = emit(args.domains, args.export, args.random, args.seed)
        if child.wait() != 0:
            sys.exit(f"error: the cases of {args.before} could not be judged (exit {child.returncode})")
        before = json.loads(cases.read_text())
    differ = 0
    for name in args.domains:
        old, new = before[name], json.loads(json.dumps(after[name]))
        changed = [(o, n) for o, n in zip(old, new, strict=False) if o != n] + [(None, None)] * abs(
            len(old) - len(new)
        )
        labels = len(new)
        critic = sum(len(case[2]) for case in new if len(case) > 2)
        visible = sum(len(case[3]) for case in new if len(case) > 3)
        state = sum(len(case[4]) for case in new if len(case) > 4)
        stored = sum(1 for case in new if not case[0].startswith("random:"))
        print(
            f"{name}: {labels} proposals ({stored} stored, {labels - stored} random): {labels} labels, "
            f"{critic} critic findings, {visible} rule findings on what was seen, {state} on the true "
            f"state; {len(changed)} differ from {args.before}"
        )
        for o, n in changed[:5]:
            print(f"  before {o}\n  after  {n}")
        differ += len(changed)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
