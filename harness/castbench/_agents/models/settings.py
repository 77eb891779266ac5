"""Per-role model settings: where they come from, how they merge, and the checks made before a run.

Settings reach a role from (most specific first):
1. the spec's query string: `openai/x?temperature=0.2&max_tokens=512&style=prompted`;
2. the role's table in `--models-config` (`[policy]`, `[critic]`, `[user]`);
3. `--api-base`;
4. the top level of `--models-config` (defaults for every role).

Keys castbench knows are validated; any other key (`top_p`, `stop`, `reasoning_effort`, ...) goes
to `litellm.completion` unchanged. API keys never appear here: they come from the environment
(`api_key_env` names the variable when it is not the provider's usual one), so the settings can be
recorded with the run.
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
import urllib.parse
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from castbench._agents.registry import AgentSpec, AgentSpecError

__all__ = [
    "ROLES",
    "ModelSettings",
    "check_environment",
    "configure_model_agent",
    "load_models_config",
    "merge_settings",
    "model_settings",
]

ROLES = ("policy", "critic", "user")

log = logging.getLogger("castbench._agents.models")

LEAN_PROVIDERS = ("openai/", "hosted_vllm/")


def lean_route(model: str, api_base: str | None) -> bool:
    """Whether castbench's lean client reaches this model: a known provider at a server of one's
    own (`openai/NAME` or `hosted_vllm/NAME` with an `api_base`)."""
    return api_base is not None and model.startswith(LEAN_PROVIDERS)


HOSTED_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 600.0
"""The default per-attempt timeout for a server on this machine (llama.cpp on CPU): a 3,300-token
first prompt at the slowest prefill measured here (~20 tokens/s) takes ~165 s, and its
answer less. A timed-out call to such a server is not re-sent (`castbench._agents.models.retry`)."""
_LOOPBACK_NAMES = frozenset({"localhost", "::1", "0.0.0.0", "[::1]"})

ResponseFormat = Literal["none", "json_object", "json_schema", "llama_cpp"]


class ModelSettings(BaseModel):
    """Everything that decides how one role calls its model."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    """Environment variable holding the API key, when not the provider's usual one."""
    style: Literal["function_calling", "prompted"] = "function_calling"
    """Policy only: native tool calls, or tools rendered into the prompt and the action parsed
    from the text (ReAct style; works with any chat model)."""
    response_format: ResponseFormat = "none"
    """Structured output for the prompted policy and the critic: `json_schema` (OpenAI, vLLM),
    `json_object` (JSON mode, no schema) or `llama_cpp` (llama.cpp server: JSON mode + schema)."""
    enable_thinking: bool | None = None
    """Turn a reasoning model's thinking on or off (Qwen3 and other templates with an
    `enable_thinking` switch): sent as `chat_template_kwargs={"enable_thinking": ...}`, which
    vLLM and llama.cpp's server pass to the chat template; only for a server of one's own
    (`openai_compatible`). Unset: the template's default. Whatever the model thinks is kept out
    of what the user, the grader and the parsers read (`castbench._agents.models.parse.split_thinking`)."""
    temperature: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    """Mixed with each trial's seed, so n trials stay distinct and every one is reproducible."""
    stop_token: str = "###STOP###"
    """User only: the marker with which the simulated user ends the conversation."""
    timeout: float | None = Field(None, gt=0, description="seconds per attempt")
    """Unset: `HOSTED_TIMEOUT_S`, or `LOCAL_TIMEOUT_S` for a server on this machine (see
    `attempt_timeout`)."""
    resend_timeouts: bool | None = None
    """Whether a timed-out attempt is sent again. Unset: yes, except to a server on this machine
    (`local`), which keeps computing the abandoned request (llama.cpp does); a local server that
    cancels requests whose client left (vLLM does) can be given `true`."""
    max_answer_chars: int = Field(16_000, ge=100)
    """The most of one answer's text (and of each tool call's arguments) kept: a cut says so."""
    max_attempts: int = Field(6, ge=1, description="attempts per call (1 = no retry)")
    max_call_s: float = Field(600.0, gt=0, description="seconds per call, all attempts and waits")
    backoff_s: float = Field(1.0, ge=0, description="first backoff wait; doubles, with full jitter")
    backoff_max_s: float = Field(60.0, ge=0)
    max_concurrency: int | None = Field(None, ge=1, description="calls in flight per api_base + model")
    """Unset: the run's `--concurrency` (each trial has one call in flight at a time)."""
    cache_dir: str | None = Field(None, exclude=True)
    """Response cache (runtime only: never recorded, never part of the run's identity)."""

    @property
    def generation(self) -> dict[str, Any]:
        """The keyword arguments for the provider that change what the model says."""
        extra = dict(self.model_extra or {})
        for key in ("temperature", "max_tokens"):
            value = getattr(self, key)
            if value is not None:
                extra[key] = value
        if self.enable_thinking is not None:
            given = extra.get("chat_template_kwargs")
            extra["chat_template_kwargs"] = {
                **(given if isinstance(given, dict) else {}),
                "enable_thinking": self.enable_thinking,
            }
        return extra

    def recorded(self) -> dict[str, Any]:
        """What the run's config records for this role (defaults left out, keys never present)."""
        return self.model_dump(mode="json", exclude_defaults=True)

    @model_validator(mode="after")
    def _thinking_needs_a_template(self) -> ModelSettings:
        """`enable_thinking` reaches a chat template only on a server of one's own: a hosted API
        would refuse the unknown field on every call (each trial the agent's 0)."""
        if self.enable_thinking is not None and not self.openai_compatible:
            raise ValueError(
                "enable_thinking switches the chat template of a server of one's own (openai/NAME "
                "or hosted_vllm/NAME with an api_base); for a hosted model use its own setting "
                "(reasoning_effort, ...)"
            )
        return self

    @property
    def local(self) -> bool:
        """The server runs on this machine (a loopback `api_base`): it computes every request it
        accepts, one after another on CPU, and keeps computing one its client gave up on."""
        if self.api_base is None:
            return False
        host = urllib.parse.urlsplit(self.api_base).hostname or ""
        return host in _LOOPBACK_NAMES or host.startswith("127.")

    @property
    def attempt_timeout(self) -> float:
        """Seconds one attempt may take: `timeout`, else a default that fits the server. A CPU
        server's first prompt (a domain's policy and tools, ~3,300 tokens) takes minutes at the
        prefill speeds measured on 2 shared cores (20-60 tokens/s), past a hosted API's 120 s."""
        if self.timeout is not None:
            return self.timeout
        return LOCAL_TIMEOUT_S if self.local else HOSTED_TIMEOUT_S

    @property
    def openai_compatible(self) -> bool:
        """Calls go through castbench's lean client (`castbench._agents.models.compat`), not litellm:
        `openai/NAME` or `hosted_vllm/NAME` at a given `api_base`."""
        return lean_route(self.model, self.api_base)

    @property
    def concurrency_key(self) -> str:
        return f"{self.api_base or 'default'}|{self.model}"

    @property
    def server(self) -> str:
        """Which server the calls go to (its circuit breaker's key): the api base, or the
        provider of a hosted model."""
        return self.api_base or self.model.split("/", 1)[0]


