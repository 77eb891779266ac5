"""Errors that are nobody's answer: the trial did not get a fair chance, so it is not scored.

An agent's bad output is *not* here: it is data (a `MalformedAction`, an error observation).
"""

from __future__ import annotations

__all__ = ["InfrastructureError"]


class InfrastructureError(RuntimeError):
    """A model provider or server failed after retries (outage, timeout, rate limit, auth).

    The trial is retried from its start with the same seed; if it keeps failing it is stored
    with status `error` and its task is reported as incomplete, never scored 0 silently.
    """
