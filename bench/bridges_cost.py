"""What the bridges cost (issue #29), in one run.

    python bench/bridges_cost.py [--tasks 13] [--trials 2] [--skip-install]

1. The `bridges` extra's install: a fresh virtual environment, then `pip install` of the extra's
   two packages (a2a-sdk with its HTTP server pieces, inspect-ai) and everything they pull, from
   the machine's package index. Wall time, how many distributions it installs, the size on disk.
   castbench's own stack is not in that environment, so the figure is the extra's whole cost on
   a machine that has none of it (on top of castbench's environment, some are already there).
2. An A2A agent's trials: retail played by `scripted:lookup-refuse` in castbench's process, then
   by the same logic behind A2A (examples/a2a_agent, a subprocess: messages over A2A JSON-RPC,
   tools over MCP). Wall time per executed step both ways, and whether the trials are equal.
3. The Inspect export of the A2A run: wall time and size, `.eval` and `.json`.
Prints the load average too: on a shared machine wall times follow it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
BRIDGES = ["a2a-sdk[http-server]==1.3.0", "inspect-ai==0.3.285"]


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def install_cost() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = venv / "bin" / "pip"
        base = _du(venv)
        started = time.perf_counter()
        subprocess.run([str(pip), "install", "-q", *BRIDGES], check=True)
        took = time.perf_counter() - started
        listed = subprocess.run(
            [str(pip), "list", "--format=freeze"], capture_output=True, text=True, check=True
        )
        count = len(
            [
                line
                for line in listed.stdout.splitlines()
                if line and not line.startswith(("pip==", "setuptools=="))
            ]
        )
        size = _du(venv) - base
    mib = size / 2**20
    print(
        f"install: bridges extra into a fresh venv: {took:.1f} s wall, {count} distributions, {mib:.0f} MiB"
    )


def a2a_cost(tasks: int, trials: int) -> None:
    from castbench._records.store import ResultsStore
    from castbench._records.store.export import export_run
    from castbench._run.api import evaluate
    from castbench_bridges.inspect_log import write_inspect_log

    ids = [f"retail-test-{n:04d}" for n in range(1, tasks + 1)]
    agent = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "a2a_agent" / "agent.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert agent.stdout is not None
        url = agent.stdout.readline().split()[-1]
        with tempfile.TemporaryDirectory() as scratch:
            figures = {}
            for name, policy in (("in process", "scripted:lookup-refuse"), ("over A2A", url)):
                db = f"sqlite:///{scratch}/{name.replace(' ', '_')}.db"
                started = time.perf_counter()
                result = evaluate(db=db, domains="retail", tasks=ids, trials=trials, seed=11, policy=policy)
                took = time.perf_counter() - started
                records = ResultsStore(db).trials(result.outcome.run_id)
                steps = sum(len(r.steps) for r in records)
                figures[name] = (records, db, result.outcome.run_id)
                per_step = 1000 * took / max(1, steps)
                print(
                    f"{name}: {len(records)} trials, {steps} steps, {took:.1f} s wall, "
                    f"{per_step:.1f} ms per step, pass^1 {result.summary.overall.pass_hat[1]:.3f}"
                )
            local = {
                (r.task_id, r.trial_index): (r.reward, [s.action for s in r.steps])
                for r in figures["in process"][0]
            }
            remote = {
                (r.task_id, r.trial_index): (r.reward, [s.action for s in r.steps])
                for r in figures["over A2A"][0]
            }
            print(f"trials equal trial by trial: {local == remote}")
            _, db, run_id = figures["over A2A"]
            exported = export_run(ResultsStore(db), run_id)
            for suffix in (".eval", ".json"):
                started = time.perf_counter()
                size = write_inspect_log(exported, Path(scratch) / f"log{suffix}")
                print(
                    f"inspect export {suffix}: {time.perf_counter() - started:.2f} s, {size / 1024:.0f} KiB"
                )
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=13)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--skip-install", action="store_true")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if not args.skip_install:
        install_cost()
    a2a_cost(args.tasks, args.trials)


if __name__ == "__main__":
    main()
