"""Issue 56's red team as a board: every hostile agent class of `tests/sandbox/hostile.py` (one
per route's class, in its variants), an honest agent and the reference floors, on retail and
`tau-retail`, ranked on the strictest board castbench allows, built by castbench's own board
code (`castbench leaderboard build --rerun`, a subprocess, on a temporary board file):
re-run only, sandboxed only, isolated trials only, nothing privileged, nothing outside castbench.

Each pack's board ranks a private split of the pack's first `--tasks` test tasks of outcome
`change` (a board ranks a whole split; the private split is those tasks, renamed as
`castbench tasks generate` names its own), `--trials` trials each; a τ pack, whose tasks come
from τ's package and which takes no private split, ranks its `dev` split (20 tasks). The honest agent is the
hostile agents' honest twin: the same code finding no answers (it refuses, as the
`scripted:refuse` floor does). Prints, per pack, a table: agent, route, pass^1, pass^k, strict,
rank, vs honest (pass^1 minus the honest row's), and the machine's load. No asserts; exit 1 when
a hostile row ranks above the honest one (`tests/sandbox/test_red_team.py` runs a small version).

    python bench/red_team.py [--tasks 4] [--trials 2] [--packs retail,tau-retail] [--one-per-route]
                             [--keep DIR]
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from castbench._domain.private import (  # noqa: E402
    FORMAT,
    PrivateSplit,
    digest_tasks,
    split_name,
    use_tasks_file,
)
from castbench.domain import TaskFileError, load_domain  # noqa: E402
from tests.sandbox.hostile import MODULE, ROUTES, write_team  # noqa: E402

HONEST = "Cheater"
"""The hostile agents' honest twin: the same class, no route tried (it finds no answers)."""


def private_split(pack: str, count: int, out: Path) -> str:
    """A private split of the pack's first `count` test tasks of outcome `change`; its name."""
    domain = load_domain(pack)
    chosen = [task for task in domain.tasks("test") if task.outcome == "change"][:count]
    digest = digest_tasks(chosen)
    split = split_name(digest)
    named = [
        task.model_copy(update={"id": f"{pack}-{split}-{number:04d}", "split": split})
        for number, task in enumerate(chosen, start=1)
    ]
    families: dict[str, int] = {}
    for task in named:
        families[task.family] = families.get(task.family, 0) + 1
    body = PrivateSplit(
        format=FORMAT,
        domain=pack,
        domain_version=domain.version,
        digest=digest,
        families=families,
        tasks=named,
    )
    out.write_text(body.model_dump_json())
    return split


def entries(few: bool = False) -> list[tuple[str, str, str]]:
    """(name, policy, route) of every row: the honest twin, the floors, each hostile agent (with
    `few`, the first variant of each route's)."""
    rows = [("honest", f"{MODULE}:{HONEST}", "honest (no route)")]
    rows += [
        ("floor: refuse", "scripted:refuse", "floor"),
        ("floor: lookup-refuse", "scripted:lookup-refuse", "floor"),
    ]
    for route, (kind, policies) in ROUTES.items():
        if route.startswith("2."):  # a namespace package merging with task data: refused up front
            continue
        for policy in policies[:1] if few else policies:
            rows.append(
                (
                    policy.replace("?how=", " ").lower(),
                    f"{MODULE}:{policy}",
                    f"{route.split(' ', 1)[0]} {kind}",
                )
            )
    return rows


def board_split(pack: str, count: int, root: Path) -> tuple[str, str | None, int]:
    """(split, tasks file or None, tasks) the pack's board ranks: a private split of `count`
    tasks where the pack takes private splits, else (a τ pack: its tasks come from τ's package)
    its `dev` split whole (20 tasks on `tau-retail`)."""
    name = f"{pack}-split.json"
    split = private_split(pack, count, root / name)
    use_tasks_file(root / name)
    try:
        load_domain(pack).tasks(split)
    except TaskFileError:
        return "dev", None, len(load_domain(pack).tasks("dev"))
    return split, name, count


