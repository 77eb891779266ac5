"""What the harness itself costs, with no model in the loop: `python bench/harness_overhead.py`.

(a) the oracle over every retail test task x 8 trials: wall time, trials per second, per-trial and
    per-step overhead (a step's time minus the policy's, critic's and user's own time);
(b) peak memory while 64 sandboxes run at once, and the memory of 64 live sandboxes with writes;
(c) the cost of one fresh sandbox, one grading, one ground-truth replay, and the τ-Bench-style
    per-trial cost measured on the same data in the same process: deep-copy the whole pristine
    state, replay the gold actions on the copy, hash the whole state twice (sorted JSON + sha256);
(d) the privileged labeler on every executed action (what the strict reward needs): the
    sequential run's trials replayed (`castbench verify`'s path) with and without labelling.

Results go to a temporary database; nothing is written to ./results. No asserts: it reports.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._grading import grade_trial  # noqa: E402
from castbench._records.store import ResultsStore  # noqa: E402
from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._run.api import build_config  # noqa: E402
from castbench._run.engine import run_eval  # noqa: E402
from castbench._trial.replay import replay_trial  # noqa: E402
from castbench.domain import Database, Domain, Task, load_domain  # noqa: E402

TRIALS = 8
CONCURRENCY = 64
TAU_BENCH_PER_TRIAL_S = 0.3
"""τ-Bench's own harness, measured on this machine (ENVIRONMENT-NOTES): ~0.3 s per retail trial."""

MIB = 1024 * 1024


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _per_call(function: Callable[[], Any], *, min_time: float = 0.3, min_calls: int = 5) -> float:
    """Mean seconds per call, over enough calls to last `min_time`."""
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < min_time:
        function()
        calls += 1
    return (time.perf_counter() - start) / calls


def _maxrss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (MIB if sys.platform == "darwin" else 1024)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


# -- (a) the oracle over the whole test split -------------------------------------------------
def run_oracle(db_dir: Path, concurrency: int, name: str) -> tuple[float, list[TrialRecord]]:
    config, agents = build_config(domains="retail", policy="oracle", trials=TRIALS)
    store = ResultsStore(f"sqlite:///{db_dir / name}")
    start = time.perf_counter()
    outcome = run_eval(config, agents, store, concurrency=concurrency)
    wall = time.perf_counter() - start
    return wall, store.trials(outcome.run_id)


def trial_overheads(records: list[TrialRecord]) -> tuple[list[float], list[float], list[float]]:
    """(per-trial harness time, per-step overhead, per-step total) over all records."""
    per_trial, step_overhead, step_total = [], [], []
    for record in records:
        agents = sum(s.timing.policy_s + s.timing.critic_s + s.timing.user_s for s in record.steps)
        per_trial.append(max(0.0, record.duration_s - agents))
        for step in record.steps:
            step_overhead.append(step.timing.overhead_s)
            step_total.append(step.timing.total_s)
    return per_trial, step_overhead, step_total


# -- (b) memory ------------------------------------------------------------------------------
def peak_during_concurrent_run(db_dir: Path) -> tuple[float, float, int]:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    wall, records = run_oracle(db_dir, CONCURRENCY, "concurrent.db")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / MIB, wall, len(records)


def live_sandboxes(domain: Domain, tasks: list[Task], count: int) -> tuple[float, int]:
    """Memory held by `count` live sandboxes, each after one task's ground-truth writes."""
    writing = [task for task in tasks if task.outcome == "change"] or tasks
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    sandboxes = [domain.replay(writing[i % len(writing)]) for i in range(count)]
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows = sum(len(keys) for db in sandboxes for keys in db.touched().values())
    return (after - before) / MIB, rows


