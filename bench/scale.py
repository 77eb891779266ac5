"""Peak memory of the commands that read a whole run, at 1k, 10k and 50k trials (issue #59):
`python bench/scale.py [--sizes 1k,10k,50k] [--dir DIR] [--only view,export-inspect]`.

The runs are built cheaply: one small real run (retail test tasks x `scripted:noisy`, which
passes and fails, so summaries, pages and exports have work to do), then for each size a run of
that many trials made of its records renumbered, with the seeds the run would give them (each
copy replays as the trial it copies, so `verify` re-executes every trial and finds it as stored),
stored through the store's own writer (`ResultsStore.add_trials`, digests included), and a
second run of the same size with another seed (`compare` and `gate` refuse a run against itself).

Each command then runs as its own subprocess, measured by `os.wait4`: peak RSS (MiB) and CPU
seconds (user + system). The load average is printed beside each row, and each measure is
appended to `DIR/measures.jsonl` as it is made, so `--table` prints what earlier invocations
measured. Flat means the largest size's peak RSS within 20% of the smallest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {"1k": 1_000, "10k": 10_000, "20k": 20_000, "50k": 50_000}
TASKS = [f"retail-test-{index:04d}" for index in range(1, 21)]
BASE_TRIALS = 5  # 20 tasks x 5: 100 distinct trials, copied up to each size
COMMANDS = {
    "runs show": ["runs", "show", "{run}"],
    "compare": ["compare", "{run}", "{other}"],
    "gate": [
        "gate",
        "--baseline",
        "{run}",
        "--candidate",
        "{other}",
        "--metric",
        "pass^1",
        "--max-drop",
        "0.05",
    ],
    "view": ["view", "{run}", "--out", "{out}/page.html"],
    "export castbench": ["export", "{run}", "--out", "{out}/run.castbench.json.gz"],
    "export inspect": ["export", "{run}", "--format", "inspect", "--out", "{out}/run.eval"],
    "export inspect json": ["export", "{run}", "--format", "inspect", "--out", "{out}/run.json"],
    "verify": ["verify", "{run}"],
    "export tau2": ["export", "{run}", "--format", "tau2", "--out", "{out}/results.json"],
}
PACKS = {"export tau2": "tau2-airline"}
"""Commands measured on runs of another pack than retail: `export --format tau2` writes τ²'s
Results for runs of a tau2-* pack only (the `tau2` extra)."""
BASE_TASKS = {
    "retail": TASKS,
    "tau2-airline": [f"tau2-airline-{n}" for n in (2, 6, 8, 13, 16, 18, 19, 22, 24, 25, 26, 29, 30, 31, 32)],
}


def _base(folder: Path, pack: str) -> tuple[str, str]:
    """(db URL, run id) of the small real run the sizes are copied from."""
    from castbench._run.api import evaluate

    db = f"sqlite:///{folder / ('base.db' if pack == 'retail' else f'base-{pack}.db')}"
    tasks = BASE_TASKS[pack]
    result = evaluate(db=db, domains=pack, tasks=tasks, trials=BASE_TRIALS, policy="scripted:noisy")
    return db, result.outcome.run_id


def build(folder: Path, size: int, pack: str = "retail") -> tuple[str, str, str]:
    """(db URL, run, other run) of `size` trials each, in `folder / f"{size}.db"` (made once)."""
    from castbench._records.store import ResultsStore
    from castbench._trial.seeds import trial_seed

    name = str(size) if pack == "retail" else f"{pack}-{size}"
    db = f"sqlite:///{folder / f'{name}.db'}"
    marker = folder / f"{name}.json"
    if marker.exists():
        made = json.loads(marker.read_text())
        return db, made["run"], made["other"]
    base_db, base_run = _base(folder, pack)
    base = ResultsStore(base_db)
    config, records = base.config(base_run), base.trials(base_run)
    copies = -(-size // len(records))
    store = ResultsStore(db)
    runs = []
    for seed in (0, 1):
        grown = config.model_copy(update={"trials": config.trials * copies, "seed": seed})
        run, _ = store.open_run(grown, {"bench": "scale", "copies": copies})
        batch = []
        for copy in range(copies):
            for record in records:
                index = copy * config.trials + record.trial_index
                trial = trial_seed(seed, record.domain, record.task_id, index)  # what verify checks
                batch.append(record.model_copy(update={"trial_index": index, "seed": trial}))
                if len(batch) == 1_000:
                    store.add_trials(run, batch)
                    batch = []
        store.add_trials(run, batch)
        store.set_status(run, "complete")
        runs.append(run)
    marker.write_text(json.dumps({"run": runs[0], "other": runs[1]}))
    return db, runs[0], runs[1]


def measure(args: list[str], db: str) -> dict[str, object]:
    """Peak RSS (MiB), CPU seconds and exit status of one `castbench` subprocess."""
    env = {**os.environ, "CASTBENCH_DB": db, "COLUMNS": "120", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    code = "import sys; sys.argv[0] = 'castbench'; from castbench._cli.app import main; main()"
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    return {
        "rss_mib": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "exit": os.waitstatus_to_exitcode(status),
        "error": stderr.strip().splitlines()[-1] if stderr.strip() else "",
    }


def table(rows: list[dict[str, object]]) -> str:
    sizes = sorted({int(str(row["size"])) for row in rows})
    latest: dict[tuple[str, int], dict[str, object]] = {}
    for row in rows:
        latest[str(row["command"]), int(str(row["size"]))] = row
    commands = [name for name in COMMANDS if any((name, size) in latest for size in sizes)]
    head = f"{'command':<22}" + "".join(f"{f'{size:,} MiB':>12}{'CPU s':>8}{'load':>6}" for size in sizes)
    lines = [head + f"{'max/min':>9}"]
    for name in commands:
        line = f"{name:<22}"
        peaks = []
        for size in sizes:
            found = latest.get((name, size))
            if found is None:
                line += f"{'':>12}{'':>8}{'':>6}"
                continue
            row = found
            mark = "!" if row["exit"] not in (0, 2) else ""  # verify's 2: clairvoyant trials
            line += f"{float(str(row['rss_mib'])):>11.0f}{mark or ' '}{float(str(row['cpu_s'])):>8.1f}"
            line += f"{float(str(row['load'])):>6.1f}"
            peaks.append(float(str(row["rss_mib"])))
        line += f"{max(peaks) / min(peaks):>9.2f}" if len(peaks) > 1 else ""
        lines.append(line)
    lines.append("MiB: peak RSS · CPU s: user+sys · load: 1-min load average as it ran · ! exit status")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1k,10k,50k")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "castbench-scale")
    parser.add_argument("--only", default="", help="commands, comma-separated (default: all)")
    parser.add_argument("--table", action="store_true", help="print what DIR/measures.jsonl holds")
    options = parser.parse_args()
    options.dir.mkdir(parents=True, exist_ok=True)
    saved = options.dir / "measures.jsonl"
    if not options.table:
        only = [name.strip() for name in options.only.split(",") if name.strip()]
        unknown = [name for name in only if name not in COMMANDS]
        if unknown:
            sys.exit(f"error: --only: unknown command(s) {', '.join(unknown)}: one of {', '.join(COMMANDS)}")
        for label in options.sizes.split(","):
            if label not in SIZES:
                sys.exit(f"error: --sizes: unknown size {label!r}: one of {', '.join(SIZES)}")
            size = SIZES[label]
            out = options.dir / f"out-{size}"
            out.mkdir(exist_ok=True)
            for name, template in COMMANDS.items():
                if only and name not in only:
                    continue
                db, run, other = build(options.dir, size, PACKS.get(name, "retail"))
                args = [part.format(run=run, other=other, out=out) for part in template]
                load = os.getloadavg()[0]
                row = {"command": name, "size": size, "load": load, **measure(args, db)}
                with saved.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
                print(
                    f"{name:<22} {size:>7,} trials  {row['rss_mib']:7.0f} MiB  {row['cpu_s']:7.1f} s CPU  "
                    f"load {load:.1f}  exit {row['exit']} {row['error']}",
                    flush=True,
                )
    rows = [json.loads(line) for line in saved.read_text().splitlines()] if saved.exists() else []
    print(table(rows))


if __name__ == "__main__":
    main()
