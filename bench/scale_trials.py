"""Scaling to 100k trials (issue 40): what each command costs per trial at 1k, 10k and 100k trials.

    nice -n 10 python bench/scale_trials.py                       # 1k, 10k, 100k (~1 h of CPU)
    python bench/scale_trials.py --sizes 1k,10k                   # find what is not linear quickly
    python bench/scale_trials.py --sizes 100k --only eval         # the eval alone (run in background)
    python bench/scale_trials.py --sizes 1k,10k,100k --reuse      # the read commands on stored runs

The runs are τ² telecom's `full` split (2,285 tasks) with `scripted:noisy` — the cheapest policy
that goes through the whole grading path and fails four trials in five, so the failure paths
(`runs why`, the failures of `runs show`) have work to do — seed 0, one SQLite store per size:

- 1k:   the split's first 125 tasks x 8 trials =   1,000 trials
- 10k:  all 2,285 tasks x 4 trials             =   9,140 trials (the ids of 1,250 tasks are more
  than one argument may hold: `--tasks` is for a few)
- 100k: all 2,285 tasks x 44 trials            = 100,540 trials (`--trials` is at most 1,000 per
  task, and 8 trials of the whole split are 18,280: more trials per task is how one run reaches
  100k; pass^k then has k up to 44)

Every command runs as its own subprocess, measured by `os.wait4`: wall seconds, CPU seconds
(user + system, the child and anything it waited for) and its peak RSS. The commands:

- eval: the run itself (CPU per trial is the figure that must stay flat);
- eval (resume): the same command again on the complete run — nothing to run, so what it costs is
  reading every trial back and the summary (eval prints no separate summary time);
- runs show; runs show --task T --trial I of a failing trial; runs why; runs why --json;
- eval (seed 1): a second run of the same size (its own store), for compare and gate (a run
  gated against itself is refused);
- compare and gate: the seed-0 run in the store against the seed-1 run's `--output` summary
  (what a CI job keeps next to its code): the store side is read in full, the other is one file;
- export (castbench's portable file, τ²'s Results JSON, an Inspect eval log); verify (replays every
  trial: as costly as the eval); view (the HTML page).

SQLite bytes per trial = the store's file size / trials. The table gives, per command and size,
seconds, ms per trial, peak RSS and the ratio of ms per trial at each size over the smallest
(flat: within 1.2; commands that do not depend on the trial count, like `runs show --task`, are
reported but their ratio is not a per-trial cost). Results also go to DIR/scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

CASTBENCH = str(Path(sys.executable).with_name("castbench"))
DOMAIN, SPLIT, POLICY, SEED = "tau2-telecom", "full", "scripted:noisy", 0
#: size name -> (every how many tasks of the split, trials per task); 1: the whole split
SIZES: dict[str, tuple[int, int]] = {
    "1k": (9, 4),
    "10k": (1, 4),
    "18k": (1, 8),
    "100k": (1, 44),
    "39k": (1, 44),  # the 100k run stopped at 39,411 trials (docs/scale.md): its read commands
}
FLAT = 1.2
COMMANDS = (
    "eval",
    "eval (resume)",
    "eval (seed 1)",
    "runs show",
    "runs show --task",
    "runs why",
    "runs why --json",
    "compare",
    "gate",
    "view",
    "export castbench",
    "export tau2",
    "export inspect",
    "verify",
    "sqlite bytes/trial",
)


@dataclass
class Measure:
    command: str
    size: str
    trials: int
    rc: int
    wall_s: float
    cpu_s: float
    rss_mib: float

    @property
    def ms_per_trial(self) -> float:
        return 1000.0 * self.cpu_s / self.trials


def measure(command: str, size: str, trials: int, argv: list[str], log: Path) -> Measure:
    """One subprocess, its own rusage (wait4: the child and what it waited for), output to `log`."""
    start = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measure(
        command=command,
        size=size,
        trials=trials,
        rc=proc.returncode,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        rss_mib=usage.ru_maxrss / 1024.0,  # KiB on Linux
    )


def task_ids(stride: int) -> list[str] | None:
    """Every `stride`-th task of the split (its families in the same mix), None for all of them."""
    if stride == 1:
        return None
    from castbench.domain import load_domain

    return [task.id for task in load_domain(DOMAIN).tasks(SPLIT)[::stride]]


def eval_argv(size: str, db: Path, summary: Path, seed: int = SEED) -> list[str]:
    count, trials = SIZES[size]
    argv = [CASTBENCH, "eval", "--domain", DOMAIN, "--split", SPLIT, "--policy", POLICY]
    argv += ["--trials", str(trials), "--seed", str(seed), "--db", str(db), "--output", str(summary)]
    ids = task_ids(count)
    if ids is not None:
        argv += ["--tasks", ",".join(ids)]
    return argv


def stored(db: Path) -> tuple[str, int, tuple[str, int] | None]:
    """(run id, trials, a failing trial (task, index)) of the store's one run."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT id FROM run ORDER BY created LIMIT 1").fetchone()
        (trials,) = conn.execute("SELECT count(*) FROM trial WHERE run_id = ?", (run_id,)).fetchone()
        row = conn.execute(
            "SELECT task_id, trial_index FROM trial WHERE run_id = ? AND reward < 1 ORDER BY id LIMIT 1",
            (run_id,),
        ).fetchone()
    return run_id, trials, (row[0], row[1]) if row else None


