"""A trained checkpoint as an OpenAI-compatible chat server, so it plugs into `castbench eval`
through the ordinary model roles: `--critic openai/NAME?api_base=...`, `--policy
openai/NAME?api_base=...&style=prompted`.

Two backends: `transformers` (this process, CPU or GPU; one generation at a time, for tiny and
small models) and `vllm` (`vllm serve` as a process, for real models on a GPU: castbench never
imports vLLM). Both answer `/v1/models` and `/v1/chat/completions` with text (the prompted policy
and the critic need nothing else). Servers listen on 127.0.0.1, on a port chosen free when the
server starts (or the one given). The port is never part of a run's identity: `model_string()`
names the served model without its `api_base` (the checkpoint's name is a digest of its
weights), and `models_config()` gives the role its `api_base` as a run-wide model setting,
which castbench records beside the run (`extra["models"]`) but leaves out of the run's hash.
So two runs of the same checkpoint on one host never collide, and an interrupted run resumes on
whatever port its next server gets.
Both backends fit a prompt longer than the context by the rule training used (`context.json`
beside the weights; see `castbench_cast.context`): the policy document stays, the oldest
conversation goes. vLLM sits behind a small front that fits the prompt first (vLLM itself would
reject it, and the trial would score 0). A prompt that cannot fit even so is refused with a 412
that says why: an infrastructure failure (the run reports it), never the agent's 0, never cut
blindly.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from castbench_cast.context import ContextRule, describe, fit_messages, token_counter
from castbench_cast.vllm import ServeError, ServeOptions, vllm_command, wait_until_ready

__all__ = ["CheckpointServer", "checkpoint_name"]

Backend = Literal["transformers", "vllm"]


ADAPTER_CONFIG = "adapter_config.json"


def is_checkpoint(path: Path) -> bool:
    """A folder a train stage wrote a servable model to: whole weights, or a LoRA adapter."""
    return (path / "config.json").exists() or (path / ADAPTER_CONFIG).exists()


def adapter_base(path: Path) -> tuple[str, int] | None:
    """(base model, rank) of a LoRA adapter folder; None for whole weights."""
    config = path / ADAPTER_CONFIG
    if not config.exists():
        return None
    settings = json.loads(config.read_text())
    return str(settings["base_model_name_or_path"]), int(settings.get("r") or 16)


def checkpoint_name(path: Path) -> str:
    """A served name that changes with the weights: part of a run's identity."""
    digest = hashlib.sha256()
    for item in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.json")):
        digest.update(item.read_bytes())
    return f"cast-{path.parent.name}-{digest.hexdigest()[:10]}"


_UNFIT = 412
"""The status of a prompt that cannot be fitted (Precondition Failed: the served context).
castbench's model client takes a 4xx other than 400/413/422 and 408/409/425 as an
infrastructure failure (the trial is retried, then stored as an error, never scored): a policy
document longer than the served context is the deployment's doing, not the agent's, and a 400
would score the trial 0 as the agent's failure."""


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {
        "error": {"message": message, "type": "ContextWindowError" if status == _UNFIT else "BadRequestError"}
    }


