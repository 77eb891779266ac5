"""The CPU budget CI holds: `python bench/cpu_budget.py [--check | --write-reference]`.

castbench's CPU per trial (the oracle and the noisy scripted policy on a fixed set of retail test
tasks, the whole `castbench._run.api.evaluate` call with its summary, a fresh SQLite store each time)
as a ratio to the CPU of a fixed reference workload measured in the same process, interleaved
with it round by round. The reference is plain Python of the same nature as a trial's work
(pydantic validation and dumps, JSON round trips, dicts, lists, strings, an in-memory SQLite
table) and uses nothing of castbench, so a change to castbench moves only the numerator, while a
slower or busier machine moves both: the ratio cancels what CPU time alone does not (clock
speed, a neighbour's cache pressure). The figure is the median of the per-round ratios.

- no option: measure and print trials/s, CPU ms per trial and the ratios;
- `--check`: also compare each ratio with the committed reference (`bench/cpu_budget.json`) and
  exit 1 when one exceeds the reference x 1.15 (`--tolerance`), printing both;
- `--write-reference`: measure and rewrite the reference with this machine's description;
- `--slow-down PCT`: a deliberately slowed build, inside this process only: castbench's
  evaluation (`castbench._run.api.evaluate`, the public entry point this script calls, looked up at
  each call) spends PCT% more CPU than it took (pure-Python busy work after it).
  `tests/core/test_cpu_budget.py` shows the check failing at +30% and passing at +0%.

Results go to a temporary folder; nothing is written to ./results. docs/scale.md, "A CPU budget".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REFERENCE = Path(__file__).with_name("cpu_budget.json")
POLICIES = {"oracle": "oracle", "noisy": "scripted:noisy"}
"""The figure's name -> the policy evaluated."""
DOMAIN = "retail"
TASKS = [f"retail-test-{n:04d}" for n in range(1, 21)]
"""A fixed subset: the figure must not move when the split gains tasks."""
TRIALS = 4
SEED = 7
ROUNDS = 11
REFERENCE_ROUNDS = 27
"""A reference is measured over more rounds than a check: it is then the middle of the spread a
check sees, not one of its ends."""
REFERENCE_PASSES = 400
"""Passes of the reference workload per measurement: about as much CPU as one evaluation. A ratio
is CPU per trial over CPU per pass (a pass costs about a fifth of a trial)."""
TOLERANCE = 0.15


# -- the reference workload: castbench-like work that uses nothing of castbench -----------------
class _Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    price: float = Field(ge=0)
    tags: list[str] = []

    @field_validator("sku")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class _Address(BaseModel):
    street: str
    city: str
    zip: str


class _Order(BaseModel):
    order_id: str
    customer: str
    status: str
    address: _Address
    lines: list[_Line]
    notes: dict[str, str] = {}


_ORDERS = [
    {
        "order_id": f"#W{1000 + n}",
        "customer": f"customer_{n % 13}",
        "status": ("pending", "delivered", "cancelled")[n % 3],
        "address": {
            "street": f"{n} Main St",
            "city": ("Austin", "Denver", "Boston")[n % 3],
            "zip": f"{n:05d}",
        },
        "lines": [
            {"sku": f"item-{n}-{k}", "quantity": 1 + k, "price": 9.5 * k + n, "tags": ["a", f"t{k}"]}
            for k in range(4)
        ],
        "notes": {"gift": "no", "channel": f"web{n % 2}"},
    }
    for n in range(8)
]


def reference_pass() -> int:
    """One pass: validate and dump the orders, round-trip them through JSON, index and filter
    them with dicts and strings, write and read them in an in-memory SQLite table. Returns a
    checksum so nothing is optimised away."""
    orders = [_Order.model_validate(raw) for raw in _ORDERS]
    dumped = [order.model_dump() for order in orders]
    text = json.dumps(dumped, sort_keys=True)
    back = json.loads(text)
    again = [_Order.model_validate_json(order.model_dump_json()) for order in orders]
    by_customer: dict[str, list[str]] = {}
    for order in back:
        by_customer.setdefault(order["customer"], []).append(order["order_id"])
    total = sum(line.quantity * line.price for order in again for line in order.lines)
    words = " ".join(f"{order.order_id}:{order.status}" for order in again).split()
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, body TEXT)")
    connection.executemany("INSERT INTO orders VALUES (?, ?)", [(o["order_id"], json.dumps(o)) for o in back])
    rows = connection.execute("SELECT body FROM orders ORDER BY id").fetchall()
    connection.close()
    return len(text) + len(by_customer) + int(total) + len(sorted(words)) + len(rows)


def reference_cpu() -> float:
    """CPU seconds per pass, over REFERENCE_PASSES passes."""
    gc.collect()
    start = time.process_time()
    for _ in range(REFERENCE_PASSES):
        reference_pass()
    return (time.process_time() - start) / REFERENCE_PASSES


# -- castbench's workload --------------------------------------------------------------------
def castbench_run(policy: str, scratch: Path, name: str) -> tuple[float, float]:
    """CPU seconds and wall seconds of one whole evaluation (fresh store) per trial."""
    import castbench._run.api as api  # looked up at each call: `--slow-down` replaces `api.evaluate`

    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = api.evaluate(
        db=f"sqlite:///{scratch / name}.db",
        domains=DOMAIN,
        tasks=TASKS,
        trials=TRIALS,
        seed=SEED,
        policy=policy,
    )
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    trials = len(TASKS) * TRIALS
    if result.summary.overall.n_trials != trials:
        raise SystemExit(f"error: {policy} ran {result.summary.overall.n_trials} trials, not {trials}")
    return cpu / trials, wall / trials