def merge_settings(*layers: dict[str, Any] | None) -> dict[str, Any]:
    """Later layers win; `None` values do not override."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update({key: value for key, value in (layer or {}).items() if value is not None})
    return merged


def model_settings(role: str, spec: str, params: dict[str, Any]) -> ModelSettings:
    """Validated settings, or an `AgentSpecError` that names the role, the spec and the key."""
    if "api_key" in params:
        raise AgentSpecError(f"{role} '{spec}': put API keys in the environment (see api_key_env)")
    try:
        return ModelSettings.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"'{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
            if err["loc"]
            else str(err["msg"]).removeprefix("Value error, ")  # a check of several keys
            for err in exc.errors()
        )
        raise AgentSpecError(f"{role} '{spec}': {problems}") from exc


def load_models_config(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per-role settings from a TOML or JSON file: top-level keys apply to every role, the
    `[policy]`, `[critic]` and `[user]` tables to one. Returns {role: settings}."""
    path = Path(path)
    try:
        text = path.read_text()
        raw = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as exc:
        raise AgentSpecError(f"--models-config {path}: cannot read: {exc}") from exc
    tables = {key: value for key, value in raw.items() if isinstance(value, dict)}
    unknown = sorted(set(tables) - set(ROLES))
    if unknown:
        raise AgentSpecError(f"--models-config {path}: unknown table(s) {unknown}; use {', '.join(ROLES)}")
    shared = {key: value for key, value in raw.items() if key not in tables}
    for where, settings in [("top level", shared), *tables.items()]:
        if "model" in settings:
            raise AgentSpecError(
                f"--models-config {path}: 'model' in {where}: name models with --policy/--critic/--user"
            )
        if any(part == "key" or part.endswith("_key") for part in settings):
            raise AgentSpecError(f"--models-config {path}: {where}: put API keys in the environment")
    return {"*": shared, **tables}


