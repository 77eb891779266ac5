"""Where a whole `castbench eval` command spends its CPU: a profile of the command a user types.

    python bench/profile_whole_command.py                  # retail oracle x 8 trials, warm floors
    python bench/profile_whole_command.py --trials 8 --top 25 --out bench/profiles/whole_command.txt

The command runs in this process under cProfile with a CPU clock (`time.process_time`), so a
machine shared with other work does not inflate it: start-up (imports) included, the trials, the
summary, the floors (read back from the store: a first, unprofiled run on the same database puts
them there, as a second agent or a re-run would find them) and the commits. Prints the top
functions by cumulative CPU time and writes them to --out for the closing note.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None, help="Also write the table here.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="castbench-profile-") as scratch:
        db = str(Path(scratch) / "runs.db")
        args = [
            "eval",
            "--domain",
            "retail",
            "--policy",
            "oracle",
            "--trials",
            str(options.trials),
            "--db",
            db,
        ]
        castbench = str(Path(sys.executable).with_name("castbench"))
        subprocess.run([castbench, *args], check=True, capture_output=True)  # the floors into the store
        sys.argv = ["castbench", *args, "--fresh"]
        profile = cProfile.Profile(time.process_time)
        started = time.process_time()
        profile.enable()
        try:
            from castbench.cli.app import main as castbench_main

            castbench_main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        finally:
            profile.disable()
        total = time.process_time() - started
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("cumulative").print_stats(options.top)
    table = text.getvalue().split("\n", 3)[-1].strip("\n")  # from the 'ncalls' header on
    report = (
        f"castbench eval --domain retail --policy oracle --trials {options.trials} (--fresh, floors "
        f"from the store): {total:.2f} s CPU in this process, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}\n{table}\n"
    )
    print(report, file=sys.__stdout__)
    if options.out is not None:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
