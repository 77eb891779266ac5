"""On a GPU machine: serve a small open model with vLLM, run one domain through it as
`hosted_vllm/...`, and report trials per minute and tokens per second.

    pip install -e '.[vllm]'          # vLLM brings its own CUDA torch: GPU machines only
    python bench/gpu_vllm_check.py --model Qwen/Qwen2.5-1.5B-Instruct --domain retail --tasks 20 --trials 2

It checks the whole path a team uses: `castbench serve`'s command (tool-call parser, auto tool
choice), native function calling through litellm, the scripted user (or `--model-user`: the same
model simulates the user too), grading and the store. Results go to a temporary database.
`--dry-run` prints what it would run. No asserts: it reports, and exits 1 if no trial was scored.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._agents.models.serve import ServeOptions, model_string, vllm_command, wait_until_ready  # noqa: E402
from castbench._records.store import ResultsStore  # noqa: E402
from castbench._run.api import evaluate  # noqa: E402
from castbench._trial.rollout import Limits  # noqa: E402
from castbench.domain import load_domain  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="Qwen/Qwen2.5-1.5B-Instruct")
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", type=int, default=20, help="first N tasks of the test split")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--max-model-len", type=int, default=16384)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    parser.add_argument("--model-user", action="store_true", help="the model simulates the user as well")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    options = ServeOptions(
        args.model,
        port=_free_port(),
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
    )
    command = vllm_command(options)
    spec = f"{model_string(options)}&temperature=0&max_tokens=1024&seed=0&timeout=300"
    task_ids = [task.id for task in load_domain(args.domain).tasks("test")[: args.tasks]]
    user = spec if args.model_user else "scripted"
    print(f"server: {shlex.join(command)}")
    print(f"eval:   {args.domain}, {len(task_ids)} tasks x {args.trials} trials, policy {spec}, user {user}")
    if args.dry_run:
        return 0

    started = time.perf_counter()
    server = subprocess.Popen(command)
    try:
        wait_until_ready(options.api_base, timeout_s=1800, process=server)
        print(f"vLLM ready in {time.perf_counter() - started:.0f} s")
        with tempfile.TemporaryDirectory() as folder:
            db = f"sqlite:///{folder}/runs.db"
            began = time.perf_counter()
            try:
                result = evaluate(
                    domains=args.domain,
                    policy=spec,
                    user=user,
                    trials=args.trials,
                    tasks=task_ids,
                    limits=Limits(max_steps=args.max_steps),
                    db=db,
                    concurrency=args.concurrency,
                )
                pass_1 = f"{result.summary.overall.pass_hat.get(1, float('nan')):.3f}"
            except ValueError as exc:  # no task complete: the records say why
                pass_1 = f"none ({exc})"
            wall = time.perf_counter() - began
            store = ResultsStore(db)
            records = store.trials(store.run("latest").id)
    finally:
        server.terminate()
        server.wait(timeout=60)

    usage = [u for record in records for u in record.usage.values()]
    tokens_in = sum(u.input_tokens for u in usage)
    tokens_out = sum(u.output_tokens for u in usage)
    scored = [record for record in records if record.status == "scored"]
    print(f"trials: {len(records)} ({len(scored)} scored) in {wall:.0f} s")
    for record in records:
        if record.status != "scored":
            print(
                f"  {record.task_id} #{record.trial_index}: {record.end_reason}: {(record.error or '')[:300]}"
            )
    print(f"trials per minute:        {60 * len(records) / wall:.1f}")
    print(f"generated tokens per s:   {tokens_out / wall:.0f}")
    print(f"prompt+generated per s:   {(tokens_in + tokens_out) / wall:.0f}")
    calls, retries = sum(u.calls for u in usage), sum(u.retries for u in usage)
    print(f"model calls:              {calls} ({retries} retried)")
    print(f"pass^1:                   {pass_1}")
    return 0 if scored else 1


if __name__ == "__main__":
    sys.exit(main())