def check_environment(role: str, settings: ModelSettings) -> None:
    """Fail before any trial starts when the provider is unknown or its API key is missing."""
    if settings.api_key_env is not None and not os.environ.get(settings.api_key_env):
        raise AgentSpecError(f"{role} model '{settings.model}': {settings.api_key_env} is not set")
    if settings.openai_compatible:
        return  # a known provider at a server of one's own: no litellm needed
    import litellm  # deferred: slow to import, only needed once a model string is used

    try:
        litellm.get_llm_provider(model=settings.model, api_base=settings.api_base)
    except Exception as exc:  # litellm raises its own BadRequestError with a long text
        raise AgentSpecError(
            f"{role} model '{settings.model}': unknown provider (use provider/model, e.g. "
            "openai/gpt-4o-mini, anthropic/..., hosted_vllm/...; see docs/models.md)"
        ) from exc
    if settings.api_key_env is not None or settings.api_base is not None:
        return  # a key named by the user, or a server of one's own: local servers need no key
    missing = litellm.validate_environment(model=settings.model)["missing_keys"]
    if missing:
        raise AgentSpecError(
            f"{role} model '{settings.model}' needs {', '.join(missing)} in the environment "
            "(or point it at an OpenAI-compatible server with --api-base / ?api_base=...)"
        )


def configure_model_agent(
    agent: AgentSpec,
    models_config: dict[str, dict[str, Any]] | None = None,
    api_base: str | None = None,
    cache_dir: str | None = None,
    concurrency: int | None = None,
) -> tuple[AgentSpec, dict[str, Any]]:
    """A model agent's spec with its settings merged, validated and its environment checked,
    and what the run records of them. Unless set, `max_concurrency` is the run's `concurrency`;
    a smaller one set by the user is logged, since it, not `--concurrency`, then bounds the run."""
    layers = models_config or {}
    params = merge_settings(layers.get("*"), {"api_base": api_base}, layers.get(agent.role), agent.params)
    settings = model_settings(agent.role, agent.spec, params)
    check_environment(agent.role, settings)
    runtime: dict[str, Any] = {"cache_dir": cache_dir} if cache_dir else {}
    if settings.max_concurrency is None and concurrency is not None:
        runtime["max_concurrency"] = concurrency
    elif settings.max_concurrency is not None and concurrency and settings.max_concurrency < concurrency:
        log.warning(
            "note: %s model %s: max_concurrency=%d holds its calls in flight below --concurrency %d",
            agent.role,
            settings.model,
            settings.max_concurrency,
            concurrency,
        )
    return replace(agent, params={**params, **runtime}), settings.recorded()


def awaits_on_loop(spec: AgentSpec | None) -> bool:
    """Whether its calls may run on castbench's event loop (`castbench._agents.models.loop`): a
    scripted built-in never waits, and a model agent whose server the lean client reaches
    waits by awaiting the loop. Anything else (code of one's own, another process, litellm's
    synchronous client) may block a thread, so its trials run on threads. Worked out once per
    spec: every trial's episode asks."""
    if spec is None or spec.kind == "builtin":
        return True
    if spec.kind != "model" or spec.transport != "in-process":
        return False
    return lean_route(str(spec.params.get("model", "")), spec.params.get("api_base"))
