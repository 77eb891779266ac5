"""Two `castbench eval` processes on one run in a shared Postgres store against one process:
`python bench/postgres_split.py [--delay 2.0] [--concurrency 16] [--trials 1]`.

A throwaway Postgres server is started (`tests/postgres.py`; initdb/pg_ctl must be installed).
The policy is the noisy scripted one with `--delay` seconds of latency per trial (a model's
waiting, without a model), over the retail test split. The same command runs once as a single
process into one database and as two processes at once into another. Trials/s is measured on
the database's clock, from the first worker's start to the last worker's finish (start-up of the
interpreters excluded); the goal is >= 1.8x for two processes. Then the two runs' trials are
compared outcome by outcome (they must be identical: same seeds, same results). No asserts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._records.store import ResultsStore  # noqa: E402
from tests.postgres import new_database, postgres_server  # noqa: E402


def _eval(db: str, options: argparse.Namespace) -> subprocess.Popen[bytes]:
    policy = f"tests.core.fixtures_agents:SlowNoisyPolicy?delay={options.delay}&p=0.4"
    command = [str(Path(sys.executable).parent / "castbench"), "eval", "--domain", "retail"]
    command += ["--trials", str(options.trials), "--seed", "11", "--policy", policy]
    command += ["--concurrency", str(options.concurrency), "--db", db]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _run(db: str, processes: int, options: argparse.Namespace) -> tuple[float, int, list[tuple[object, ...]]]:
    """(trials/s on the database's clock, workers that stored trials, outcomes)."""
    workers = [_eval(db, options) for _ in range(processes)]
    for worker in workers:
        _, err = worker.communicate(timeout=1800)
        if worker.returncode != 0:
            raise RuntimeError(err.decode()[-2000:])
    store = ResultsStore(db)
    run_id = store.run("latest").id
    span, busy = store.db.one(
        "SELECT EXTRACT(EPOCH FROM max(finished) - min(started)), "
        "count(*) FILTER (WHERE trials_done > 0) FROM worker WHERE run_id = :run",
        {"run": run_id},
    ) or (None, None)
    records = store.trials(run_id)
    outcomes = [
        (r.task_id, r.trial_index, r.seed, r.status, r.reward, r.end_reason, len(r.steps)) for r in records
    ]
    return len(records) / float(span), int(busy), outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds of latency per trial")
    parser.add_argument("--concurrency", type=int, default=16, help="trials at once per process")
    parser.add_argument("--trials", type=int, default=3, help="trials per task (120 retail tasks)")
    options = parser.parse_args()
    with postgres_server() as admin:
        one_rate, _, one = _run(new_database(admin), 1, options)
        two_rate, busy, two = _run(new_database(admin), 2, options)
    load, ideal = os.getloadavg()[0], options.concurrency / options.delay
    print(f"{os.cpu_count()} CPUs, load {load:.1f}; {len(one)} trials, {options.delay} s latency each")
    print(f"concurrency {options.concurrency} per process: ideal {ideal:.1f} trials/s per process")
    print(f"one process:   {one_rate:6.2f} trials/s")
    ratio = two_rate / one_rate
    print(f"two processes: {two_rate:6.2f} trials/s ({busy} workers stored trials)  ratio {ratio:.2f}x")
    same = one == two
    print(f"identical outcomes (task, trial, seed, status, reward, end, steps): {same} ({len(two)} trials)")


if __name__ == "__main__":
    main()
