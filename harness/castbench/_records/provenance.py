"""Where a run's agents ran and where the run came from: what a reader needs before trusting
its figures.

A pass^k is only as good as the wall between the agent and the ground truth, and an export
cannot prove which agent produced it. So every run says, per role, where its agent ran
(`AgentPlacement`), and where the run itself came from (`RunOrigin`):

- the placement is decided when the run is configured and recorded in its `RunConfig`
  (`placement`): it is part of the run's identity, so resuming after the sandbox changed (the
  kernel lost Landlock, the operator set `CASTBENCH_SANDBOX=off`) starts a new run instead of
  mixing trials played behind the sandbox with trials played without it. Runs stored before
  placements were recorded keep their hash; theirs is derived from their agent specs, with
  import-path workers counted as unsandboxed (there was no sandbox then);
- the origin is not part of the run (the same run may be stored in many places): it lives in the
  run's meta. `castbench eval` records `run`; `castbench import FILE` always records
  `submitted` with the file's name, whatever the file's own meta claims;
- how the run executed (`castbench._records.execution.ExecutionPlan`: where its trials ran, how
  each agent was called) is not part of the run either: the meta's `execution`, recorded when the
  run is created; runs stored before then say "not recorded".

`placement_problems` says where a recorded placement contradicts the specs it claims to describe
(a built-in name marked as an import path, a privileged role missing from `privileged`, ...):
what `verify` and boards can check without running the agent.
"""

from __future__ import annotations

import socket
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from castbench._agents.registry import AgentSpec, Role, builtin_agents
from castbench._base.errors import FatalInfrastructureError
from castbench._records.execution import ExecutionPlan
from castbench._records.placement import AgentPlacement, PlacementKind

if TYPE_CHECKING:
    from castbench._records.config import RunConfig

__all__ = [
    "AgentPlacement",
    "PlacementKind",
    "Provenance",
    "RunOrigin",
    "SandboxState",
    "derived_placement",
    "placement_of",
    "placement_problems",
    "provenance",
    "require_recorded_sandbox",
    "run_execution",
    "run_origin",
    "sandbox_state",
]

_IMPORT_KINDS: frozenset[str] = frozenset({"sandboxed", "unsandboxed", "in-process", "privileged"})


class RunOrigin(BaseModel):
    """Where the stored run came from."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["run", "submitted", "unrecorded"]
    """`run`: played here by `castbench eval` (or `castbench.evaluate`); `submitted`: trials came in
    through `castbench import FILE`; `unrecorded`: stored before castbench recorded origins."""
    file: str | None = None
    """`submitted`: the name of the file the trials were imported from."""

    def describe(self) -> str:
        if self.kind == "run":
            return "run here (castbench eval)"
        if self.kind == "submitted":
            return f"submitted: imported from {self.file or 'a file'} (its agents did not run here)"
        return "origin unrecorded (stored before castbench recorded where runs came from)"


_DERIVED = "derived from the agent specs: stored before placements were recorded"


class Provenance(BaseModel):
    """A run's origin and, per role, where its agent ran."""

    origin: RunOrigin
    agents: dict[Role, AgentPlacement] = Field(default_factory=dict)
    """Role -> placement; a run without a critic has none."""
    recorded: bool = True
    """False: the placements were derived from the agent specs of a run stored before they were
    recorded (import-path workers counted as unsandboxed)."""
    execution: ExecutionPlan | None = None
    """How the run executed (the meta's `execution`); None for a run stored before it was recorded."""
    reply_judge: str | None = Field(None, exclude_if=lambda judge: judge is None)
    """The model that decided the reply checks (`--reply-judge`); None: the rules did."""

    def roles(self, *kinds: str) -> list[Role]:
        return [role for role, placement in self.agents.items() if placement.where in kinds]

    @property
    def privileged(self) -> list[Role]:
        return [role for role, placement in self.agents.items() if placement.privileged]

    @property
    def unsandboxed(self) -> list[Role]:
        """Roles whose import-path agent ran in a worker without the sandbox. (Built-ins are
        castbench's own code; `--in-process` and privileged agents are refused on their own.)"""
        return self.roles("unsandboxed")

    def line(self) -> str:
        """One line for a console: the origin, then each role's placement."""
        roles = "; ".join(f"{role}: {placement.describe()}" for role, placement in self.agents.items())
        derived = "" if self.recorded else f" [{_DERIVED}]"
        judged = f"; replies graded by judge {self.reply_judge}" if self.reply_judge else ""
        return f"provenance: {self.origin.describe()}; {roles}{judged}{derived}"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def trial_isolation(self) -> str:
        """What kept the run's trials independent (`castbench._records.execution.TrialIsolation`)."""
        if self.execution is None:
            return "not recorded (stored before castbench recorded how runs execute)"
        return self.execution.isolation()

    @property
    def isolated_trials(self) -> bool:
        return self.execution is not None and self.execution.isolated

    @property
    def outside_castbench(self) -> list[Role]:
        """Roles whose agent ran outside castbench and its sandbox (agent services, A2A agents)."""
        return self.roles("service")

    @property
    def could_fake_infrastructure(self) -> list[Role]:
        """Roles whose agent could have raised (or faked) an infrastructure error that castbench
        then retried: one in castbench's process (`--in-process`, privileged), an agent service
        (its failures look like a server's), or an import-path worker of a run stored before a
        worker's errors were all the agent's. castbench's own agents and isolated workers cannot."""
        legacy = () if self.isolated_trials else ("sandboxed", "unsandboxed")
        return self.roles("in-process", "privileged", "service", *legacy)

    def execution_line(self) -> str:
        """One line: where the trials ran and how each role's agent was called."""
        if self.execution is None:
            return "execution: not recorded (stored before castbench recorded how runs execute)"
        return self.execution.line()

    def short(self) -> str:
        """A table cell: `here · policy built-in · user built-in`."""
        origin = {"run": "here", "submitted": "submitted", "unrecorded": "unrecorded"}[self.origin.kind]
        return " · ".join([origin, *(f"{role} {found.short()}" for role, found in self.agents.items())])


