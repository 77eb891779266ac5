"""What the OS sandbox (`castbench._agents.sandbox`) adds to an import-path agent's worker: per
step (one `propose` on a real, growing conversation) and per worker start (interpreter, imports,
entering the sandbox, importing the agent), sandboxed against `CASTBENCH_SANDBOX=off`, measured
in one run with the two sides interleaved so that both see the same machine load.

    python bench/sandbox_overhead.py [--domain retail] [--tasks 20] [--rounds 3] [--starts 12]

The conversations and the policy are those of `bench/isolation_overhead.py` (the oracle's
conversations shown again, prefix by prefix, to a small look-up policy in a worker). Prints
medians, their difference and ratio; no asserts. Goal (issue 22): < 1 ms per step and < 300 ms
per worker start added.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from isolation_overhead import POLICY, _conversations, _ms, _time_steps  # noqa: E402

from castbench._agents.registry import resolve  # noqa: E402
from castbench._agents.transports import worker as workers  # noqa: E402
from castbench.agents import sandbox  # noqa: E402
from castbench.domain import load_domain  # noqa: E402

SIDES = ("sandboxed", "off")


def _side(name: str) -> None:
    """Workers started from now on run `name` ("sandboxed" or "off"); idle ones are stopped."""
    workers.shutdown_workers()
    if name == "off":
        os.environ[sandbox.SWITCH] = "off"
    else:
        os.environ.pop(sandbox.SWITCH, None)
    sandbox.support.cache_clear()
    if (name == "sandboxed") != sandbox.support().available:
        raise SystemExit(f"cannot measure '{name}': {sandbox.support().reason or 'the sandbox is on'}")


def _start_s(plan: sandbox.Plan | None) -> float:
    """One worker start, to the agent imported and its answer back; the worker is then stopped."""
    start = time.perf_counter()
    started = workers._Worker("policy", POLICY, plan)
    took = time.perf_counter() - start
    started.kill()
    return took


_ENTER = """
import tempfile, time
from castbench.agents import sandbox
plan = sandbox.plan({policy!r})
scratch = tempfile.mkdtemp()
start = time.perf_counter()
sandbox.enter(plan, scratch)
print(time.perf_counter() - start)
"""


def _enter_s() -> float:
    """`sandbox.enter` alone, in a fresh interpreter (it restricts its process for good)."""
    code = _ENTER.format(policy=POLICY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the conversations per side")
    parser.add_argument("--starts", type=int, default=12, help="worker starts timed per side")
    args = parser.parse_args()
    conversations = _conversations(load_domain(args.domain), args.tasks)
    steps: dict[str, list[float]] = {side: [] for side in SIDES}
    starts: dict[str, list[float]] = {side: [] for side in SIDES}
    plan_s: list[float] = []
    for round_index in range(args.rounds):
        for side in SIDES:
            _side(side)
            spec = resolve("policy", POLICY)
            if round_index == 0:
                _time_steps(spec, conversations[:2])  # warm up
            steps[side].extend(_time_steps(spec, conversations)[0])
    for _ in range(args.starts):
        for side in SIDES:
            _side(side)
            start = time.perf_counter()
            plan = sandbox.plan(POLICY) if side == "sandboxed" else None
            if side == "sandboxed":
                plan_s.append(time.perf_counter() - start)
            starts[side].append(_start_s(plan))
    workers.shutdown_workers()
    _side("sandboxed")
    plan = sandbox.plan(POLICY)
    entering = [_enter_s() for _ in range(args.starts)]
    print(
        f"{args.domain}: {len(steps['off'])} steps per side over {args.rounds} rounds, "
        f"{args.starts} worker starts per side; {sandbox.support().mechanism}, {len(plan.grants)} rules"
    )
    print(f"{'':>10} {'step median':>12} {'step p90':>10} {'worker start median':>20}")
    for side in SIDES:
        step, p90, started = _ms(steps[side]), _ms(steps[side], 9), _ms(starts[side])
        print(f"{side:>10} {step:>9.3f} ms {p90:>7.3f} ms {started:>17.1f} ms")
    step_added = _ms(steps["sandboxed"]) - _ms(steps["off"])
    start_added = _ms(starts["sandboxed"]) - _ms(starts["off"])
    print(
        f"the sandbox adds {step_added:+.3f} ms per step (median; ratio "
        f"{_ms(steps['sandboxed']) / _ms(steps['off']):.3f}) and {start_added:+.1f} ms per worker start "
        f"(ratio {_ms(starts['sandboxed']) / _ms(starts['off']):.3f}); working out the plan in castbench's "
        f"process: {1000 * statistics.median(plan_s):.1f} ms median per start"
    )
    print(
        f"entering the sandbox alone (in the worker, {len(plan.grants)} rules): {_ms(entering):.1f} ms median"
    )


if __name__ == "__main__":
    main()
