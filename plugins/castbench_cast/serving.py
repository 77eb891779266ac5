"""A trained checkpoint as an OpenAI-compatible chat server, so it plugs into `castbench eval`
through the ordinary model roles: `--critic openai/NAME?api_base=...`, `--policy
openai/NAME?api_base=...&style=prompted`.

Two backends: `transformers` (this process, CPU or GPU; one generation at a time, for tiny and
small models) and `vllm` (`vllm serve` as a process, for real models on a GPU: castbench never
imports vLLM). Both answer `/v1/models` and `/v1/chat/completions` with text (the prompted policy
and the critic need nothing else). Servers listen on 127.0.0.1. The transformers backend fits a
prompt longer than the context by the rule training used (`context.json` beside the weights; see
`castbench_cast.context`): the policy document stays, the oldest conversation goes; a prompt that
cannot fit is refused with a 400 that says why, never cut blindly.
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

from castbench.models.serve import ServeError, ServeOptions, vllm_command, wait_until_ready
from castbench_cast.context import ContextRule, describe, fit_messages, token_counter

__all__ = ["CheckpointServer", "checkpoint_name"]

Backend = Literal["transformers", "vllm"]


def checkpoint_name(path: Path) -> str:
    """A served name that changes with the weights: part of a run's identity."""
    digest = hashlib.sha256()
    for item in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.json")):
        digest.update(item.read_bytes())
    return f"cast-{path.parent.name}-{digest.hexdigest()[:10]}"


class _Generator:
    """Chat completions from a transformers checkpoint, one at a time."""

    def __init__(self, path: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model: Any = AutoModelForCausalLM.from_pretrained(path, dtype="auto").to(device).eval()  # type: ignore[arg-type]
        self.context = int(getattr(self.model.config, "max_position_embeddings", 4096))
        self.rule = ContextRule.load(path)
        self.truncated = 0
        """Prompts served with something left out (see `castbench_cast.context`)."""
        self._count = token_counter(self.tokenizer)
        self._lock = threading.Lock()

    def budget(self, max_tokens: int) -> int:
        """The prompt's tokens at most: training's budget, within the model's context."""
        room = self.context - max_tokens
        return room if self.rule is None else min(room, self.rule.prompt_budget)

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        max_tokens = int(body.get("max_tokens") or 256)
        room = self.budget(max_tokens)
        if room < 1:
            message = f"max_tokens {max_tokens} leaves no room in this model's {self.context}-token context"
            return 400, {"error": {"message": message, "type": "BadRequestError"}}
        fitted = fit_messages(body["messages"], self._count, room, self.rule.keep if self.rule else "policy")
        if not fitted.fits:
            message = (
                f"the prompt does not fit {room} tokens even without {describe(fitted)} "
                f"({fitted.tokens} tokens left)"
            )
            return 400, {"error": {"message": message, "type": "BadRequestError"}}
        self.truncated += fitted.truncated
        inputs: Any = self.tokenizer.apply_chat_template(
            fitted.messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
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


def _handler(generator: _Generator, name: str) -> type[BaseHTTPRequestHandler]:
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
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ServeError(
                f"port {port} on 127.0.0.1 is in use ({exc}): stop that server or use port 0"
            ) from exc


class CheckpointServer:
    """`with CheckpointServer(path) as server:` serves the checkpoint until the block ends.

    With vLLM: port 0 is a free port (vLLM's own default would be 8000), a port in use is refused,
    the server is ready only when it lists this checkpoint's name (not any server's models), and
    it takes `gpu_memory` of the GPU (vLLM's 0.9 would leave no room for a second server) with the
    context training used (`context.json`)."""

    def __init__(
        self, path: Path, backend: Backend = "transformers", port: int = 0, gpu_memory: float | None = None
    ) -> None:
        self.path = Path(path).resolve()
        self.backend = backend
        self.port = port
        self.gpu_memory = gpu_memory
        self.name = checkpoint_name(self.path)
        self._http: ThreadingHTTPServer | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model_string(self, **settings: Any) -> str:
        """The `--critic` / `--policy` string for the served checkpoint."""
        provider = "hosted_vllm" if self.backend == "vllm" else "openai"
        query = "&".join(f"{key}={value}" for key, value in {"api_base": self.api_base, **settings}.items())
        return f"{provider}/{self.name}?{query}"

    def __enter__(self) -> CheckpointServer:
        if self.backend == "vllm":
            if self.port:
                _check_free(self.port)
            rule = ContextRule.load(self.path)
            options = ServeOptions(
                model=str(self.path),
                port=self.port or _free_port(),
                tool_parser="hermes",
                max_model_len=rule.max_length if rule is not None else None,
                gpu_memory_utilization=self.gpu_memory,
                extra_args=("--served-model-name", self.name),
            )
            self.port = options.port
            self._process = subprocess.Popen(vllm_command(options))
            served = wait_until_ready(self.api_base, timeout_s=900, process=self._process)
            if self.name not in served:
                self.__exit__(None, None, None)
                raise ServeError(
                    f"{self.api_base} answers for {served}, not {self.name}: another server holds the port"
                )
            return self
        generator = _Generator(self.path)
        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(generator, self.name))
        self.port = self._http.server_address[1]
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
