"""What the second pass of the trust boundary (issues 38 and 44) costs, measured in one run:

- storing a trial with its digest kept outside the store (`castbench._records.store.digests`) against
  storing it without (the digest call replaced by a no-op), interleaved, per trial;
- working out a worker's sandbox plan (`castbench._agents.sandbox.plan`) once more with the same
  inputs (what every worker start after the first pays: the record of results places is read
  again only when it changed), with `--places` recorded places on the record;
- the first plan of an agent that declares `sandbox_read = ("/",)` (every folder below `/`
  checked for stores and exports, up to `sandbox.SCAN_LIMIT` entries);
- installing the seccomp socket filter in a fresh interpreter;

and what the third pass (issue 56) adds, per trial unless said:

- forking a trial's process into a PID namespace of its own (`unshare` + `fork` + `setns` in the
  template) against a plain `fork`, the child exiting at once, reaped;
- in the trial's process: its limits (`setrlimit` x4) and its user id (`setresuid`, `capset`);
- its output file in memory (`memfd_create`, read by castbench: one `pread`);
- the journal of started and stored trials (two appends);
- per castbench start: the start-up check (`castbench._agents.startup.outside_code`);
- per agent and run: the content check of an agent package for task data (and the first index
  of the protected packages' files by size);
- per reply judged: quoting a reply for the judge's prompt;
- per system call of the agent's process (so per step): the seccomp filter, grown by the fourth
  pass (System V IPC, keyrings, `memfd_create`, netlink protocols), against no filter.

    python bench/trust_boundary.py [--trials 400] [--places 4000] [--only-third] [--forks 300]

Prints medians and ratios; no asserts. Goal: < 5 ms added per trial, nothing per step (the
filter and the kernel's rules cost nothing on the pipe the steps travel on).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

from castbench._base import places
from castbench._records.store import ResultsStore
from castbench._records.store import store as store_module
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench.agents import sandbox, seccomp

_SECCOMP = """
import ctypes, time
from castbench.agents import seccomp
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(38, 1, 0, 0, 0)
start = time.perf_counter()
seccomp.install(libc, udp=False)
print(time.perf_counter() - start)
"""


_STARTUP = """
import time
import castbench._cli.app
from castbench._agents.startup import outside_code
start = time.perf_counter()
outside_code()
print(time.perf_counter() - start)
"""


_SYSCALLS = """
import ctypes, os, time
from castbench.agents import seccomp
libc = ctypes.CDLL(None, use_errno=True)

def per_call():  # the least of 40 rounds: what the call costs when nothing else runs
    rounds = []
    for _ in range(40):
        start = time.perf_counter_ns()
        for _ in range(5000):
            os.getppid()
        rounds.append((time.perf_counter_ns() - start) / 5000)
    return min(rounds)