def slow_down(percent: float) -> None:
    """A deliberately slowed build, in this process only: each evaluation spends `percent`% more
    CPU than it took, as a build whose every run grew by that much would."""
    import castbench._run.api as api

    original: Callable[..., Any] = api.evaluate

    def slowed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        result = original(*args, **kwargs)
        _burn((time.process_time() - start) * percent / 100)
        return result

    api.evaluate = slowed


def _burn(seconds: float) -> None:
    """Busy pure-Python work for `seconds` of this process's CPU."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        sum(i * i for i in range(2000))


def measure(rounds: int) -> dict[str, Any]:
    """Interleaved rounds (reference, oracle, reference, noisy, reference) after one warm-up round
    (imports, the domain's caches); each policy's ratio is its CPU per trial over the mean of the
    reference measurements either side of it."""
    per_trial: dict[str, list[float]] = {name: [] for name in POLICIES}
    wall: dict[str, list[float]] = {name: [] for name in POLICIES}
    ratios: dict[str, list[float]] = {name: [] for name in POLICIES}
    references: list[float] = []
    with tempfile.TemporaryDirectory(prefix="castbench-cpu-budget-") as folder:
        scratch = Path(folder)
        for round_ in range(rounds + 1):
            before = reference_cpu()
            for name, policy in POLICIES.items():
                cpu, seconds = castbench_run(policy, scratch, f"{name}-{round_}")
                after = reference_cpu()
                if round_:  # round 0 warms up
                    reference = (before + after) / 2
                    per_trial[name].append(cpu)
                    wall[name].append(seconds)
                    ratios[name].append(cpu / reference)
                    references.append(reference)
                before = after
    return {
        "cpu_ms_per_trial": {name: 1000 * statistics.median(v) for name, v in per_trial.items()},
        "trials_per_s": {name: 1 / statistics.median(v) for name, v in wall.items()},
        "reference_ms_per_pass": 1000 * statistics.median(references),
        "ratio": {name: statistics.median(v) for name, v in ratios.items()},
        "ratio_range": {name: [min(v), max(v)] for name, v in ratios.items()},
    }


def machine() -> dict[str, Any]:
    """What the reference was measured on."""
    cpu_model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu_model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def workload() -> dict[str, Any]:
    """What the ratios were measured on: a reference for another workload does not apply."""
    return {
        "domain": DOMAIN,
        "tasks": f"{TASKS[0]}..{TASKS[-1]} ({len(TASKS)})",
        "trials": TRIALS,
        "seed": SEED,
        "policies": POLICIES,
        "reference_passes": REFERENCE_PASSES,
    }


def load_reference(path: Path) -> dict[str, Any]:
    try:
        committed: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: reference {path}: {exc}; write it with --write-reference") from exc
    if committed.get("workload") != workload():
        raise SystemExit(
            f"error: reference {path} was measured on another workload ({committed.get('workload')}); "
            "rewrite it with --write-reference"
        )
    return committed


def report(figures: dict[str, Any]) -> None:
    print(f"reference workload: {figures['reference_ms_per_pass']:.3f} ms CPU per pass")
    for name in POLICIES:
        low, high = figures["ratio_range"][name]
        print(
            f"{name}: {figures['trials_per_s'][name]:.0f} trials/s, "
            f"{figures['cpu_ms_per_trial'][name]:.2f} ms CPU per trial, "
            f"ratio {figures['ratio'][name]:.4f} (rounds {low:.4f}-{high:.4f})"
        )


def check(figures: dict[str, Any], committed: dict[str, Any], tolerance: float) -> bool:
    """Each ratio against the reference's x (1 + tolerance); prints both. True when all hold."""
    held = True
    for name in POLICIES:
        now, then = figures["ratio"][name], committed["ratio"][name]
        limit = then * (1 + tolerance)
        verdict = "ok" if now <= limit else "OVER BUDGET"
        held = held and now <= limit
        print(
            f"budget {name}: ratio {now:.4f} against reference {then:.4f} "
            f"(limit {limit:.4f}, {100 * (now / then - 1):+.1f}%): {verdict}"
        )
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="fail when a ratio exceeds the reference")
    action.add_argument("--write-reference", action="store_true", help="rewrite the committed reference")
    parser.add_argument(
        "--rounds",
        type=int,
        help=f"measured rounds (default {ROUNDS}, {REFERENCE_ROUNDS} with --write-reference)",
    )
    parser.add_argument("--tolerance", type=float, default=TOLERANCE, help="allowed growth (default 0.15)")
    parser.add_argument("--slow-down", type=float, default=0.0, metavar="PCT", help="slow castbench by PCT%%")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the reference file")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = REFERENCE_ROUNDS if args.write_reference else ROUNDS
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: must be at least 1")
    if args.slow_down < 0:
        parser.error(f"--slow-down {args.slow_down}: must be 0 or more")
    if args.write_reference and args.slow_down:
        parser.error("--write-reference with --slow-down would commit a slowed build's figures")
    committed = load_reference(args.reference) if args.check else None
    if args.slow_down:
        slow_down(args.slow_down)
        print(f"slowed build: castbench's evaluation spends {args.slow_down:g}% more CPU")
    figures = measure(args.rounds)
    report(figures)
    if args.write_reference:
        written = {
            "ratio": {name: round(value, 4) for name, value in figures["ratio"].items()},
            "cpu_ms_per_trial": {name: round(v, 3) for name, v in figures["cpu_ms_per_trial"].items()},
            "reference_ms_per_pass": round(figures["reference_ms_per_pass"], 4),
            "rounds": args.rounds,
            "workload": workload(),
            "machine": machine(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        }
        args.reference.write_text(json.dumps(written, indent=2) + "\n")
        print(f"wrote {args.reference}")
    if committed is not None:
        return 0 if check(figures, committed, args.tolerance) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