class SandboxState(BaseModel):
    """What a worker process started now gets: the OS sandbox (and which), or why not."""

    available: bool
    mechanism: str = ""
    reason: str = ""


def sandbox_state() -> SandboxState:
    """Whether import-path workers started by this process run sandboxed, or why not (the
    operator's `CASTBENCH_SANDBOX=off`, what the OS lacks): `castbench._agents.sandbox.support()`,
    the answer the workers themselves act on."""
    if find_spec("castbench._agents.sandbox") is None:
        return SandboxState(available=False, reason="castbench has no sandbox")
    from castbench._agents import sandbox

    support = sandbox.support()
    if support.available:
        return SandboxState(available=True, mechanism=str(support.mechanism))
    return SandboxState(available=False, reason=str(support.reason))


def placement_of(spec: AgentSpec, sandbox: SandboxState) -> AgentPlacement:
    """Where the agent `spec` resolved to will run, `sandbox` being what workers get."""
    if spec.kind == "builtin":
        return AgentPlacement(agent=spec.name, where="builtin", privileged=spec.privileged)
    if spec.kind == "service":
        detail = spec.name
        if spec.transport == "a2a":  # its card names it
            card = spec.params.get("card") or {}
            version = f" {card['version']}" if card.get("version") else ""
            detail = f"{spec.name} (A2A agent '{card.get('name', '?')}'{version})"
        return AgentPlacement(agent=spec.name, where="service", detail=detail)
    if spec.kind == "model":
        model = str(spec.params.get("model", spec.name))
        server = spec.params.get("api_base")
        return AgentPlacement(
            agent=spec.name, where="model", detail=model + (f" at {server}" if server else "")
        )
    if spec.kind != "import":
        raise ValueError(f"{spec.role} '{spec.spec}' runs no agent")
    if spec.privileged:
        return AgentPlacement(agent=spec.name, where="privileged", privileged=True)
    if spec.transport == "in-process":
        return AgentPlacement(agent=spec.name, where="in-process")
    if sandbox.available:
        needs = None if spec.sandbox_needs.empty else spec.sandbox_needs
        return AgentPlacement(agent=spec.name, where="sandboxed", detail=sandbox.mechanism, needs=needs)
    return AgentPlacement(agent=spec.name, where="unsandboxed", detail=sandbox.reason)


def _spec_kind(role: Role, spec: str) -> tuple[str, str]:
    """(kind, name) of a recorded spec string, read without importing anything it names (the
    same classification as `agents.registry.resolve`)."""
    name = spec.partition("?")[0].strip()
    builtins = {agent.name: agent for agent in builtin_agents(role)}
    if role == "critic" and name in ("", "none"):
        return "none", "none"
    if name.startswith(("a2a+http://", "a2a+https://")):
        return "service", name.removeprefix("a2a+").rstrip("/")
    if name.startswith(("http://", "https://")):
        return ("model" if name.rstrip("/").endswith("/chat/completions") else "service"), name
    if name in builtins:
        return ("model" if builtins[name].model_backed else "builtin"), name
    if ":" in name and "/" not in name:
        return "import", name
    return "model", name


_NO_SANDBOX_THEN = "recorded before castbench sandboxed agent workers"


def _derived(role: Role, spec: str, config: RunConfig) -> AgentPlacement | None:
    kind, name = _spec_kind(role, spec)
    if kind == "none":
        return None
    if kind in ("builtin", "service", "model"):
        detail = "" if kind == "builtin" else name
        return AgentPlacement(agent=name, where=kind, detail=detail, privileged=role in config.privileged)  # type: ignore[arg-type]
    if role in config.privileged:
        return AgentPlacement(agent=name, where="privileged", privileged=True)
    if role in config.in_process:
        return AgentPlacement(agent=name, where="in-process")
    return AgentPlacement(agent=name, where="unsandboxed", detail=_NO_SANDBOX_THEN)


