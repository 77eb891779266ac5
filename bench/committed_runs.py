"""What the CI pays to trust the committed runs: reading each export, verifying it (every trial
re-executed, re-graded and re-labelled, as `leaderboard build` does), and building each board.

    python bench/committed_runs.py                       # every committed run and board
    python bench/committed_runs.py --runs tau2 --no-boards   # the tau2 runs only

Prints seconds per run (read, verify) and per board (build without re-verifying, as the
board-up-to-date test builds it). Numbers of one invocation compare; this machine is noisy.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._records.store.export import read_export  # noqa: E402
from castbench._results.publish.board import load_board  # noqa: E402
from castbench._results.publish.verify import verify_run  # noqa: E402
from castbench_boards.build import build_board  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _runs(folder: str | None) -> None:
    root = REPO / "results" / folder if folder else REPO / "results"
    total = 0.0
    print(f"{'run':58} {'trials':>6} {'read s':>7} {'verify s':>9}")
    for path in sorted(root.rglob("*.castbench.json.gz")):
        started = time.perf_counter()
        exported = read_export(path)
        read = time.perf_counter() - started
        started = time.perf_counter()
        report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
        verify = time.perf_counter() - started
        total += read + verify
        name = path.relative_to(REPO / "results").as_posix()
        verdict = "" if report.ok else "  NOT OK"
        print(f"{name:58} {len(exported.trials):>6} {read:>7.1f} {verify:>9.1f}{verdict}")
    print(f"all runs: {total:.1f} s")


def _boards() -> None:
    for spec_path in sorted((REPO / "leaderboards").glob("*.toml")):
        spec = load_board(spec_path)
        recipes = [entry for entry in spec.entries or [] if entry.policy]
        reruns = {entry.name: read_export(REPO / entry.run_path(spec.name)) for entry in recipes}
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            build_board(spec, REPO, Path(out), reruns=reruns, verify=False)
        print(f"board {spec.name}: built in {time.perf_counter() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", help="one folder of results/ (default: all)")
    parser.add_argument("--no-boards", action="store_false", dest="build", help="skip the board builds")
    args = parser.parse_args()
    _runs(args.runs)
    if args.build:
        _boards()


if __name__ == "__main__":
    main()