before = per_call()
libc.prctl(38, 1, 0, 0, 0)
seccomp.install(libc, udp=False)
print(before, per_call())
"""
"""Nanoseconds per system call (`getppid` through Python: the filter's whole path) before and after
the filter, the least of 40 rounds each (on a loaded machine a median measures the neighbours)."""


def _ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def _store_s(store: ResultsStore, run_id: str, records: list[TrialRecord], digest: bool) -> list[float]:
    took = []
    patch = nullcontext() if digest else mock.patch.object(store_module, "record_digests", lambda *args: None)
    with patch:
        for record in records:
            start = time.perf_counter()
            store.add_trial(run_id, record)
            took.append(time.perf_counter() - start)
    return took


def _fork_ms(rounds: int, namespace: bool, confine_child: bool) -> tuple[list[float], list[float]]:
    """Parent-side time to fork (and reap) a child that exits at once, with or without a PID
    namespace of its own; the child's own time to take its limits and user id (when asked)."""
    from castbench.agents import confine

    own = confine.own_pid_namespace() if namespace else -1
    parent, child = [], []
    for _ in range(rounds):
        read_end, write_end = os.pipe()
        start = time.perf_counter()
        if namespace:
            confine.unshare_pid()
        pid = os.fork()
        if pid == 0:
            took = 0.0
            if confine_child:
                began = time.process_time()
                confine.apply_limits(confine.DEFAULT_LIMITS)
                confine.become_trial_user(confine.host_pid())
                took = time.process_time() - began
            os.write(write_end, f"{took}".encode())
            os._exit(0)
        if namespace:
            confine.restore_pid(own)
        forked = time.perf_counter() - start
        os.close(write_end)
        child.append(float(os.read(read_end, 64) or b"0"))
        os.close(read_end)
        os.waitpid(pid, 0)
        parent.append(forked)
    if own >= 0:
        os.close(own)
    return parent, child


def third_pass(args: argparse.Namespace) -> None:
    from castbench._agents.models.reply_judge import quoted
    from castbench._records.journal import Journal
    from castbench.agents import confine

    print(f"-- issue 56 (the third pass), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    if confine.can_unshare_pid():
        plain: list[float] = []
        spaced: list[float] = []
        confined: list[float] = []
        for _ in range(3):  # interleaved rounds
            plain += _fork_ms(args.forks // 3, False, False)[0]
            parent, child = _fork_ms(args.forks // 3, True, True)
            spaced += parent
            confined += child
        print(
            f"forking a trial's process: {_ms(plain):.3f} ms plain, {_ms(spaced):.3f} ms into a PID "
            f"namespace of its own: {_ms(spaced) - _ms(plain):+.3f} ms per trial (median of {len(plain)})"
        )
        print(f"its limits and user id, in the trial's process: {_ms(confined):.3f} ms of CPU per trial")
        from trial_isolation import compare_keeper  # this folder: the worker's whole trial cycle

        print("the trial's process as PID 1 of its namespace, against a keeper forked first:")
        compare_keeper(argparse.Namespace(keeper_rounds=3, trials=30, steps=0, gap_ms=30.0))
    else:
        print("no PID namespace here (no CAP_SYS_ADMIN or CASTBENCH_TRIAL_PIDNS=off): not timed")
    took = []
    for _ in range(args.trials):
        start = time.perf_counter()
        fd = os.memfd_create("bench", os.MFD_CLOEXEC)
        os.write(fd, b"x" * 256)
        os.pread(fd, 65536, 0)
        os.fstat(fd)
        os.close(fd)
        took.append(time.perf_counter() - start)
    print(f"a trial's output in memory, read by castbench: {_ms(took):.3f} ms per trial")
    with tempfile.TemporaryDirectory() as folder:
        os.environ[places.STATE_ENV] = folder
        journal = Journal("sqlite:///bench.db", "run-1")
        record = TrialRecord(
            domain="retail", domain_version="1", task_id="t", trial_index=0, seed=1, status="scored",
            reward=1.0, end_reason="user_stop", opening="",
        )  # fmt: skip
        took = []
        for index in range(args.trials):
            start = time.perf_counter()
            journal.started(("retail", "t", index))
            journal.stored(record.model_copy(update={"trial_index": index}))
            took.append(time.perf_counter() - start)
        journal.close()
        print(f"the journal of started and stored trials: {_ms(took):.3f} ms per trial")
    took = []
    for _ in range(7):  # as `castbench` runs it: in a fresh interpreter, castbench's CLI imported
        done = subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True, check=True)
        took.append(float(done.stdout.split()[-1]))
    print(f"the start-up check: {_ms(took):.2f} ms per castbench start (median of 7 fresh interpreters)")
    start = time.perf_counter()
    sandbox._protected_sizes()
    index_s = time.perf_counter() - start
    package = str(Path(sandbox.__file__).parent)  # castbench.agents: ~30 modules, as a team's package
    took = []
    for _ in range(20):
        start = time.perf_counter()
        found, seen = sandbox.results_inside(package, sandbox.SCAN_LIMIT)
        took.append(time.perf_counter() - start)
    print(
        f"the content check of an agent package ({seen} entries): {_ms(took):.2f} ms per agent and run "
        f"(first index of the protected packages' files: {1000 * index_s:.1f} ms, once per process)"
    )
    reply = "Your order #W1 was delivered on 2024-05-01; the total is $99.25. " * 4
    took = []
    for _ in range(args.trials):
        start = time.perf_counter()
        quoted(reply)
        took.append(time.perf_counter() - start)
    print(f"quoting a reply for the judge: {1000 * _ms(took):.2f} us per reply")
    done = subprocess.run([sys.executable, "-c", _SYSCALLS], capture_output=True, text=True, check=True)
    before, after = (float(x) for x in done.stdout.split())
    print(
        f"a system call under the seccomp filter ({len(seccomp.program(False))} instructions, with the "
        f"fourth pass's System V IPC, keyrings, memfd_create and netlink protocols): {before:.0f} ns "
        f"before, {after:.0f} ns after ({after - before:+.0f} ns per call; a step's pipe round trip "
        "makes a handful)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--places", type=int, default=4000)
    parser.add_argument("--forks", type=int, default=300)
    parser.add_argument("--only-third", action="store_true", help="time only issue 56's boundaries")
    args = parser.parse_args()
    third_pass(args)
    if args.only_third:
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        os.environ[places.STATE_ENV] = str(root / "state")
        for index in range(args.places):
            places.record_place(root / f"store-{index}.db")
            (root / f"store-{index}.db").touch()
        source = ResultsStore(f"sqlite:///{root / 'source.db'}")
        run = evaluate(domains="retail", policy="oracle", trials=1, tasks=None, db=source.url)
        template = source.trials(run.outcome.run_id)
        config = source.config(run.outcome.run_id)
        store = ResultsStore(f"sqlite:///{root / 'timed.db'}")
        timed: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(max(1, args.trials // len(template))):
            for digest in (True, False):
                run_id, _ = store.open_run(config, {}, fresh=True)
                timed[digest] += _store_s(store, run_id, template, digest)
        with_digest, without = _ms(timed[True]), _ms(timed[False])
        print(
            f"storing a trial: {with_digest:.3f} ms with its digest, {without:.3f} ms without "
            f"(median of {len(timed[True])} each): {with_digest - without:+.3f} ms, "
            f"ratio {with_digest / without:.3f}"
        )
        target = "json:loads"
        sandbox.plan(target)
        again = []
        for _ in range(50):
            start = time.perf_counter()
            sandbox.plan(target)
            again.append(time.perf_counter() - start)
        print(f"a worker's plan again ({args.places} places on the record): {_ms(again):.2f} ms median")
        start = time.perf_counter()
        wide = sandbox.plan(target, sandbox.SandboxNeeds(read=("/",)))
        print(
            f'the first plan of sandbox_read = ("/",): {time.perf_counter() - start:.2f} s, '
            f"{len(wide.grants)} rules, narrowed: {', '.join(wide.narrowed)}"
        )
    installs = []
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", _SECCOMP], capture_output=True, text=True, check=True)
        installs.append(float(done.stdout.split()[-1]))
    print(f"installing the seccomp socket filter: {_ms(installs):.3f} ms median (once per worker)")


if __name__ == "__main__":
    main()