def derived_placement(config: RunConfig) -> dict[Role, AgentPlacement]:
    """The placements of a run stored before they were recorded, from its specs and its
    `privileged` / `in_process` lists."""
    roles: tuple[tuple[Role, str], ...] = (
        ("policy", config.policy),
        ("critic", config.critic),
        ("user", config.user),
    )
    return {role: found for role, spec in roles if (found := _derived(role, spec, config)) is not None}


_LISTED_PRIVILEGE: tuple[Role, ...] = ("policy", "critic")
"""The roles a run's `privileged` list speaks for (a user simulator sees hidden facts by design)."""


def placement_problems(config: RunConfig) -> list[str]:
    """Where the recorded placements contradict the run's own specs and privilege lists: each
    role's kind must be what its spec string is (a built-in name cannot be an import path),
    `privileged` must list exactly the policy or critic marked privileged, `in_process` the
    in-process roles. Empty for a run without recorded placements (nothing to contradict)."""
    if not config.placement:
        return []
    problems: list[str] = []
    expected = derived_placement(config)
    for role in sorted(expected.keys() | config.placement.keys()):
        want, got = expected.get(role), config.placement.get(role)
        if got is None:
            problems.append(f"the {role}'s placement is missing")
            continue
        if want is None:
            problems.append(f"the {role} has a placement but no agent")
            continue
        if got.agent != want.agent:
            problems.append(f"the {role}'s placement names '{got.agent}', its spec '{want.agent}'")
        allowed = _IMPORT_KINDS if want.where in _IMPORT_KINDS else {want.where}
        if got.where not in allowed:
            problems.append(f"the {role} '{want.agent}' is recorded as {got.where}, which its spec cannot be")
        if role in _LISTED_PRIVILEGE and got.privileged != (role in config.privileged):
            listed = "lists" if role in config.privileged else "does not list"
            marked = "privileged" if got.privileged else "not privileged"
            problems.append(f"the {role} is marked {marked}, but the run's `privileged` {listed} it")
        if (got.where == "in-process") != (role in config.in_process):
            listed = "lists" if role in config.in_process else "does not list"
            problems.append(f"the {role} is recorded as {got.where}, but the run's `in_process` {listed} it")
        if got.where in _IMPORT_KINDS and got.privileged != (got.where == "privileged"):
            problems.append(f"the {role}'s import-path agent is privileged outside castbench's process")
    return problems


def run_origin(meta: dict[str, Any]) -> RunOrigin:
    """The origin a stored run's meta records (`unrecorded` when it records none or nonsense)."""
    try:
        return RunOrigin.model_validate(meta.get("origin"))
    except ValidationError:
        return RunOrigin(kind="unrecorded")


def run_execution(meta: dict[str, Any]) -> ExecutionPlan | None:
    """The execution plan a stored run's meta records (None when it records none or nonsense)."""
    try:
        return ExecutionPlan.model_validate(meta["execution"])
    except (KeyError, ValidationError):
        return None


def require_recorded_sandbox(config: RunConfig) -> None:
    """Refuse to run a trial in this process (a Ray worker, a helper on another node) unless the
    workers it starts get the sandbox the run recorded: a node without Landlock, or with
    `CASTBENCH_SANDBOX=off`, must not run an agent the run says was sandboxed (the driver's
    state is not the node's). `FatalInfrastructureError` naming the node's reason."""
    here = sandbox_state()
    for role, placement in config.placement.items():
        if placement.where != "sandboxed":
            continue
        if not here.available:
            raise FatalInfrastructureError(
                f"this worker ({socket.gethostname()}) cannot sandbox the {role} '{placement.agent}' "
                f"({here.reason}), which the run records as sandboxed ({placement.detail}): it refuses "
                "to run it; give every node the sandbox, or run with CASTBENCH_SANDBOX=off everywhere"
            )
        if here.mechanism != placement.detail:
            raise FatalInfrastructureError(
                f"this worker ({socket.gethostname()}) sandboxes with {here.mechanism}, the run records "
                f"{placement.detail} for the {role} '{placement.agent}': every node must offer the same"
            )


def provenance(config: RunConfig, meta: dict[str, Any]) -> Provenance:
    """A stored run's provenance: its recorded placements (or those derived from its specs), the
    origin and the execution plan its meta records."""
    recorded = bool(config.placement)
    agents = dict(config.placement) if recorded else derived_placement(config)
    judge = config.reply_judge
    return Provenance(
        origin=run_origin(meta),
        agents=agents,
        recorded=recorded,
        execution=run_execution(meta),
        reply_judge=str(judge.get("model")) if judge else None,
    )
