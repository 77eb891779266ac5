"""What running an import-path agent in its own worker process costs, against running it in
castbench's process: per step (one `propose` on a real, growing conversation), per trial
(opening and releasing the agent) and once per worker (start-up).

    python bench/isolation_overhead.py [--domain retail] [--tasks 40] [--rounds 3]

The conversations are real: the oracle plays the domain's test tasks with the scripted user,
and every prefix it proposed on is shown again to a small policy, once in process and once
through a worker. The policy's own work is the same both ways, so the difference of the two
medians is the isolation's cost per step. Prints the figures; no asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._agents.registry import resolve  # noqa: E402
from castbench._agents.transports import connect  # noqa: E402
from castbench._agents.views import Briefing, PolicyView, briefing_for  # noqa: E402
from castbench._base.conversation import (  # noqa: E402
    Action,
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    UserTurn,
)
from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._trial.execution import plan_execution  # noqa: E402
from castbench._trial.rollout import AgentSet, TrialSpec, run_trial  # noqa: E402
from castbench.domain import Domain, load_domain  # noqa: E402

POLICY = "isolation_overhead:LookupPolicy"
"""This module, as the worker imports it (the script's folder is first on `sys.path`)."""


class LookupPolicy:
    """Reads the conversation and proposes a look-up: the same small work in either process."""

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing

    def propose(self, view: PolicyView) -> Action:
        said = sum(len(event.text) for event in view.conversation if isinstance(event, UserTurn))
        return ToolCallAction(name="get_order_details", arguments={"order_id": f"#W{said}"})


def _conversations(domain: Domain, count: int) -> list[tuple[Briefing, list[tuple[Event, ...]]]]:
    """For each task, the prefixes of the oracle's conversation it proposed on."""
    agents = AgentSet(policy=resolve("policy", "oracle"), user=resolve("user", "scripted"))
    found = []
    for index, task in enumerate(domain.tasks("test")[:count]):
        record = run_trial(TrialSpec(domain, task, 0, index, agents, domain.replay(task)))
        found.append((briefing_for(domain, task, index, 0, privileged=False), _prefixes(record)))
    return found


def _prefixes(record: TrialRecord) -> list[tuple[Event, ...]]:
    events: list[Event] = [UserTurn(text=record.opening)]
    prefixes = []
    for step in record.steps:
        prefixes.append(tuple(events))
        if step.action is None or step.observation is None:
            break
        call_id = None if isinstance(step.action, ReplyAction) else f"call_{step.index}"
        events += [AgentTurn(action=step.action, call_id=call_id), step.observation]
    return prefixes


def _time_steps(
    spec: Any, conversations: list[tuple[Briefing, list[tuple[Event, ...]]]]
) -> tuple[list[float], list[float]]:
    """Seconds per `propose`, and per trial for opening + releasing the agent."""
    transport = connect(spec, plan_execution(AgentSet(spec, resolve("user", "scripted"))).call("policy"))
    steps, trials = [], []
    for briefing, prefixes in conversations:
        start = time.perf_counter()
        agent = transport.open(briefing, 60.0)
        opened = time.perf_counter() - start
        for prefix in prefixes:
            start = time.perf_counter()
            agent.propose(PolicyView(briefing, prefix))
            steps.append(time.perf_counter() - start)
        start = time.perf_counter()
        transport.release(agent)
        trials.append(opened + time.perf_counter() - start)
    return steps, trials


def _ms(values: list[float], quantile: int = 5) -> float:
    """The `quantile`-th tenth of `values` (5: the median), in milliseconds."""
    return 1000 * statistics.quantiles(values, n=10)[quantile - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the conversations per side")
    args = parser.parse_args()
    domain = load_domain(args.domain)
    conversations = _conversations(domain, args.tasks)
    start = time.perf_counter()
    worker = resolve("policy", POLICY)  # starts the first worker and imports the policy there
    startup = time.perf_counter() - start
    local = resolve("policy", POLICY, in_process=True)
    assert worker.transport == "worker" and local.transport == "in-process"
    _time_steps(worker, conversations[:2])  # warm both sides up
    _time_steps(local, conversations[:2])
    timed: dict[str, tuple[list[float], list[float]]] = {"in-process": ([], []), "worker": ([], [])}
    for _ in range(args.rounds):  # interleaved, so both sides see the same machine load
        for name, spec in (("in-process", local), ("worker", worker)):
            steps, trials = _time_steps(spec, conversations)
            timed[name][0].extend(steps)
            timed[name][1].extend(trials)
    events = [len(prefix) for _, prefixes in conversations for prefix in prefixes]
    print(
        f"{args.domain}: {len(conversations)} oracle conversations, {len(events)} steps "
        f"(median {statistics.median(events):.0f} events shown, max {max(events)}), {args.rounds} rounds"
    )
    print(f"worker start-up (interpreter + imports + agent import): {startup * 1000:.0f} ms, once per worker")
    print(f"{'':>12} {'step median':>12} {'step p90':>10} {'trial open+release median':>26}")
    for name, (steps, trials) in timed.items():
        print(f"{name:>12} {_ms(steps):>9.3f} ms {_ms(steps, 9):>7.3f} ms {_ms(trials):>23.3f} ms")
    per_step = _ms(timed["worker"][0]) - _ms(timed["in-process"][0])
    per_trial = _ms(timed["worker"][1]) - _ms(timed["in-process"][1])
    print(f"isolation adds {per_step:.3f} ms per step (median), {per_trial:.3f} ms per trial")


if __name__ == "__main__":
    main()
