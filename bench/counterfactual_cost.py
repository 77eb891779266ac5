"""What counterfactual branching costs: `python bench/counterfactual_cost.py [--tasks 20] [--trials 2]`.

A critic run of `scripted:noisy?draws=keyed` with each scripted critic on the four castbench
domains. Per critic verdict castbench plays one branch: it re-creates the agents from the
trial's seed, replays the trial to the verdict (the snapshot: domain state, conversation and the
agents' hidden state, rebuilt and checked against the record), then plays the other verdict to
the end (a verdict whose opposite would change nothing is not played, nor counted here).
Printed, measured in one run: seconds per trial; per branch, the snapshot (re-creation
and replay to the branch point) and the play-out; branches per trial; and the ratios of a branch
and of a trial's branches to the trial itself. For comparison, the cost of copying the domain
state alone at a verdict (`Database.fork`), what a snapshot would cost if agents kept no state.
"""

from __future__ import annotations

import argparse
import time
from statistics import mean

from castbench._base.conversation import Verdict
from castbench._run.api import build_config
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench_analyses.counterfactual import OtherVerdict, branch_points, plays

DOMAINS = ("retail", "airline", "telecom", "telehealth")
CRITICS = ("rules", "oracle", "scripted:noisy?false_flag=0.3&miss=0.1&draws=keyed")


class _Timed(OtherVerdict):
    """The other verdict, noting when the replay reached the branch point."""

    reached_at: float = 0.0

    def before(self, step: int, round_: int, since_view: float, since_start: float) -> Verdict | None:
        if (step, round_) == (self.point.step, self.point.round):
            self.reached_at = time.perf_counter()
        return super().before(step, round_, since_view, since_start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="tasks per domain")
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    trial_s: list[float] = []
    snapshot_s: list[float] = []
    playout_s: list[float] = []
    fork_s: list[float] = []
    per_trial: list[int] = []
    for critic in CRITICS:
        for domain in DOMAINS:
            config, agents = build_config(
                policy="scripted:noisy?draws=keyed", critic=critic, domains=domain, trials=args.trials, seed=0
            )
            expected = ExpectedStates()
            for job in list(plan_trials(config))[: args.tasks * args.trials]:
                expected.get(job.domain, job.task)
                start = time.perf_counter()
                record = run_job(job, config, agents, expected)
                trial_s.append(time.perf_counter() - start)
                points = [point for point in branch_points(record) if plays(point, config)]
                per_trial.append(len(points))
                state = job.domain.initial_database(job.task)
                for point in points:
                    copied = time.perf_counter()
                    state.fork()
                    fork_s.append(time.perf_counter() - copied)
                    timed = _Timed(point, config.verification)
                    start = time.perf_counter()
                    run_job(job, config, agents, expected, overrule=timed)
                    end = time.perf_counter()
                    snapshot_s.append(timed.reached_at - start)
                    playout_s.append(end - timed.reached_at)
    trial, snapshot, playout = mean(trial_s), mean(snapshot_s), mean(playout_s)
    branch = snapshot + playout
    grid = f"{args.tasks} tasks x {args.trials} trials x {len(DOMAINS)} domains x {len(CRITICS)} critics"
    print(f"{len(trial_s)} trials ({grid}), {len(snapshot_s)} branches played")
    print(f"trial:                       {trial * 1e3:8.2f} ms")
    print(f"snapshot (replay to verdict): {snapshot * 1e3:8.2f} ms")
    print(f"branch play-out:             {playout * 1e3:8.2f} ms")
    print(f"branch (snapshot + play-out): {branch * 1e3:8.2f} ms = {branch / trial:.2f} x a trial")
    print(f"state copy alone (fork):     {mean(fork_s) * 1e3:8.3f} ms")
    whole = mean(per_trial) * branch / trial
    print(
        f"branches played per trial: {mean(per_trial):.1f}; a trial's branches cost {whole:.1f} x the trial"
    )


if __name__ == "__main__":
    main()
