"""What the second pass of the trust boundary (issues 38 and 44) costs, measured in one run:

- storing a trial with its digest kept outside the store (`castbench.store.digests`) against
  storing it without (the digest call replaced by a no-op), interleaved, per trial;
- working out a worker's sandbox plan (`castbench.agents.sandbox.plan`) once more with the same
  inputs (what every worker start after the first pays: the record of results places is read
  again only when it changed), with `--places` recorded places on the record;
- the first plan of an agent that declares `sandbox_read = ("/",)` (every folder below `/`
  checked for stores and exports, up to `sandbox.SCAN_LIMIT` entries);
- installing the seccomp socket filter in a fresh interpreter.

    python bench/trust_boundary.py [--trials 400] [--places 4000]

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

from castbench import places
from castbench.agents import sandbox
from castbench.api import evaluate
from castbench.records.trial import TrialRecord
from castbench.store import ResultsStore
from castbench.store import store as store_module

_SECCOMP = """
import ctypes, time
from castbench.agents import seccomp
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(38, 1, 0, 0, 0)
start = time.perf_counter()
seccomp.install(libc, udp=False)
print(time.perf_counter() - start)
"""


def _ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def _store_s(store: ResultsStore, run_id: str, records: list[TrialRecord], digest: bool) -> list[float]:
    took = []
    patch = nullcontext() if digest else mock.patch.object(store_module, "record_digest", lambda *args: None)
    with patch:
        for record in records:
            start = time.perf_counter()
            store.add_trial(run_id, record)
            took.append(time.perf_counter() - start)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--places", type=int, default=4000)
    args = parser.parse_args()
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
