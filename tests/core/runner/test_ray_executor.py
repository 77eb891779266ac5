"""The Ray executor on a local two-node cluster (head + one more node, both on this machine):
the same records as the local executor with the same seed, and a node killed mid-run loses and
duplicates nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from castbench._base.conversation import ReplyAction
from castbench._base.errors import FatalInfrastructureError
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench._run.executors import make_executor
from castbench._run.executors.local import LocalExecutor
from tests.support import sqlite_url, without_durations

ray = pytest.importorskip("ray", reason="the Ray executor needs pip install -e '.[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.slow, pytest.mark.ray]

TASKS = [f"retail-test-{i:04d}" for i in range(1, 121, 8)]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    worker = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    # the workers import the test agents from this checkout, as a user's cluster would from its image
    ray.init(address=cluster.address, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    cluster.extra_node = worker
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def _records(store: ResultsStore, run_id: str) -> list[dict[str, Any]]:
    return [without_durations(record.model_dump(mode="json")) for record in store.trials(run_id)]


def test_ray_run_equals_local_run(cluster: Any, tmp_path: Path) -> None:
    config, agents = build_config(
        domains="retail", policy="scripted:noisy?p=0.4", critic="rules", trials=3, seed=5, tasks=TASKS
    )
    local, remote = (ResultsStore(sqlite_url(tmp_path / name)) for name in ("local.db", "ray.db"))
    ours = run_eval(config, agents, local, executor=LocalExecutor())
    theirs = run_eval(config, agents, remote, concurrency=4, executor=make_executor("ray", cluster.address))
    assert theirs.ran == theirs.total == ours.total == 3 * len(TASKS)
    assert _records(local, ours.run_id) == _records(remote, theirs.run_id)
    assert remote.run(theirs.run_id).status == "complete"


def test_a_worker_with_another_version_of_a_domain_ends_the_run(cluster: Any, tmp_path: Path) -> None:
    """A node whose pack (or τ² data) differs from the driver's would grade against other tasks:
    the run ends with the reason instead of storing such trials."""
    config, agents = build_config(domains="retail", policy="oracle", trials=1, tasks=TASKS[:2])
    elsewhere = config.model_copy(update={"domains": {"retail": "0.0-elsewhere"}})
    store = ResultsStore(sqlite_url(tmp_path / "other.db"))
    with pytest.raises(FatalInfrastructureError, match="domain retail .* but the run is on 0.0-elsewhere"):
        run_eval(elsewhere, agents, store, concurrency=2, executor=make_executor("ray", cluster.address))
    assert all(run.status != "complete" for run in store.runs())


def test_a_node_killed_mid_run_loses_and_duplicates_nothing(cluster: Any, tmp_path: Path) -> None:
    started = tmp_path / "started.txt"
    policy = f"tests.core.fixtures_agents:SlowNoisyPolicy?delay=1.0&p=0.3&started={started}"
    config, agents = build_config(domains="retail", policy=policy, trials=4, seed=2, tasks=TASKS)
    store = ResultsStore(sqlite_url(tmp_path / "killed.db"))
    stored: list[TrialRecord] = []
    halfway = threading.Event()

    def on_trial(record: TrialRecord) -> None:
        stored.append(record)
        if len(stored) == 4:  # 8 more are running, spread over both nodes, each for a second at least
            halfway.set()

    def kill_the_extra_node() -> None:
        halfway.wait(300)
        cluster.remove_node(cluster.extra_node, allow_graceful=False)

    killer = threading.Thread(target=kill_the_extra_node)
    killer.start()
    outcome = run_eval(
        config,
        agents,
        store,
        concurrency=8,
        executor=make_executor("ray", cluster.address),
        on_trial=on_trial,
    )
    killer.join()
    total = 4 * len(TASKS)
    keys = [(r.task_id, r.trial_index) for r in store.trials(outcome.run_id)]
    assert len(keys) == len(set(keys)) == total  # nothing lost, nothing twice
    assert all(r.status == "scored" for r in store.trials(outcome.run_id))
    assert store.run(outcome.run_id).status == "complete"
    assert len(started.read_text().split()) > total  # trials on the killed node ran again elsewhere
    alone = ResultsStore(sqlite_url(tmp_path / "alone.db"))
    again = run_eval(config, agents, alone, concurrency=4)
    assert _records(alone, again.run_id) == _records(store, outcome.run_id)


def test_nothing_carries_between_trials_on_ray(cluster: Any, tmp_path: Path) -> None:
    """On Ray workers too, import-path agents get a fresh process per trial: no module state,
    scratch file, import-time thread or shared mapping reaches the next trial."""
    routes = "module,scratch,home,tmp,thread,atfork"
    config, agents = build_config(
        domains="retail",
        policy=f"tests.core.runner.remembering_agents:ReportingPolicy?via={routes}",
        trials=3,
        tasks=TASKS[:4],
    )
    store = ResultsStore(sqlite_url(tmp_path / "ray.db"))
    outcome = run_eval(config, agents, store, concurrency=2, executor=make_executor("ray", cluster.address))
    assert outcome.ran == 12
    replies = [
        step.action.text
        for record in store.trials(outcome.run_id)
        for step in record.steps
        if isinstance(step.action, ReplyAction) and step.action.text.startswith("remembered")
    ]
    expected = "remembered " + " ".join(f"{route}=0" for route in routes.split(","))
    assert len(replies) == 12 and all(reply.startswith(expected) for reply in replies)