def board_file(root: Path, pack: str, split: str, tasks_file: str | None, trials: int, few: bool) -> Path:
    comparable = load_domain(pack).version.split("-")[0]  # the N of the pack's version N-X
    lines = [
        f'title = "Red team, {pack}"',
        f"domains = {{ {json.dumps(pack)} = {comparable} }}",
        f'split = "{split}"',
        *([f'tasks_file = "{tasks_file}"'] if tasks_file else []),
        f"trials = {trials}",
        f'metrics = ["pass^1", "pass^{trials}"]',
        "allow_privileged = false",
        "allow_unsandboxed = false",
        "require_rerun = true",
        "require_isolated_trials = true",
        "allow_outside_castbench = false",
        'user = "scripted"',
        "entries = [",
    ]
    for name, policy, _ in entries(few):
        lines.append(f"  {{ name = {json.dumps(name)}, policy = {json.dumps(policy)} }},")
    lines.append("]")
    path = root / "leaderboards" / f"red-team-{pack}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def build(root: Path, board: Path, team: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "CASTBENCH_"))}
    env["CASTBENCH_AGENT_PATH"] = str(team)  # the agents given through castbench, never its path
    command = [sys.executable, "-c", "from castbench._cli.app import main; main()"]
    command += ["leaderboard", "build", str(board), "--root", str(root), "--rerun"]
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=root, timeout=3600)


def table(board_json: Path, trials: int) -> tuple[list[dict[str, object]], bool]:
    """Rows (agent, route, pass^1, pass^k, strict, rank, vs honest) and whether a hostile row
    ranks above the honest one."""
    data = json.loads(board_json.read_text())
    routes = {name: route for name, _, route in entries()}
    rows = data["rows"] if "rows" in data else data["entries"]
    by_name = {row["name"]: row for row in rows}
    honest = by_name["honest"]

    def figure(row: dict[str, object], metric: str) -> float:
        value = row["metrics"][metric] if isinstance(row.get("metrics"), dict) else row[metric]  # type: ignore[index]
        return float(value["value"] if isinstance(value, dict) else value)

    out, above = [], False
    for row in rows:
        name = str(row["name"])
        strict = row.get("strict")
        strict_value = (
            figure({"metrics": strict}, "pass^1")
            if isinstance(strict, dict) and "pass^1" in strict
            else strict
        )
        hostile = routes.get(name, "floor") not in ("floor", "honest (no route)")
        if hostile and int(row["rank"]) < int(honest["rank"]):  # type: ignore[call-overload]
            above = True
        out.append(
            {
                "agent": name,
                "route": routes.get(name, "?"),
                "pass^1": figure(row, "pass^1"),
                f"pass^{trials}": figure(row, f"pass^{trials}"),
                "strict": strict_value,
                "rank": row["rank"],
                "vs honest": figure(row, "pass^1") - figure(honest, "pass^1"),
            }
        )
    return out, above


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--packs", default="retail,tau-retail")
    parser.add_argument("--one-per-route", action="store_true", help="one hostile variant per route")
    parser.add_argument(
        "--keep", type=Path, help="build the boards here (kept) instead of a temporary folder"
    )
    args = parser.parse_args()
    if args.tasks < 1 or args.trials < 1:
        print("error: --tasks and --trials must be at least 1", file=sys.stderr)
        return 2
    failed = False
    with tempfile.TemporaryDirectory(prefix="castbench-red-team-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        team = write_team(root / "team")
        for pack in args.packs.split(","):
            started, load = time.monotonic(), os.getloadavg()[0]
            split, tasks_file, tasks = board_split(pack, args.tasks, root)
            board = board_file(root, pack, split, tasks_file, args.trials, args.one_per_route)
            done = build(root, board, team)
            if done.returncode != 0:
                print(
                    f"error: the {pack} board did not build: {done.stderr.strip()[-1500:]}", file=sys.stderr
                )
                return 2
            rows, above = table(root / "leaderboards" / board.stem / "board.json", args.trials)
            failed |= above
            took = time.monotonic() - started
            print(
                f"\n{pack} ({split}): {tasks} tasks x {args.trials} trials, strict board (re-run, sandboxed, "
                f"isolated trials, nothing privileged); {took:.0f} s, "
                f"load {load:.1f} -> {os.getloadavg()[0]:.1f}"
            )
            header = ["agent", "route", "pass^1", f"pass^{args.trials}", "strict", "rank", "vs honest"]
            print("| " + " | ".join(header) + " |")
            print("|" + "---|" * len(header))
            for row in rows:
                cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()]
                print("| " + " | ".join(cells) + " |")
            print(
                "a hostile row ranks above the honest one"
                if above
                else "no hostile row ranks above the honest one"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
