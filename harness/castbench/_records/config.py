"""A run's configuration: everything that decides its scores, hashed to recognise a resume."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from castbench._agents.registry import Role
from castbench._base.defaults import GradingMode
from castbench._records.identity import Fingerprint
from castbench._records.migrations import RecordShape, RecordVersionError
from castbench._records.perturbations import Perturbations
from castbench._records.placement import AgentPlacement

__all__ = ["RUN_CONFIG", "Limits", "RunConfig", "Verification", "read_config"]


class Limits(BaseModel):
    max_steps: int = Field(40, ge=1, description="agent actions per trial")
    max_tool_errors: int | None = Field(
        None, ge=1, description="tool calls answering an error per trial (None: no limit)"
    )
    """τ²'s `max_errors` (a default of its packs, `Domain.default_limits`): the trial ends as
    `too_many_errors` at the call that reaches it."""
    max_messages: int | None = Field(
        None, ge=1, description="messages per trial, counted as τ² counts them (None: no limit)"
    )
    """τ²'s `max_steps` (a default of its packs): the user's opening and every later message (an
    action and its tool answer, a reply and the user's answer) count; the trial ends as
    `max_steps` at the message that reaches it, a reply reaching it left unanswered."""

    @model_serializer(mode="wrap")
    def _without_unset_limits(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # limits left unset are left out: configs stored before they existed keep their hash
        dumped: dict[str, Any] = handler(self)
        for name in ("max_tool_errors", "max_messages"):
            if getattr(self, name) is None:
                dumped.pop(name, None)
        return dumped

    def describe(self) -> str:
        """The limits in words, as `runs show` prints them."""
        said = [f"{self.max_steps} agent actions"]
        if self.max_messages is not None:
            said.append(f"{self.max_messages} messages (τ²'s count)")
        if self.max_tool_errors is not None:
            said.append(f"{self.max_tool_errors} tool errors")
        return ", ".join(said)


class Verification(BaseModel):
    """How a critic sits in the loop."""

    rounds: int = Field(3, ge=1, le=10, description="critic verdicts per step at most")
    on_exhausted: Literal["execute", "block"] = "execute"
    """What happens to a proposal still rejected in the last round."""
    scope: Literal["tool_calls", "writes", "all"] = "tool_calls"
    """Which actions are verified: every tool call, write calls only, or replies too."""


class RunConfig(BaseModel):
    domains: dict[str, str]
    """Domain name -> version."""
    split: str = "test"
    task_ids: list[str] | None = None
    """The `--tasks` selection, sorted and deduplicated: `b,a,a` is the same run as `a,b`."""
    planned_tasks: dict[str, list[str]] = Field(default_factory=dict)
    """Domain -> ids of the tasks the run planned; pass^k is over all of them. Empty in runs
    stored before plans were recorded (their tasks are those with a stored trial)."""
    policy: str
    critic: str = "none"
    user: str = "scripted"
    trials: int = Field(8, ge=1)
    seed: int = 0
    limits: Limits = Field(default_factory=Limits)
    verification: Verification = Field(default_factory=Verification)
    traits: dict[str, str] = Field(default_factory=dict)
    """The simulated user's trait profile (empty: no traits)."""
    perturbations: Perturbations = Field(default_factory=Perturbations)
    """Tool faults, user and environment perturbations the harness injects (see
    `castbench._records.perturbations`); every kind, rate and seed is part of the identity."""
    privileged: list[str] = Field(default_factory=list)
    """Roles whose agent read the ground truth (such runs are upper bounds, not entries)."""
    in_process: list[str] = Field(default_factory=list)
    """Roles whose import-path agent ran inside castbench's process (`--in-process`, for
    debugging): it could have read the ground truth, so leaderboards refuse the run."""
    placement: dict[Role, AgentPlacement] = Field(default_factory=dict)
    """Role -> where its agent ran (castbench built-in, sandboxed or unsandboxed worker, ...; see
    `castbench._records.provenance`). Part of the identity: a resume after the sandbox changed is a
    new run. Empty in runs stored before placements were recorded (derived from their specs)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further scoring-relevant settings (model settings per role, ...)."""
    fingerprint: Fingerprint = Field(default_factory=Fingerprint)
    """Digests of the agents' code, the domains' files and castbench's version: a run resumes only
    when these match too (see `castbench._records.identity`)."""

    @field_validator("task_ids")
    @classmethod
    def _normalised(cls, value: list[str] | None) -> list[str] | None:
        return sorted(set(value)) if value else None

    grading: GradingMode | None = None
    """How required outputs are matched: `castbench` (numbers as numbers, whole words) or τ-Bench's
    `tau` (plain substring). None marks a run recorded before grading modes existed: its outputs
    were matched the `tau` way, and `grading_mode` says so (a verifier re-grades it that way)."""

    @property
    def grading_mode(self) -> GradingMode:
        return self.grading or "tau"

    reply_judge: dict[str, Any] | None = None
    """The model judge that decided the reply checks (`--reply-judge`: its model and settings, as
    recorded for any model role), or None: the rules decided them. Part of the identity, so a
    judged run never resumes, compares or gates as a rule-graded one."""

    def config_hash(self) -> str:
        """The run's identity: options and fingerprint."""
        return _hash(self._dump())

    def _dump(self, exclude: set[str] | None = None) -> Any:
        # empty `in_process` and `placement`, no reply judge and no perturbations are left out: runs stored
        # before they existed keep their hash
        empty = {name for name in ("in_process", "placement", "reply_judge") if not getattr(self, name)}
        if not self.perturbations.active:
            empty.add("perturbations")
        left_out = set(exclude or ()) | empty
        return _portless(self.model_dump(mode="json", exclude=left_out))

    def written_hash(self) -> str:
        """`config_hash` of the config as it was read: fields its row or file did not hold (it was
        written by an older castbench) are left out, as that castbench hashed it. What `verify`
        compares a stored hash with."""
        return _hash({name: value for name, value in self._dump().items() if name in self.model_fields_set})

    def hash_except_trials(self) -> str:
        """Everything but the trials per task: a run topped up with more trials keeps this."""
        return _hash(self._dump({"trials"}))

    def options_hash(self) -> str:
        """The options alone: equal for two runs that differ only in code, data or where their
        agents ran (`placement_changes` says how)."""
        return _hash(self._dump({"fingerprint", "placement"}))

    def placement_changes(self, before: RunConfig) -> list[str]:
        """Roles whose agent runs elsewhere than in `before` ("the policy's placement (sandboxed ->
        unsandboxed)"): why a re-run with the sandbox changed did not resume."""
        found: list[str] = []
        for role in sorted(self.placement.keys() | before.placement.keys()):
            now, then = self.placement.get(role), before.placement.get(role)
            if now != then:
                was = then.short() if then else "unrecorded"
                found.append(f"the {role}'s placement ({was} -> {now.short() if now else 'none'})")
        return found


_SERVED_CHECKPOINT = re.compile(r"^(openai|hosted_vllm)/cast-[\w.-]+-[0-9a-f]{10}$")
_LOOPBACK_PORT = re.compile(r"(https?://(?:127\.0\.0\.1|localhost|\[::1\])):\d+")


def _portless(dumped: dict[str, Any]) -> dict[str, Any]:
    """The config as hashed: the loopback port of a checkpoint the CAST plugin served (model
    `cast-<stage>-<digest of its weights>`, its `api_base` given as a model setting, not in the
    role's string) left out, since the server takes any free port and the weights' digest already
    names what answered; a resumed run then matches on any port. Runs whose role string holds
    its `api_base` (every run stored before) hash as they always did."""
    models = (dumped.get("extra") or {}).get("models") or {}
    roles = [
        role
        for role, settings in models.items()
        if isinstance(settings, dict)
        and _SERVED_CHECKPOINT.match(str(settings.get("model", "")))
        and "api_base=" not in str(dumped.get(role, ""))
    ]
    if not roles:
        return dumped
    dumped = copy.deepcopy(dumped)
    for role in roles:
        settings = dumped["extra"]["models"][role]
        if isinstance(settings.get("api_base"), str):
            settings["api_base"] = _LOOPBACK_PORT.sub(r"\1", settings["api_base"])
        placed = (dumped.get("placement") or {}).get(role)
        if isinstance(placed, dict) and isinstance(placed.get("detail"), str):
            placed["detail"] = _LOOPBACK_PORT.sub(r"\1", placed["detail"])
    return dumped


def _hash(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


RUN_CONFIG = RecordShape("run config")
"""How a `RunConfig` is kept (store rows, exports): version 1. Fields added since the first store
(`planned_tasks`, `placement`, `grading`, ...) read as what an older run had, and are left out of
its hash as that castbench left them (`written_hash`), so no migration may add them to the dict."""


def read_config(text: str | bytes, where: str) -> RunConfig:
    """A stored config (a store row's JSON) in the current shape; `where` names it in an error
    (`RecordVersionError`, one line, when the text is not a config at all: a damaged row)."""
    try:
        return RUN_CONFIG.loads(RunConfig, text, where)
    except RecordVersionError:
        raise
    except ValueError as exc:  # not JSON, or not a config: pydantic's and json's errors alike
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RecordVersionError(f"{where}: its stored config is damaged ({first})") from exc