def deep_copies(domain: Domain, count: int) -> float:
    """Memory of `count` deep copies of the pristine state (what a copy-per-trial harness holds)."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    copies = [copy.deepcopy(dict(domain.pristine)) for _ in range(count)]
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del copies
    return (after - before) / MIB


# -- (c) unit costs and the τ-Bench-style comparison ---------------------------------------
def _state_hash(db: Database) -> str:
    return hashlib.sha256(json.dumps(db.materialize(), sort_keys=True).encode()).hexdigest()


def tau_style_trial(domain: Domain, task: Task) -> None:
    """Reset by deep copy, replay the gold actions, hash the whole state twice (agent's + gold)."""
    snapshot = copy.deepcopy(dict(domain.pristine))
    gold = domain.replay(task, Database(snapshot, domain.now))
    _state_hash(gold)
    _state_hash(gold)


def store_cost(db_dir: Path, records: list[TrialRecord]) -> float:
    """Seconds to commit one trial record to a fresh run (SQLite, WAL, one transaction each)."""
    config, _ = build_config(domains="retail", policy="oracle", trials=TRIALS)
    store = ResultsStore(f"sqlite:///{db_dir / 'store.db'}")
    run_id, _ = store.open_run(config, {}, fresh=True)
    start = time.perf_counter()
    for record in records:
        store.add_trial(run_id, record)
    return (time.perf_counter() - start) / len(records)


def unit_costs(domain: Domain, tasks: list[Task]) -> dict[str, float]:
    expected = {task.id: domain.replay(task) for task in tasks}
    finals = {task.id: domain.replay(task) for task in tasks}

    def grade_all() -> None:
        for task in tasks:
            grade_trial(
                task,
                finals[task.id],
                expected[task.id],
                ["Here is the information you asked for."],
                ended_cleanly=True,
                made_write=True,
                saw_tool_error=False,
            )

    def replay_all() -> None:
        for task in tasks:
            domain.replay(task)

    sample = tasks[:: max(1, len(tasks) // 24)]

    def tau_all() -> None:
        for task in sample:
            tau_style_trial(domain, task)

    deepcopy_s = _per_call(lambda: copy.deepcopy(dict(domain.pristine)), min_time=0.5)
    lookup = next(call for task in tasks for call in task.actions if call.name == "find_user_id_by_email")
    return {
        "lookup": _per_call(
            lambda: domain.toolkit.call(domain.fresh_database(), lookup.name, lookup.arguments)
        ),
        "fresh_database": _per_call(domain.fresh_database, min_time=0.3, min_calls=10_000),
        "grade_trial": _per_call(grade_all) / len(tasks),
        "replay": _per_call(replay_all) / len(tasks),
        "deepcopy": deepcopy_s,
        "hash_once": _per_call(lambda: _state_hash(domain.fresh_database()), min_time=0.5),
        "tau_trial": _per_call(tau_all, min_time=1.0, min_calls=1) / len(sample),
    }


# -- (d) the labeler --------------------------------------------------------------------------
def labeling_cost(domain: Domain, records: list[TrialRecord]) -> tuple[float, float, int]:
    """(seconds to replay every trial with labels, without labels, labelled actions)."""
    tasks = {task.id: task for task in domain.tasks()}
    expected = {task_id: domain.replay(task) for task_id, task in tasks.items()}
    unlabelled = [
        r.model_copy(update={"grade": r.grade.model_copy(update={"strict_reward": None})}) if r.grade else r
        for r in records
    ]

    def replay_all(trials: list[TrialRecord]) -> float:
        start = time.perf_counter()
        for r in trials:
            replay_trial(
                domain, tasks[r.task_id], r, expected[r.task_id], run_seed=0, user="scripted", traits={},
                grading="castbench",
            )  # fmt: skip
        return time.perf_counter() - start

    replay_all(records[:50])  # warm-up
    with_labels = min(replay_all(records) for _ in range(2))
    without = min(replay_all(unlabelled) for _ in range(2))
    actions = sum(
        1 for r in records for s in r.steps if s.action is not None and s.action.kind == "tool_call"
    )
    return with_labels, without, actions


# -- report ----------------------------------------------------------------------------------
def _row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52} {value:>16}  {note}")


def main() -> None:
    domain = load_domain("retail")
    tasks = domain.tasks("test")
    _ = domain.pristine, domain.policy  # load once, outside every measurement
    print(
        f"castbench harness overhead — retail {domain.version}, {len(tasks)} test tasks x {TRIALS} trials, "
        f"python {platform.python_version()}, {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="castbench-bench-") as tmp:
        db_dir = Path(tmp)
        run_oracle(db_dir, 1, "warmup.db")  # imports, caches
        wall, records = run_oracle(db_dir, 1, "sequential.db")
        per_trial, step_overhead, step_total = trial_overheads(records)
        store_s = store_cost(db_dir, records)
        peak_mib, concurrent_wall, concurrent_trials = peak_during_concurrent_run(db_dir)
    live_mib, live_rows = live_sandboxes(domain, tasks, CONCURRENCY)
    copies_mib = deep_copies(domain, 4) / 4
    costs = unit_costs(domain, tasks)
    labelled_s, unlabelled_s, labelled = labeling_cost(domain, records)
    label_s = (labelled_s - unlabelled_s) / labelled

    n = len(records)
    ours_in_trial = statistics.mean(per_trial)
    ours_wall = wall / n
    tau = costs["tau_trial"]
    median_step = statistics.median(step_overhead)

    print("\n(a) oracle, sequential, results committed per trial")
    _row("trials", f"{n}")
    _row("wall time", f"{wall:.2f} s", "(incl. expected-state replays, SQLite commits)")
    _row("trials per second", f"{n / wall:.0f}")
    _row("wall per trial", _ms(ours_wall), "(everything the harness does per trial)")
    _row("per-trial overhead, mean (in trial, minus agents' time)", _ms(ours_in_trial))
    _row("per-trial overhead, p95", _ms(_percentile(per_trial, 0.95)))
    _row("steps", f"{len(step_overhead)}", f"({len(step_overhead) / n:.1f} per trial)")
    _row("per-step overhead, median", _us(median_step), "(total - policy - critic - user)")
    _row("per-step overhead, p95", _us(_percentile(step_overhead, 0.95)))
    _row("per-step total, median", _us(statistics.median(step_total)), "(oracle: all of it is harness)")
    _row("per-step total, p95", _us(_percentile(step_total, 0.95)))

    print(f"\n(b) memory, {CONCURRENCY} sandboxes")
    _row(
        f"tracemalloc peak, oracle run at concurrency {CONCURRENCY}",
        f"{peak_mib:.1f} MiB",
        f"({concurrent_trials} trials in {concurrent_wall:.2f} s under tracemalloc)",
    )
    _row("process max RSS (whole benchmark so far)", f"{_maxrss_mib():.1f} MiB")
    _row(
        f"{CONCURRENCY} live sandboxes after ground-truth writes",
        f"{live_mib * 1024:.1f} KiB",
        f"({live_rows} rows written in all)",
    )
    _row(
        "one deep copy of the pristine state (for comparison)",
        f"{copies_mib:.1f} MiB",
        f"(x{CONCURRENCY} = {copies_mib * CONCURRENCY:.0f} MiB)",
    )

    print("\n(c) unit costs")
    _row("fresh sandbox (domain.fresh_database())", _us(costs["fresh_database"]))
    _row("grade one trial (state diff + outputs + surface)", _us(costs["grade_trial"]))
    _row("replay one task's ground truth", _us(costs["replay"]))
    _row("one customer look-up by email (Database.find, indexed)", _us(costs["lookup"]))
    _row("store one trial record (SQLite commit)", _us(store_s))
    _row("deep copy of the pristine state", _ms(costs["deepcopy"]))
    _row("materialize + sorted json.dumps + sha256 of the state", _ms(costs["hash_once"]))
    _row("τ-Bench-style trial (deepcopy + replay + hash x2)", _ms(tau))
    _row("ratio τ-style / ours (in-trial overhead)", f"{tau / ours_in_trial:.0f}x")
    _row("ratio τ-style / ours (wall per trial)", f"{tau / ours_wall:.0f}x")

    print("\n(d) the privileged labeler on every executed tool call (strict reward)")
    _row("tool calls labelled", f"{labelled}", f"({labelled / n:.1f} per trial)")
    _row("replay of all trials, with labels / without", f"{labelled_s:.2f} s / {unlabelled_s:.2f} s")
    _row(
        "labeler per executed tool call",
        _us(label_s),
        f"({label_s / median_step:.1f}x the median step overhead)",
    )
    _row(
        "labeler per trial",
        _ms(label_s * labelled / n),
        f"({label_s * labelled / n / ours_wall:.0%} of wall per trial)",
    )

    goals = [
        ("median per-step overhead < 1 ms", median_step < 1e-3, _us(median_step)),
        (
            "peak memory with 64 sandboxes < 1 GiB",
            max(peak_mib, _maxrss_mib()) < 1024,
            f"{max(peak_mib, _maxrss_mib()):.0f} MiB",
        ),
        (
            "per-trial overhead >= 100x below 0.3 s (< 3 ms)",
            ours_wall <= TAU_BENCH_PER_TRIAL_S / 100,
            f"{TAU_BENCH_PER_TRIAL_S / ours_wall:.0f}x below (wall per trial)",
        ),
    ]
    print("\ngoals")
    for label, met, value in goals:
        _row(label, "met" if met else "NOT MET", value)


if __name__ == "__main__":
    main()
