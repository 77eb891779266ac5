"""Where a whole `castbench eval` command spends its CPU: a profile of the command a user types.

    python bench/profile_whole_command.py                  # retail oracle x 8 trials, warm floors
    python bench/profile_whole_command.py --trials 8 --top 25 --out bench/profiles/whole_command.txt

The command runs in this process under cProfile with a CPU clock (each thread's own,
`time.thread_time`; every thread the command starts is profiled too, its writer of commits and
the floors' thread included, and their profiles added up), so a machine shared with other work
does not inflate it: start-up (imports) included, the trials, the
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
import site
import subprocess
import sys
import tempfile
import threading
import time
from importlib.util import find_spec
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


PARTS = {
    "start-up: imports": ("<frozen importlib._bootstrap>", "_find_and_load"),
    "trials (run_trial: agent, user, tools, labeler, grading)": ("_trial/rollout.py", "run_trial"),
    "  the labeler on every action (label_action)": ("_grading/labeler.py", "label_action"),
    "  tool calls (Toolkit.call)": ("_domain/tools.py", "call"),
    "  grading a trial (grade_trial)": ("_grading/grade.py", "grade_trial"),
    "storing trials (ResultsStore.add_trial, one commit each)": ("_records/store/store.py", "add_trial"),
    "storing trials (ResultsStore.add_trials, grouped commits)": ("_records/store/store.py", "add_trials"),
    "  the summary streamed (StreamedSummary.add, judged as stored)": ("_results/report/streamed.py", "add"),
    "summary (kept_summary: trials read back, summarize_run)": ("_results/report/kept.py", "kept_summary"),
    "  attribution shares (judge_trial: user faults, causes)": (
        "_results/attribution/shares.py",
        "judge_trial",
    ),
    "reference floors (awaited: run or read in their own thread)": ("_run/floors.py", "reference_floors"),
    "pydantic validation (validate_python, own time)": ("~", "validate_python' of"),
    "pydantic JSON (validate_json + to_json, own time)": ("~", "_json' of"),
}
"""Part -> (file suffix, function name) whose largest cumulative time stands for it; "~" sums
the own time of built-ins whose name contains the text."""


def _parts(stats: pstats.Stats, total: float) -> str:
    lines = []
    table = stats.stats  # type: ignore[attr-defined]
    for label, (where, name) in PARTS.items():
        if where == "~":
            spent = sum(row[2] for (_, _, func), row in table.items() if name in func)
        else:
            found = [
                row[3] for (file, _, func), row in table.items() if file.endswith(where) and func == name
            ]
            spent = max(found, default=0.0)
        lines.append(f"  {label:62} {spent:6.2f} s {spent / total:5.0%}")
    return "\n".join(lines)


def _profile_threads() -> list[cProfile.Profile]:
    """Profile every thread started from now on with its own CPU clock; the profiles, to add."""
    profiles: list[cProfile.Profile] = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return profiles


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
        profile = cProfile.Profile(time.thread_time)
        threads = _profile_threads()
        started = time.process_time()
        profile.enable()
        try:
            from castbench._cli.app import main as castbench_main

            castbench_main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        finally:
            profile.disable()
        total = time.process_time() - started
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    for thread_profile in threads:
        stats.add(thread_profile)
    stats.sort_stats("cumulative").print_stats(options.top)
    table = text.getvalue().split("\n", 3)[-1].strip("\n")  # from the 'ncalls' header on
    source = Path(str(find_spec("castbench").origin)).parents[2]  # type: ignore[union-attr]
    for prefix in sorted({f"{source}/", f"{site.getsitepackages()[0]}/"}):
        table = table.replace(prefix, "")
    report = (
        f"castbench eval --domain retail --policy oracle --trials {options.trials} (--fresh, floors "
        f"from the store): {total:.2f} s CPU in this process (profiled), {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}\n\nby part (cumulative CPU, share of the command; parts overlap where "
        f"one calls another):\n{_parts(stats, total)}\n\ntop {options.top} by cumulative CPU:\n{table}\n"
    )
    print(report, file=sys.__stdout__)
    if options.out is not None:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
