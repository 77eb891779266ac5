"""The Ray executor on a local two-node cluster against the local executor, in one run:
`python bench/ray_executor.py [--delay 0.5] [--concurrency 16] [--trials 2]`.

The policy is the noisy scripted one with `--delay` seconds of latency per trial (a model's
waiting, without a model), over the retail test split. It prints, for the local executor and
for Ray (head + one more node, two CPUs each, started here): trials/s and whether the stored
records equal the local run's (same seed), each timed after a warm-up run; Ray again at
`--concurrency` per node (the same trials in flight per node as the local run has) and its
trials/s per node against the local executor's (goal >= 80%); then a Ray run whose second
node is killed once a quarter of the trials are stored: trials lost, stored twice, and started
more than once (those Ray re-ran elsewhere). No asserts. The load average is printed: the
machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from castbench._records.store import ResultsStore  # noqa: E402
from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._run.api import build_config  # noqa: E402
from castbench._run.engine import run_eval  # noqa: E402
from castbench._run.executors import make_executor  # noqa: E402
from tests.support import without_durations  # noqa: E402


def _records(store: ResultsStore, run_id: str) -> list[object]:
    return [without_durations(r.model_dump(mode="json")) for r in store.trials(run_id)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--trials", type=int, default=2)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="castbench-ray-"))
    started = work / "started.txt"
    policy = f"tests.core.fixtures_agents:SlowNoisyPolicy?delay={options.delay}&p=0.4&started={started}"
    config, agents = build_config(domains="retail", policy=policy, trials=options.trials, seed=11)
    warm_config, warm_agents = build_config(domains="retail", policy=policy, trials=1, seed=12)

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    extra = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    env = {"env_vars": {"PYTHONPATH": str(ROOT)}}  # the workers import the bench's policy from here
    ray.init(address=cluster.address, runtime_env=env, log_to_driver=False)
    nodes = 2
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    try:
        runs: dict[str, tuple[ResultsStore, str, float]] = {}
        for name, executor_name, concurrency in (
            ("local", "local", options.concurrency),
            ("ray", "ray", options.concurrency),
            ("ray per node", "ray", options.concurrency * nodes),
        ):
            store = ResultsStore(f"sqlite:///{work / name.replace(' ', '-')}.db")
            executor = make_executor(executor_name, cluster.address)
            # warm-up, another seed: each side's worker processes (Ray's, the agent's sandboxed
            # workers) started and their imports done before the timed run
            run_eval(warm_config, warm_agents, store, concurrency=concurrency, executor=executor)
            start = time.perf_counter()
            outcome = run_eval(config, agents, store, concurrency=concurrency, executor=executor)
            runs[name] = (store, outcome.run_id, outcome.ran / (time.perf_counter() - start))
        local = _records(*runs["local"][:2])
        for name, (store, run_id, rate) in runs.items():
            same = _records(store, run_id) == local
            print(f"{name:>12}: {rate:6.2f} trials/s  ({len(local)} trials, records equal to local: {same})")
        per_node = runs["ray per node"][2] / nodes
        print(
            f"ray at {options.concurrency} trials in flight per node: {per_node:.2f} trials/s per node, "
            f"{per_node / runs['local'][2]:.0%} of the local executor's (goal >= 80%); load "
            f"{os.getloadavg()[0]:.1f}"
        )

        started.write_text("")
        store = ResultsStore(f"sqlite:///{work / 'killed'}.db")
        stored: list[TrialRecord] = []
        quarter = threading.Event()

        def on_trial(record: TrialRecord) -> None:
            stored.append(record)
            if len(stored) == len(local) // 4:
                quarter.set()

        def kill() -> None:
            quarter.wait()
            cluster.remove_node(extra, allow_graceful=False)

        killer = threading.Thread(target=kill, daemon=True)
        killer.start()
        outcome = run_eval(
            config,
            agents,
            store,
            concurrency=options.concurrency,
            executor=make_executor("ray", cluster.address),
            on_trial=on_trial,
        )
        keys = [(r.task_id, r.trial_index) for r in store.trials(outcome.run_id)]
        starts = started.read_text().split()
        lost, twice = outcome.total - len(set(keys)), len(keys) - len(set(keys))
        print(
            f"node killed mid-run: {lost} lost, {twice} stored twice, "
            f"{len(starts) - len(set(starts))} trial(s) re-run elsewhere; records equal to local: "
            f"{_records(store, outcome.run_id) == local}; status {store.run(outcome.run_id).status}"
        )
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