class _Fitter:
    """A checkpoint's prompts fitted to its context by the training's rule (`context.json`)."""

    def __init__(self, path: Path, context: int | None = None) -> None:
        from transformers import AutoConfig, AutoTokenizer

        self.tokenizer: Any = AutoTokenizer.from_pretrained(path)
        self.rule = ContextRule.load(path)
        if context is None:
            adapter = adapter_base(path)
            config = AutoConfig.from_pretrained(adapter[0] if adapter else path)
            context = int(getattr(config, "max_position_embeddings", 4096))
        self.context = context
        self.truncated = 0
        """Prompts served with something left out (see `castbench_cast.context`)."""
        self._count = token_counter(self.tokenizer)

    def budget(self, max_tokens: int) -> int:
        """The prompt's tokens at most: training's budget, within the served context."""
        room = self.context - max_tokens
        return room if self.rule is None else min(room, self.rule.prompt_budget)

    def fit(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | list[dict[str, Any]]:
        """The request's messages fitted to the budget, or the error to answer with."""
        max_tokens = int(body.get("max_tokens") or 256)
        room = self.budget(max_tokens)
        if room < 1:
            return _error(
                400, f"max_tokens {max_tokens} leaves no room in this model's {self.context}-token context"
            )
        fitted = fit_messages(body["messages"], self._count, room, self.rule.keep if self.rule else "policy")
        if not fitted.fits:
            return _error(
                _UNFIT,
                f"the prompt does not fit {room} tokens even without {describe(fitted)} "
                f"({fitted.tokens} tokens left): serve a longer context",
            )
        self.truncated += fitted.truncated
        return fitted.messages


class _Forwarder(_Fitter):
    """In front of a vLLM server: the prompt fitted as training fitted it, then passed on (vLLM
    would reject a prompt longer than its context, and the trial would score 0)."""

    def __init__(self, path: Path, upstream: str, context: int | None = None) -> None:
        super().__init__(path, context)
        self.upstream = upstream.rstrip("/")

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        import urllib.error
        import urllib.request

        fitted = self.fit(body)
        if isinstance(fitted, tuple):
            return fitted
        request = urllib.request.Request(
            f"{self.upstream}/chat/completions",
            data=json.dumps({**body, "messages": fitted}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=3600) as answer:
                return int(answer.status), json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), json.loads(exc.read() or b"{}")


class _Generator(_Fitter):
    """Chat completions from a transformers checkpoint, one at a time."""

    def __init__(self, path: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self._torch = torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model: Any = AutoModelForCausalLM.from_pretrained(path, dtype="auto").to(device).eval()  # type: ignore[arg-type]
        super().__init__(path, int(getattr(self.model.config, "max_position_embeddings", 4096)))
        self._lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        max_tokens = int(body.get("max_tokens") or 256)
        fitted = self.fit(body)
        if isinstance(fitted, tuple):
            return fitted
        inputs: Any = self.tokenizer.apply_chat_template(
            fitted, add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(self.model.device)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        temperature = float(body.get("temperature") or 0.0)
        sampling: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
        with self._lock, self._torch.no_grad():
            if body.get("seed") is not None:
                self._torch.manual_seed(int(body["seed"]))
            output = self.model.generate(
                **inputs, max_new_tokens=max_tokens, pad_token_id=self.tokenizer.pad_token_id, **sampling
            )
        new = output[0][prompt_tokens:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        finished = len(new) < max_tokens or int(new[-1]) == self.tokenizer.eos_token_id
        return 200, {
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop" if finished else "length",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(new),
                "total_tokens": prompt_tokens + len(new),
            },
        }


def _handler(generator: _Generator | _Forwarder, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                messages = body["messages"]
                if not isinstance(messages, list):
                    raise TypeError("'messages' is not a list")
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            self._send(*generator.complete(body))

    return Handler


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _check_free(port: int) -> None:
    """A server already on `port` would answer for ours (and be taken as ready): refuse."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as the servers bind: the closed connections of this checkpoint's last server (TIME_WAIT)
        # do not hold the port, a live listener does
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ServeError(
                f"port {port} on 127.0.0.1 is in use ({exc}): stop that server or give another port"
            ) from exc


class CheckpointServer:
    """`with CheckpointServer(path) as server:` serves the checkpoint until the block ends.

    Port 0 (the default) is a free port the operating system picks as the server binds (so two
    servers of one checkpoint never collide); a port given and in use is refused. The port is not
    in `model_string()` (a run's identity): pass `models_config(role)` to `evaluate`. With vLLM
    (whose own default would be 8000), the server is ready only when it lists this checkpoint's
    name (not any server's models), and it takes `gpu_memory` of the GPU (vLLM's 0.9 would leave
    no room for a second server) with the context training used (`context.json`)."""

    def __init__(
        self, path: Path, backend: Backend = "transformers", port: int = 0, gpu_memory: float | None = None
    ) -> None:
        self.path = Path(path).resolve()
        self.backend = backend
        self.gpu_memory = gpu_memory
        self.name = checkpoint_name(self.path)
        self.port = port
        """The port asked for (0: any free one), then the port bound once the server started."""
        self._http: ThreadingHTTPServer | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def answer_tokens(self) -> int:
        """The answer length the checkpoint was trained to write (its target budget), 256 for a
        checkpoint without a context rule: the default `max_tokens` it is served with, so a
        trained answer is never cut where training taught it to go on."""
        rule = ContextRule.load(self.path)
        return rule.max_completion if rule is not None else 256

    def model_string(self, **settings: Any) -> str:
        """The `--critic` / `--policy` string for the served checkpoint, without its `api_base`:
        what a run's identity holds (the weights' digest and the settings, never the port). Give
        the role its server with `models_config(role)`."""
        provider = "hosted_vllm" if self.backend == "vllm" else "openai"
        query = "&".join(f"{key}={value}" for key, value in settings.items())
        return f"{provider}/{self.name}" + (f"?{query}" if query else "")

    def models_config(self, *roles: str) -> dict[str, dict[str, Any]]:
        """`evaluate(models_config=...)` for the roles this server plays: their `api_base` (a
        run-wide model setting, recorded with the run, not part of its identity)."""
        return {role: {"api_base": self.api_base} for role in roles}

    def full_model_string(self, **settings: Any) -> str:
        """The model string with `?api_base=` on it, for a person to paste into `castbench eval`
        (that run's identity then holds the port: serve on a fixed `--port` to resume it)."""
        return self.model_string(api_base=self.api_base, **settings)

    def __enter__(self) -> CheckpointServer:
        if self.port:
            _check_free(self.port)
        if self.backend == "vllm":
            rule = ContextRule.load(self.path)
            adapter = adapter_base(self.path)
            served_as: tuple[str, ...] = ("--served-model-name", self.name)
            if adapter is not None:  # the base model, with the adapter under the checkpoint's name
                served_as = (
                    "--enable-lora",
                    "--max-lora-rank",
                    str(adapter[1]),
                    "--lora-modules",
                    f"{self.name}={self.path}",
                )
            options = ServeOptions(
                model=adapter[0] if adapter is not None else str(self.path),
                port=_free_port(),  # behind the fitting front on `port`: not in any run's identity
                tool_parser="hermes",
                max_model_len=rule.max_length if rule is not None else None,
                gpu_memory_utilization=self.gpu_memory,
                extra_args=served_as,
            )
            upstream = f"http://127.0.0.1:{options.port}/v1"
            self._process = subprocess.Popen(vllm_command(options))
            served = wait_until_ready(upstream, timeout_s=900, process=self._process)
            if self.name not in served:
                self.__exit__(None, None, None)
                raise ServeError(
                    f"{upstream} answers for {served}, not {self.name}: another server holds the port"
                )
            front: _Generator | _Forwarder = _Forwarder(self.path, upstream, options.max_model_len)
        else:
            front = _Generator(self.path)
        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(front, self.name))
        self.port = int(self._http.server_address[1])  # port 0: the one the system picked
        threading.Thread(target=self._http.serve_forever, name="cast-serve", daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
