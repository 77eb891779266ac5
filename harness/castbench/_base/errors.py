"""Errors that are nobody's answer: the trial did not get a fair chance, so it is not scored.

An agent's bad output is *not* here: it is data (a `MalformedAction`, an error observation), and
so is a provider's refusal of a request the agent built (`ProviderRejection`).
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AgentTimeout",
    "FatalInfrastructureError",
    "InfrastructureError",
    "ProviderRejection",
    "RunInterrupted",
    "ServerDown",
]


class InfrastructureError(RuntimeError):
    """A model provider or server failed after retries (outage, timeout, rate limit, auth), as
    castbench observed it (its own model clients, a lost worker). Raised by an agent's own code
    in its worker process, it is that agent's failure (`AgentError`), never this.

    The trial is retried from its start with the same seed; if it keeps failing it is stored
    with status `error` and its task is reported as incomplete, never scored 0 silently.
    """


class FatalInfrastructureError(InfrastructureError):
    """A provider error no retry can cure (bad credentials, access denied, unknown model): every
    other trial would fail the same way, so the run stops; finished trials are kept, and so is
    the trial it stopped (`stopped`, stored as unscored), so that re-running the run shows that
    trial's retry on the record instead of re-rolling it silently."""

    stopped: object | None = None
    """The `TrialRecord` of the trial this error stopped, set where the trial ran."""


class ServerDown(FatalInfrastructureError):
    """A model server that cannot be reached (see `castbench._agents.models.breaker`); its message says
    which server and how to resume."""


class AgentTimeout(Exception):
    """An agent overran the step or trial time limit. Raised by whatever waits for the agent (the
    trial's in-process deadline, or a transport that had to kill its worker); the trial ends as
    `timeout`, scored 0."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run: no new trial started, those in flight were dropped, the run is
    marked `interrupted`; re-running the same command resumes it."""

    def __init__(self, run_id: str, stored: int, total: int) -> None:
        super().__init__(f"run {run_id} interrupted with {stored} of {total} trials stored")
        self.run_id = run_id
        self.stored = stored
        self.total = total


class AgentError(Exception):
    """An agent failed where a transport saw it (its code raised in its worker, or the worker
    crashed or hung up): the trial ends as `agent_error` with this message, scored 0."""


class ProviderRejection(RuntimeError):
    """The provider refused a request built from the agent's own conversation (HTTP 400/413/422:
    the context is too long, a message it wrote is invalid). Not an infrastructure error: the
    agent caused it and would cause it again, so the trial ends as the agent's failure, scored 0.
    Counting it as unscored would drop exactly the tasks an agent cannot handle from pass^k."""
