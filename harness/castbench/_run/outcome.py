"""What one evaluation did (`EvalOutcome`): the engine's answer, and the answer `castbench.evaluate`
gives for a complete run it found stored without starting the engine (`castbench._run.api`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EvalOutcome"]


@dataclass(frozen=True)
class EvalOutcome:
    run_id: str
    resumed: bool
    already_done: int
    ran: int
    total: int
    stopped: str | None = None
    """Why the run stopped before its last trial (re-running the same command resumes it)."""
    unscored: int = 0
    """Planned trials without a scored record at the end (infrastructure errors): the run is
    incomplete and its pass^k is not final."""
    superseded: str | None = None
    """A stored run with the same options that was not resumed because its code or data differ."""
    changes: tuple[str, ...] = ()
    """What differs from `superseded` (the policy's code, a domain's task files, ...)."""
    broken: str | None = None
    """Every trial this invocation ran ended `agent_error` for this one reason (a wrong
    constructor or `propose` signature, a parameter the agent refuses): the agent cannot work,
    and the run stopped early once that was plain (`castbench._run.broken_agent`)."""
