"""What a fresh agent process per trial costs (`castbench._agents.transports.serve`), measured in
one run against the alternative of a fresh worker (a new interpreter) per trial:

    python bench/trial_isolation.py [--trials 200] [--fresh-workers 10] [--steps 20]

- `fork per trial`: the worker's template forks the trial's process, which enters the sandbox
  with a fresh scratch folder and imports the agent (`start_trial`), and at the trial's end kills
  and reaps every process it started and removes its folder (`end_trial`). Their sum is what a
  trial pays that a worker serving trial after trial in one process did not (the open and close
  messages both pay);
- `worker per trial`: a new worker (interpreter start, castbench's imports, the agent's probe)
  for each trial, then its trial's process;
- a step (`propose` and its answer) for reference: the same pipe and messages as before, so
  nothing is added per step.

`start` (the sandbox prepared and the agent compiled once by the template: docs/sandbox.md) is
measured both back to back and with `--gap-ms` of castbench's own work between a worker's trials
(the template forks the next trial's process as soon as one ends, so its start is off the
critical path when there is any); the CPU the template and trial processes spend is
printed per trial too. The agent is a small policy (`bench/trial_isolation_agent.py`); an
agent importing heavy libraries pays their import once per trial too (printed for `--heavy`
modules, e.g. `--heavy numpy`). Prints medians and 90th percentiles; no asserts.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import time

from castbench._agents.sandbox import SandboxNeeds
from castbench._agents.transports.wire import EVENTS, briefing_to_wire
from castbench._agents.transports.worker import _pool, _Worker
from castbench._agents.views import Briefing
from castbench._base.conversation import UserTurn
from castbench.agents import sandbox

POLICY = "trial_isolation_agent:EchoPolicy"
"""The script's folder is first on `sys.path`: the worker imports it from there."""

BRIEFING = Briefing(domain="retail", policy="", tools=(), write_tools=frozenset(), seed=1, trial_index=0)
EVENTS_1 = EVENTS.dump_python([UserTurn(text="hello")], mode="python")


def _ms(values: list[float]) -> str:
    tenths = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
    return f"median {1000 * statistics.median(values):7.2f} ms   p90 {1000 * tenths[8]:7.2f} ms"


def _cpu_s(pid: int) -> float:
    """CPU seconds of process `pid` and of its children it reaped (the trials' processes)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _one_trial(worker: _Worker, steps: int) -> tuple[float, float, list[float]]:
    """Seconds to start the trial's process, to end it, and per step."""
    start = time.perf_counter()
    trial = worker.start_trial()
    started = time.perf_counter() - start
    trial.request({"op": "open", "briefing": briefing_to_wire(BRIEFING), "params": {}}, 60, None)
    timed = []
    for index in range(steps):
        start = time.perf_counter()
        trial.request({"op": "call", "method": "propose", "keep": index, "events": EVENTS_1}, 60, None)
        timed.append(time.perf_counter() - start)
    trial.request({"op": "close"}, 60, None)
    start = time.perf_counter()
    trial.end()
    return started, time.perf_counter() - start, timed


