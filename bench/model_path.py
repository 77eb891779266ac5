"""Throughput of the model path: `python bench/model_path.py [--latency 0.5] [--litellm]`.

A loopback OpenAI-compatible server (aiohttp, its own process) answers every chat request after
`--latency` seconds. Each figure comes from a fresh process, side by side in one run:

- share of ideal: `castbench.evaluate` with a model policy (`openai/bench` at the server,
  scripted user, 4 agent steps per trial, exactly five waves of retail trials) at concurrency 8,
  32, 128 and 256; ideal is C / latency calls per second, share = measured calls/s over that
  while trials run (goals: >= 90% at 128, >= 80% at 256), and over the whole `evaluate` call
  (`run share`: the summary and reference floors after the trials added); the peak memory of
  the 256 run (goal < 1 GiB);
- CPU per model call: 128 threads calling `ModelClient.complete` directly, process CPU time over
  calls (goal <= 2 ms);
- hung calls: 10 repeated runs at concurrency 128, counting runs with a call over `HUNG_S` and
  trials lost to infrastructure errors (goal 0).

`--paths lean,litellm` adds the same rows through litellm (its `custom_openai` provider): the
old path.
Results go to temporary databases. No asserts: it reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CUSTOM_OPENAI_API_KEY", "unused")

STEPS = 4
RETAIL_TASKS = 120
HUNG_S = 10.0
"""A call this slow is hung, not slow: 20x the server's latency (the old path's hangs ran into
the 120 s client timeout); on a loaded machine calls wait for CPU a few seconds at most."""
ANSWER = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "One moment, please."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 900, "completion_tokens": 6, "total_tokens": 906},
}


def serve(port: int, latency: float) -> None:
    import uvloop
    from aiohttp import web

    body = json.dumps(ANSWER).encode()

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(latency)
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    # uvloop: the server stands for a remote model server; what it costs this machine's CPU is
    # taken from the process measured, so it is kept small
    loop = uvloop.new_event_loop()
    web.run_app(app, host="127.0.0.1", port=port, backlog=2048, print=None, access_log=None, loop=loop)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the bench server did not start")


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def eval_once(base: str, model: str, concurrency: int, waves: int, db: str) -> dict[str, Any]:
    """One `castbench.evaluate` run (in this process) of `waves` x `concurrency` retail trials:
    calls/s, trials/s, the slowest call."""
    from castbench._records.store import ResultsStore
    from castbench._run.api import evaluate
    from castbench._trial.rollout import Limits

    spec = f"{model}?api_base={base}" + (
        "&api_key_env=CUSTOM_OPENAI_API_KEY" if "custom_openai" in model else ""
    )
    warm = {"db": db + "-warm", "domains": "retail", "policy": spec, "trials": 1}
    evaluate(**warm, tasks=["retail-test-0001"], limits=Limits(max_steps=1))  # imports, domains
    wanted = waves * concurrency
    # exactly `waves` full waves: one trial over (e.g. 642 for 640) would add a whole trial's time
    trials = next(t for t in range(1, wanted + 1) if wanted % t == 0 and wanted // t <= RETAIL_TASKS)
    tasks = [f"retail-test-{index:04d}" for index in range(1, wanted // trials + 1)]
    phase: dict[str, float] = {}

    def trial_stored(record: object) -> None:
        phase["last"] = time.perf_counter()

    started, cpu = time.perf_counter(), time.process_time()
    result = evaluate(
        db=db,
        domains="retail",
        policy=spec,
        trials=trials,
        tasks=tasks,
        concurrency=concurrency,
        limits=Limits(max_steps=STEPS),
        on_start=lambda done, total: phase.setdefault("first", time.perf_counter()),
        on_trial=trial_stored,
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    records = ResultsStore(db).trials(result.outcome.run_id)
    calls = sum(r.usage["policy"].calls for r in records if "policy" in r.usage)
    slowest = max((p.policy_s for r in records for s in r.steps for p in s.proposals), default=0.0)
    return {
        "trials": len(records),
        "calls": calls,
        "wall_s": wall,
        "trials_s": phase["last"] - phase["first"],
        "cpu_s": cpu,
        "errors": sum(r.end_reason == "infra_error" for r in records),
        "slowest_call_s": slowest,
        "peak_mib": _peak_mib(),
    }


def client_cpu(base: str, model: str, threads: int, calls: int) -> dict[str, Any]:
    """CPU per call of the model path alone: `threads` callers, `calls` calls in all."""
    from castbench._agents.models.client import ModelClient, TrialKey
    from castbench._agents.models.settings import ModelSettings

    settings = ModelSettings(model=model, api_base=base, max_concurrency=threads)
    extra = {"api_key_env": "CUSTOM_OPENAI_API_KEY"} if model.startswith("custom_openai/") else {}
    settings = settings.model_copy(update=extra)
    messages = [{"role": "user", "content": "x" * 3000}]
    ModelClient(settings, "policy", TrialKey(0, 0)).complete(messages)  # imports, connections
    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        list(
            pool.map(
                lambda i: ModelClient(settings, "policy", TrialKey(i, 0)).complete(messages), range(calls)
            )
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"calls": calls, "wall_s": wall, "cpu_ms_per_call": 1000 * cpu / calls}


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, timeout=900, check=False
    )
    for line in out.stdout.splitlines():
        if line.startswith("RESULT="):
            return dict(json.loads(line[7:]))
    raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument(
        "--paths", default="lean", help="comma-separated: lean (OpenAI-compatible client), litellm (old path)"
    )
    parser.add_argument("--repeats", type=int, default=10, help="runs counted for hung calls")
    parser.add_argument("--levels", default="8,32,128,256", help="concurrency levels, comma-separated")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(options.serve, options.latency)
        return
    if options.child:
        job = json.loads(options.child)
        if job["kind"] == "eval":
            result = eval_once(job["base"], job["model"], job["concurrency"], job["waves"], job["db"])
        else:
            result = client_cpu(job["base"], job["model"], job["threads"], job["calls"])
        print("RESULT=" + json.dumps(result))
        return
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--latency", str(options.latency)]
    )
    try:
        _wait_for(port)
        _report(f"http://127.0.0.1:{port}/v1", options)
    finally:
        server.terminate()
        server.wait(10)


def _report(base: str, options: argparse.Namespace) -> None:
    latency = options.latency
    models = {"lean": "openai/bench", "litellm": "custom_openai/bench"}
    paths = [(label, models[label]) for label in options.paths.split(",")]
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load {load:.1f}; server latency {latency} s, {STEPS} steps/trial")
    print(
        f"{'path':8} {'C':>4} {'trials':>6} {'calls/s':>8} {'ideal':>7} {'share':>6} {'trials/s':>8} "
        f"{'CPU ms/call':>11} {'peak MiB':>8} {'run share':>9} {'after s':>7}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for label, model in paths:
            for concurrency in [int(level) for level in options.levels.split(",")]:
                db = f"sqlite:///{Path(scratch) / f'{label}-{concurrency}.db'}"
                job = {
                    "kind": "eval",
                    "base": base,
                    "model": model,
                    "concurrency": concurrency,
                    "waves": 5,
                    "db": db,
                }
                r = _child(["--child", json.dumps(job)])
                rate, ideal = r["calls"] / r["trials_s"], concurrency / latency
                trials_s, cpu_ms = r["trials"] / r["trials_s"], 1000 * r["cpu_s"] / r["calls"]
                share, run_share = rate / ideal, r["calls"] / r["wall_s"] / ideal
                print(
                    f"{label:8} {concurrency:4d} {r['trials']:6d} {rate:8.1f} {ideal:7.1f} {share:6.0%} "
                    f"{trials_s:8.2f} {cpu_ms:11.2f} {r['peak_mib']:8.0f} {run_share:9.0%} "
                    f"{r['wall_s'] - r['trials_s']:7.2f}"
                )
        print(
            "(share, calls/s, trials/s: while trials run, from the run's start to its last stored trial;\n"
            " run share: over the whole `evaluate` call, which adds the summary and the reference floors\n"
            " (`after s`, the same at any concurrency); CPU ms/call: the whole process, harness and\n"
            " scripted user included, per model call)"
        )
        for label, model in paths:
            r = _child(
                [
                    "--child",
                    json.dumps(
                        {"kind": "client", "base": base, "model": model, "threads": 128, "calls": 1280}
                    ),
                ]
            )
            print(
                f"{label:8} model path alone, 128 threads, {r['calls']} calls: "
                f"{r['cpu_ms_per_call']:.2f} ms CPU per call, {r['calls'] / r['wall_s']:.1f} calls/s"
            )
        hung, lost, slowest = 0, 0, 0.0
        for repeat in range(options.repeats):
            db = f"sqlite:///{Path(scratch) / f'repeat-{repeat}.db'}"
            job = {
                "kind": "eval",
                "base": base,
                "model": "openai/bench",
                "concurrency": 128,
                "waves": 2,
                "db": db,
            }
            r = _child(["--child", json.dumps(job)])
            lost += r["errors"]
            slowest = max(slowest, r["slowest_call_s"])
            hung += r["slowest_call_s"] > HUNG_S
        print(
            f"lean     {options.repeats} runs at C=128: {hung} run(s) with a call over {HUNG_S:.0f} s, "
            f"{lost} trial(s) lost to infrastructure errors, slowest call {slowest:.2f} s"
        )


if __name__ == "__main__":
    main()