def run_size(size: str, root: Path, only: set[str] | None, reuse: bool) -> list[Measure]:
    where = root / size
    where.mkdir(parents=True, exist_ok=True)
    db, summary = where / "castbench.db", where / "summary.json"
    count, per_task = SIZES[size]
    planned = -(-2285 // count) * per_task  # the split's size, as `castbench domains list` gives it
    results: list[Measure] = []
    saved = where / "eval.json"

    def wanted(name: str) -> bool:
        return only is None or name in only or name.split()[0] in only

    if reuse and saved.exists() and db.exists():
        results += [Measure(**m) for m in json.loads(saved.read_text())]
        print(f"[{size}] eval: reused {db}", file=sys.stderr, flush=True)
    elif wanted("eval"):
        if db.exists():
            db.unlink()
        print(f"[{size}] eval: {planned} trials ...", file=sys.stderr, flush=True)
        first = measure("eval", size, planned, eval_argv(size, db, summary), where / "eval.log")
        results.append(first)
        results.append(
            measure("eval (resume)", size, planned, eval_argv(size, db, summary), where / "resume.log")
        )
        seed1, summary1 = where / "seed1.db", where / "summary1.json"
        if not summary1.exists():  # absent unless run beforehand (in parallel, on a second core)
            seed1.unlink(missing_ok=True)
            argv = eval_argv(size, seed1, summary1, 1)
            results.append(measure("eval (seed 1)", size, planned, argv, where / "eval1.log"))
        saved.write_text(json.dumps([asdict(m) for m in results]))
    if not db.exists():
        return results
    run_id, trials, failing = stored(db)
    store = ["--db", str(db)]
    exported = where / "run.castbench.json.gz"
    candidate = str(where / "summary1.json")  # the seed-1 run's summary, as a CI job keeps one
    commands: list[tuple[str, list[str]]] = [
        ("runs show", ["runs", "show", run_id, *store]),
        ("runs why", ["runs", "why", run_id, *store]),
        ("runs why --json", ["runs", "why", run_id, "--json", *store]),
        ("export castbench", ["export", run_id, "--out", str(exported), *store]),
        ("export tau2", ["export", run_id, "--format", "tau2", "--out", str(where / "tau2.json"), *store]),
        (
            "export inspect",
            ["export", run_id, "--format", "inspect", "--out", str(where / "run.eval"), *store],
        ),
        ("compare", ["compare", run_id, candidate, *store]),
        (
            "gate",
            [
                "gate",
                "--baseline",
                run_id,
                "--candidate",
                candidate,
                "--metric",
                "pass^1",
                "--max-drop",
                "0.05",
                "--force",  # the stopped 100k run (39k) is incomplete: gated on what it has
                *store,
            ],
        ),
        ("view", ["view", run_id, "--out", str(where / "view.html"), *store]),
        ("verify", ["verify", run_id, *store]),
    ]
    if failing is not None:
        task, index = failing
        commands.insert(
            1, ("runs show --task", ["runs", "show", run_id, "--task", task, "--trial", str(index), *store])
        )
    for name, args in commands:
        if not wanted(name):
            continue
        print(f"[{size}] {name} ...", file=sys.stderr, flush=True)
        log = where / (name.replace(" ", "_").replace("-", "") + ".log")
        results.append(keep(where, measure(name, size, trials, [CASTBENCH, *args], log)))
    size_of = Measure("sqlite bytes/trial", size, trials, 0, 0.0, db.stat().st_size / trials / 1000.0, 0.0)
    results.append(keep(where, size_of))
    return results


def keep(where: Path, m: Measure) -> Measure:
    """Append `m` to DIR/SIZE/measures.jsonl at once: parallel or interrupted invocations add up
    (`--table` reads them back; a later line of a command replaces an earlier one)."""
    with (where / "measures.jsonl").open("a") as out:
        out.write(json.dumps(asdict(m)) + "\n")
    return m


def kept(root: Path, sizes: list[str]) -> list[Measure]:
    found: dict[tuple[str, str], Measure] = {}
    for size in sizes:
        path = root / size / "measures.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                m = Measure(**json.loads(line))
                found[m.command, m.size] = m
        saved = root / size / "eval.json"
        if saved.exists():
            for entry in json.loads(saved.read_text()):
                m = Measure(**entry)
                found.setdefault((m.command, m.size), m)
    return list(found.values())


def table(results: list[Measure]) -> str:
    """Per command and size: CPU seconds, ms per trial, peak RSS; the ratios of ms per trial at
    each size over the smallest; and the slope between consecutive sizes (the CPU the added
    trials cost, ms per trial: start-up and per-task work cancel out) with the last slope over the
    first: linear is 1 (a step that grows as n^2 doubles its slope with every doubling of n)."""
    sizes = list(dict.fromkeys(m.size for m in results))
    by = {(m.command, m.size): m for m in results}
    base = sizes[0]
    steps = list(zip(sizes, sizes[1:], strict=False))

    def slope(command: str, small: str, large: str) -> float | None:
        a, b = by.get((command, small)), by.get((command, large))
        if a is None or b is None or b.trials == a.trials or a.rc not in (0, 1, 2) or b.rc not in (0, 1, 2):
            return None
        return 1000.0 * (b.cpu_s - a.cpu_s) / (b.trials - a.trials)

    lines = []
    head = f"{'command':<22}" + "".join(f"{s + ' s':>9}{'ms/trial':>10}{'MiB':>7}" for s in sizes)
    head += "".join(f"{s + '/' + base:>10}" for s in sizes[1:])
    head += "".join(f"{'d ' + a + '-' + b:>12}" for a, b in steps)
    head += f"{'slope':>7}" if len(steps) > 1 else ""
    lines.append(head)
    for command in dict.fromkeys(m.command for m in results):
        if command == "sqlite bytes/trial":
            row = f"{'SQLite bytes/trial':<22}" + "".join(
                f"{'':>9}{by[command, s].cpu_s * 1000:>10.0f}{'':>7}" if (command, s) in by else " " * 26
                for s in sizes
            )
            lines.append(row)
            continue
        row = f"{command:<22}"
        for s in sizes:
            m = by.get((command, s))
            if m is None:
                row += " " * 26
                continue
            failed = m.rc not in (0, 2 if m.command == "verify" else 0)
            row += f"{m.cpu_s:>9.1f}{m.ms_per_trial:>10.3f}{m.rss_mib:>6.0f}{'!' if failed else ' '}"
        for s in sizes[1:]:
            m, b = by.get((command, s)), by.get((command, base))
            row += f"{m.ms_per_trial / b.ms_per_trial:>10.2f}" if m and b and b.cpu_s else " " * 10
        slopes = [slope(command, a, b) for a, b in steps]
        row += "".join(f"{d:>12.3f}" if d is not None else " " * 12 for d in slopes)
        if len(steps) > 1 and slopes[0] and slopes[-1]:
            row += f"{slopes[-1] / slopes[0]:>7.2f}"
        lines.append(row)
    lines.append(
        "s: CPU seconds (user+sys) · ms/trial: CPU ms per trial · MiB: peak RSS · ! failed "
        "(verify's exit 2 is not: clairvoyant trials, the noisy policy's reads of the ground truth)"
    )
    lines.append(
        f"ratios: ms/trial at a size over {base} (flat: <= {FLAT}) · d A-B: CPU ms per added trial "
        "from A to B · slope: the last d over the first"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1k,10k,100k", help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/castbench-scale"), help="stores and logs")
    parser.add_argument("--only", default=None, help="comma-separated commands (eval, runs, export, ...)")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse a size's stored eval (DIR/SIZE/eval.json)"
    )
    parser.add_argument("--table", action="store_true", help="only print the table of what DIR holds")
    args = parser.parse_args()
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        print(f"error: --sizes: unknown size {unknown[0]!r} (known: {', '.join(SIZES)})", file=sys.stderr)
        return 2
    only = {c.strip() for c in args.only.split(",")} if args.only else None
    if not args.table:
        for size in sizes:
            run_size(size, args.dir, only, args.reuse)
    results = kept(args.dir, sizes)
    order = {name: i for i, name in enumerate(COMMANDS)}
    results.sort(key=lambda m: (order.get(m.command, len(order)), sizes.index(m.size)))
    args.dir.mkdir(parents=True, exist_ok=True)
    (args.dir / "scale.json").write_text(json.dumps([asdict(m) for m in results], indent=1))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