def _heavy_import_s(module: str) -> float:
    """A cold interpreter's import of `module`, less the interpreter's own start."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return float(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )


def _cpu_per_trial(worker: _Worker, trials: int, steps: int, gap: float) -> tuple[float, float]:
    """CPU seconds per trial: of the worker's template and its trials' processes (reaped by it),
    and of this process (castbench's side: hand-over, ending, reading how the trial ended)."""
    before, ours = _cpu_s(worker.process.pid), time.process_time()
    for _ in range(trials):
        time.sleep(gap)
        _one_trial(worker, steps)
    return (_cpu_s(worker.process.pid) - before) / trials, (time.process_time() - ours) / trials


def compare_keeper(args: argparse.Namespace) -> None:
    """The trial's process as PID 1 of its namespace (no keeper) against a keeper forked first,
    in interleaved rounds on the same machine: CPU per trial, both sides, and the ratio."""
    from castbench._agents.transports import worker as workers

    support = sandbox.support()
    if "PID namespace" not in support.mechanism:
        print(f"no PID namespace per trial here ({support.mechanism or support.reason}): nothing to compare")
        return
    pool = _pool("policy", POLICY, SandboxNeeds())
    made: dict[bool, _Worker] = {}
    for keeper in (False, True):
        workers._KEEPER[0] = keeper
        made[keeper] = _Worker("policy", POLICY, pool._plan())
        _one_trial(made[keeper], 2)  # warm up
    workers._KEEPER[0] = False
    spent: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    loads = [os.getloadavg()[0]]
    for _ in range(args.keeper_rounds):
        for keeper in (False, True):
            spent[keeper].append(_cpu_per_trial(made[keeper], args.trials, args.steps, args.gap_ms / 1000))
        loads.append(os.getloadavg()[0])
    for worker in made.values():
        worker.kill()
    print(
        f"{support.mechanism}; {args.keeper_rounds} interleaved rounds x {args.trials} trials each, "
        f"{args.steps} steps, {args.gap_ms:g} ms between trials; load {min(loads):.1f}-{max(loads):.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    totals = {}
    for keeper, label in ((True, "keeper forked first (before)"), (False, "trial's process as PID 1 (now)")):
        worker_s = statistics.mean(w for w, _ in spent[keeper])
        ours_s = statistics.mean(o for _, o in spent[keeper])
        totals[keeper] = worker_s + ours_s
        print(
            f"  {label:32} CPU per trial: worker and trial {1000 * worker_s:6.2f} ms + castbench "
            f"{1000 * ours_s:5.2f} ms = {1000 * totals[keeper]:6.2f} ms"
        )
    print(
        f"  now / before: {totals[False] / totals[True]:.2f}; the keeper's CPU per trial "
        f"{1000 * (totals[True] - totals[False]):+.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--fresh-workers", type=int, default=10, help="trials timed with a worker each")
    parser.add_argument("--steps", type=int, default=20, help="steps per trial")
    parser.add_argument("--heavy", nargs="*", default=[], help="modules whose import a trial would repeat")
    parser.add_argument(
        "--gap-ms", type=float, default=30.0, help="castbench's own work between two trials of a worker"
    )
    parser.add_argument(
        "--keeper-rounds",
        type=int,
        default=0,
        help="only compare, in this many interleaved rounds of --trials each, the trial's process as "
        "PID 1 of its namespace against a keeper forked first (the design before it)",
    )
    args = parser.parse_args()
    if args.keeper_rounds:
        compare_keeper(args)
        return
    support = sandbox.support()
    print(f"sandbox: {support.mechanism or 'none: ' + support.reason}")
    pool = _pool("policy", POLICY, SandboxNeeds())
    worker = pool.acquire()
    _one_trial(worker, 2)  # warm up
    timed_by_gap: dict[float, tuple[list[float], list[float]]] = {}
    steps: list[float] = []
    cpu = 0.0
    for gap in (0.0, args.gap_ms / 1000):
        starts, ends = timed_by_gap.setdefault(gap, ([], []))
        before = _cpu_s(worker.process.pid)
        for _ in range(args.trials):
            time.sleep(gap)  # grading, storing, the next trial's set-up: the template forks meanwhile
            started, ended, timed = _one_trial(worker, args.steps)
            starts.append(started)
            ends.append(ended)
            steps += timed
        cpu += _cpu_s(worker.process.pid) - before
    fresh = []
    for _ in range(args.fresh_workers):
        start = time.perf_counter()
        own = _Worker("policy", POLICY, pool._plan())
        _one_trial(own, 0)
        own.kill()
        fresh.append(time.perf_counter() - start)
    print(f"fork per trial ({args.trials} trials each way), waiting on the trial's critical path:")
    for gap, (starts, ends) in timed_by_gap.items():
        added = [a + b for a, b in zip(starts, ends, strict=True)]
        print(f"  {1000 * gap:.0f} ms between a worker's trials:")
        print(f"    start (hand over the forked process)  {_ms(starts)}")
        print(f"    end (kill, reap, output)              {_ms(ends)}")
        print(f"    added per trial                       {_ms(added)}")
    print(f"  CPU of the worker and its trial processes per trial: {1000 * cpu / (2 * args.trials):.2f} ms")
    print(f"worker per trial ({args.fresh_workers} trials): {_ms(fresh)}")
    print(f"a step (propose round trip, {len(steps)} steps): {_ms(steps)}")
    for gap, (starts, ends) in timed_by_gap.items():
        ratio = statistics.median(fresh) / statistics.median(
            [a + b for a, b in zip(starts, ends, strict=True)]
        )
        print(f"worker per trial / fork per trial ({1000 * gap:.0f} ms between trials): {ratio:.1f}x")
    for module in args.heavy:
        importlib.import_module(module)  # present, or the error says so
        seconds = _heavy_import_s(module)
        print(f"importing {module} (what a trial of an agent that imports it adds): {seconds:.3f} s")
    worker.kill()


if __name__ == "__main__":
    main()
