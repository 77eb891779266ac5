"""Whether a llama.cpp server really shows a model its native tools, checked before a run.

llama.cpp answers a chat request with `tools` whatever its chat format does with them, and
several formats do nothing: llama-cpp-python's `chatml` (and every other plain format) leaves
the tools out of the prompt, and its `chatml-function-calling` renders the tools but drops the
`tool` messages, so the model never reads a tool's result. Either way a `style=function_calling`
policy would run every trial blind, scoring 0 with nothing saying why. The server itself cannot
be asked which format it runs, but the prompt it built can be measured: `usage.prompt_tokens` of
a one-token answer grows with what reached the prompt. So before the first trial,
`check_native_tools` sends four tiny requests (a few dozen tokens each, `max_tokens=1`) and
refuses the run with one line naming the server and what to use instead (`style=prompted`).

Only servers that say they are llama.cpp (its Python server's `/v1/models` lists models
`owned_by` "me"; the C++ `llama-server` says "llamacpp") are measured: other servers render
tools as their template says (vLLM with a tool parser), and a gateway's usage may not measure
the prompt at all.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from castbench._agents.models import compat
from castbench._agents.models.settings import ModelSettings
from castbench._agents.registry import AgentSpecError

__all__ = ["LLAMA_CPP_OWNERS", "check_native_tools", "llama_cpp_server"]

LLAMA_CPP_OWNERS = {"me": "llama-cpp-python", "llamacpp": "llama.cpp"}
"""`owned_by` in `/v1/models` -> which llama.cpp server says it."""

_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_order_details",
        "description": "Look up an order by its id and return its status and items.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "such as #W0000001"}},
            "required": ["order_id"],
        },
    },
}
_OPENING = [
    {"role": "system", "content": "You are a customer service agent."},
    {"role": "user", "content": "Where is my order #W0000001?"},
]
_CALL = {
    "role": "assistant",
    "content": "",  # not None: llama-cpp-python's function-calling handler answers None with a 500
    "tool_calls": [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "get_order_details", "arguments": '{"order_id": "#W0000001"}'},
        }
    ],
}
_SHORT_RESULT = '{"status": "pending"}'
_LONG_RESULT = json.dumps(
    {
        "status": "pending",
        "items": [{"name": name, "price": 10.5 + index} for index, name in enumerate("abcdefghij")],
        "address": "445 Maple Drive, Suite 394, Fort Worth, TX 76165",
    }
)
"""Some 80 tokens more than `_SHORT_RESULT`: a prompt that keeps tool results grows by them."""

_ADVICE = (
    "use style=prompted (tools listed in the prompt, results as messages; add "
    "response_format=llama_cpp for a small model), or serve the model with a chat template that "
    "renders tools and tool results (see docs/models.md)"
)


def llama_cpp_server(api_base: str, timeout_s: float = 5.0) -> str | None:
    """Which llama.cpp server answers at `api_base` ("llama-cpp-python", "llama.cpp"), or None
    for any other server or none at all (its absence is `breaker.check_server`'s to report)."""
    try:
        answer = httpx.get(api_base.rstrip("/") + "/models", timeout=timeout_s).json()
        owners = {str(model.get("owned_by")) for model in answer.get("data") or []}
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        return None
    known = [LLAMA_CPP_OWNERS[owner] for owner in owners if owner in LLAMA_CPP_OWNERS]
    return known[0] if known else None


def _prompt_tokens(settings: ModelSettings, messages: list[dict[str, Any]], tools: bool) -> int | str:
    """The prompt's length in tokens as the server counted it, or the server's error text."""
    assert settings.api_base is not None
    body: dict[str, Any] = {
        "model": settings.model.split("/", 1)[1],
        "messages": messages,
        "max_tokens": 1,
        "temperature": 0,
    }
    if tools:  # a named choice: the prompt is built as for "auto", which llama-cpp-python's
        # function-calling handler answers with several generations, whatever max_tokens says
        body["tools"] = [_PROBE_TOOL]
        body["tool_choice"] = {"type": "function", "function": {"name": "get_order_details"}}
    headers = {"Authorization": f"Bearer {compat.api_key(settings)}"}
    url = settings.api_base.rstrip("/") + "/chat/completions"
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=settings.attempt_timeout)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if response.status_code != 200:
        return f"HTTP {response.status_code}: {response.text[:300]}"
    try:
        return int(response.json()["usage"]["prompt_tokens"])
    except (ValueError, KeyError, TypeError):
        return "its answer has no usage.prompt_tokens"


def check_native_tools(role: str, settings: ModelSettings) -> None:
    """`AgentSpecError` (one line: the role, model, server and what to do) when the policy sends
    native tools to a llama.cpp server that leaves them, or their results, out of the prompt.
    Nothing is checked for the prompted style, for other servers, or when the server's answers
    carry no token counts (nothing could be told apart)."""
    if role != "policy" or settings.style != "function_calling" or settings.api_base is None:
        return  # the critic and the user are sent no tools (a user's device tools aside: telecom)
    if not settings.openai_compatible:
        return
    server = llama_cpp_server(settings.api_base)
    if server is None:
        return
    where = f"{role} model '{settings.model}' at {settings.api_base} ({server})"
    plain = _prompt_tokens(settings, _OPENING, tools=False)
    with_tools = _prompt_tokens(settings, _OPENING, tools=True)
    if isinstance(plain, str):
        return  # the server cannot chat at all: the first trial's call says so, as for any model
    if isinstance(with_tools, str):
        raise AgentSpecError(f"{where} refuses native tools ({with_tools}): {_ADVICE}")
    if with_tools <= plain:
        raise AgentSpecError(
            f"{where} leaves the tools out of the prompt ({plain} prompt tokens with or without "
            "them: its chat format has no tool support, as llama-cpp-python's --chat_format chatml "
            f"and the model's own template often do), so style=function_calling cannot work: {_ADVICE}"
        )
    short = _prompt_tokens(settings, [*_OPENING, _CALL, _tool_result(_SHORT_RESULT)], tools=True)
    long = _prompt_tokens(settings, [*_OPENING, _CALL, _tool_result(_LONG_RESULT)], tools=True)
    if isinstance(short, str) or isinstance(long, str):
        failed = short if isinstance(short, str) else long
        raise AgentSpecError(f"{where} refuses a conversation with a tool result ({failed}): {_ADVICE}")
    if long <= short:
        raise AgentSpecError(
            f"{where} drops tool results from the prompt (a longer result left it at {short} "
            "tokens, as llama-cpp-python's --chat_format chatml-function-calling does), so the "
            f"model would never read what its tools answer: {_ADVICE}"
        )


def _tool_result(content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "call_0", "content": content}
