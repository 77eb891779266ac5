"""Native tool calling on llama.cpp: refused before the first trial, never run blind.

llama-cpp-python's `chatml` format leaves the tools out of the prompt, and its
`chatml-function-calling` format drops tool results; `castbench._agents.models.toolcheck` measures both
on the real server (SmolLM2-135M-Instruct on 127.0.0.1) and stops the run with one `error:` line
saying what to use. Servers that keep both, and servers that are not llama.cpp, are left alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._agents.models.settings import ModelSettings
from castbench._agents.models.toolcheck import check_native_tools
from castbench._agents.registry import AgentSpecError
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from tests.models.conftest import serve_smollm2
from tests.support import sqlite_url

MODEL = "openai/smollm2"
TASK = "retail-test-0005"


def _eval(api_base: str, db: str, policy: str = MODEL) -> Any:
    argv = ["eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--max-steps", "2"]
    return CliRunner().invoke(app, [*argv, "--policy", policy, "--api-base", api_base, "--db", db])


def _refused(result: Any, db: str) -> str:
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert ResultsStore(db).runs() == []  # refused before any run was opened, nothing scored 0
    return " ".join(result.output[result.output.index("error:") :].split())


@pytest.mark.model
def test_native_tools_on_a_chat_format_without_tools_are_refused(llama_server: str, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    said = _refused(_eval(llama_server, db), db)
    assert "policy model 'openai/smollm2'" in said and llama_server in said and "llama-cpp-python" in said
    assert "leaves the tools out of the prompt" in said and "use style=prompted" in said


@pytest.mark.model
def test_native_tools_on_chatml_function_calling_are_refused(tmp_path: Path) -> None:
    """Its handler renders the tools but not the `tool` messages: the model would call tools and
    never read their results."""
    db = sqlite_url(tmp_path / "runs.db")
    with serve_smollm2("chatml-function-calling", tmp_path / "server.log") as api_base:
        said = _refused(_eval(api_base, db), db)
    assert "drops tool results from the prompt" in said and "use style=prompted" in said


class _CountingServer:
    """A loopback chat server whose `usage.prompt_tokens` counts what it puts in the prompt: the
    messages, plus the tools unless `drops_tools`, with tool results cut to 5 characters when
    `drops_results`. `owned_by` is what its `/v1/models` says."""

    def __init__(self, owned_by: str, drops_tools: bool = False, drops_results: bool = False) -> None:
        self.posts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "m", "owned_by": owned_by}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.posts += 1
                messages = [
                    {**m, "content": m["content"][:5]} if drops_results and m["role"] == "tool" else m
                    for m in body["messages"]
                ]
                shown = json.dumps(messages) + ("" if drops_tools else json.dumps(body.get("tools") or []))
                choice = {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "length"}
                self._send({"choices": [choice], "usage": {"prompt_tokens": len(shown) // 4}})

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> _CountingServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def counting() -> Iterator[type[_CountingServer]]:
    yield _CountingServer


def _check(server: _CountingServer, **settings: Any) -> None:
    check_native_tools("policy", ModelSettings(model=MODEL, api_base=server.api_base, **settings))


def test_a_llama_cpp_server_that_shows_tools_and_results_passes(counting: type[_CountingServer]) -> None:
    with counting("me") as server:
        _check(server)
    assert server.posts == 4  # plain, with tools, a short and a long tool result


@pytest.mark.parametrize(
    ("drops", "said"),
    [({"drops_tools": True}, "leaves the tools out"), ({"drops_results": True}, "drops tool results")],
)
def test_what_a_llama_cpp_server_drops_is_named(
    counting: type[_CountingServer], drops: dict[str, bool], said: str
) -> None:
    with counting("llamacpp", **drops) as server, pytest.raises(AgentSpecError) as refused:
        _check(server)
    assert said in str(refused.value) and "(llama.cpp)" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_other_servers_roles_and_the_prompted_style_are_not_probed(counting: type[_CountingServer]) -> None:
    with counting("vllm", drops_tools=True) as server:
        _check(server)  # not llama.cpp: its template is its own business
    assert server.posts == 0
    with counting("me", drops_tools=True) as server:
        _check(server, style="prompted")  # the tools are in the system prompt
        check_native_tools("critic", ModelSettings(model=MODEL, api_base=server.api_base))  # no tools
    assert server.posts == 0
